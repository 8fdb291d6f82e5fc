"""`rearview forget`, `rearview consolidate` and `rearview stats`: looking after what a namespace holds."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from rearview.bootstrap import Services
from rearview.cli import render
from rearview.cli.invocation import (
    DataDirOption,
    EmbedderChoice,
    EmbedderOption,
    JsonOption,
    VerboseOption,
    fail,
    print_result,
    stdout_console,
    user_errors,
)
from rearview.cli.request_options import described, request_from_options
from rearview.cli.target import OperationCall, connected, remote_target, run
from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.forget import ForgetRequest
from rearview.domain.hindsight_runs import MAX_RECENT_RUNS
from rearview.domain.namespaces import validate_namespace
from rearview.errors import RearviewError


class ForgetLayer(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


def forget(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace to forget in")],
    ids: Annotated[list[str] | None, typer.Option("--id", help=described(ForgetRequest, "ids", "repeatable"))] = None,
    layer: Annotated[ForgetLayer | None, typer.Option(help=described(ForgetRequest, "layer"))] = None,
    since: Annotated[str | None, typer.Option(help=described(ForgetRequest, "since"))] = None,
    until: Annotated[str | None, typer.Option(help=described(ForgetRequest, "until"))] = None,
    tags: Annotated[
        list[str] | None, typer.Option("--tag", help=described(ForgetRequest, "tags", "repeatable"))
    ] = None,
    session_id: Annotated[str | None, typer.Option("--session", help=described(ForgetRequest, "session_id"))] = None,
    cascade: Annotated[bool, typer.Option("--cascade/--no-cascade", help=described(ForgetRequest, "cascade"))] = True,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before a filter-based forget")] = False,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Delete memories by id, or all that match the filters (asks first unless --yes); prints the receipt (the
    counts, and the ids when few or with --verbose)."""
    with user_errors():
        request = request_from_options(ForgetRequest, ctx)
    with user_errors():
        validate_namespace(namespace)
    _confirm_filter(namespace, request, yes)
    if _single_id(request):
        # One id: say so when it does not exist rather than print an empty receipt.
        only_id = request.ids[0] if request.ids else ""
        receipt = run(ctx, data_dir, embedder, "delete_memory", namespace, only_id, request.cascade)
    else:
        receipt = run(ctx, data_dir, embedder, "forget", namespace, request)
    print_result(receipt, as_json, lambda r: render.forget_receipt(r, verbose))


def _confirm_filter(namespace: str, request: ForgetRequest, yes: bool) -> None:
    filters = _describe_filters(request)
    if request.ids is None and filters and not yes:
        # A filter can match far more than the user pictures; ids name exactly what goes.
        typer.confirm(f"Forget every memory in {namespace} where {filters}?", abort=True, err=True)


def _single_id(request: ForgetRequest) -> bool:
    return request.ids is not None and len(request.ids) == 1 and not _describe_filters(request)


def _describe_filters(request: ForgetRequest) -> str:
    parts = [
        f"{name}={value}"
        for name, value in (
            ("layer", request.layer),
            ("since", request.since.isoformat() if request.since else None),
            ("until", request.until.isoformat() if request.until else None),
            ("tags", ",".join(request.tags) if request.tags else None),
            ("session", request.session_id),
        )
        if value is not None
    ]
    return " and ".join(parts)


# Exit code of `consolidate --all` when a namespace failed (the others were consolidated).
CONSOLIDATE_FAILED_EXIT = 1


def consolidate(
    ctx: typer.Context,
    namespace: Annotated[str | None, typer.Argument(help="Namespace to consolidate (or --all)")] = None,
    all_namespaces: Annotated[
        bool,
        typer.Option("--all", help="Every namespace holding unconsolidated episodes, one run each"),
    ] = False,
    since: Annotated[str | None, typer.Option(help=described(ConsolidateRequest, "since"))] = None,
    max_clusters: Annotated[int | None, typer.Option(help=described(ConsolidateRequest, "max_clusters"))] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Turn clusters of related episodes into preferences, facts and lessons, now (under the namespace's lease and
    the caps, recorded in stats)."""
    if (namespace is None) == (not all_namespaces):
        fail("consolidate: give a NAMESPACE or --all (not both)")
    with user_errors():
        request = request_from_options(ConsolidateRequest, ctx)
    if namespace is None:
        _consolidate_all(ctx, request, data_dir, embedder, as_json)
        return
    result = run(ctx, data_dir, embedder, "consolidate", namespace, request)
    print_result(result, as_json, lambda r: render.consolidate_result(r, verbose))


def _consolidate_all(
    ctx: typer.Context,
    request: ConsolidateRequest,
    data_dir: Path | None,
    embedder: EmbedderChoice | None,
    as_json: bool,
) -> None:
    """One run per namespace with unconsolidated episodes (a server's: those its stats say have some); a line
    each; exit 1 if any failed."""
    local: list[str] = []

    def local_backlog(services: Services) -> None:
        local.extend(services.store.namespaces_with_unconsolidated())

    with connected(ctx, data_dir, embedder, on_local=local_backlog) as call:
        names = local if remote_target(ctx) is None else _remote_backlog(call)
        outcomes = {ns: _run_one(call, ns, request) for ns in names}
    if as_json:
        typer.echo(json.dumps({ns: _as_json(outcome) for ns, outcome in outcomes.items()}, indent=2))
    else:
        stdout_console().print(render.consolidate_all(outcomes))
    if any(not isinstance(outcome, ConsolidateResult) for outcome in outcomes.values()):
        raise typer.Exit(CONSOLIDATE_FAILED_EXIT)


def _remote_backlog(call: OperationCall) -> list[str]:
    """A server's namespaces holding unconsolidated episodes: those the key sees whose stats count a backlog."""
    listed = call("list_namespaces").namespaces
    return [n.namespace for n in listed if (h := call("stats", n.namespace).hindsight) and h.unconsolidated]


def _run_one(call: OperationCall, namespace: str, request: ConsolidateRequest) -> ConsolidateResult | str:
    """The namespace's run, or why it failed (the runner recorded a failed run; the others go on)."""
    try:
        result: ConsolidateResult = call("consolidate", namespace, request)
        return result
    except RearviewError as exc:
        return f"{exc.code}: {exc.message}"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _as_json(outcome: ConsolidateResult | str) -> dict[str, Any]:
    if isinstance(outcome, ConsolidateResult):
        return outcome.model_dump(mode="json")
    return {"error": outcome}


def stats(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace")],
    runs: Annotated[
        int, typer.Option(min=1, max=MAX_RECENT_RUNS, help="How many of consolidation's latest runs to show")
    ] = 5,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Counts per layer, the last write, how often recall found something, and consolidation's runs, next trigger
    and feedback."""
    result = run(ctx, data_dir, embedder, "stats", namespace, runs)
    print_result(result, as_json, render.stats)
