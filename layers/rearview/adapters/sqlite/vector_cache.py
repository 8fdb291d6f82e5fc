"""Vector caches: a namespace's vectors of one layer as a float32 matrix in this process, with the columns the
filters need beside it, so that vector search is an exact scan of memory rather than of the file."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from rearview.adapters.sqlite.connection import AppliedChanges, CachedRow, SqliteDatabase
from rearview.adapters.sqlite.rows import LAYERS, epoch
from rearview.domain.memory import StoredLayer
from rearview.domain.search import MemoryFilter


def normalised_rows(matrix: np.ndarray) -> np.ndarray:
    # einsum: several times faster than np.linalg.norm(axis=1) on a large float32 matrix.
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


class VectorCache:
    """The vectors of one (namespace, layer) with the columns filters need, as parallel arrays.

    Rows are ordered by `ref` (AUTOINCREMENT, so appends keep the order and searchsorted works). Deleted rows
    are tombstoned (`alive` False) rather than removed, so an in-place update never copies the matrix.
    """

    def __init__(self, layer: StoredLayer, dim: int, generation: int, capacity: int) -> None:
        self.layer = layer
        self.generation = generation
        self.lock = threading.Lock()
        self.size = 0
        self.dead = 0
        # Headroom, so the writes that follow a load append in place instead of copying the matrix at once.
        capacity = capacity + max(1024, capacity // 8)
        self.vectors = np.empty((capacity, dim), dtype=np.float32)
        self.refs = np.zeros(capacity, dtype=np.int64)
        self.times = np.zeros(capacity, dtype=np.float64)
        self.alive = np.zeros(capacity, dtype=bool)
        self.active = np.zeros(capacity, dtype=bool)
        self.consolidated = np.zeros(capacity, dtype=bool)
        self.sessions = np.full(capacity, -1, dtype=np.int32)
        self.event_types = np.full(capacity, -1, dtype=np.int32)
        # An episode's outcome status or a fact's kind, coded (the `outcomes` and `kinds` filters).
        self.labels = np.full(capacity, -1, dtype=np.int32)
        self.ids: list[str] = []
        self.position: dict[str, int] = {}
        self.session_codes: dict[str, int] = {}
        self.event_type_codes: dict[str, int] = {}
        self.label_codes: dict[str, int] = {}

    @staticmethod
    def _code(codes: dict[str, int], value: str | None) -> int:
        if value is None:
            return -1
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(codes)
        return code

    def _grow(self, needed: int) -> None:
        capacity = self.vectors.shape[0]
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity + capacity // 2)
        for name in (
            "vectors",
            "refs",
            "times",
            "alive",
            "active",
            "consolidated",
            "sessions",
            "event_types",
            "labels",
        ):
            old = getattr(self, name)
            fill = -1 if name in ("sessions", "event_types", "labels") else 0
            new = (
                np.empty((new_capacity, *old.shape[1:]), dtype=old.dtype)
                if name == "vectors"
                else np.full(new_capacity, fill, dtype=old.dtype)
            )
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def load(self, rows: list[tuple[Any, ...]]) -> None:
        """Fill from (ref, id, time, active, consolidated, session_id, event_type, label, vector blob) rows."""
        rows.sort(key=lambda row: row[0])
        n = len(rows)
        self._grow(n)
        if n:
            matrix = np.frombuffer(b"".join(row[8] for row in rows), dtype="<f4").reshape(n, -1)
            self.vectors[:n] = normalised_rows(matrix)
            self.refs[:n] = [row[0] for row in rows]
            self.times[:n] = [row[2] for row in rows]
            self.active[:n] = [bool(row[3]) for row in rows]
            self.consolidated[:n] = [bool(row[4]) for row in rows]
            self.sessions[:n] = [self._code(self.session_codes, row[5]) for row in rows]
            self.event_types[:n] = [self._code(self.event_type_codes, row[6]) for row in rows]
            self.labels[:n] = [self._code(self.label_codes, row[7]) for row in rows]
            self.alive[:n] = True
        self.ids = [row[1] for row in rows]
        self.position = {memory_id: i for i, memory_id in enumerate(self.ids)}
        self.size = n

    def upsert(self, row: CachedRow) -> bool:
        """Apply one written row; False if it cannot be applied in place (the caller then reloads)."""
        position = self.position.get(row.id)
        if position is None:
            if row.vector is None:
                return True  # a memory without a vector is not vector-searchable
            if self.size and row.ref <= self.refs[self.size - 1]:
                return False  # an old row gaining its first vector: appending would break the ref order
            position = self.size
            self._grow(position + 1)
            self.size += 1
            self.ids.append(row.id)
            self.position[row.id] = position
            self.refs[position] = row.ref
        if row.vector is not None:
            self.vectors[position] = normalised_rows(row.vector.reshape(1, -1))[0]
        self.times[position] = row.time
        self.active[position] = row.active
        self.consolidated[position] = row.consolidated
        self.sessions[position] = self._code(self.session_codes, row.session_id)
        self.event_types[position] = self._code(self.event_type_codes, row.event_type)
        self.labels[position] = self._code(self.label_codes, row.label)
        self.alive[position] = True
        return True

    def delete(self, memory_id: str) -> None:
        position = self.position.pop(memory_id, None)
        if position is not None:
            self.alive[position] = False
            self.dead += 1

    def mask(self, flt: MemoryFilter, tagged_refs: np.ndarray | None) -> np.ndarray:
        """The rows (of the first `size`) that pass the filter, as a boolean array."""
        n = self.size
        if self.layer not in flt.matchable_layers():
            return np.zeros(n, dtype=bool)
        mask = self.alive[:n].copy()
        if self.layer == "semantic":
            self._keep_facts(mask, flt)
        else:
            self._keep_episodes(mask, flt)
        if flt.since is not None:
            mask &= self.times[:n] >= epoch(flt.since)
        if flt.until is not None:
            mask &= self.times[:n] < epoch(flt.until)
        if flt.ids is not None:
            chosen = np.zeros(n, dtype=bool)
            chosen[[self.position[i] for i in flt.ids if i in self.position]] = True
            mask &= chosen
        if tagged_refs is not None:
            mask &= _positions_mask(self.refs[:n], tagged_refs)
        return mask

    def _keep_facts(self, mask: np.ndarray, flt: MemoryFilter) -> None:
        """Narrow `mask` to the facts of the wanted kinds, active unless superseded ones are asked for."""
        if flt.kinds:
            mask &= self._coded_in(self.labels, self.label_codes, flt.kinds)
        if not flt.include_superseded:
            mask &= self.active[: self.size]

    def _keep_episodes(self, mask: np.ndarray, flt: MemoryFilter) -> None:
        """Narrow `mask` to the episodes of the wanted outcomes, session, event types and consolidation."""
        n = self.size
        if flt.outcomes:
            mask &= self._coded_in(self.labels, self.label_codes, flt.outcomes)
        if flt.session_id is not None:
            code = self.session_codes.get(flt.session_id)
            # A session no row holds has no code, and matches nothing.
            mask &= self.sessions[:n] == code if code is not None else False
        if flt.event_types:
            mask &= self._coded_in(self.event_types, self.event_type_codes, flt.event_types)
        if flt.consolidated is not None:
            mask &= self.consolidated[:n] == flt.consolidated

    def _coded_in(self, column: np.ndarray, codes: dict[str, int], values: Sequence[str]) -> np.ndarray:
        """The rows whose coded `column` holds one of `values` (a value never seen matches nothing)."""
        wanted = np.asarray([codes[v] for v in values if v in codes], dtype=np.int32)
        return np.isin(column[: self.size], wanted)

    def search(self, query: np.ndarray, mask: np.ndarray, limit: int) -> list[tuple[float, str]]:
        """Top `limit` (cosine, id) among the masked rows, best first."""
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        # When most rows pass, one product over the contiguous block beats gathering the rows first.
        dense = rows.size * 2 >= self.size
        scores = (self.vectors[: self.size] @ query)[rows] if dense else self.vectors[rows] @ query
        k = min(limit, scores.size)
        top = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(float(scores[i]), self.ids[int(rows[i])]) for i in top]

    def search_many(self, queries: np.ndarray, mask: np.ndarray, limit: int) -> list[list[tuple[float, str]]]:
        """`search` for each row of `queries`, with one matrix product for all of them."""
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return [[] for _ in range(queries.shape[0])]
        scores = self.vectors[rows] @ queries.T  # (rows, queries)
        k = min(limit, rows.size)
        if k < rows.size:
            top = np.argpartition(-scores, k - 1, axis=0)[:k]  # (k, queries), unordered
        else:
            top = np.broadcast_to(np.arange(rows.size)[:, None], (rows.size, scores.shape[1]))
        top_scores = np.take_along_axis(scores, top, axis=0)
        order = np.argsort(-top_scores, axis=0, kind="stable")
        top = np.take_along_axis(top, order, axis=0)
        top_scores = np.take_along_axis(top_scores, order, axis=0)
        return [
            [(float(top_scores[r, q]), self.ids[int(rows[top[r, q]])]) for r in range(k)]
            for q in range(scores.shape[1])
        ]


def _positions_mask(sorted_refs: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Boolean mask of the entries of `sorted_refs` that occur in `refs`."""
    chosen = np.zeros(sorted_refs.size, dtype=bool)
    if refs.size == 0 or sorted_refs.size == 0:
        return chosen
    positions = np.searchsorted(sorted_refs, refs)
    inside = positions < sorted_refs.size
    positions = positions[inside]
    hits = sorted_refs[positions] == refs[inside]
    chosen[positions[hits]] = True
    return chosen


