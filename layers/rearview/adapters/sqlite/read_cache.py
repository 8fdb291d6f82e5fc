"""What the store read recently, kept per (namespace, id) with the namespace's generation it was read at: recall
reads the same few dozen candidates' rows and vectors query after query, and turning a row into a memory (or a
blob into an array) cost more than finding it.

An entry serves a read only at the generation it was read at: every change set bumps the namespace's generation in
its own transaction (`namespace_state`), so a row of the same generation is the row as it is, whichever process
wrote it. The one thing that changes a row without a new generation is the fold of the access log (its two access
columns, `access_log`): a cached memory is kept with the access columns it was read with, and the store reads those
two columns afresh on every read (see `SqliteMemoryStore.get_many`).

Readers get copies (a memory's own dict and its lists, an array's own buffer): a caller may change what it got,
as with a row read afresh. Both caches are bounded by entries, least recently used out first."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Generic, NamedTuple, TypeVar

from pydantic import BaseModel

from rearview.domain.memory import Episode, Memory

# About 2-3 KB a memory (its texts and lists) and 1.5-2 KB a vector at 384-512 dimensions: ~25 MB and ~8 MB at
# most, enough for the candidates of thousands of recalls.
MEMORIES_CACHED = 8_192
VECTORS_CACHED = 4_096

_V = TypeVar("_V")
_new = object.__new__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


class CachedMemory(NamedTuple):
    """A memory as read, with the access columns of its row (an epoch for last_accessed_at) at that read."""

    memory: Memory
    access_count: int
    last_accessed: float | None


class GenerationCache(Generic[_V]):
    """Values by (namespace, id), each with the generation it was read at; at most `capacity` of them."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple[str, str], tuple[int, _V]] = OrderedDict()
        self._lock = threading.Lock()

    def found(self, namespace: str, generation: int, ids: Iterable[str]) -> dict[str, _V]:
        """The values of `ids` read at `generation` (the others are absent), each now the most recently used."""
        out: dict[str, _V] = {}
        entries = self._entries
        with self._lock:
            for memory_id in ids:
                key = (namespace, memory_id)
                entry = entries.get(key)
                if entry is not None and entry[0] == generation:
                    entries.move_to_end(key)
                    out[memory_id] = entry[1]
        return out

    def keep(self, namespace: str, generation: int, values: dict[str, _V]) -> None:
        """Remember `values` (by id) as read at `generation`."""
        if not values or self.capacity <= 0:
            return
        entries = self._entries
        with self._lock:
            for memory_id, value in values.items():
                key = (namespace, memory_id)
                entries[key] = (generation, value)
                entries.move_to_end(key)
            while len(entries) > self.capacity:
                entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def copied(memory: Memory, access: dict[str, Any] | None = None) -> Memory:
    """A copy of a memory built from one of our rows (its fields set directly, as `rows._trusted` does), with its
    own dict and its own lists (and facets, evidence and metadata), so that changing it leaves the cached one as it was;
    `access` replaces fields (the access columns read afresh). Through the slots' descriptors: `model_copy` took
    twice as long, and recall copies dozens a query."""
    model = _new(memory.__class__)
    fields = model.__dict__
    fields.update(memory.__dict__)
    fields["tags"] = list(memory.tags)
    fields["entities"] = list(memory.entities)
    if memory.metadata:
        # Metadata nests (the limits allow four levels): a deep copy, for the few memories that carry any.
        fields["metadata"] = copy.deepcopy(memory.metadata)
    else:
        fields["metadata"] = {}
    if isinstance(memory, Episode):
        fields["session_ids"] = list(memory.session_ids)
    else:
        fields["provenance"] = list(memory.provenance)
        fields["facets"] = dict(memory.facets)
        if memory.evidence is not None:
            fields["evidence"] = memory.evidence.model_copy()
    if access:
        fields.update(access)
    _set_fields_set(model, set(memory.__pydantic_fields_set__))
    _set_extra(model, memory.__pydantic_extra__)
    _set_private(model, memory.__pydantic_private__)
    return model
