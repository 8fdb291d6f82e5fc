"""The vector caches of one database, by (namespace, layer): loaded a chunk at a time straight into preallocated
float16 arrays, kept within a byte budget, updated in place by the store's change notices, and given an HNSW
graph (`ann_index`) once a namespace's layer holds `ann_threshold` vectors, saved in `<data dir>/ann/`."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
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
from rearview.adapters.sqlite.graph_keeper import CacheKey, GraphKeeper
from rearview.adapters.sqlite.rows import LAYERS, TABLE
from rearview.adapters.sqlite.vector_cache import VectorCache
from rearview.domain.memory import StoredLayer

# Rows read per query while loading: the only part of a cache ever held as float32 blobs.
_LOAD_CHUNK = 4096
# Rows the keeper takes from a cache's pending rows at a time (under the cache's lock, briefly, copied), and adds
# to its graph at a time, holding the graph's lock only: a search waits at most that long (a few milliseconds),
# writes do not wait. Taking many at once keeps the keeper from queueing for the cache's lock behind every search.
_KEEPER_TAKE = 256
_KEEPER_CHUNK = 8
_BUILD_CHUNK = 2048
# While its namespace is being written to (a write within `_WRITES_RECENT` seconds), a graph build pauses (every few
# insertions, `HnswIndex.add`) for at most `_WRITES_SHARE` times as long as it has worked: on 2 cores, writes right
# after a 100k load, past the first batch, ran at 835/s against 665/s beside a build that did not yield (usearch takes
# the GIL back after every insertion; `bench/write_rate.py rate --after-load`). Under writes that never stop, the
# build still gets a quarter of the time, and finishes.
_WRITES_RECENT = 0.1
_WRITES_SHARE = 3.0
_WAIT_STEP = 0.005
# A change set with this many rows of a layer (or the threshold's worth, if lower) makes the keeper load the
# namespace's cache, and build its graph, if the namespace is past the threshold: a bulk load leaves its graph
# built, not waiting for the first query.
_BULK_ROWS = 1000
# Bulk change sets to a namespace at most this many seconds apart are one load (see `_warm_if_bulk`).
_LOAD_GAP = 30.0

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
    never saved). `IndexTuning` in settings says why the byte budget and the threshold are what they are."""

    max_bytes: int = 1_600_000_000
    ann_threshold: int = 20_000
    ann_params: AnnParams = AnnParams()
    ann_dir: Path | None = None
    # A graph is saved again once this share of its size has changed since the last save (and when evicted).
    save_share: float = 0.1
    # Graph work on a background thread (`graph_keeper`): builds, and the rows written since, which searches score
    # exactly meanwhile. A write adds its own rows itself only while more than `max_pending` wait.
    background: bool = False
    max_pending: int = 4096
    # With `background`: a bulk load's graph waits until no change set of `_BULK_ROWS` has come for this many
    # seconds (0: at once), so that the build neither competes with the load for the CPU nor loads a cache that
    # every further change set would then update row by row.
    bulk_quiet_seconds: float = 0.0

    @property
    def ann_enabled(self) -> bool:
        return self.ann_threshold > 0 and ann_available()

    def path(self, namespace: str, layer: StoredLayer) -> Path | None:
        if self.ann_dir is None:
            return None
        digest = hashlib.blake2b(namespace.encode("utf-8"), digest_size=16).hexdigest()
        return self.ann_dir / f"{digest}-{layer}.usearch"


# A served store's index (`bootstrap`) does its graph work off the write path, on the keeper's thread ...
SERVED_IN_BACKGROUND = True
# ... and builds a bulk load's graph once the load has been quiet this long, after it rather than beside it (on a
# busy 2-core machine a build beside the load halves the load's rate).
SERVED_BULK_QUIET_SECONDS = 2.0