_CACHE_QUERY: dict[str, str] = {
    "episodic": (
        "SELECT ref, id, occurred_at, 1, consolidated, session_id, event_type, outcome_status, vector FROM episodes "
        "WHERE namespace = ? AND vector IS NOT NULL"
    ),
    "semantic": (
        "SELECT ref, id, last_confirmed_at, status = 'active', 0, NULL, NULL, kind, vector FROM facts "
        "WHERE namespace = ? AND vector IS NOT NULL"
    ),
}


class VectorCaches:
    """The vector caches of one database, by (namespace, layer).

    Each is loaded on first use and loaded again once its namespace's generation has moved past it, so writes by
    other processes are seen; writes made through a SqliteMemoryStore on the same SqliteDatabase object update it
    in place (their change notices), without reload. At most `max_vectors` vectors stay cached, least recently
    used namespaces evicted first.
    """

    def __init__(self, db: SqliteDatabase, max_vectors: int) -> None:
        self.db = db
        self.max_vectors = max_vectors
        self._caches: OrderedDict[tuple[str, str], VectorCache] = OrderedDict()
        self._lock = threading.Lock()
        db.subscribe(self._on_applied)

    def get(self, namespace: str, layer: StoredLayer, generation: int) -> VectorCache:
        """The cache of (namespace, layer), loaded again if it predates `generation`."""
        key = (namespace, layer)
        with self._lock:
            cache = self._caches.get(key)
            if cache is not None and cache.generation >= generation:
                self._caches.move_to_end(key)
                return cache
            cache = self._load(namespace, layer)
            self._caches.pop(key, None)
            if cache.size <= self.max_vectors:
                self._caches[key] = cache
                self._evict(keep=key)
            # else: larger than the whole budget; used for this search and dropped.
            return cache

    def _load(self, namespace: str, layer: StoredLayer) -> VectorCache:
        with self.db.snapshot() as conn:
            generation = self.db.generation(namespace, conn)
            rows = conn.execute(_CACHE_QUERY[layer], (namespace,)).fetchall()
        cache = VectorCache(layer, self.db.dim, generation, capacity=len(rows))
        cache.load(rows)
        return cache

    def _evict(self, keep: tuple[str, str]) -> None:
        total = sum(cache.size for cache in self._caches.values())
        for key in list(self._caches):
            if total <= self.max_vectors:
                break
            if key == keep:
                continue
            total -= self._caches.pop(key).size

    def vector_count(self) -> int:
        """How many vectors the caches hold now."""
        with self._lock:
            return sum(cache.size for cache in self._caches.values())

    def _on_applied(self, changes: AppliedChanges) -> None:
        with self._lock:
            for layer in LAYERS:
                key = (changes.namespace, layer)
                cache = self._caches.get(key)
                if cache is None:
                    continue
                with cache.lock:
                    if cache.generation >= changes.generation_after:
                        continue  # reloaded after the commit: already includes the change
                    if cache.generation != changes.generation_before:
                        del self._caches[key]  # missed another writer's change: reload on next use
                        continue
                    rows = sorted((r for r in changes.upserted if r.layer == layer), key=lambda r: r.ref)
                    if not all(cache.upsert(row) for row in rows):
                        del self._caches[key]
                        continue
                    for deleted_layer, memory_id in changes.deleted:
                        if deleted_layer == layer:
                            cache.delete(memory_id)
                    cache.generation = changes.generation_after
                    # Too many tombstones: a reload compacts them.
                    if cache.dead > max(1024, cache.size // 4):
                        del self._caches[key]
            if self._caches:
                self._evict(keep=next(reversed(self._caches)))
