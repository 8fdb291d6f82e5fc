"""A vector cache: one namespace's vectors of one layer as a float16 matrix in this process, with the columns the
filters need beside it, searched exactly below a size threshold and through its HNSW index (`ann_index`) above.

Vectors are unit length and stored as float16 (half the bytes of float32; a cosine moves by under 1e-3), and
scored in float32 blocks, so no search copies the whole matrix."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from rearview.adapters.sqlite.ann_index import HnswIndex
from rearview.adapters.sqlite.coarse_cells import CoarseCells, cells_for, top_by_position
from rearview.adapters.sqlite.connection import CachedRow
from rearview.adapters.sqlite.rows import epoch
from rearview.domain.memory import StoredLayer
from rearview.domain.search import MemoryFilter

# Rows scored per block: 16k rows of 512 float32 are 32 MB, the most a search adds to the process for a moment.
_BLOCK = 16_384
# What a cached row costs beside its vector: its id (a str), its entry in `position`, and the filter columns.
ROW_OVERHEAD_BYTES = 200
# An ANN search asks the graph for this many times the keys wanted (on top of what the filter removes): the graph's
# search width, never below AnnParams.expansion_search, does the rest. At recall's wide first pass (1,000) every extra
# key widens the search.
_ANN_MARGIN = 1.1
# Below this share of the namespace passing the filter, the passing rows are scored exactly instead.
_ANN_MIN_PASSING = 0.5
# One query's scores, at most this many, are ranked by one stable sort (see `top_of`).
_SORT_ALL_BELOW = 1024

# (cosines, ids) of a search's hits, best first: two lists, which the caller zips into its candidates in one pass.
Hits = tuple[list[float], list[str]]


def normalised_rows(matrix: np.ndarray) -> np.ndarray:
    # einsum: several times faster than np.linalg.norm(axis=1) on a large float32 matrix.
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


def _dot_kernel() -> Any:
    """numkong's float16 dot products (SIMD; usearch's own kernels), or None without the `embedded` extra."""
    try:
        import numkong
    except ImportError:
        return None
    return numkong


_KERNEL = _dot_kernel()


def block_scores(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(queries, rows) cosines of `queries` against float16 `vectors`, the queries rounded to float16 as well, so
    every path (exact or through the graph, one query or many) scores a pair alike, to float32 rounding.

    One query: numkong's float16 kernel, with no conversion of the matrix. Several (the write path's batch): the
    matrix converted to float32 a block at a time (never whole), then one matrix product per block."""
    queries16 = np.ascontiguousarray(queries, dtype=np.float16)
    if vectors.shape[0] == 0:
        return np.empty((queries.shape[0], 0), dtype=np.float32)
    if queries.shape[0] == 1 and _KERNEL is not None:
        # Its default float64 output: asking for float32 takes a path 15x slower (numkong 7.8).
        found = _KERNEL.cdist(queries16, np.ascontiguousarray(vectors), metric="dot")
        return np.asarray(found).astype(np.float32)
    wide = queries16.astype(np.float32)
    out = np.empty((queries.shape[0], vectors.shape[0]), dtype=np.float32)
    for start in range(0, vectors.shape[0], _BLOCK):
        block = vectors[start : start + _BLOCK].astype(np.float32)
        np.matmul(wide, block.T, out=out[:, start : start + block.shape[0]])
    return out


