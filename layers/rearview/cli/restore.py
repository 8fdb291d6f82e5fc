"""`rearview import --restore`: an export's ndjson (one memory and its history per line, as `rearview export` and
`GET .../export` write it) restored through the catalogue's import operation, a chunk at a time, locally or at
--url. Ids, times, provenance, versions and history are kept; a memory whose id is stored already is skipped, so a
restore repeats safely. A line that is not an exported memory is reported by number and skipped."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import TypeAdapter, ValidationError

from rearview.cli.jsonl_import import InvalidLine, LineError, describe, send_lines
from rearview.domain.transfer import MAX_IMPORT_ITEMS, ExportedEpisode, ExportedFact, ExportedMemory, ImportRequest
from rearview.domain.transfer import ImportResult as Restored

ExportedLine = ExportedEpisode | ExportedFact
_LINE: TypeAdapter[ExportedLine] = TypeAdapter(ExportedMemory)


@dataclass
class RestoreSummary:
    restored: int = 0
    skipped: int = 0
    invalid: list[InvalidLine] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)


def restore_lines(
    send: Callable[[ImportRequest], Restored],
    lines: Iterable[bytes],
    chunk: int = MAX_IMPORT_ITEMS,
    on_progress: Callable[[int], None] = lambda done: None,
    on_invalid: Callable[[InvalidLine], None] = lambda line: None,
) -> RestoreSummary:
    """Send the exported memories of `lines` in chunks of `chunk` (`send` runs the import operation)."""
    summary = RestoreSummary()

    def restored(answer: Restored) -> None:
        summary.restored += answer.restored
        summary.skipped += answer.skipped
        summary.ids += answer.ids

    def reject(line: InvalidLine) -> None:
        summary.invalid.append(line)
        on_invalid(line)

    send_lines(lines, parse_exported, lambda items: send(ImportRequest(items=items)), chunk, restored, reject,
               on_progress)  # fmt: skip
    return summary


def parse_exported(raw: bytes) -> ExportedLine:
    """The exported memory a line holds; LineError, naming the field, if it holds none."""
    try:
        return _LINE.validate_json(raw)
    except ValidationError as exc:
        raise LineError(describe(exc)) from None
