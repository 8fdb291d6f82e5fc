"""`rearview remember` (one memory) and `rearview import` (a JSONL file of them)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rearview.cli import render
from rearview.cli.invocation import (
    DataDirOption,
    EmbedderOption,
    JsonOption,
    open_services,
    print_result,
    stderr_console,
    stdout_console,
    user_errors,
)
from rearview.cli.jsonl_import import DUPLICATE_ID, ImportSummary, InvalidLine, import_lines
from rearview.cli.request_options import KindChoice, OutcomeChoice, described, request_from_options
from rearview.cli.target import run
from rearview.domain.limits import MAX_BATCH
from rearview.domain.namespaces import validate_namespace
from rearview.domain.write import MemoryWrite

# Exit code of an import that wrote the valid lines but found invalid ones.
IMPORT_INVALID_LINES_EXIT = 1


class WriteLayer(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


def remember(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace, e.g. acme:u-42")],
    content: Annotated[str, typer.Argument(help=described(MemoryWrite, "content"))],
    layer: Annotated[WriteLayer, typer.Option(help=described(MemoryWrite, "layer"))] = WriteLayer.EPISODIC,
    tags: Annotated[list[str] | None, typer.Option("--tag", help=described(MemoryWrite, "tags", "repeatable"))] = None,
    entities: Annotated[
        list[str] | None, typer.Option("--entity", help=described(MemoryWrite, "entities", "repeatable"))
    ] = None,
    event_type: Annotated[str | None, typer.Option(help=described(MemoryWrite, "event_type"))] = None,
    outcome: Annotated[str | None, typer.Option(help=described(MemoryWrite, "outcome"))] = None,
    outcome_status: Annotated[OutcomeChoice | None, typer.Option(help=described(MemoryWrite, "outcome_status"))] = None,
    session_id: Annotated[str | None, typer.Option("--session", help=described(MemoryWrite, "session_id"))] = None,
    dimension: Annotated[str | None, typer.Option(help=described(MemoryWrite, "dimension"))] = None,
    confidence: Annotated[float | None, typer.Option(help=described(MemoryWrite, "confidence"))] = None,
    kind: Annotated[KindChoice | None, typer.Option(help=described(MemoryWrite, "kind"))] = None,
    importance: Annotated[float | None, typer.Option(help=described(MemoryWrite, "importance"))] = None,
    occurred_at: Annotated[str | None, typer.Option(help=described(MemoryWrite, "occurred_at"))] = None,
    metadata: Annotated[
        str | None, typer.Option(help=described(MemoryWrite, "metadata", 'JSON, e.g. \'{"project": "apollo"}\''))
    ] = None,
    source: Annotated[str | None, typer.Option(help=described(MemoryWrite, "source"))] = None,
    ttl_seconds: Annotated[int | None, typer.Option(help=described(MemoryWrite, "ttl_seconds"))] = None,
    expires_at: Annotated[str | None, typer.Option(help=described(MemoryWrite, "expires_at"))] = None,
    id: Annotated[str | None, typer.Option("--id", help=described(MemoryWrite, "id"))] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write one memory and print what became of it (stored, merged or skipped, and why)."""
    with user_errors():
        item = request_from_options(MemoryWrite, ctx)
    result = run(ctx, data_dir, embedder, "write_memory", namespace, item)
    print_result(result, as_json, render.write_result)


def import_jsonl(
    namespace: Annotated[str, typer.Argument(help="Namespace to import into")],
    file: Annotated[
        Path,
        typer.Argument(help="JSONL file: one episode object per line", exists=True, dir_okay=False, readable=True),
    ],
    batch_size: Annotated[
        int, typer.Option(min=1, max=MAX_BATCH, help="Memories per write batch (one transaction each)")
    ] = 100,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
) -> None:
    """Import episodes from a JSONL file; invalid lines are reported by number and skipped (exit code 1)."""
    with user_errors():
        validate_namespace(namespace)
    with file.open("rb") as fh:
        total = sum(1 for _ in fh)
    errors = stderr_console()
    with open_services(data_dir, embedder) as services, file.open("rb") as fh:
        progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=errors,
            transient=True,
        )
        with progress:
            task = progress.add_task(f"importing {escape(file.name)}", total=total)

            def report(line: InvalidLine) -> None:
                progress.console.print(f"line {line.line_no}: {line.message}", style="red", markup=False)

            summary = import_lines(
                services.writer,
                namespace,
                fh,
                batch_size,
                on_progress=lambda n: progress.advance(task, n),
                on_invalid=report,
            )
    _print_summary(summary, file)
    if summary.invalid:
        raise typer.Exit(IMPORT_INVALID_LINES_EXIT)


def _print_summary(summary: ImportSummary, file: Path) -> None:
    counts = summary.counts
    parts = [f"{status} {counts[status]}" for status in ("stored", "merged", "skipped")]
    for status, label in ((DUPLICATE_ID, "already stored"), ("accepted", "accepted")):
        if counts[status]:
            parts.append(f"{label} {counts[status]}")
    parts.append(f"invalid {len(summary.invalid)}")
    out = stdout_console()
    out.print(f"Imported {file.name}: " + ", ".join(parts), markup=False)
    if summary.ignored_keys:
        keys = ", ".join(f"{key} ({n} lines)" for key, n in sorted(summary.ignored_keys.items()))
        out.print(f"ignored unknown keys: {keys}", style="yellow", markup=False)
    if summary.invalid:
        lines = ", ".join(str(line.line_no) for line in sorted(summary.invalid, key=lambda line: line.line_no))
        out.print(f"invalid lines (not imported): {lines}", style="red", markup=False)
