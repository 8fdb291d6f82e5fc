"""Export and import: a namespace's memories as lines of JSON (newest first, superseded facts and history
included), and those lines restored elsewhere, idempotently.

Export reads the store a page at a time (`export_page`): a caller streams a namespace of any size by asking for
the next page with the cursor the last one gave, holding one page at a time. Import restores each memory as it was
(id, times, provenance, version, history), in the importing namespace, held to what a write may give (strict
JSON types, counts from 0, confidence and importance within 0 to 1, versions and times in range, ids and labels as a
write takes them: `check_restorable`; a line that breaks them refuses the request, naming the field), under the
content rules of a write, every string redacted on the path every request takes (its history's too), embedded
again by this embedder; a memory whose id is already stored is skipped, so an import repeats safely.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Protocol

from pydantic import TypeAdapter, ValidationError

from rearview.clock import SystemClock
from rearview.domain.changes import ChangeSet
from rearview.domain.history import ArchivedVersion
from rearview.domain.listing import PagePosition
from rearview.domain.memory import Memory
from rearview.domain.metadata import check_metadata
from rearview.domain.namespaces import validate_namespace
from rearview.domain.search import MemoryFilter
from rearview.domain.transfer import (
    MAX_IMPORT_ITEMS,
    ExportedEpisode,
    ExportedFact,
    ExportedMemory,
    ExportPage,
    ImportRequest,
    ImportResult,
    RestoreProblem,
    check_restorable,
    exported,
    split_exported,
)
from rearview.errors import InvalidInput, StorageFull
from rearview.ports import Clock, Embedder, MemoryManagement, MemoryReader, MemoryUsage, MemoryWriter, WriteQueue
from rearview.service.content_rules import check_content
from rearview.service.manage.edit import embedding_text
from rearview.service.redaction import redact_request

logger = logging.getLogger(__name__)


class TransferStore(MemoryReader, MemoryWriter, MemoryManagement, MemoryUsage, Protocol):
    """What export and import ask of the store: pages of memories with their history (the access counts settled
    first), and restores applied."""


# What one export page holds at most: a Lambda response stays under its 6 MB limit.
EXPORT_PAGE_ITEMS = 2000
EXPORT_PAGE_BYTES = 4 * 1024 * 1024
_STORE_PAGE = 200
_EVERYTHING = MemoryFilter(include_superseded=True)
_LINE = TypeAdapter(ExportedMemory)


def parse_import(body: str, ndjson: bool) -> ImportRequest:
    """The import request in a body: JSON `{items: [...]}`, or (ndjson) one export line per line. InvalidInput
    names the item (`items.<n>`, lines counted from 0) and the field."""
    if not ndjson:
        try:
            return ImportRequest.model_validate_json(body, strict=True)
        except ValidationError as exc:
            raise _invalid(exc, ()) from None
    lines = [line for line in body.splitlines() if line.strip()]
    if not lines:
        raise InvalidInput("body: no lines to import", field="body")
    if len(lines) > MAX_IMPORT_ITEMS:
        raise InvalidInput(f"body: at most {MAX_IMPORT_ITEMS} lines (got {len(lines)})", field="body")
    items = []
    for i, line in enumerate(lines):
        try:
            items.append(_LINE.validate_json(line, strict=True))
        except ValidationError as exc:
            raise _invalid(exc, ("items", i)) from None
    return ImportRequest(items=items)


def _invalid(exc: ValidationError, prefix: tuple[str | int, ...]) -> InvalidInput:
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        where = ".".join(str(p) for p in prefix) or "body"
        return InvalidInput(f"{where}: malformed JSON", field=where)
    # The union's tag (`episodic`, `semantic`) names no field of the caller's.
    loc = [*prefix, *(p for p in first["loc"] if p not in ("episodic", "semantic"))]
    where = ".".join(str(p) for p in loc) or "body"
    return InvalidInput(f"{where}: {first['msg']}", field=where)


class TransferService:
    def __init__(
        self, store: TransferStore, embedder: Embedder, clock: Clock | None = None, queue: WriteQueue | None = None
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._clock: Clock = clock or SystemClock()
        # Where writes are queued (the AWS write function), an import is checked and redacted here, then restored by
        # the queue's worker in chunks: embedding a thousand memories does not fit in one request's time.
        self._queue = queue

    def export_page(self, namespace: str, cursor: str | None = None, max_items: int | None = None) -> ExportPage:
        """Up to `max_items` (EXPORT_PAGE_ITEMS) export lines and EXPORT_PAGE_BYTES, newest first, from `cursor` on."""
        validate_namespace(namespace)
        max_items = max_items or EXPORT_PAGE_ITEMS
        after = PagePosition.decode(cursor) if cursor else None
        now = self._clock.now()
        if cursor is None:  # the access counts a store keeps apart, in the memories the export reads
            try:
                self._store.settle_access(namespace, now)
            except StorageFull as exc:  # counters only: a store that cannot write still exports what it holds
                logger.warning("export: the access counts of %s were not settled: %s", namespace, exc.message)
        # What expired is exported no more (the sweep deletes it; a page between cannot bring it back).
        everything = replace(_EVERYTHING, alive_at=now)
        lines: list[str] = []
        size = 0
        while len(lines) < max_items and size < EXPORT_PAGE_BYTES:
            wanted = min(_STORE_PAGE, max_items - len(lines))
            page = self._store.page_memories(namespace, everything, wanted, after)
            taken = 0
            for memory in page:
                history = self._store.history(namespace, memory.id) if memory.version > 1 else []
                line = exported(memory, history).model_dump_json()
                lines.append(line)
                size += len(line) + 1
                after = PagePosition.of(memory)
                taken += 1
                if size >= EXPORT_PAGE_BYTES:
                    break
            if len(page) < wanted and taken == len(page):
                return ExportPage(lines, None)
        more = after is not None and bool(self._store.page_memories(namespace, everything, 1, after))
        return ExportPage(lines, after.encode() if more and after else None)

    def restore(self, namespace: str, request: ImportRequest) -> ImportResult:
        """Restore the items into `namespace`; those whose id is stored already are skipped."""
        validate_namespace(namespace)
        memories: list[tuple[Memory, list[ArchivedVersion]]] = []
        seen: set[str] = set()
        for i, line in enumerate(request.items):
            if line.id in seen:
                raise InvalidInput(f"items.{i}.id: {line.id!r} appears twice", field=f"items.{i}.id")
            seen.add(line.id)
            memories.append(self._checked(namespace, i, line))
        if self._queue is not None:
            self._queue.send_restore(namespace, [exported(m, history) for m, history in memories])
            return ImportResult(namespace=namespace, restored=0, skipped=0, accepted=len(memories))
        stored = self._store.get_many(namespace, [m.id for m, _ in memories])
        fresh = [(m, h) for m, h in memories if m.id not in stored]
        if fresh:
            vectors = self._embedder.embed([embedding_text(m) for m, _ in fresh])
            changes = ChangeSet(
                upserts=[(m, vectors[i]) for i, (m, _) in enumerate(fresh)],
                restore=True,
                cause="import",
                archived=[a for _, history in fresh for a in history],
            )
            self._store.apply(namespace, changes)
        return ImportResult(
            namespace=namespace, restored=len(fresh), skipped=len(memories) - len(fresh), ids=[m.id for m, _ in fresh]
        )

    def _checked(
        self, namespace: str, i: int, line: ExportedEpisode | ExportedFact
    ) -> tuple[Memory, list[ArchivedVersion]]:
        """The memory and history of one line, checked as a write is, redacted, and moved into `namespace`."""
        where = f"items.{i}"
        memory, history = split_exported(line)
        _check(memory, where)
        for j, archived in enumerate(history):
            _check(archived.memory, f"{where}.history.{j}.memory")
        redacted, kinds = redact_request(line, where)
        memory, history = split_exported(redacted)
        memory = memory.model_copy(update={"namespace": namespace, "redacted": memory.redacted or bool(kinds)})
        kept = [
            a.model_copy(update={"memory": a.memory.model_copy(update={"namespace": namespace})})
            for a in history
            if a.memory.id == memory.id and a.version < memory.version
        ]
        return memory, kept


def _check(memory: Memory, where: str) -> None:
    """InvalidInput naming the field (under `where`) of a memory no write could have stored."""
    try:
        check_restorable(memory)
    except RestoreProblem as problem:
        raise InvalidInput(f"{where}.{problem.field}: {problem.reason}", field=f"{where}.{problem.field}") from None
    check_content(memory.content, memory.layer, field=f"{where}.content")
    try:
        check_metadata(memory.metadata)
    except ValueError as exc:
        raise InvalidInput(f"{where}.metadata: {exc}", field=f"{where}.metadata") from None