def _scores_of_many(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(queries, rows) cosines, each pair scored as `block_scores` scores it for one query (numkong's kernel scores
    a pair alike in one call for many queries), so a row ranks the same whichever way it was scored."""
    if _KERNEL is not None:
        found = _KERNEL.cdist(np.ascontiguousarray(queries, dtype=np.float16), vectors, metric="dot")
        return np.asarray(found).astype(np.float32)
    return np.vstack([block_scores(vectors, query.reshape(1, -1)) for query in queries])


def _pair_scores(vectors: np.ndarray, queries: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """The cosine of each row of `vectors` with its query, `queries[owner[row]]` (`owner` ascending), each pair
    scored as `block_scores` scores it for one query (numkong's row-by-row dot is its kernel's, pair for pair)."""
    if vectors.shape[0] == 0:
        return np.empty(0, dtype=np.float32)
    if _KERNEL is not None:
        paired = np.ascontiguousarray(queries, dtype=np.float16)[owner]
        return np.asarray(_KERNEL.dot(paired, np.ascontiguousarray(vectors))).reshape(-1).astype(np.float32)
    bounds = np.searchsorted(owner, np.arange(queries.shape[0] + 1))
    scores = np.empty(vectors.shape[0], dtype=np.float32)
    for q in range(queries.shape[0]):
        if bounds[q + 1] > bounds[q]:
            rows = slice(bounds[q], bounds[q + 1])
            scores[rows] = block_scores(vectors[rows], queries[q : q + 1])[0]
    return scores


def _among_sorted(sorted_values: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Which of `values` occur in `sorted_values` (sorted, unique): a binary search each."""
    at = np.searchsorted(sorted_values, values)
    return sorted_values[np.minimum(at, sorted_values.size - 1)] == values


def top_of(scores: np.ndarray, limit: int) -> np.ndarray:
    """Per row of `scores` (queries, candidates), the columns of the best `limit`, best first, equal scores in
    column order, at the cut too: the rows are ordered by ref, so a search that scores a subset of them (through
    the graph) keeps the same memory of a tie as one that scores them all. Row-major, so each partition runs over
    contiguous memory."""
    k = min(limit, scores.shape[1])
    if k <= 0:
        return np.empty((scores.shape[0], 0), dtype=np.int64)
    if scores.shape[0] == 1 and scores.shape[1] <= _SORT_ALL_BELOW:
        # One short row (a graph search's candidates, a small namespace's exact search; the write path's duplicate
        # check runs one for every item): a stable sort is the same order in a fraction of the partition's time.
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]
    if k < scores.shape[1]:
        # Not argpartition's columns: which of the scores equal to the k-th best it keeps depends on the array.
        kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1 : k]
        keep = scores > kth
        tied = scores == kth
        room = k - keep.sum(axis=1)
        for row in np.flatnonzero(tied.sum(axis=1) > room):
            tied[row, np.flatnonzero(tied[row])[room[row] :]] = False
        keep |= tied
        top = np.nonzero(keep)[1].reshape(scores.shape[0], k)
    else:
        top = np.tile(np.arange(scores.shape[1]), (scores.shape[0], 1))
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


@dataclass(frozen=True)
class GraphChunk:
    """The oldest rows waiting for a cache's graph, copied out of it (`VectorCache.unsynced_chunk`), to be added
    to the graph holding the graph's lock only; they stay pending (searched exactly) until `settle_chunk`."""

    graph: HnswIndex
    # The `unsynced` list they head, and how many of its entries they are.
    source: list[int]
    cut: int
    positions: np.ndarray
    refs: np.ndarray
    vectors: np.ndarray


