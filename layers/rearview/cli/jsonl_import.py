"""Importing a JSONL file of episodes: one JSON object per line, written in batches through the write service
(`rearview import`) or loaded through the bulk path (`rearview load`, whose lines may carry a `vector`).

A line carries the MemoryWrite fields. So that conversation dumps such as LoCoMo's turns import as they are,
it may instead say `text` (content), `ts` or `timestamp` (occurred_at), `dia_id` (id) and `speaker` (added to
entities); other unknown keys are ignored and reported once. An invalid line is reported with its number and
skipped; the rest of its batch is still written.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, overload

from pydantic import ValidationError

from rearview.api.http_errors import MAX_BODY_BYTES
from rearview.domain.bulk_load import EpisodeLoad, LoadResult
from rearview.domain.write import MemoryWrite, WriteResult
from rearview.errors import InvalidInput

# Alternative key -> MemoryWrite field. A line may give one or the other, not both.
ALIASES: dict[str, str] = {"text": "content", "ts": "occurred_at", "timestamp": "occurred_at", "dia_id": "id"}
SPEAKER_KEY = "speaker"
# Summary key of a line whose id was stored before: the service answers "stored" (idempotent); nothing new is.
DUPLICATE_ID = "duplicate_id"
# The lines of one load request at most: a request's body is at most MAX_BODY_BYTES (1 MiB), and a line grows a
# little as a request (the fields it left to their defaults); about 120 lines with 384-dimensional vectors.
LOAD_REQUEST_BYTES = MAX_BODY_BYTES * 3 // 4
# The write service names an item of a batch `items.<index>.<field>` in its errors.
_BATCH_FIELD = re.compile(r"^items\.(\d+)\.?")
Item = TypeVar("Item")
Line = TypeVar("Line", bound=MemoryWrite)
Answer = TypeVar("Answer")


@dataclass(frozen=True)
class InvalidLine:
    line_no: int
    message: str


@dataclass
class ImportSummary:
    """What an import did: one count per write status, the invalid lines, and the keys it ignored."""

    counts: Counter[str] = field(default_factory=Counter)
    invalid: list[InvalidLine] = field(default_factory=list)
    ignored_keys: Counter[str] = field(default_factory=Counter)

    @property
    def lines(self) -> int:
        return sum(self.counts.values()) + len(self.invalid)


class BatchWriter(Protocol):
    """Where an import's batches go: the write service, or the server at --url."""

    def write_batch(self, namespace: str, items: Sequence[MemoryWrite]) -> list[WriteResult]: ...


class LineError(ValueError):
    """A line that cannot become a MemoryWrite; the message names the field."""


def describe(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'line'}: {e['msg']}" for e in exc.errors())


