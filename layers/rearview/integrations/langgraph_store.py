"""LangGraph's long-term memory store (`BaseStore`) over Rearview's HTTP API: a graph compiled with
`store=RearviewStore(...)` keeps what its nodes `put` in Rearview and finds it with Rearview's recall.

```python
from rearview.client import RearviewClient
from rearview.integrations.langgraph_store import RearviewStore

store = RearviewStore(RearviewClient("http://127.0.0.1:8765", token=None), namespace="acme")
store.put(("users", "u-42", "memories"), "seat", {"text": "Prefers aisle seats on long flights"})
store.search(("users", "u-42"), query="where does the user sit?")
```

How an item is kept (the names: `rearview.integrations.langgraph_names`):

- an item is an episode of the namespace its tuple names, whose id is its key, whose **metadata is its value** (as
  given, within Rearview's metadata limits: a JSON object of at most 4 KiB), tagged `langgraph`; its content is the
  text recall searches: the text at the index's `fields` (the store's `index={"fields": [...]}` or the put's
  `index=[...]`; by default every string in the value), cut to an episode's 2,000 characters, or the key when the
  value holds no text or `index=False`;
- `put` of a new key imports that episode as it is (no merge into a near-duplicate, no importance skip: a store
  answers `get` after `put`), `put` of a key that exists edits it (its version + 1, the old value in its history),
  `put(..., None)` and `delete` forget it; `ttl` (minutes) sets when Rearview forgets it;
- `search` with a `query` is Rearview's recall (keywords and meaning, decayed, honest: a query nothing is relevant
  to finds nothing) in each namespace under the prefix, merged by score; without a query, the items newest first.
  A `filter` on top-level values is matched by Rearview; every filter (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`,
  dotted paths) is checked again here on what comes back;
- `list_namespaces` lists the Rearview namespaces under the base, as tuples.

What Rearview does to every write applies: secrets in a value are redacted, and a text that is a raw JSON or code
dump is refused. An item's `updated_at` is when its key was first put (an edit keeps a memory's time; its history
has every change). `abatch` runs `batch` in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from rearview.client import RearviewClient
from rearview.domain.limits import MAX_EPISODE_CHARS, MAX_TOP_K
from rearview.domain.listing import MAX_PAGE, ListQuery
from rearview.domain.memory import Memory
from rearview.domain.recall import RecallHit, RecallQuery
from rearview.errors import NotFound
from rearview.integrations import langgraph_filters
from rearview.integrations.langgraph_names import NameTooLong, key_of, labels_of, memory_id_of, namespace_of

# The tag of every memory the store writes: its searches and listings read those alone.
STORE_TAG = "langgraph"


class RearviewStore(BaseStore):
    """LangGraph's `BaseStore` over a Rearview server (see the module's docstring for the mapping)."""

    supports_ttl = True

    def __init__(self, client: RearviewClient, namespace: str | None = None, *, index: IndexConfig | None = None):
        """`namespace`: the Rearview namespace the store's tuples live under (None: a tuple is a whole namespace,
        its first label the tenant). `index`: only its `fields` are read (Rearview embeds with its own model)."""
        self.client = client
        self.base = namespace
        self.fields = [tokenize_path(f) for f in (index or {}).get("fields") or ["$"]]

    # --- the interface

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # --- the operations

    def _namespace(self, labels: tuple[str, ...]) -> str:
        try:
            return namespace_of(self.base, labels)
        except NameTooLong as exc:
            raise InvalidNamespaceError(str(exc)) from None

    def _get(self, op: GetOp) -> Item | None:
        namespace = self._namespace(op.namespace)
        try:
            memory = self.client.get(namespace, memory_id_of(op.key))
        except NotFound:
            return None
        return _item(op.namespace, memory) if STORE_TAG in memory.tags else None

    def _put(self, op: PutOp) -> None:
        namespace, memory_id = self._namespace(op.namespace), memory_id_of(op.key)
        if op.value is None:
            with contextlib.suppress(NotFound):
                self.client.delete(namespace, memory_id)
            return
        value = dict(op.value)
        text = self._text(op.key, value, op.index)
        expires = datetime.now(UTC) + timedelta(minutes=op.ttl) if op.ttl is not None else None
        now = datetime.now(UTC).isoformat()
        line = {"id": memory_id, "namespace": namespace, "layer": "episodic", "content": text, "occurred_at": now,
                "created_at": now, "tags": [STORE_TAG], "metadata": value}  # fmt: skip
        if expires is not None:
            line["expires_at"] = expires.isoformat()
        if self.client.import_memories(namespace, [line]).restored:
            return
        changes: dict[str, Any] = {"content": text, "metadata": value}
        if op.ttl is not None:
            changes["ttl_seconds"] = max(1, round(op.ttl * 60))
        self.client.edit(namespace, memory_id, **changes)

    def _text(self, key: str, value: Mapping[str, Any], index: Any) -> str:
        """The text recall searches for an item: what the index's fields hold, else the key."""
        if index is False:
            return key
        paths = [tokenize_path(f) for f in index] if isinstance(index, list) else self.fields
        texts = [t for path in paths for t in get_text_at_path(value, path) if t.strip()]
        if paths == [["$"]] or not texts:
            texts = [t for t in _strings(value) if t.strip()] or texts
        text = "\n".join(texts).strip() or key
        return text if len(text) <= MAX_EPISODE_CHARS else text[:MAX_EPISODE_CHARS].rsplit(None, 1)[0]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = op.offset + op.limit
        pushed = langgraph_filters.pushed_down(op.filter)
        found: list[SearchItem] = []
        for namespace, labels in self._namespaces_under(op.namespace_prefix):
            if op.query:
                top_k = min(MAX_TOP_K, max(wanted, 1))
                query = RecallQuery(query=op.query, top_k=top_k, tags=[STORE_TAG], metadata=pushed or None)
                hits = self.client.recall(namespace, query).results
                found += [_search_item(labels, hit) for hit in hits if key_of(hit.id) is not None]
            else:
                found += [_search_item(labels, m) for m in self._listed(namespace, pushed, op.filter, wanted)]
        found = [item for item in found if langgraph_filters.matches(op.filter, item.value)]
        if op.query:
            found.sort(key=lambda item: -(item.score or 0.0))
        else:
            found.sort(key=lambda item: (item.updated_at, item.key), reverse=True)
        return found[op.offset : op.offset + op.limit]

    def _listed(
        self, namespace: str, pushed: dict[str, Any], full: Mapping[str, Any] | None, wanted: int
    ) -> list[Memory]:
        """The namespace's items newest first, until `wanted` of them match the whole filter (or none are left)."""
        query = ListQuery(tag=STORE_TAG, limit=MAX_PAGE, metadata=pushed or None)
        kept: list[Memory] = []
        while len(kept) < wanted:
            page = self.client.list_memories(namespace, query)
            kept += [m for m in page.items if key_of(m.id) is not None and langgraph_filters.matches(full, _value(m))]
            if page.next_cursor is None:
                break
            query = query.model_copy(update={"cursor": page.next_cursor})
        return kept

    def _namespaces_under(self, prefix: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
        """The Rearview namespaces whose tuples start with `prefix` (and hold memory), with their tuples."""
        listed = self.client.list_namespaces(prefix=self.base or None).namespaces
        found = []
        for entry in listed:
            labels = labels_of(self.base, entry.namespace)
            if labels is not None and labels[: len(prefix)] == prefix:
                found.append((entry.namespace, labels))
        return sorted(found)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        tuples = sorted({labels for _, labels in self._namespaces_under(())})
        for condition in op.match_conditions or ():
            tuples = [t for t in tuples if langgraph_filters.namespace_matches(t, condition)]
        if op.max_depth is not None:
            tuples = sorted({t[: op.max_depth] for t in tuples})
        return tuples[op.offset : op.offset + op.limit]


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value, depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, Sequence):
        return [s for v in value for s in _strings(v)]
    return []


def _value(found: Memory | RecallHit) -> dict[str, Any]:
    """An item's value: its memory's metadata."""
    return dict(found.metadata)


def _item(labels: tuple[str, ...], memory: Memory) -> Item:
    key = key_of(memory.id) or memory.id
    return Item(value=_value(memory), key=key, namespace=labels, created_at=memory.created_at,
                updated_at=memory.occurred_at)  # fmt: skip


def _search_item(labels: tuple[str, ...], found: Memory | RecallHit) -> SearchItem:
    score = found.score if isinstance(found, RecallHit) else None
    created = found.occurred_at if isinstance(found, RecallHit) else found.created_at
    return SearchItem(namespace=labels, key=key_of(found.id) or found.id, value=_value(found),
                      created_at=created, updated_at=found.occurred_at, score=score)  # fmt: skip