class VectorCache:
    """The vectors of one (namespace, layer) with the columns filters need, as parallel arrays.

    Rows are ordered by `ref` (AUTOINCREMENT, so appends keep the order and searchsorted works). Deleted rows
    are tombstoned (`alive` False) rather than removed, so an in-place update never copies the matrix. `ann`, when
    set, holds the alive rows under their refs and answers searches that most rows pass.
    """

    def __init__(self, layer: StoredLayer, dim: int, generation: int, capacity: int) -> None:
        self.layer = layer
        self.dim = dim
        self.generation = generation
        self.lock = threading.Lock()
        self.size = 0
        self.dead = 0
        self.ann: HnswIndex | None = None
        # Positions whose vector changed since the graph was last brought up to date (see sync_graph), oldest first.
        self.unsynced: list[int] = []
        # True while a graph of this cache is built in the background (`graph_keeper`): `unsynced` then collects
        # what changes meanwhile.
        self.building = False
        # Meanwhile, the coarse cells the write path's duplicate check searches (`coarse_cells`), drawn by its first
        # batch; dropped once the graph is attached.
        self.cells: CoarseCells | None = None
        # When the write path last worked on this cache (`time.monotonic`): a graph build yields to writes.
        self.written_at = float("-inf")
        # Headroom, so the writes that follow a load append in place instead of copying the matrix at once (1/16:
        # with 900 namespaces cached, more is memory that only the few written to would use).
        capacity = capacity + max(64, capacity // 16)
        self.vectors = np.empty((capacity, dim), dtype=np.float16)
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

    @property
    def alive_count(self) -> int:
        return self.size - self.dead

    def nbytes(self) -> int:
        """What the cache holds in memory, its graph included (what the byte budget counts)."""
        columns = self.vectors.nbytes + self.refs.nbytes + self.times.nbytes + 3 * self.alive.nbytes
        columns += self.sessions.nbytes + self.event_types.nbytes + self.labels.nbytes
        graph = self.ann.memory_bytes if self.ann is not None else 0
        cells = self.cells.nbytes if self.cells is not None else 0
        return columns + self.size * ROW_OVERHEAD_BYTES + graph + cells

    @staticmethod
    def _code(codes: dict[str, int], value: str | None) -> int:
        if value is None:
            return -1
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(codes)
        return code

    _COLUMNS = ("vectors", "refs", "times", "alive", "active", "consolidated", "sessions", "event_types", "labels")

    def _grow(self, needed: int) -> None:
        capacity = self.vectors.shape[0]
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity + capacity // 2)
        for name in self._COLUMNS:
            old = getattr(self, name)
            fill = -1 if name in ("sessions", "event_types", "labels") else 0
            new = (
                np.empty((new_capacity, *old.shape[1:]), dtype=old.dtype)
                if name == "vectors"
                else np.full(new_capacity, fill, dtype=old.dtype)
            )
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def append_loaded(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Append (ref, id, time, active, consolidated, session_id, event_type, label, vector blob) rows, read in
        ascending ref order, a chunk at a time: only the chunk is ever held as float32."""
        if not rows:
            return
        self._append(
            [row[1] for row in rows],
            [row[0] for row in rows],
            np.frombuffer(b"".join(row[8] for row in rows), dtype="<f4").reshape(len(rows), self.dim),
            [row[2] for row in rows],
            [bool(row[3]) for row in rows],
            [bool(row[4]) for row in rows],
            [row[5:8] for row in rows],
        )

    def _append(
        self,
        ids: list[str],
        refs: list[int],
        matrix: np.ndarray,
        times: list[float],
        active: list[bool],
        consolidated: list[bool],
        codes: list[tuple[str | None, str | None, str | None]],
    ) -> range:
        """Append rows (after every cached one, in ref order) a column at a time; their positions. `codes`: each
        row's session id, event type and label."""
        start, end = self.size, self.size + len(ids)
        self._grow(end)
        self.vectors[start:end] = normalised_rows(matrix)
        self.refs[start:end] = refs
        self.times[start:end] = times
        self.active[start:end] = active
        self.consolidated[start:end] = consolidated
        self.sessions[start:end] = [self._code(self.session_codes, session) for session, _, _ in codes]
        self.event_types[start:end] = [self._code(self.event_type_codes, event_type) for _, event_type, _ in codes]
        self.labels[start:end] = [self._code(self.label_codes, label) for _, _, label in codes]
        self.alive[start:end] = True
        self.position.update(zip(ids, range(start, end), strict=True))
        self.ids.extend(ids)
        self.size = end
        return range(start, end)

    def alive_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(refs, float16 vectors) of the alive rows, in ref order: what the graph holds."""
        rows = np.flatnonzero(self.alive[: self.size])
        return self.refs[rows], self.vectors[rows]

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
            self.unsynced.append(position)
            if self.cells is not None:
                self.cells.moved_row(position)
        self.times[position] = row.time
        self.active[position] = row.active
        self.consolidated[position] = row.consolidated
        self.sessions[position] = self._code(self.session_codes, row.session_id)
        self.event_types[position] = self._code(self.event_type_codes, row.event_type)
        self.labels[position] = self._code(self.label_codes, row.label)
        self.alive[position] = True
        return True

    def upsert_many(self, rows: Sequence[CachedRow]) -> bool:
        """`upsert` of each row (sorted by ref); False as soon as one cannot be applied in place. A change set's
        new memories (with vectors, after every cached row: the write path's case) are appended a column at a time
        rather than an element at a time; its other rows (memories updated, merged into) are applied one by one
        first, as their refs come before the new ones'."""
        fresh = [row for row in rows if row.vector is not None and row.id not in self.position]
        distinct = len({row.id for row in rows}) == len(rows)
        if not fresh or not distinct or (self.size and fresh[0].ref <= self.refs[self.size - 1]):
            return all(self.upsert(row) for row in rows)
        if len(fresh) < len(rows):
            new_ids = {row.id for row in fresh}
            if not all(self.upsert(row) for row in rows if row.id not in new_ids):
                return False
        appended = self._append(
            [row.id for row in fresh],
            [row.ref for row in fresh],
            np.stack([np.asarray(row.vector).reshape(-1) for row in fresh]),
            [row.time for row in fresh],
            [row.active for row in fresh],
            [row.consolidated for row in fresh],
            [(row.session_id, row.event_type, row.label) for row in fresh],
        )
        self.unsynced.extend(appended)
        if self.cells is not None:
            for position in appended:
                self.cells.moved_row(position)
        return True

    def pending_positions(self) -> np.ndarray:
        """The rows whose vector the graph does not hold yet (added or changed since), sorted: searches score them
        exactly beside the graph's candidates."""
        if not self.unsynced:
            return np.empty(0, dtype=np.int64)
        return np.unique(np.asarray(self.unsynced, dtype=np.int64))

    def sync_graph(self, limit: int | None = None, expansion: int | None = None) -> None:
        """Add the vectors upserted since the last sync to the graph, the oldest `limit` of them (all by default),
        in one call (a change set's rows together, rather than one at a time as they are applied), `expansion`
        wide (default the graph's construction width).

        `unsynced` is only ever appended to in place; taking from its head replaces the list, so a `GraphChunk`
        taken before knows its rows were taken again meanwhile."""
        if self.ann is None:
            if not self.building:
                self.unsynced = []  # no graph holds them, and none is being built
            return
        cut = len(self.unsynced) if limit is None else limit
        taken, self.unsynced = self.unsynced[:cut], self.unsynced[cut:]
        positions = np.unique(np.asarray(taken, dtype=np.int64))
        positions = positions[self.alive[positions]]
        if positions.size:
            self.ann.add(self.refs[positions], self.vectors[positions], expansion)

    def unsynced_chunk(self, limit: int) -> GraphChunk | None:
        """The oldest `limit` rows waiting for the graph (those alive), copied: the graph keeper adds them holding
        no lock of the cache, so writes and searches go on meanwhile. None without a graph or rows waiting."""
        if self.ann is None or not self.unsynced:
            return None
        cut = min(limit, len(self.unsynced))
        positions = np.unique(np.asarray(self.unsynced[:cut], dtype=np.int64))
        positions = positions[self.alive[positions]]
        return GraphChunk(self.ann, self.unsynced, cut, positions, self.refs[positions], self.vectors[positions])

    def settle_chunk(self, chunk: GraphChunk) -> None:
        """After `chunk` was added to its graph: its rows no longer wait (unless `sync_graph` took them meanwhile,
        and added them itself), and those deleted while it was added leave the graph again. A row written again
        meanwhile waits again at the tail, with its new vector."""
        if self.unsynced is chunk.source:
            del self.unsynced[: chunk.cut]
        gone = chunk.positions[~self.alive[chunk.positions]]
        if gone.size:
            chunk.graph.remove(self.refs[gone])

    def delete(self, memory_id: str) -> None:
        position = self.position.pop(memory_id, None)
        if position is not None:
            self.alive[position] = False
            self.dead += 1
            if self.ann is not None:
                self.ann.remove(self.refs[position : position + 1])

    # filters

    def mask(
        self, flt: MemoryFilter, chosen_refs: np.ndarray | None, expired_refs: np.ndarray | None = None
    ) -> np.ndarray:
        """The rows (of the first `size`) that pass the filter, as a boolean array: the conditions the cache holds
        the columns of, among `chosen_refs` (what the conditions it does not hold allow: tags, metadata, entities;
        None: every row) and not among `expired_refs`."""
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
            chosen[self._positions_of_ids(flt.ids)] = True
            mask &= chosen
        if chosen_refs is not None:
            mask &= _positions_mask(self.refs[:n], chosen_refs)
        if expired_refs is not None and expired_refs.size:
            mask &= ~_positions_mask(self.refs[:n], expired_refs)
        return mask

    def _positions_of_ids(self, ids: Sequence[str]) -> list[int]:
        """The rows of those ids the cache holds (recall's second vector search names the first one's thousand)."""
        if not ids or not self.position:
            return []
        if len(ids) > 1:
            try:
                return list(itemgetter(*ids)(self.position))  # in C: every id held, the usual case
            except KeyError:
                pass
        return [self.position[i] for i in ids if i in self.position]

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

    # search

    def search(self, query: np.ndarray, mask: np.ndarray, limit: int) -> Hits:
        """Top `limit` (cosine, id) among the masked rows, best first."""
        return self.search_many(query.reshape(1, -1), mask, limit)[0]

    def search_many(self, queries: np.ndarray, mask: np.ndarray, limit: int, width: int | None = None) -> list[Hits]:
        """`search` for each row of `queries`: through the graph (searched `width` wide, default its own) when it
        has one and most rows pass the filter, else exactly over the passing rows (one matrix product for all).

        A `width` says a narrow, approximate search will do (the write path's duplicate check): while the graph is
        being built, most rows passing, such a search goes through the coarse cells instead (`coarse_cells`)."""
        rows = np.flatnonzero(mask)
        if rows.size == 0 or limit <= 0:
            return [([], []) for _ in range(queries.shape[0])]
        if self.walks_graph(rows.size):
            return self._ann_many(queries, mask, rows.size, limit, width)
        if width is not None and self.building and rows.size >= _ANN_MIN_PASSING * self.alive_count:
            return self._cells_many(queries, mask, rows, limit)
        return self._exact_many(queries, rows, limit)

    def walks_graph(self, passing: int) -> bool:
        """Whether a search that `passing` rows pass walks the graph (else it scores the passing rows exactly)."""
        return self.ann is not None and passing >= _ANN_MIN_PASSING * self.alive_count

    def _exact_many(self, queries: np.ndarray, rows: np.ndarray, limit: int) -> list[Hits]:
        # When most rows pass, scoring the contiguous block beats gathering the rows first (and every row passing,
        # the usual case, needs no gathering of the scores either).
        if rows.size == self.size:
            scores = block_scores(self.vectors[: self.size], queries)
        elif rows.size * 2 >= self.size:
            scores = block_scores(self.vectors[: self.size], queries)[:, rows]
        else:
            scores = block_scores(self.vectors[rows], queries)
        top = top_of(scores, limit)
        return [self._hits(scores[q, top[q]], rows[top[q]]) for q in range(queries.shape[0])]

    def _hits(self, scores: np.ndarray, positions: np.ndarray) -> Hits:
        """The (cosines, ids) of rows already in order: built from whole arrays, not element by element."""
        ids = self.ids
        return scores.tolist(), [ids[i] for i in positions.tolist()]

    def _ann_many(
        self, queries: np.ndarray, mask: np.ndarray, passing: int, limit: int, width: int | None
    ) -> list[Hits]:
        """The graph's nearest keys and the rows it does not hold yet (`unsynced`), those that pass the mask,
        scored exactly (so the scores match an exact search); the exact search over the passing rows for a query
        where they are too few. Every query's keys are looked up, filtered and scored at once (`_pair_scores`):
        done query by query, that cost the write path's batch of 100 duplicate checks more than the graph's
        search (`bench/write_profile.py`)."""
        assert self.ann is not None
        wanted = min(passing, limit)
        ask = int(min(self.alive_count, wanted * _ANN_MARGIN * self.alive_count / passing + 8))
        pending = self.pending_positions()
        pending = pending[mask[pending]]
        # The rows the graph does not hold yet are scored for every query at once: the keeper may lag by thousands
        # of rows while writes come fast, and gathering and sorting them per query cost more than the search.
        waiting = _scores_of_many(self.vectors[pending], queries) if pending.size else None
        found_keys = self.ann.search(queries, ask, width)
        keys = np.concatenate(found_keys) if found_keys else np.empty(0, dtype=np.int64)
        owner = np.repeat(np.arange(len(found_keys)), [k.size for k in found_keys])
        positions = np.searchsorted(self.refs[: self.size], keys)
        inside = positions < self.size
        positions[~inside] = 0
        # Keys the cache still holds, passing the mask, not among the pending rows (scored with them).
        kept = inside & (self.refs[positions] == keys) & mask[positions]
        if pending.size:
            kept &= ~_among_sorted(pending, positions)
        positions, owner = positions[kept], owner[kept]
        scores = _pair_scores(self.vectors[positions], queries, owner)
        bounds = np.searchsorted(owner, np.arange(queries.shape[0] + 1))
        found: list[Hits] = []
        for q, query in enumerate(queries):
            rows = slice(bounds[q], bounds[q + 1])
            if bounds[q + 1] - bounds[q] + pending.size < wanted:
                found.append(self._exact_many(query.reshape(1, -1), np.flatnonzero(mask), limit)[0])
                continue
            at, scored = positions[rows], scores[rows]
            if waiting is not None:
                at, scored = np.concatenate([at, pending]), np.concatenate([scored, waiting[q]])
            # Best first, equal scores in row order, as in an exact search.
            top = top_by_position(scored, at, limit)
            found.append(self._hits(scored[top], at[top]))
        return found

    def _cells_many(self, queries: np.ndarray, mask: np.ndarray, rows: np.ndarray, limit: int) -> list[Hits]:
        """The rows of each query's nearest cells and the loose rows, those that pass the mask, scored exactly (the
        exact search over the passing `rows` for a query where they are too few). The cells are drawn by the first
        such search and kept up by the next ones (`cells_for`)."""
        self.cells = cells_for(self.cells, self.vectors, self.alive, self.size)
        found: list[Hits] = []
        scored = self.cells.scored(queries, self.vectors, self.size, _scores_of_many)
        for query, (positions, scores) in zip(queries, scored, strict=True):
            passing = mask[positions]
            positions, scores = positions[passing], scores[passing]
            if positions.size < limit:
                found.append(self._exact_many(query.reshape(1, -1), rows, limit)[0])
                continue
            top = top_by_position(scores, positions, limit)
            found.append(self._hits(scores[top], positions[top]))
        return found


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
