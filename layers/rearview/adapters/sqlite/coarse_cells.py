"""Coarse cells: how the write path's duplicate check avoids scoring every row of a large namespace while that
namespace's HNSW graph is built.

After a bulk load, the loaded namespace's graph takes about a minute to build at 100,000 rows (on one thread:
usearch#735, see `ann_index`), and until it is attached its cache is searched exactly. Each write batch's duplicate
check then scored every item against every row (100,000 rows, a batch of 100: 0.35 s idle, more beside the build),
and writes right after a load crawled at about 135/s (`bench/write_rate.py rate --after-load`). The check only looks
for a memory that sits very close to the new one (`dedup_threshold`), and a vector that close to a query lies in the
query's nearest cells.

Cells are an inverted file (IVF): `4 sqrt(rows)` centroids (64 to 2,048) taken evenly from the rows, with each row
listed under its nearest centroid. A search scores the centroids, then scores exactly the rows of its `PROBE` nearest
cells and the rows the cells do not list yet (appended, or given a new vector, since they were drawn: `loose`), which
are folded into the cells once they are many. Drawn in one pass with no training: one matrix product of the rows and the
centroids, in blocks (about 1 s at 100,000 rows, once). A batch of 100 then takes 0.02 s.

Like the graph's narrow batch search (`AnnParams.expansion_batch`), this is approximate, so only the write path's
batch check uses it, and only while the graph is built; recall searches exactly until the graph is attached.
`bench/write_rate.py agreement` measures the decisions it leads to against exact search (its "coarse cells" row), and
`bench/write_rate.py candidates` its best candidates and its time a batch at 100,000 rows."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

# The cosines (queries, rows) of queries (float16, as `vector_cache.block_scores` rounds them) against float16 rows.
Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]

# How many of a query's nearest cells are scored: with sqrt(n) cells, at 8 11 of LoCoMo's 11,764 write decisions
# differed from exact search's (bench/write_rate.py agreement), at 16 none; with 4 sqrt(n) at 16, 1 (a merge missed).
PROBE = 16
# The cells drawn for n rows: CELLS_PER_ROOT x sqrt(n), within these bounds (drawing costs rows x cells dot
# products, once). At 4 against 1, a batch of 100 at 100,000 rows scores a quarter of the rows (0.019 s against 0.038
# idle; drawing 1.0 s against 0.5: bench/coarse_cells.py), and the first minute of writes after a 100k load runs
# ~1.3x as fast (bench/write_rate.py rate --after-load). It is a little more approximate: on real turns (LoCoMo and
# Chatlog, 16,340 rows, 4,384 near-repeats and restatements) the best candidate above the dedup threshold differed
# from exact search's for 5 of MiniLM's 2,356 (0 at 1) and 0 of e5's 860 (2 at 1); such a write is stored beside its
# near-duplicate instead of merged into it.
CELLS_PER_ROOT = 4
MIN_CELLS, MAX_CELLS = 64, 2048
# Loose rows (scored for every query) folded into the cells once there are more than this many; the cells are drawn
# again instead once the rows have doubled since they were drawn (their centroids no longer stand for the rows). A
# fold copies the listed rows once (~25 ms at 100,000); loose rows cost every query of every batch: at 1,024 a batch
# of 100 scores ~500 of them on average, at 4,096 (with a fold that gathered and sorted, 0.2 s) ~2,000.
FOLD_AFTER = 1024
# Rows assigned per matrix product while drawing or folding: a block of 4k rows by 2,048 cells is 32 MB of scores.
_BLOCK = 4096


def cell_count(rows: int) -> int:
    return max(MIN_CELLS, min(MAX_CELLS, CELLS_PER_ROOT * math.isqrt(max(rows, 1))))


class CoarseCells:
    """The cells of a vector cache's first `covered` rows (their positions grouped by nearest centroid, with a copy
    of their vectors in that order, so that a cell is scored where it lies, never gathered), and the rows they do not
    list: those at or past `covered`, and `moved` ones (a new vector since they were listed)."""

    def __init__(self, vectors: np.ndarray, alive: np.ndarray) -> None:
        """Draw cells over `vectors` (float16 unit rows; the cache's first rows), centroids taken evenly from the
        `alive` ones."""
        rows = np.flatnonzero(alive)
        chosen = rows[np.linspace(0, rows.size - 1, min(cell_count(rows.size), rows.size)).astype(np.int64)]
        self.centroids = np.ascontiguousarray(vectors[chosen], dtype=np.float32)
        self.assigned = self._nearest(vectors)
        self.covered = self.drawn = int(vectors.shape[0])
        self.moved: list[int] = []
        self._index(vectors)

    @property
    def nbytes(self) -> int:
        listed = self.assigned.nbytes + self.order.nbytes + self.offsets.nbytes + self.grouped.nbytes
        return int(self.centroids.nbytes + listed)

    def _nearest(self, vectors: np.ndarray) -> np.ndarray:
        """The nearest centroid of each row, in blocks of `_BLOCK` rows."""
        out = np.empty(vectors.shape[0], dtype=np.int32)
        for start in range(0, vectors.shape[0], _BLOCK):
            block = vectors[start : start + _BLOCK].astype(np.float32)
            out[start : start + block.shape[0]] = np.argmax(block @ self.centroids.T, axis=1)
        return out

    def _index(self, vectors: np.ndarray) -> None:
        """`order`: the listed positions grouped by cell (in position order within one as drawn; a fold appends to
        a cell, and `top_by_position` ranks ties by position whatever the order); `offsets`: where each cell's
        positions start in it; `grouped`: their vectors (of `vectors`, the listed rows) in that order."""
        self.order = np.argsort(self.assigned, kind="stable").astype(np.int64)
        self.offsets = np.searchsorted(self.assigned[self.order], np.arange(self.centroids.shape[0] + 1))
        self.grouped = vectors[self.order]

    def moved_row(self, position: int) -> None:
        """The row at `position` got a new vector: scored as a loose row until it is listed again."""
        if position < self.covered:
            self.moved.append(position)

    def loose(self, size: int) -> np.ndarray:
        """The positions (of the cache's first `size`) the cells do not list as they are now, sorted."""
        tail = np.arange(self.covered, size, dtype=np.int64)
        if not self.moved:
            return tail
        return np.union1d(np.asarray(self.moved, dtype=np.int64), tail)

    def fold(self, vectors: np.ndarray, size: int) -> None:
        """List the loose rows (of `vectors`, the cache's matrix, first `size` rows) under their nearest cells: each
        is put at the end of its cell, and a moved row's old entry taken out, so the rows listed already are copied
        once in order, not gathered and sorted again (a tenth of drawing's `_index` at 100,000 rows)."""
        loose = self.loose(size)
        if loose.size == 0:
            return
        cells = self._nearest(vectors[loose])
        order, grouped, listed_cells = self.order, self.grouped, self.assigned[self.order]
        if self.moved:
            kept = ~np.isin(order, np.unique(np.asarray(self.moved, dtype=np.int64)))
            order, grouped, listed_cells = order[kept], grouped[kept], listed_cells[kept]
        count = self.centroids.shape[0]
        ends = np.cumsum(np.bincount(listed_cells, minlength=count))
        by_cell = np.argsort(cells, kind="stable")
        at = ends[cells[by_cell]]
        self.order = np.insert(order, at, loose[by_cell])
        self.grouped = np.insert(grouped, at, vectors[loose[by_cell]], axis=0)
        self.offsets = np.concatenate([[0], ends + np.cumsum(np.bincount(cells, minlength=count))])
        assigned = np.empty(size, dtype=np.int32)
        assigned[: self.covered] = self.assigned
        assigned[loose] = cells
        self.assigned, self.covered, self.moved = assigned, size, []

    def scored(
        self, queries: np.ndarray, vectors: np.ndarray, size: int, score: Scorer
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each query (float32 unit rows), (positions, cosines) of the rows of its `PROBE` nearest cells and of
        every loose row (read from `vectors`, the cache's matrix of `size` rows), each row once, in no order. Each
        cell is scored once, for all the queries that probe it: `score(rows, queries)` gives the (queries, rows)
        cosines of the queries, rounded to float16 once, against float16 rows."""
        probe = min(PROBE, self.centroids.shape[0])
        near = np.argpartition(-(queries @ self.centroids.T), probe - 1, axis=1)[:, :probe].ravel()
        # The (query, cell) pairs by cell: each cell's asking queries side by side, found by cuts, not a dict.
        by_cell = np.argsort(near, kind="stable")
        cells, asking_queries = near[by_cell].tolist(), (by_cell // probe).tolist()
        cuts = [0, *(np.flatnonzero(np.diff(near[by_cell])) + 1).tolist(), len(cells)]
        positions: list[list[np.ndarray]] = [[] for _ in range(queries.shape[0])]
        scores: list[list[np.ndarray]] = [[] for _ in range(queries.shape[0])]
        order, offsets, grouped = self.order, self.offsets.tolist(), self.grouped
        queries16 = np.ascontiguousarray(queries, dtype=np.float16)  # what `score` rounds them to, once
        for start, end in zip(cuts, cuts[1:], strict=False):
            cell = cells[start]
            lo, hi = offsets[cell], offsets[cell + 1]
            if hi == lo:
                continue
            asking = asking_queries[start:end]
            listed, found = order[lo:hi], score(grouped[lo:hi], queries16[asking])
            for row, q in enumerate(asking):
                positions[q].append(listed)
                scores[q].append(found[row])
        # A moved row is listed under the cell of its old vector too, with that vector: scored as a loose row only.
        stale = np.unique(np.asarray(self.moved, dtype=np.int64)) if self.moved else None
        loose = self.loose(size)
        loose_scores = score(vectors[loose], queries16) if loose.size else None
        out: list[tuple[np.ndarray, np.ndarray]] = []
        for q in range(queries.shape[0]):
            mine = np.concatenate(positions[q]) if positions[q] else np.empty(0, dtype=np.int64)
            cosines = np.concatenate(scores[q]) if scores[q] else np.empty(0, dtype=np.float32)
            if stale is not None:
                fresh = ~np.isin(mine, stale)
                mine, cosines = mine[fresh], cosines[fresh]
            if loose_scores is not None:
                mine, cosines = np.concatenate([mine, loose]), np.concatenate([cosines, loose_scores[q]])
            out.append((mine, cosines))
        return out


def cells_for(cells: CoarseCells | None, vectors: np.ndarray, alive: np.ndarray, size: int) -> CoarseCells:
    """The cells to search a cache's first `size` rows (`vectors`, `alive`: its columns) with: `cells` as they are,
    with their loose rows folded in once there are more than `FOLD_AFTER`, or drawn anew when there are none yet or
    the rows have doubled since they were drawn."""
    if cells is None or size > 2 * cells.drawn:
        return CoarseCells(vectors[:size], alive[:size])
    if size - cells.covered + len(cells.moved) > FOLD_AFTER:
        cells.fold(vectors, size)
    return cells


def top_by_position(scores: np.ndarray, positions: np.ndarray, limit: int) -> np.ndarray:
    """The indices of the best `limit` of `scores` (one per row of `positions`, in any order), best first, equal
    scores in position order: what `vector_cache.top_of` gives over the same rows sorted by position, without
    sorting them all."""
    k = min(limit, scores.size)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < scores.size:
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        chosen = np.flatnonzero(scores >= kth)
    else:
        chosen = np.arange(scores.size)
    return chosen[np.lexsort((positions[chosen], -scores[chosen]))[:k]]
