"""Export and import: a namespace's memories as lines of JSON (newest first, superseded facts and history
included), and those lines restored elsewhere, idempotently.

Export reads the store a page at a time (`export_page`): a caller streams a namespace of any size by asking for
the next page with the cursor the last one gave, holding one page at a time. Import restores each memory as it was
(id, times, provenance, version, history), in the importing namespace, under the content rules of a write (a line
whose text breaks them refuses the request; a secret in it is redacted), embedded again by this embedder; a
memory whose id is already stored is skipped, so an import repeats safely.
"""

from __future__ import annotations

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
    exported,
    split_exported,
)
from rearview.errors import InvalidInput
from rearview.ports import Clock, Embedder, MemoryManagement, MemoryReader, MemoryWriter
from rearview.service.content_rules import check_content, redact_secrets
from rearview.service.manage.edit import embedding_text
from rearview.service.redaction import redact_json


class TransferStore(MemoryReader, MemoryWriter, MemoryManagement, Protocol):
    """What export and import ask of the store: pages of memories with their history, and restores applied."""


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
            return ImportRequest.model_validate_json(body)
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
            items.append(_LINE.validate_json(line))
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
    def __init__(self, store: TransferStore, embedder: Embedder, clock: Clock | None = None) -> None:
        self._store = store
        self._embedder = embedder
        self._clock: Clock = clock or SystemClock()

    def export_page(self, namespace: str, cursor: str | None = None, max_items: int | None = None) -> ExportPage:
        """Up to `max_items` (EXPORT_PAGE_ITEMS) export lines and EXPORT_PAGE_BYTES, newest first, from `cursor` on."""
        validate_namespace(namespace)
        max_items = max_items or EXPORT_PAGE_ITEMS
        after = PagePosition.decode(cursor) if cursor else None
        # What expired is exported no more (the sweep deletes it; a page between cannot bring it back).
        everything = replace(_EVERYTHING, alive_at=self._clock.now())
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
        """The memory and history of one line, moved into `namespace`, content-checked and redacted."""
        memory, history = split_exported(line)
        memory = _moved(memory, namespace, f"items.{i}.content")
        kept = [
            a.model_copy(update={"memory": _moved(a.memory, namespace, f"items.{i}.history.{j}.memory.content")})
            for j, a in enumerate(history)
            if a.memory.id == memory.id and a.version < memory.version
        ]
        return memory, kept


def _moved(memory: Memory, namespace: str, field: str) -> Memory:
    """The memory in `namespace`, checked as a write is (its text, its metadata's limits) and redacted (its text,
    source and metadata)."""
    check_content(memory.content, memory.layer, field=field)
    where = field.rsplit(".", 1)[0]
    try:
        check_metadata(memory.metadata)
    except ValueError as exc:
        raise InvalidInput(f"{where}.metadata: {exc}", field=f"{where}.metadata") from None
    redaction = redact_secrets(memory.content)
    source = redact_secrets(memory.source) if memory.source is not None else None
    metadata, metadata_kinds = redact_json(memory.metadata) if memory.metadata else (memory.metadata, ())
    found = bool(redaction.kinds or (source and source.kinds) or metadata_kinds)
    return memory.model_copy(
        update={
            "namespace": namespace,
            "content": redaction.text,
            "source": source.text if source else None,
            "metadata": metadata,
            "redacted": memory.redacted or found,
        }
    )
