"""`rearview forget`, `rearview consolidate` and `rearview stats`: looking after what a namespace holds."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from rearview.cli import render
from rearview.cli.invocation import (
    DataDirOption,
    EmbedderOption,
    JsonOption,
    open_services,
    stdout_console,
    user_errors,
)
from rearview.cli.remote import remote_target
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.forget import ForgetRequest


class ForgetLayer(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


def forget(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace to forget in")],
    memory_id: Annotated[list[str] | None, typer.Option("--id", help="A memory id (repeatable)")] = None,
    layer: Annotated[ForgetLayer | None, typer.Option(help="Only this layer")] = None,
    since: Annotated[str | None, typer.Option(help="Only memories at or after this ISO 8601 time")] = None,
    until: Annotated[str | None, typer.Option(help="Only memories before this ISO 8601 time")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Any of these tags (repeatable)")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session")] = None,
    cascade: Annotated[
        bool, typer.Option("--cascade/--no-cascade", help="Also delete facts induced only from what goes")
    ] = True,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before a filter-based forget")] = False,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete memories by id, or all that match the filters (asks first unless --yes); prints the receipt."""
    fields: dict[str, Any] = {
        "ids": memory_id or None,
        "layer": layer.value if layer else None,
        "since": since,
        "until": until,
        "tags": tag or None,
        "session_id": session,
        "cascade": cascade,
    }
    remote = remote_target(ctx)
    if remote is not None:
        with user_errors():
            request = ForgetRequest.model_validate(fields)
            _confirm_filter(namespace, request, yes)
            client = remote.client()
            if _single_id(request):
                receipt = client.forget_one(namespace, request.ids[0] if request.ids else "", request.cascade)
            else:
                receipt = client.forget(namespace, request)
    else:
        with open_services(data_dir, embedder) as services:
            request = ForgetRequest.model_validate(fields)
            _confirm_filter(namespace, request, yes)
            if _single_id(request):
                # One id: say so when it does not exist rather than print an empty receipt.
                only_id = request.ids[0] if request.ids else ""
                receipt = services.forgetter.forget_one(namespace, only_id, cascade=request.cascade)
            else:
                receipt = services.forgetter.forget(namespace, request)
    if as_json:
        typer.echo(receipt.model_dump_json(indent=2))
    else:
        stdout_console().print(render.forget_receipt(receipt))


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


def consolidate(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace to consolidate")],
    since: Annotated[str | None, typer.Option(help="Only episodes at or after this ISO 8601 time")] = None,
    max_clusters: Annotated[int | None, typer.Option(help="At most this many clusters (default 50)")] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn clusters of related episodes into facts (semantic memory)."""
    fields: dict[str, Any] = {"since": since}
    if max_clusters is not None:
        fields["max_clusters"] = max_clusters
    remote = remote_target(ctx)
    if remote is not None:
        with user_errors():
            result = remote.client().consolidate(namespace, ConsolidateRequest.model_validate(fields))
    else:
        with open_services(data_dir, embedder) as services:
            result = services.consolidator.consolidate(namespace, ConsolidateRequest.model_validate(fields))
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        stdout_console().print(render.consolidate_result(result))


def stats(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace")],
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Counts per layer, the last write, and how often recall found something."""
    remote = remote_target(ctx)
    if remote is not None:
        with user_errors():
            result = remote.client().stats(namespace)
    else:
        with open_services(data_dir, embedder) as services:
            result = services.stats(namespace)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        stdout_console().print(render.stats(result))
