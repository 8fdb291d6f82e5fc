"""`rearview forget`, `rearview consolidate` and `rearview stats`: looking after what a namespace holds."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

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
from rearview.cli.request_options import described, request_from_options
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.forget import ForgetRequest


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
) -> None:
    """Delete memories by id, or all that match the filters (asks first unless --yes); prints the receipt."""
    with user_errors():
        request = request_from_options(ForgetRequest, ctx)
    remote = remote_target(ctx)
    if remote is not None:
        with user_errors():
            _confirm_filter(namespace, request, yes)
            client = remote.client()
            if _single_id(request):
                receipt = client.forget_one(namespace, request.ids[0] if request.ids else "", request.cascade)
            else:
                receipt = client.forget(namespace, request)
    else:
        with open_services(data_dir, embedder) as services:
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
    since: Annotated[str | None, typer.Option(help=described(ConsolidateRequest, "since"))] = None,
    max_clusters: Annotated[int | None, typer.Option(help=described(ConsolidateRequest, "max_clusters"))] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn clusters of related episodes into facts (semantic memory)."""
    with user_errors():
        request = request_from_options(ConsolidateRequest, ctx)
    remote = remote_target(ctx)
    if remote is not None:
        with user_errors():
            result = remote.client().consolidate(namespace, request)
    else:
        with open_services(data_dir, embedder) as services:
            result = services.consolidate(namespace, request)
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
