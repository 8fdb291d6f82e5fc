"""Listing: a namespace's memories page by page, newest first; and the namespaces a caller may see."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from rearview.domain.access import ALL_NAMESPACES, Principal
from rearview.domain.erase import NamespaceInfo, NamespaceList
from rearview.domain.listing import TEXT_SCAN_LIMIT, ListQuery, MemoryPage, PagePosition
from rearview.domain.memory import Memory
from rearview.domain.metadata import filter_terms
from rearview.domain.namespaces import validate_namespace
from rearview.domain.search import MemoryFilter, searchable_text
from rearview.errors import InvalidInput, NotFound
from rearview.ports import Clock, MemoryManagement, MemoryReader, MemoryUsage


def unexpired(memory: Memory | None, namespace: str, memory_id: str, now: datetime) -> Memory:
    """The memory read by id, unless there is none or it expired by `now` (NotFound either way: an expired memory is
    gone for every caller, whether the sweep has deleted it yet or not)."""
    if memory is None or memory.expired(now):
        raise NotFound(f"memory {memory_id!r} not found in namespace {namespace!r}", field="id")
    return memory


class ListingStore(MemoryReader, MemoryManagement, MemoryUsage, Protocol):
    """What listing asks of the store: a memory, pages of memories, the namespaces, and their counts."""


# The most namespaces one listing returns (each is counted).
MAX_NAMESPACES = 1000
# The store pages a text-filtered listing reads, up to TEXT_SCAN_LIMIT memories in all.
TEXT_SCAN_BATCH = 500


def query_filter(query: ListQuery, now: datetime | None = None) -> MemoryFilter:
    """The store filter a listing query stands for, leaving out what expired by `now`."""
    if query.since and query.until and query.since >= query.until:
        raise InvalidInput("since: must be before until", field="since")
    if query.layer == "semantic" and query.event_type:
        raise InvalidInput("event_type: only episodic memories have an event type", field="event_type")
    if query.layer == "episodic" and query.kind:
        raise InvalidInput("kind: only semantic memories have a kind", field="kind")
    return MemoryFilter(
        layers=(query.layer,) if query.layer else ("episodic", "semantic"),
        since=query.since,
        until=query.until,
        tags=(query.tag,) if query.tag else (),
        event_types=(query.event_type,) if query.event_type else (),
        kinds=(query.kind,) if query.kind else (),
        include_superseded=query.include_superseded,
        entities=(query.entity,) if query.entity else (),
        metadata=filter_terms(query.metadata),
        alive_at=now,
    )


def narrowed_prefix(prefix: str, scope: str | None) -> str | None:
    """The prefix to ask the store for: the longer of `prefix` and `scope` when one starts the other, else None
    (nothing under `scope` starts with `prefix`)."""
    if scope is None or scope.startswith(prefix):
        return prefix if scope is None else scope
    return prefix if prefix.startswith(scope) else None


class ListingService:
    def __init__(self, store: ListingStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def page(self, namespace: str, query: ListQuery) -> MemoryPage:
        """One page of the namespace's memories, newest first, and the cursor of the next (None on the last)."""
        validate_namespace(namespace)
        flt = query_filter(query, self._clock.now())
        after = PagePosition.decode(query.cursor) if query.cursor else None
        if query.text is not None:
            return self._text_page(namespace, flt, query.text, query.limit, after)
        found = self._store.page_memories(namespace, flt, query.limit + 1, after)
        items = found[: query.limit]
        more = len(found) > query.limit
        return MemoryPage(items=items, next_cursor=PagePosition.of(items[-1]).encode() if more else None)

    def _text_page(
        self, namespace: str, flt: MemoryFilter, text: str, limit: int, after: PagePosition | None
    ) -> MemoryPage:
        """Up to `limit` memories holding `text` (ignoring case), read newest first from `after` until the page is
        full or TEXT_SCAN_LIMIT memories were read; the cursor goes on from the last one read."""
        wanted = text.casefold()
        items: list[Memory] = []
        scanned = 0
        while scanned < TEXT_SCAN_LIMIT:
            asked = min(TEXT_SCAN_BATCH, TEXT_SCAN_LIMIT - scanned)
            batch = self._store.page_memories(namespace, flt, asked, after)
            for memory in batch:
                scanned += 1
                after = PagePosition.of(memory)
                if wanted in searchable_text(memory).casefold():
                    items.append(memory)
                    if len(items) == limit:
                        return MemoryPage(items=items, next_cursor=after.encode(), scanned=scanned)
            if len(batch) < asked:
                return MemoryPage(items=items, next_cursor=None, scanned=scanned)
        return MemoryPage(items=items, next_cursor=after.encode() if after else None, scanned=scanned)

    def memory(self, namespace: str, memory_id: str) -> Memory:
        """One memory (episode or fact) by id; NotFound when the namespace holds none of that id (or it expired)."""
        return unexpired(self._store.get(namespace, memory_id), namespace, memory_id, self._clock.now())

    def namespaces_of(self, caller: Principal, prefix: str | None = None) -> NamespaceList:
        """The namespaces `caller` may see (its key's scope and under), optionally under `prefix`, with counts."""
        scope = None if caller.scope == ALL_NAMESPACES else caller.scope
        return self.namespaces(caller.reaches, prefix, scope)

    def namespaces(
        self, visible: Callable[[str], bool], prefix: str | None = None, scope: str | None = None
    ) -> NamespaceList:
        """The namespaces holding memory that start with `prefix` and that `visible` lets the caller see, with
        their counts, in name order. `scope` (a key's namespace; None for every one) narrows what the store is
        asked for, so a tenant's key never reads the other tenants' names."""
        if prefix is not None and len(prefix) > 300:
            raise InvalidInput("prefix: at most 300 characters", field="prefix")
        asked = narrowed_prefix(prefix or "", scope)
        if asked is None:
            return NamespaceList(namespaces=[], truncated=False)
        names = [n for n in self._store.list_namespaces(asked) if visible(n)]
        now = self._clock.now()
        listed: list[NamespaceInfo] = []
        for name in names[:MAX_NAMESPACES]:
            usage = self._store.usage(name, now)
            listed.append(
                NamespaceInfo(
                    namespace=name,
                    episodic=usage.episodic,
                    semantic=usage.semantic_active,
                    semantic_superseded=usage.semantic_superseded,
                    last_write_at=usage.last_write_at,
                )
            )
        return NamespaceList(namespaces=listed, truncated=len(names) > MAX_NAMESPACES)