@overload
def parse_line(raw: bytes) -> tuple[MemoryWrite, list[str]]: ...
@overload
def parse_line(raw: bytes, model: type[Line]) -> tuple[Line, list[str]]: ...
def parse_line(raw: bytes, model: type[MemoryWrite] = MemoryWrite) -> tuple[MemoryWrite, list[str]]:
    """The MemoryWrite (or `model`) a line describes and the unknown keys it ignored. LineError if it is invalid."""
    obj = _json_object(raw)
    fields, ignored = _write_fields(obj, frozenset(model.model_fields) | frozenset(ALIASES) | {SPEAKER_KEY})
    if "content" not in fields:
        raise LineError("content: required (or text)")
    speaker = obj.get(SPEAKER_KEY)
    if speaker is not None:
        fields["entities"] = _entities_with_speaker(fields.get("entities", []), speaker)
    try:
        return model.model_validate(fields), ignored
    except ValidationError as exc:
        raise LineError(describe(exc)) from None


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineError(f"line: not UTF-8 (byte {exc.start})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LineError(f"line: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise LineError(f"line: must be a JSON object (got {type(obj).__name__})")
    return obj


def _write_fields(obj: dict[str, Any], known: frozenset[str]) -> tuple[dict[str, Any], list[str]]:
    """The MemoryWrite fields of a line's keys (aliases resolved; the speaker apart), and the keys ignored."""
    fields: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in obj.items():
        if key in ALIASES:
            target = ALIASES[key]
            if target in fields or target in obj:
                raise LineError(f"{key}: give {target} or {key}, not both")
            fields[target] = value
        elif key in known and key != SPEAKER_KEY:
            fields[key] = value
        elif key not in known:
            ignored.append(key)
    return fields, ignored


def _entities_with_speaker(entities: Any, speaker: Any) -> list[Any]:
    """The line's entities with its speaker among them."""
    if not isinstance(speaker, str):
        raise LineError("speaker: must be a string")
    if not isinstance(entities, list):
        raise LineError("entities: must be a list of strings")
    return entities if speaker in entities else [*entities, speaker]


def send_isolating_invalid(
    send: Callable[[list[Item]], Answer], batch: Sequence[tuple[int, Item]]
) -> tuple[Answer | None, list[InvalidLine]]:
    """Send a batch of numbered lines' items; an item the receiver rejects (`items.<i>...`) is reported against its
    line and the rest sent again. None when every item was rejected.

    A write or an import stores its batch whole or not at all; this keeps one bad line from losing its neighbours.
    """
    pending = list(batch)
    invalid: list[InvalidLine] = []
    while pending:
        try:
            return send([item for _, item in pending]), invalid
        except InvalidInput as exc:
            match = _BATCH_FIELD.match(exc.field or "")
            if match is None or int(match.group(1)) >= len(pending):
                raise  # not about one item (the namespace, say): the whole import is wrong
            line_no, _ = pending.pop(int(match.group(1)))
            invalid.append(InvalidLine(line_no, _BATCH_FIELD.sub("", exc.message, count=1)))
    return None, invalid


def send_lines(
    lines: Iterable[bytes],
    parse: Callable[[bytes], Item],
    send: Callable[[list[Item]], Answer],
    batch_size: int,
    on_answer: Callable[[Answer], None],
    on_invalid: Callable[[InvalidLine], None],
    on_progress: Callable[[int], None],
    max_bytes: int | None = None,
) -> None:
    """Parse every numbered line (`parse` raises LineError for a bad one) and send the items in batches of
    `batch_size` (and of at most `max_bytes` of lines), an item the receiver rejects reported against its line;
    `on_progress(n)` after n more lines."""
    pending: list[tuple[int, Item]] = []
    pending_bytes = 0

    def flush() -> None:
        answer, rejected = send_isolating_invalid(send, pending)
        for line in rejected:
            on_invalid(line)
        if answer is not None:
            on_answer(answer)
        on_progress(len(pending))
        pending.clear()

    for line_no, raw in enumerate(lines, start=1):
        if not raw.strip():
            on_progress(1)
            continue
        try:
            item = parse(raw)
        except LineError as exc:
            on_invalid(InvalidLine(line_no, str(exc)))
            on_progress(1)
            continue
        if pending and max_bytes is not None and pending_bytes + len(raw) > max_bytes:
            flush()
            pending_bytes = 0
        pending.append((line_no, item))
        pending_bytes += len(raw)
        if len(pending) >= batch_size:
            flush()
            pending_bytes = 0
    if pending:
        flush()


def import_lines(
    writer: BatchWriter,
    namespace: str,
    lines: Iterable[bytes],
    batch_size: int,
    on_progress: Callable[[int], None] = lambda done: None,
    on_invalid: Callable[[InvalidLine], None] = lambda line: None,
) -> ImportSummary:
    """Parse and write every line; `on_progress(n)` after n more lines, `on_invalid` per bad one."""
    summary = ImportSummary()

    def parse(raw: bytes) -> MemoryWrite:
        item, ignored = parse_line(raw)
        summary.ignored_keys.update(ignored)
        return item

    def written(results: list[WriteResult]) -> None:
        summary.counts.update(DUPLICATE_ID if result.reason == DUPLICATE_ID else result.status for result in results)

    def reject(line: InvalidLine) -> None:
        summary.invalid.append(line)
        on_invalid(line)

    send = functools.partial(writer.write_batch, namespace)
    send_lines(lines, parse, send, batch_size, written, reject, on_progress)
    return summary


@dataclass
class LoadSummary:
    """What a load did: the service's counts summed over its requests, the invalid lines, the keys it ignored."""

    loaded: int = 0
    skipped: int = 0
    low_importance: int = 0
    embedded: int = 0
    redacted: int = 0
    invalid: list[InvalidLine] = field(default_factory=list)
    ignored_keys: Counter[str] = field(default_factory=Counter)

    def add(self, result: LoadResult) -> None:
        self.loaded += result.loaded
        self.skipped += result.skipped
        self.low_importance += result.low_importance
        self.embedded += result.embedded
        self.redacted += result.redacted


def load_lines(
    send: Callable[[list[EpisodeLoad]], LoadResult],
    lines: Iterable[bytes],
    batch_size: int,
    on_progress: Callable[[int], None] = lambda done: None,
    on_invalid: Callable[[InvalidLine], None] = lambda line: None,
) -> LoadSummary:
    """Parse every line as an `EpisodeLoad` and `send` them in requests of `batch_size`; a line the service refuses
    is reported against its number and the rest of its request sent again."""
    summary = LoadSummary()

    def parse(raw: bytes) -> EpisodeLoad:
        item, ignored = parse_line(raw, EpisodeLoad)
        summary.ignored_keys.update(ignored)
        return item

    def reject(line: InvalidLine) -> None:
        summary.invalid.append(line)
        on_invalid(line)

    send_lines(lines, parse, send, batch_size, summary.add, reject, on_progress, max_bytes=LOAD_REQUEST_BYTES)
    return summary
