"""`rearview remember` (one memory), `rearview import` (a JSONL file of them, through the write path) and `rearview
load` (a JSONL history of episodes, through the bulk path)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from rearview.cli import render
from rearview.cli.invocation import (
    DataDirOption,
    EmbedderOption,
    JsonOption,
    VerboseOption,
    print_result,
    stderr_console,
    stdout_console,
    user_errors,
)
from rearview.cli.jsonl_import import DUPLICATE_ID, ImportSummary, InvalidLine, LoadSummary, import_lines, load_lines
from rearview.cli.request_options import KindChoice, OutcomeChoice, described, request_from_options
from rearview.cli.restore import RestoreSummary, restore_lines
from rearview.cli.target import OperationCall, connected, run
from rearview.domain.bulk_load import MAX_LOAD_ITEMS, EpisodeLoad, LoadRequest, LoadResult
from rearview.domain.limits import MAX_BATCH
from rearview.domain.namespaces import validate_namespace
from rearview.domain.write import BatchWrite, MemoryWrite, WriteResult

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
    extract: Annotated[bool | None, typer.Option("--extract", help=described(MemoryWrite, "extract"))] = None,
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
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace to import into")],
    file: Annotated[
        Path,
        typer.Argument(
            help="JSONL file: one episode object per line (with --restore: an export's lines)",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    restore: Annotated[
        bool,
        typer.Option(
            "--restore",
            help="FILE is what `rearview export` wrote: restore its memories as they were (ids, times, provenance, "
            "versions and history; ids already stored are skipped)",
        ),
    ] = False,
    batch_size: Annotated[
        int, typer.Option(min=1, max=MAX_BATCH, help="Memories per write batch (one transaction each)")
    ] = 100,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Import episodes from a JSONL file, or (--restore) an export; invalid lines are reported by number and
    skipped (exit code 1). Locally, or to the server at --url."""
    with user_errors():
        validate_namespace(namespace)
    with file.open("rb") as fh:
        total = sum(1 for _ in fh)
    with connected(ctx, data_dir, embedder, creates=True) as call, file.open("rb") as fh, _progress(file, total) as bar:

        def report(line: InvalidLine) -> None:
            bar.console.print(f"line {line.line_no}: {line.message}", style="red", markup=False)

        if restore:
            send = functools.partial(call, "import_memories", namespace)
            restored = restore_lines(send, fh, on_progress=bar.advance_by, on_invalid=report)
            summary: ImportSummary | RestoreSummary = restored
        else:
            writer = _CatalogueWriter(call)
            summary = import_lines(writer, namespace, fh, batch_size, on_progress=bar.advance_by, on_invalid=report)
    if isinstance(summary, RestoreSummary):
        _print_restored(summary, file, verbose)
    else:
        _print_summary(summary, file)
    if summary.invalid:
        raise typer.Exit(IMPORT_INVALID_LINES_EXIT)


def load_jsonl(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace to load into")],
    file: Annotated[
        Path,
        typer.Argument(
            help="JSONL file: one episode a line, as `rearview import` reads them, each with its `vector` if you "
            "bring one (this deployment's embedder's; the others are embedded in batches)",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    batch_size: Annotated[
        int,
        typer.Option(
            min=1, max=MAX_LOAD_ITEMS, help="Episodes per load request (one transaction each; at most 768 KiB of lines)"
        ),
    ] = 500,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
) -> None:
    """Load a history of episodes from a JSONL file through the bulk path: checked and redacted as writes are, each
    line one episode (no merging, no chunking), ids already stored skipped; invalid lines are reported by number and
    skipped (exit code 1). Locally, or to the server at --url."""
    with user_errors():
        validate_namespace(namespace)
    with file.open("rb") as fh:
        total = sum(1 for _ in fh)
    with (
        connected(ctx, data_dir, embedder, creates=True) as call,
        file.open("rb") as fh,
        _progress(file, total, "loading") as bar,
    ):

        def report(line: InvalidLine) -> None:
            bar.console.print(f"line {line.line_no}: {line.message}", style="red", markup=False)

        def send(items: list[EpisodeLoad]) -> LoadResult:
            result: LoadResult = call("load_episodes", namespace, LoadRequest(items=items))
            return result

        summary = load_lines(send, fh, batch_size, on_progress=bar.advance_by, on_invalid=report)
    _print_loaded(summary, file)
    if summary.invalid:
        raise typer.Exit(IMPORT_INVALID_LINES_EXIT)


@dataclass(frozen=True)
class _CatalogueWriter:
    """An import's batches, written by the catalogue's batch write (locally, or at --url)."""

    call: OperationCall

    def write_batch(self, namespace: str, items: Sequence[MemoryWrite]) -> list[WriteResult]:
        return list(self.call("write_batch", namespace, BatchWrite(items=list(items))).results)


class _Bar:
    """A progress bar on stderr, advanced by a number of lines."""

    def __init__(self, progress: Progress, task: TaskID) -> None:
        self.progress = progress
        self.console = progress.console
        self._task = task

    def advance_by(self, lines: int) -> None:
        self.progress.advance(self._task, lines)


@contextmanager
def _progress(file: Path, total: int, verb: str = "importing") -> Iterator[_Bar]:
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr_console(),
        transient=True,
    )
    with progress:
        yield _Bar(progress, progress.add_task(f"{verb} {escape(file.name)}", total=total))


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
    _print_invalid(summary.invalid)


def _print_loaded(summary: LoadSummary, file: Path) -> None:
    out = stdout_console()
    out.print(
        f"Loaded {file.name}: loaded {summary.loaded} ({summary.embedded} embedded here), already stored "
        f"{summary.skipped}, low importance {summary.low_importance}, redacted {summary.redacted}, "
        f"invalid {len(summary.invalid)}",
        markup=False,
    )
    if summary.ignored_keys:
        keys = ", ".join(f"{key} ({n} lines)" for key, n in sorted(summary.ignored_keys.items()))
        out.print(f"ignored unknown keys: {keys}", style="yellow", markup=False)
    _print_invalid(summary.invalid)


def _print_restored(summary: RestoreSummary, file: Path, verbose: bool) -> None:
    out = stdout_console()
    out.print(
        f"Restored {file.name}: restored {summary.restored}, already stored {summary.skipped}, "
        f"invalid {len(summary.invalid)}",
        markup=False,
    )
    if verbose and summary.ids:
        out.print("ids: " + ", ".join(summary.ids), markup=False)
    _print_invalid(summary.invalid)


def _print_invalid(invalid: list[InvalidLine]) -> None:
    if invalid:
        lines = ", ".join(str(line.line_no) for line in sorted(invalid, key=lambda line: line.line_no))
        stdout_console().print(f"invalid lines (not imported): {lines}", style="red", markup=False)
