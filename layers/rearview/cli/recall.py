"""`rearview recall`: hybrid recall from the command line, with the explain trace as tables."""

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
from rearview.domain.recall import RecallQuery


class RecallLayer(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


def recall(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace to recall from")],
    query: Annotated[str, typer.Argument(help="What to remember; time expressions (yesterday, last week) filter")],
    top_k: Annotated[int | None, typer.Option(help="How many results (default 10)")] = None,
    layer: Annotated[list[RecallLayer] | None, typer.Option("--layer", help="Layer to search (repeatable)")] = None,
    since: Annotated[str | None, typer.Option(help="Only memories at or after this ISO 8601 time")] = None,
    until: Annotated[str | None, typer.Option(help="Only memories before this ISO 8601 time")] = None,
    as_of: Annotated[str | None, typer.Option(help="The 'now' relative times resolve against (ISO 8601)")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Any of these tags (repeatable)")] = None,
    event_type: Annotated[
        list[str] | None, typer.Option("--event-type", help="Any of these event types (repeatable)")
    ] = None,
    token_budget: Annotated[int | None, typer.Option(help="Cut the results to this many tokens")] = None,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help="Also return superseded facts")
    ] = False,
    session: Annotated[str | None, typer.Option(help="Session whose working memory to include")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Print every stage of the recall trace")] = False,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Recall the memories most relevant to QUERY, best first; says so when nothing relevant is held."""
    fields: dict[str, Any] = {
        "query": query,
        "since": since,
        "until": until,
        "as_of": as_of,
        "tags": tag or [],
        "event_types": event_type or [],
        "token_budget": token_budget,
        "include_superseded": include_superseded,
        "session_id": session,
        "explain": explain,
    }
    if top_k is not None:
        fields["top_k"] = top_k
    if layer:
        fields["layers"] = [choice.value for choice in layer]
    remote = remote_target(ctx)
    if remote is not None:
        with user_errors():
            response = remote.client().recall(namespace, RecallQuery.model_validate(fields))
    else:
        with open_services(data_dir, embedder) as services:
            response = services.recaller.recall(namespace, RecallQuery.model_validate(fields))
    if as_json:
        typer.echo(response.model_dump_json(indent=2))
        return
    out = stdout_console()
    out.print(render.recall_response(response))
    if response.trace is not None:
        out.print(render.trace(response.trace))
