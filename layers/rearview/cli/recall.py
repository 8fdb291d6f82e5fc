"""`rearview recall`: hybrid recall from the command line, with the explain trace as tables."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from rearview.cli import render
from rearview.cli.invocation import (
    DataDirOption,
    EmbedderOption,
    JsonOption,
    stdout_console,
    user_errors,
)
from rearview.cli.request_options import KindChoice, OutcomeChoice, described, request_from_options
from rearview.cli.target import run
from rearview.domain.recall import RecallQuery


class RecallLayer(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    WORKING = "working"


def recall(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace to recall from")],
    query: Annotated[str, typer.Argument(help=described(RecallQuery, "query"))],
    top_k: Annotated[int | None, typer.Option(help=described(RecallQuery, "top_k"))] = None,
    layers: Annotated[
        list[RecallLayer] | None, typer.Option("--layer", help=described(RecallQuery, "layers", "repeatable"))
    ] = None,
    since: Annotated[str | None, typer.Option(help=described(RecallQuery, "since"))] = None,
    until: Annotated[str | None, typer.Option(help=described(RecallQuery, "until"))] = None,
    as_of: Annotated[str | None, typer.Option(help=described(RecallQuery, "as_of"))] = None,
    tags: Annotated[list[str] | None, typer.Option("--tag", help=described(RecallQuery, "tags", "repeatable"))] = None,
    event_types: Annotated[
        list[str] | None, typer.Option("--event-type", help=described(RecallQuery, "event_types", "repeatable"))
    ] = None,
    outcomes: Annotated[
        list[OutcomeChoice] | None, typer.Option("--outcome", help=described(RecallQuery, "outcomes", "repeatable"))
    ] = None,
    kinds: Annotated[
        list[KindChoice] | None, typer.Option("--kind", help=described(RecallQuery, "kinds", "repeatable"))
    ] = None,
    entities: Annotated[
        list[str] | None, typer.Option("--entity", help=described(RecallQuery, "entities", "repeatable"))
    ] = None,
    metadata: Annotated[
        str | None, typer.Option(help=described(RecallQuery, "metadata", 'JSON, e.g. \'{"project": "apollo"}\''))
    ] = None,
    token_budget: Annotated[int | None, typer.Option(help=described(RecallQuery, "token_budget"))] = None,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help=described(RecallQuery, "include_superseded"))
    ] = False,
    session_id: Annotated[str | None, typer.Option("--session", help=described(RecallQuery, "session_id"))] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help=described(RecallQuery, "explain", "printed as tables"))
    ] = False,
    parse_time: Annotated[
        bool, typer.Option("--parse-time/--no-parse-time", help=described(RecallQuery, "parse_time"))
    ] = True,
    rerank: Annotated[bool, typer.Option("--rerank/--no-rerank", help=described(RecallQuery, "rerank"))] = True,
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help=described(RecallQuery, "exclude", "repeatable"))
    ] = None,
    timeout_ms: Annotated[int | None, typer.Option(help=described(RecallQuery, "timeout_ms"))] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Recall the memories most relevant to QUERY, best first; says so when nothing relevant is held."""
    with user_errors():
        request = request_from_options(RecallQuery, ctx)
    response = run(ctx, data_dir, embedder, "recall", namespace, request)
    if as_json:
        typer.echo(response.model_dump_json(indent=2))
        return
    out = stdout_console()
    out.print(render.recall_response(response))
    if response.trace is not None:
        out.print(render.trace(response.trace))
