"""The vector caches of one database, by (namespace, layer): loaded a chunk at a time straight into preallocated
float16 arrays, kept within a byte budget, updated in place by the store's change notices, and given an HNSW
graph (`ann_index`) once a namespace's layer holds `ann_threshold` vectors, saved in `<data dir>/ann/`."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rearview.adapters.sqlite.ann_index import (
    AnnParams,
    HnswIndex,
    ann_available,
    remove_files,
    repair_of,
    should_rebuild,
)
from rearview.adapters.sqlite.connection import AppliedChanges, SqliteDatabase
from rearview.adapters.sqlite.rows import LAYERS
from rearview.adapters.sqlite.vector_cache import VectorCache
from rearview.domain.memory import StoredLayer

# Rows read per query while loading: the only part of a cache ever held as float32 blobs.
_LOAD_CHUNK = 4096

_REFS_QUERY: dict[str, str] = {
    # Covered by the (namespace, time) indexes: no row is read to list a namespace's refs.
    "episodic": "SELECT ref FROM episodes WHERE namespace = ?",
    "semantic": "SELECT ref FROM facts WHERE namespace = ?",
}
_ROWS_QUERY: dict[str, str] = {
    "episodic": (
        "SELECT ref, id, occurred_at, 1, consolidated, session_id, event_type, outcome_status, vector FROM episodes "
        "WHERE ref IN (SELECT value FROM json_each(?)) AND vector IS NOT NULL ORDER BY ref"
    ),
    "semantic": (
        "SELECT ref, id, last_confirmed_at, status = 'active', 0, NULL, NULL, kind, vector FROM facts "
        "WHERE ref IN (SELECT value FROM json_each(?)) AND vector IS NOT NULL ORDER BY ref"
    ),
}


@dataclass(frozen=True)
class VectorOptions:
    """The caches' byte budget; when a cache gets an HNSW graph, how it is built, and where it is saved (None:
    never saved). See IndexTuning in settings for the defaults."""

    max_bytes: int = 1_600_000_000
    ann_threshold: int = 20_000
    ann_params: AnnParams = AnnParams()
    ann_dir: Path | None = None
    # A graph is saved again once this share of its size has changed since the last save (and when evicted).
    save_share: float = 0.1

    @property
    def ann_enabled(self) -> bool:
        return self.ann_threshold > 0 and ann_available()

    def path(self, namespace: str, layer: StoredLayer) -> Path | None:
        if self.ann_dir is None:
            return None
        digest = hashlib.blake2b(namespace.encode("utf-8"), digest_size=16).hexdigest()
        return self.ann_dir / f"{digest}-{layer}.usearch"


class VectorCaches:
    """Each cache is loaded on first use and loaded again once its namespace's generation has moved past it, so
    writes by other processes are seen; writes made through a SqliteMemoryStore on the same SqliteDatabase object
    update it in place (their change notices), without reload. At most `max_bytes` stay cached, least recently used
    namespaces evicted first; a cache larger than that is searched and dropped.
    """

    def __init__(self, db: SqliteDatabase, options: VectorOptions) -> None:
        self.db = db
        self.max_bytes = options.max_bytes
        self.ann = options
        self._caches: OrderedDict[tuple[str, str], VectorCache] = OrderedDict()
        self._lock = threading.Lock()
        db.subscribe(self._on_applied)
        db.on_close(self.save_all)

    def get(self, namespace: str, layer: StoredLayer, generation: int) -> VectorCache:
        """The cache of (namespace, layer), loaded again if it predates `generation`."""
        key = (namespace, layer)
        with self._lock:
            cache = self._caches.get(key)
            if cache is not None and cache.generation >= generation:
                self._caches.move_to_end(key)
                return cache
            if cache is not None:
                self._drop(key)
            cache = self._load(namespace, layer)
            if cache.nbytes() <= self.max_bytes:
                self._caches[key] = cache
                self._evict(keep=key)
            # else: larger than the whole budget; used for this search and dropped.
            return cache

    def _load(self, namespace: str, layer: StoredLayer) -> VectorCache:
        with self.db.snapshot() as conn:
            generation = self.db.generation(namespace, conn)
            refs = np.fromiter((row[0] for row in conn.execute(_REFS_QUERY[layer], (namespace,))), dtype=np.int64)
            refs.sort()
            cache = VectorCache(layer, self.db.dim, generation, capacity=refs.size)
            for start in range(0, refs.size, _LOAD_CHUNK):
                chunk = "[" + ",".join(map(str, refs[start : start + _LOAD_CHUNK].tolist())) + "]"
                cache.append_loaded(conn.execute(_ROWS_QUERY[layer], (chunk,)).fetchall())
        if self.ann.ann_enabled and cache.alive_count >= self.ann.ann_threshold:
            cache.ann = self._graph_of(namespace, cache)
        return cache

    # the graphs

    def _graph_of(self, namespace: str, cache: VectorCache) -> HnswIndex:
        """The cache's graph: the saved one, checked and repaired, or one built now (and saved)."""
        path = self.ann.path(namespace, cache.layer)
        refs, vectors = cache.alive_rows()
        restored = HnswIndex.restore(path, cache.dim, self.ann.ann_params) if path is not None else None
        graph: HnswIndex | None = None
        if restored is not None:
            graph, stamp = restored
            # The same generation and size: nothing was written since it was saved, so its keys suffice.
            unchanged = stamp.get("generation") == cache.generation
            repair = repair_of(graph, refs, vectors, check_vectors=not unchanged)
            if should_rebuild(repair, refs.size):
                graph = None
            elif repair.size:
                graph.remove(repair.remove)
                graph.add(refs[repair.add], vectors[repair.add])
        if graph is None:
            graph = HnswIndex.build(cache.dim, self.ann.ann_params, refs, vectors)
            graph.changed_since_save = max(1, refs.size)
        if path is not None and graph.changed_since_save:
            graph.save(path, {"generation": cache.generation, "namespace_digest": path.stem})
        return graph

    def _save_if_due(self, namespace: str, cache: VectorCache, force: bool = False) -> None:
        graph = cache.ann
        path = self.ann.path(namespace, cache.layer)
        if graph is None or path is None or not graph.changed_since_save:
            return
        if force or graph.changed_since_save >= max(1000, int(len(graph) * self.ann.save_share)):
            try:
                graph.save(path, {"generation": cache.generation, "namespace_digest": path.stem})
            except OSError:
                remove_files(path)  # a half-written pair would only be rebuilt; a stale one is repaired

    def save_all(self) -> None:
        """Save every graph changed since its last save (the server's shutdown calls this)."""
        with self._lock:
            for (namespace, _), cache in self._caches.items():
                with cache.lock:
                    self._save_if_due(namespace, cache, force=True)

    # the budget

    def _drop(self, key: tuple[str, str]) -> None:
        cache = self._caches.pop(key)
        with cache.lock:
            self._save_if_due(key[0], cache, force=True)

    def _evict(self, keep: tuple[str, str]) -> None:
        total = sum(cache.nbytes() for cache in self._caches.values())
        for key in list(self._caches):
            if total <= self.max_bytes:
                break
            if key == keep:
                continue
            total -= self._caches[key].nbytes()
            self._drop(key)

    def vector_count(self) -> int:
        """How many vectors the caches hold now."""
        with self._lock:
            return sum(cache.size for cache in self._caches.values())

    def graph_count(self) -> int:
        with self._lock:
            return sum(cache.ann is not None for cache in self._caches.values())

    def cached_bytes(self) -> int:
        with self._lock:
            return sum(cache.nbytes() for cache in self._caches.values())

    # change notices

    def _on_applied(self, changes: AppliedChanges) -> None:
        with self._lock:
            for layer in LAYERS:
                key = (changes.namespace, layer)
                cache = self._caches.get(key)
                if cache is None:
                    continue
                with cache.lock:
                    keep = self._apply_in_place(cache, changes)
                if not keep:
                    self._drop(key)
            if self._caches:
                self._evict(keep=next(reversed(self._caches)))

    def _apply_in_place(self, cache: VectorCache, changes: AppliedChanges) -> bool:
        """Apply a committed change set to the cache; False if it must be loaded again instead."""
        if cache.generation >= changes.generation_after:
            return True  # reloaded after the commit: already includes the change
        if cache.generation != changes.generation_before:
            return False  # missed another writer's change
        rows = sorted((r for r in changes.upserted if r.layer == cache.layer), key=lambda r: r.ref)
        if not all(cache.upsert(row) for row in rows):
            cache.unsynced = []
            return False
        cache.sync_graph()
        for deleted_layer, memory_id in changes.deleted:
            if deleted_layer == cache.layer:
                cache.delete(memory_id)
        cache.generation = changes.generation_after
        # Too many tombstones: a reload compacts them.
        if cache.dead > max(1024, cache.size // 4):
            return False
        if cache.ann is None and self.ann.ann_enabled and cache.alive_count >= self.ann.ann_threshold:
            cache.ann = self._graph_of(changes.namespace, cache)
        self._save_if_due(changes.namespace, cache)
        return True
