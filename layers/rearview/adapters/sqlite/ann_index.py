"""The approximate vector index of a large namespace: an HNSW graph (usearch) over bfloat16 vectors, keyed by the
memories' refs, kept in step with its vector cache and saved beside the database. The graph only proposes
candidates: each is scored again from the cache's float16 matrix, so a graph's precision moves which rows it finds,
never a score.

The store stays the source of truth: a saved index is a cache of it. Opened again, it is checked against the
vectors the store holds now (its keys, and its vectors unless its generation says nothing changed since it was
saved) and repaired in place, or rebuilt when much of it is off or the file is missing or unreadable.

usearch rather than hnswlib or faiss (bench/ann_libraries.py; figures in bench/RESULTS.md): it stores float16 and
bfloat16 natively, removes and replaces keys in place (faiss's HNSW removes nothing), ships wheels for every platform
we run on (hnswlib's last release is a source tarball that needs a compiler), and is maintained.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

# Repairs above this share of the index's size cost more than building it again.
_REPAIR_SHARE = 0.25
# An insertion costs about 0.6 ms at 100,000 vectors: a build may pause every this many (`HnswIndex.add`).
_PAUSE_EVERY = 32


@dataclass(frozen=True)
class AnnParams:
    """How the graph is built and searched (bench/RESULTS.md has the measurements behind each value)."""

    # The graph's edges per node (M) and its construction width, as the library comparison (bench/ann_libraries.py)
    # ran them.
    connectivity: int = 16
    expansion_add: int = 128
    # The search width (ef): recall@50 against exact search stays above 0.99 on LoCoMo's MiniLM vectors. A search
    # for more neighbours than this widens to that many.
    expansion_search: int = 128
    # The width of `vector_search_many`, the write path's duplicate check: it wants the 3 nearest of each new
    # memory, and a near-duplicate sits so close that a narrow search finds it (bench/write_rate.py measures its
    # decisions against exact search).
    expansion_batch: int = 32
    # The construction width of the rows written into a namespace that already has its graph (one at a time, on
    # the graph keeper's thread): the keeper's cost follows it, and 64 costs half of 128's for a recall@50 within
    # 0.01 of it and the same duplicate decisions (bench/write_rate.py).
    expansion_writes: int = 64
    # The graph's vector type. bfloat16 (the same bytes as float16) runs on the CPU's bf16 dot-product instructions
    # where it has them (AVX-512 BF16 here). On 16,340 real turns, one thread, against float16: it builds 1.2x (e5)
    # and 1.1x (MiniLM) as fast, searches 1.3-1.4x as fast at recall's width and 1.5-2.2x at the duplicate check's,
    # and its recall@50 against exact search is 0.9949 against 0.9957 (e5) and 0.9922 against 0.9926 (MiniLM).
    # On peers.py's 100,000 hashing vectors (hard for any graph): 1.5x and 1.9x, recall@50 0.8845 against 0.8773.
    # int8 is faster still but finds less (0.9272 with e5). `bench/ann_dtypes.py`. A saved float16 graph is
    # restored as it is.
    dtype: str = "bf16"


def _progress_calling(pause: Callable[[], None]) -> Callable[[int, int], bool]:
    """A usearch progress callback (called after each insertion, holding the GIL) that calls `pause` every
    `_PAUSE_EVERY` insertions and never cancels."""

    def progress(processed: int, total: int) -> bool:
        if processed % _PAUSE_EVERY == 0:
            pause()
        return True

    # usearch checks the callback's annotations against the types themselves, not the strings this module's
    # `from __future__ import annotations` makes of them.
    progress.__annotations__ = {"processed": int, "total": int, "return": bool}
    return progress


class _SearchesFirst:
    """The graph's lock, under which a search waits for at most the one step in progress. A plain lock is not
    fair: the graph keeper, adding its pending rows in steps, released it and took it back before a waiting search
    woke, so the write path's duplicate check waited for several of its steps (`bench/write_profile.py`). Here anything
    else (the keeper's next step) first lets through the searches already waiting when it asked, and only those: a
    stream of searches from many threads does not hold the keeper off for good.

    `with lock:` takes it as anything else does; `with lock.searching():` as a search."""

    def __init__(self) -> None:
        self._state = threading.Condition(threading.Lock())
        self._held = False
        self._searches_arrived = 0
        self._searches_served = 0

    def __enter__(self) -> None:
        with self._state:
            before = self._searches_arrived
            while self._held or self._searches_served < before:
                self._state.wait()
            self._held = True

    def __exit__(self, *_: object) -> None:
        with self._state:
            self._held = False
            self._state.notify_all()

    @contextlib.contextmanager
    def searching(self) -> Iterator[None]:
        with self._state:
            self._searches_arrived += 1
            while self._held:
                self._state.wait()
            self._searches_served += 1
            self._held = True
        try:
            yield
        finally:
            self.__exit__()

    @property
    def searches_waiting(self) -> int:
        return self._searches_arrived - self._searches_served


def ann_available() -> bool:
    """True if usearch can be imported (the `embedded` extra); without it every search is exact."""
    try:
        import usearch.index  # noqa: F401
    except ImportError:
        return False
    return True


class HnswIndex:
    """An HNSW graph of bfloat16 (or, restored, float16) vectors under uint64 keys (refs), inner-product distance.

    Each call holds the graph's own lock, which keeps its steps together (the width set for a search or an
    insertion, then reset; a replaced key removed, then added); usearch's binding runs one call on an index at a
    time as well (2.26.1: a search started during an insertion returns after it). The graph keeper adds rows
    holding only this lock, not its vector cache's, so a write updates the cache meanwhile and a search waits only
    for the insertion in progress (`graph_keeper`). The lock is the innermost: taken with the cache's held, never
    the other way round. `len` and `memory_bytes` take no lock (the caches' byte budget reads them on every
    write)."""

    def __init__(self, dim: int, params: AnnParams, *, index: Any = None) -> None:
        from usearch.index import Index

        self.dim = dim
        self.params = params
        # Any: usearch's stubs lag its API (a settable expansion_search, `get` taking a numpy dtype).
        self._index: Any = cast(Any, index) or Index(
            ndim=dim,
            metric="ip",
            dtype=params.dtype,
            connectivity=params.connectivity,
            expansion_add=params.expansion_add,
            expansion_search=params.expansion_search,
        )
        self._index.expansion_search = params.expansion_search  # type: ignore[misc]  # stubs miss its setter
        self._lock = _SearchesFirst()
        # Set by the owner when the graph has changed since it was last saved.
        self.changed_since_save = 0
        # usearch's memory_usage walks the graph's allocations (~2 ms at 100,000 keys): measured after a build,
        # restore or save, and scaled by the keys added since in between.
        self._size = len(self._index)
        self._measured_bytes, self._measured_size = 0, 0
        self._measure()

    @classmethod
    def build(cls, dim: int, params: AnnParams, keys: np.ndarray, vectors: np.ndarray) -> HnswIndex:
        """An index of `vectors` (rows) under `keys`, built on one thread (see `add`)."""
        index = cls(dim, params)
        index.add(keys, vectors)
        return index

    def __len__(self) -> int:
        return self._size

    @property
    def memory_bytes(self) -> int:
        """About what the graph holds in memory: measured now and then, scaled by the keys added since."""
        measured, size = self._measured_bytes, self._measured_size
        return measured if size == 0 else measured + (self._size - size) * measured // size

    def _measure(self) -> None:
        self._measured_bytes, self._measured_size = int(self._index.memory_usage), self._size

    def add(
        self,
        keys: np.ndarray,
        vectors: np.ndarray,
        expansion: int | None = None,
        pause: Callable[[], None] | None = None,
    ) -> None:
        """Add rows (new keys; a key already present is replaced), one at a time on one thread.

        Never on several: usearch's concurrent insertions (2.26) strand nodes, stored but linked from no other
        node, so no search of any width finds them (unum-cloud/USearch#735, unfixed in a release): a build of
        20,000 vectors on two cores left 3 to 5 of them unreachable, memories vector search never returned. One
        thread links every node, and builds the same graph from the same rows on every run (those 20,000 of 384
        dimensions: 3.5 s on one thread, 3.4 s on two cores shared with other work).

        `expansion`: the construction width of these rows (default the graph's own, `expansion_add`). `pause`: called
        every `_PAUSE_EVERY` insertions, from usearch's progress callback (it may wait: a build yielding to writes);
        the graph is the same as without it, which adding in smaller calls would not keep (usearch 2.26)."""
        if len(keys) == 0:
            return
        keys = np.asarray(keys, dtype=np.uint64)
        vectors = np.asarray(vectors, dtype=np.float16)
        with self._lock:
            present = keys[self._contains(keys)]
            if present.size:
                self._index.remove(present)
            progress = _progress_calling(pause) if pause is not None else None
            if expansion is None or expansion == self.params.expansion_add:
                self._index.add(keys, vectors, threads=1, progress=progress)
            else:
                self._index.expansion_add = expansion
                try:
                    self._index.add(keys, vectors, threads=1, progress=progress)
                finally:
                    self._index.expansion_add = self.params.expansion_add
            self._size = len(self._index)
            if self._measured_size == 0 or len(keys) >= 1024:
                self._measure()
            self.changed_since_save += len(keys)

    def remove(self, keys: np.ndarray) -> None:
        keys = np.asarray(keys, dtype=np.uint64)
        with self._lock:
            present = keys[self._contains(keys)]
            if present.size:
                self._index.remove(present)
                self._size = len(self._index)
                self.changed_since_save += int(present.size)

    def _contains(self, keys: np.ndarray) -> np.ndarray:
        if len(self._index) == 0 or keys.size == 0:
            return np.zeros(keys.size, dtype=bool)
        return np.asarray(self._index.contains(keys), dtype=bool).reshape(-1)

    def search(self, queries: np.ndarray, count: int, width: int | None = None) -> list[np.ndarray]:
        """For each row of `queries`, the keys of about its `count` nearest rows, nearest first. The search width is
        the larger of `count` and `width` (default `expansion_search`)."""
        queries = np.asarray(queries, dtype=np.float32).reshape(-1, self.dim)
        with self._lock.searching():
            count = min(count, len(self._index))
            if count <= 0:
                return [np.empty(0, dtype=np.int64) for _ in range(queries.shape[0])]
            self._index.expansion_search = max(width or self.params.expansion_search, count)
            try:
                # Every core for a batch (the write path's duplicate check), one thread for one query.
                found = self._index.search(queries, count, threads=0 if queries.shape[0] > 1 else 1)
            finally:
                self._index.expansion_search = self.params.expansion_search
        if queries.shape[0] == 1:  # usearch answers one query with a flat `Matches`
            return [np.asarray(found.keys, dtype=np.int64).reshape(-1)]
        keys = np.asarray(found.keys, dtype=np.int64).reshape(queries.shape[0], -1)
        counts = np.asarray(found.counts, dtype=np.int64).reshape(-1)
        return [keys[i, : counts[i]] for i in range(queries.shape[0])]

    def keys(self) -> np.ndarray:
        with self._lock:
            return np.asarray(self._index.keys, dtype=np.int64)

    def vectors_of(self, keys: np.ndarray) -> np.ndarray:
        """The stored vectors of `keys` (all present), as float16: a bfloat16 graph's to its precision."""
        with self._lock:
            found = self._index.get(np.asarray(keys, dtype=np.uint64), dtype=np.float16)
        return np.asarray(found, dtype=np.float16).reshape(len(keys), self.dim)

    # files

    def save(self, path: Path, stamp: dict[str, Any]) -> None:
        """Write the graph and its stamp (what it was built from) atomically: a reader finds the old pair or the
        new, never half of one. The stamp goes last, so a crash in between leaves a stamp that does not match."""
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with self._lock:
            self._index.save(str(temporary))
            self._measure()
        os.replace(temporary, path)
        stamp_path = _stamp_path(path)
        temporary_stamp = stamp_path.with_name(f"{stamp_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        temporary_stamp.write_text(json.dumps({**stamp, "size": len(self), **self._shape()}), encoding="utf-8")
        os.replace(temporary_stamp, stamp_path)
        self.changed_since_save = 0

    def _shape(self) -> dict[str, Any]:
        return {"dim": self.dim, "connectivity": self.params.connectivity, "expansion_add": self.params.expansion_add}

    @classmethod
    def restore(cls, path: Path, dim: int, params: AnnParams) -> tuple[HnswIndex, dict[str, Any]] | None:
        """The index saved at `path` and its stamp; None when missing, unreadable or of another shape."""
        from usearch.index import Index

        try:
            stamp = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
            index = Index.restore(str(path))
        except (OSError, ValueError, RuntimeError):
            return None
        if index is None:
            return None
        restored = cls(dim, params, index=index)
        shape = {key: stamp.get(key) for key in restored._shape()}
        if shape != restored._shape() or stamp.get("size") != len(restored) or index.ndim != dim:
            return None
        return restored, stamp


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def remove_files(path: Path) -> None:
    for each in (path, _stamp_path(path)):
        with contextlib.suppress(FileNotFoundError):
            each.unlink()


@dataclass(frozen=True)
class Repair:
    """What a restored index lacks (`add`: keys to add or replace) and holds in excess (`remove`)."""

    add: np.ndarray
    remove: np.ndarray

    @property
    def size(self) -> int:
        return int(self.add.size + self.remove.size)


def repair_of(index: HnswIndex, refs: np.ndarray, vectors: np.ndarray, check_vectors: bool) -> Repair:
    """How `index` differs from the rows (`refs`, `vectors`): keys missing or extra, and with `check_vectors` the
    rows whose vector changed (a reindex rewrites vectors under the same refs)."""
    held = index.keys()
    extra = np.setdiff1d(held, refs, assume_unique=True)
    present = np.isin(refs, held, assume_unique=True)
    missing = np.flatnonzero(~present)
    if check_vectors and present.any():
        rows = np.flatnonzero(present)
        changed = rows[_changed(index.vectors_of(refs[rows]), vectors[rows])]
        missing = np.union1d(missing, changed)
    return Repair(add=missing, remove=extra)


def _changed(held: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Which rows of `held` (a graph's vectors) are not `vectors` (float16) as far as the graph's type keeps them:
    bfloat16 (usearch truncates) moves each value by less than 2^-7 of it, a vector embedded anew by far more."""
    wanted = np.asarray(vectors, dtype=np.float32)
    off = np.abs(np.asarray(held, dtype=np.float32) - wanted)
    return np.any(off > np.abs(wanted) * 2.0**-6 + 2.0**-14, axis=1)


def should_rebuild(repair: Repair, size: int) -> bool:
    return repair.size > max(64, int(size * _REPAIR_SHARE))