class VectorCaches:
    """Each cache is loaded on first use and loaded again once its namespace's generation has moved past it, so
    writes by other processes are seen; writes made through a SqliteMemoryStore on the same SqliteDatabase object
    update it in place (their change notices), without reload. At most `max_bytes` stay cached, least recently used
    namespaces evicted first; a cache larger than that is searched and dropped.
    """

    def __init__(self, db: SqliteDatabase, options: VectorOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self.db = db
        self.max_bytes = options.max_bytes
        self.ann = options
        self._caches: OrderedDict[tuple[str, str], VectorCache] = OrderedDict()
        self._lock = threading.Lock()
        self._keeper = GraphKeeper(self._keep, clock) if options.background and options.ann_enabled else None
        self._clock = clock
        # When each namespace's layer last got a bulk change set while not cached, and the longest time between two
        # of that load's change sets.
        self._bulk_seen: dict[CacheKey, tuple[float, float]] = {}
        db.subscribe(self._on_applied)
        if self._keeper is not None:
            db.on_close(self._keeper.stop)  # before the graphs are saved: none changes while it is written
        db.on_close(self.save_all)

    def loaded(self, namespace: str, layer: StoredLayer, generation: int) -> VectorCache | None:
        """The cache of (namespace, layer) if it is loaded and current, without loading it."""
        with self._lock:
            cache = self._caches.get((namespace, layer))
        return cache if cache is not None and cache.generation >= generation else None

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
            self._give_graph(namespace, cache)
        return cache

    def _give_graph(self, namespace: str, cache: VectorCache) -> None:
        """Give a cache past the threshold its graph: now (restored and repaired, or built), or in the background
        (restored now with what it lacks left pending, or built by the keeper)."""
        if self._keeper is None:
            cache.ann = self._restored_graph(namespace, cache, pending=False) or self._built_graph(cache)
            self._save_if_due(namespace, cache, force=True)
            return
        cache.ann = self._restored_graph(namespace, cache, pending=True)
        cache.building = cache.ann is None
        self._keeper.schedule((namespace, cache.layer))

    # the graphs

    def _restored_graph(self, namespace: str, cache: VectorCache, *, pending: bool) -> HnswIndex | None:
        """The saved graph, checked against the cache and repaired (with `pending`, what it lacks is left to the
        keeper, searched exactly meanwhile); None when missing, unreadable or too far off."""
        path = self.ann.path(namespace, cache.layer)
        restored = HnswIndex.restore(path, cache.dim, self.ann.ann_params) if path is not None else None
        if restored is None:
            return None
        graph, stamp = restored
        rows = np.flatnonzero(cache.alive[: cache.size])
        refs, vectors = cache.refs[rows], cache.vectors[rows]
        # The same generation: nothing was written since it was saved (with nothing pending), so its keys suffice.
        unchanged = stamp.get("generation") == cache.generation
        repair = repair_of(graph, refs, vectors, check_vectors=not unchanged)
        if should_rebuild(repair, refs.size):
            return None
        graph.remove(repair.remove)
        if pending:
            cache.unsynced.extend(rows[repair.add].tolist())
        else:
            graph.add(refs[repair.add], vectors[repair.add])
        return graph

    def _built_graph(self, cache: VectorCache) -> HnswIndex:
        refs, vectors = cache.alive_rows()
        graph = HnswIndex.build(cache.dim, self.ann.ann_params, refs, vectors)
        graph.changed_since_save = max(1, refs.size)
        return graph

    # the keeper's jobs (on its thread)

    def _keep(self, key: CacheKey) -> bool:
        """One step of graph work for a (namespace, layer): load a bulk-loaded namespace's cache, build its graph,
        or add a chunk of its pending rows. True while there is more to do."""
        with self._lock:
            cache = self._caches.get(key)
        if cache is None:
            self._warm(*key)
            return False
        if cache.ann is None:
            return cache.building and self._build(key, cache)
        with self._lock:
            if self._caches.get(key) is not cache:
                return False  # dropped or reloaded: the new cache has its own jobs
        with cache.lock:
            chunk = cache.unsynced_chunk(_KEEPER_TAKE)
        if chunk is not None:
            # Holding the graph's lock only: writes go on updating the cache, a search waits for one step. The
            # rows stay pending (searched exactly) until settled.
            for start in range(0, chunk.positions.size, _KEEPER_CHUNK):
                if self._keeper is not None and self._keeper.stopping:
                    return False  # left pending: a graph saved now is checked against the store when opened
                rows = slice(start, start + _KEEPER_CHUNK)
                chunk.graph.add(chunk.refs[rows], chunk.vectors[rows], self.ann.ann_params.expansion_writes)
        with cache.lock:
            if chunk is not None:
                cache.settle_chunk(chunk)
            self._save_if_due(key[0], cache)
            return bool(cache.unsynced)

    def _warm(self, namespace: str, layer: StoredLayer) -> None:
        """Load the cache of a namespace past the threshold (its graph is then scheduled): after a bulk load."""
        with self.db.snapshot() as conn:
            generation = self.db.generation(namespace, conn)
            (count,) = conn.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {TABLE[layer]} WHERE namespace = ? LIMIT ?)",
                (namespace, self.ann.ann_threshold),
            ).fetchone()
        if int(count) >= self.ann.ann_threshold:
            self.get(namespace, layer, generation)

    def _build(self, key: CacheKey, cache: VectorCache) -> bool:
        """Build the cache's graph (`_build_and_attach`); if the build fails, the cache is no longer marked as
        being built, so the next write past the threshold schedules it again (meanwhile it is searched exactly)."""
        try:
            return self._build_and_attach(key, cache)
        except Exception:
            with cache.lock:
                if cache.ann is None:
                    cache.building, cache.unsynced, cache.cells = False, [], None
            raise

    @staticmethod
    def note_write(cache: VectorCache) -> None:
        """The write path is at work on `cache` (its duplicate check, a change set): its graph build, if any, waits."""
        cache.written_at = time.monotonic()

    def _build_and_attach(self, key: CacheKey, cache: VectorCache) -> bool:
        """Build the cache's graph from a copy of its rows, holding no lock; then, while writes made meanwhile are
        more than `max_pending`, add those the same way (a bulk load goes on while its graph is built); then attach
        it, what is left pending. True once attached (its pending rows are the next steps)."""
        assert self._keeper is not None
        keeper = self._keeper
        with cache.lock:
            refs, vectors = cache.alive_rows()
            cache.unsynced = []  # from now on: what changes while the graph is built
        graph = HnswIndex(cache.dim, self.ann.ann_params)
        pacer = _BuildPacer()

        def pause() -> None:
            pacer.wait_for_writes(cache, lambda: keeper.stopping)

        while True:
            for start in range(0, refs.size, _BUILD_CHUNK):
                if keeper.stopping:
                    return False
                graph.add(refs[start : start + _BUILD_CHUNK], vectors[start : start + _BUILD_CHUNK], pause=pause)
            with self._lock:
                if self._caches.get(key) is not cache:
                    return False
                with cache.lock:
                    rows = np.flatnonzero(cache.alive[: cache.size])
                    repair = repair_of(graph, cache.refs[rows], cache.vectors[rows], check_vectors=False)
                    graph.remove(repair.remove)
                    behind = np.union1d(rows[repair.add], cache.pending_positions())
                    behind = behind[cache.alive[behind]]
                    if behind.size > self.ann.max_pending:
                        refs, vectors = cache.refs[behind], cache.vectors[behind]
                        cache.unsynced = []
                        continue
                    cache.unsynced = behind.tolist()
                    graph.changed_since_save = max(1, len(graph))
                    cache.ann, cache.building, cache.cells = graph, False, None
                    self._save_if_due(key[0], cache, force=True)
            return True

    def wait_for_graphs(self, timeout: float | None = None) -> bool:
        """Block until the keeper has nothing left to do (tests, benchmarks); True at once without one."""
        return self._keeper is None or self._keeper.wait_idle(timeout)

    def _save_if_due(self, namespace: str, cache: VectorCache, force: bool = False) -> None:
        graph = cache.ann
        path = self.ann.path(namespace, cache.layer)
        if graph is None or path is None or not (graph.changed_since_save or (force and cache.unsynced)):
            return
        if force or graph.changed_since_save >= max(1000, int(len(graph) * self.ann.save_share)):
            # With rows still pending the graph is not the generation's: a reader then checks every vector.
            generation = -1 if cache.unsynced else cache.generation
            try:
                graph.save(path, {"generation": generation, "namespace_digest": path.stem})
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
                    self._warm_if_bulk(key, changes)
                    continue
                with cache.lock:
                    keep = self._apply_in_place(cache, changes)
                    self.note_write(cache)
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
        if not cache.upsert_many(rows):
            cache.unsynced = []
            return False
        self._sync_after_write(changes.namespace, cache, len(rows))
        for deleted_layer, memory_id in changes.deleted:
            if deleted_layer == cache.layer:
                cache.delete(memory_id)
        cache.generation = changes.generation_after
        # Too many tombstones: a reload compacts them.
        if cache.dead > max(1024, cache.size // 4):
            return False
        crossed = self.ann.ann_enabled and cache.alive_count >= self.ann.ann_threshold
        if cache.ann is None and not cache.building and crossed:
            self._give_graph(changes.namespace, cache)
        self._save_if_due(changes.namespace, cache)
        return True

    def _sync_after_write(self, namespace: str, cache: VectorCache, written: int) -> None:
        """Bring the graph up to date with a change set: at once, or through the keeper, the write adding its own
        rows itself only while the keeper lags by more than `max_pending`."""
        expansion = self.ann.ann_params.expansion_writes
        if self._keeper is None or cache.ann is None:
            cache.sync_graph(expansion=expansion)
            return
        excess = len(cache.unsynced) - self.ann.max_pending
        if excess > 0:
            cache.sync_graph(min(excess, written), expansion)
        if cache.unsynced:
            self._keeper.schedule((namespace, cache.layer))

    def _warm_if_bulk(self, key: CacheKey, changes: AppliedChanges) -> None:
        """After a large change set to a namespace not cached here, ask the keeper to check its size and, past the
        threshold, load it and build its graph (see _BULK_ROWS), once the load has been quiet for
        `bulk_quiet_seconds`, or for twice the longest time between two change sets of the same load: on a busy
        machine one change set may take longer than the quiet time alone."""
        if self._keeper is None:
            return
        written = changes.vectors_written.get(key[1], 0)
        if written < min(_BULK_ROWS, self.ann.ann_threshold):
            return
        quiet = self.ann.bulk_quiet_seconds
        if quiet > 0:
            now = self._clock()
            previous, longest = self._bulk_seen.get(key, (-_LOAD_GAP - 1.0, 0.0))
            if len(self._bulk_seen) >= 1024:  # bounded: those of loads long over go
                self._bulk_seen = {k: v for k, v in self._bulk_seen.items() if now - v[0] <= _LOAD_GAP}
            longest = max(longest, now - previous) if now - previous <= _LOAD_GAP else 0.0
            self._bulk_seen[key] = (now, longest)
            quiet = max(quiet, 2 * longest)
        self._keeper.schedule_after(key, quiet)


class _BuildPacer:
    """How long a graph build has worked (since the pacer was made, less its waits) and waited for writes, so that
    it waits only within its share (`_WRITES_SHARE`). In real seconds (`time.monotonic`, as `note_write` stamps a
    cache), whatever clock schedules the keeper's jobs: it shares the CPU. Tests inject `clock` and `sleep`."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._clock, self._sleep = clock, sleep
        self.started = clock()
        self.waited = 0.0

    @property
    def worked(self) -> float:
        return self._clock() - self.started - self.waited

    def wait_for_writes(self, cache: VectorCache, stopping: Callable[[], bool]) -> None:
        """Wait while `cache` was written to within `_WRITES_RECENT` seconds, as long as the share allows."""
        start = now = self._clock()
        allowed = _WRITES_SHARE * self.worked - self.waited
        while now - cache.written_at < _WRITES_RECENT and now - start < allowed and not stopping():
            self._sleep(_WAIT_STEP)
            now = self._clock()
        self.waited += now - start
