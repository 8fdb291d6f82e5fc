"""Coarse cells (`coarse_cells`): while a large namespace's graph is being built, the write path's duplicate check
scores the rows of each item's nearest cells and the rows written since, not every row. It finds what exact search
finds for a near-duplicate, scores every row it returns with the row's current vector, takes in what was written
meanwhile, ranks equal scores as exact search does, and is used only by the approximate batch search and only while
the graph is built."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rearview.adapters.sqlite import SqliteMemoryStore, SqliteSearchIndex, VectorOptions
from rearview.adapters.sqlite import coarse_cells as coarse_cells_module
from rearview.adapters.sqlite import vector_cache as vector_cache_module
from rearview.adapters.sqlite.ann_index import HnswIndex, ann_available
from rearview.adapters.sqlite.coarse_cells import PROBE, CoarseCells, cell_count, top_by_position
from rearview.adapters.sqlite.connection import CachedRow
from rearview.adapters.sqlite.vector_cache import VectorCache, block_scores, normalised_rows, top_of
from rearview.domain.search import MemoryFilter
from support.vector_corpus import EMBEDDER, EXHAUSTIVE, corpus_episodes, exact_index, open_db, write_episodes

pytestmark = pytest.mark.unit

DIM = 48


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    return normalised_rows(rng.standard_normal((n, DIM)).astype(np.float32))


def _near(rng: np.random.Generator, rows: np.ndarray, noise: float = 0.1) -> np.ndarray:
    """Queries a cosine of about 0.99 from `rows`: what a near-duplicate of each looks like."""
    return normalised_rows(rows + noise * rng.standard_normal(rows.shape).astype(np.float32) / np.sqrt(DIM))


def _building_cache(vectors: np.ndarray) -> VectorCache:
    """A cache of `vectors` whose graph is being built (so the batch search goes through the cells)."""
    cache = VectorCache("episodic", DIM, generation=1, capacity=vectors.shape[0])
    for i, vector in enumerate(vectors):
        cache.upsert(_row(i, vector))
    cache.unsynced, cache.building = [], True
    return cache


def _row(i: int, vector: np.ndarray) -> CachedRow:
    return CachedRow("episodic", i + 1, f"m{i}", 0.0, True, False, None, None, None, vector)


def _exact(cache: VectorCache, queries: np.ndarray, limit: int) -> list[tuple[list[float], list[str]]]:
    return [cache.search(q, np.ones(cache.size, dtype=bool), limit) for q in queries]


def test_top_by_position_ranks_as_top_of_over_the_rows_in_position_order() -> None:
    """Scores with many ties (rounded to a few values), in shuffled position order: the same indices, best first,
    equal scores in position order, the cut included."""
    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        positions = rng.permutation(1000)[:n]
        scores = np.round(rng.random(n), 1).astype(np.float32)
        limit = int(rng.integers(1, 12))
        by_position = np.argsort(positions, kind="stable")
        expected = by_position[top_of(scores[by_position].reshape(1, -1), limit)[0]]
        assert top_by_position(scores, positions, limit).tolist() == expected.tolist(), trial


def test_cells_list_every_row_once_under_its_nearest_centroid() -> None:
    rng = np.random.default_rng(5)
    vectors = _unit(rng, 3000).astype(np.float16)
    cells = CoarseCells(vectors, np.ones(3000, dtype=bool))
    assert cells.centroids.shape[0] == cell_count(3000) == 216
    assert sorted(cells.order.tolist()) == list(range(3000))
    for cell in range(cells.centroids.shape[0]):
        listed = cells.order[cells.offsets[cell] : cells.offsets[cell + 1]]
        assert listed.tolist() == sorted(listed.tolist())  # position order within a cell
        nearest = np.argmax(vectors[listed].astype(np.float32) @ cells.centroids.T, axis=1)
        assert (nearest == cell).all()
        assert np.array_equal(cells.grouped[cells.offsets[cell] : cells.offsets[cell + 1]], vectors[listed])


def test_a_near_duplicate_is_found_as_exact_search_finds_it_with_the_same_score() -> None:
    rng = np.random.default_rng(7)
    vectors = _unit(rng, 4000)
    cache = _building_cache(vectors)
    queries = _near(rng, vectors[rng.choice(4000, 300, replace=False)])
    mask = np.ones(cache.size, dtype=bool)

    found = cache.search_many(queries, mask, 3, width=32)

    assert cache.cells is not None  # the batch search went through the cells
    for (scores, ids), (exact_scores, exact_ids) in zip(found, _exact(cache, queries, 3), strict=True):
        assert ids[0] == exact_ids[0]
        assert scores[0] == pytest.approx(exact_scores[0], abs=1e-6)
        assert scores == sorted(scores, reverse=True)


def test_every_row_returned_is_scored_with_its_current_vector_and_written_rows_are_found() -> None:
    """Rows given a new vector after the cells were drawn, and rows appended since, are found by their new vectors;
    a moved row's old vector finds nothing; each row comes once."""
    rng = np.random.default_rng(11)
    vectors = _unit(rng, 3000)
    cache = _building_cache(vectors)
    mask = np.ones(cache.size, dtype=bool)
    cache.search_many(vectors[:2], mask, 3, width=32)  # draws the cells
    assert cache.cells is not None and cache.cells.covered == 3000

    moved = [10, 20, 30]
    fresh = _unit(rng, 3)
    for position, vector in zip(moved, fresh, strict=True):
        cache.upsert(_row(position, vector))
    appended = _unit(rng, 5)
    for offset, vector in enumerate(appended):
        cache.upsert(_row(3000 + offset, vector))
    mask = np.ones(cache.size, dtype=bool)

    queries = np.vstack([_near(rng, fresh), _near(rng, appended), vectors[moved]])
    found = cache.search_many(queries, mask, 5, width=32)

    expected = [f"m{p}" for p in moved] + [f"m{3000 + i}" for i in range(5)]
    for (_, ids), want in zip(found[:8], expected, strict=True):
        assert ids[0] == want
    for (scores, ids), position in zip(found[8:], moved, strict=True):
        assert f"m{position}" not in ids or scores[ids.index(f"m{position}")] < 0.9  # its old vector is gone
    for (scores, ids), query in zip(found, queries, strict=True):
        assert len(set(ids)) == len(ids)
        rows = np.asarray([cache.position[i] for i in ids])
        assert np.allclose(scores, block_scores(cache.vectors[rows], query.reshape(1, -1))[0], atol=1e-6)


def test_loose_rows_are_folded_into_the_cells_once_they_are_many(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coarse_cells_module, "FOLD_AFTER", 40)
    rng = np.random.default_rng(13)
    vectors = _unit(rng, 2000)
    cache = _building_cache(vectors)
    cache.search_many(vectors[:1], np.ones(cache.size, dtype=bool), 3, width=32)
    added = _unit(rng, 50)
    for offset, vector in enumerate(added):
        cache.upsert(_row(2000 + offset, vector))
    cache.upsert(_row(7, added[0]))  # a moved row too
    mask = np.ones(cache.size, dtype=bool)

    found = cache.search_many(_near(rng, added), mask, 2, width=32)

    cells = cache.cells
    assert cells is not None and cells.covered == 2050 and not cells.moved
    assert sorted(cells.order.tolist()) == list(range(2050))
    assert cells.offsets[-1] == 2050 and (np.diff(cells.offsets) >= 0).all()
    for cell in range(cells.centroids.shape[0]):  # each row under its nearest cell, with its current vector
        listed = cells.order[cells.offsets[cell] : cells.offsets[cell + 1]]
        assert (cells.assigned[listed] == cell).all()
        now = cache.vectors[listed]
        assert np.array_equal(cells.grouped[cells.offsets[cell] : cells.offsets[cell + 1]], now)
        assert (np.argmax(now.astype(np.float32) @ cells.centroids.T, axis=1) == cell).all()
    assert [ids[0] for _, ids in found[1:]] == [f"m{2000 + i}" for i in range(1, 50)]
    assert set(found[0][1][:2]) == {"m7", "m2000"}  # the same vector twice: both, in position order
    assert found[0][1][0] == "m7"


def test_cells_are_drawn_again_once_the_rows_have_doubled() -> None:
    rng = np.random.default_rng(23)
    vectors = _unit(rng, 1000)
    cache = _building_cache(vectors)
    cache.search_many(vectors[:1], np.ones(cache.size, dtype=bool), 3, width=32)
    first = cache.cells
    assert first is not None and first.drawn == 1000
    added = _unit(rng, 1001)
    for offset, vector in enumerate(added):
        cache.upsert(_row(1000 + offset, vector))

    found = cache.search_many(_near(rng, added[-3:]), np.ones(cache.size, dtype=bool), 1, width=32)

    assert cache.cells is not first and cache.cells is not None
    assert cache.cells.drawn == cache.cells.covered == 2001 and cache.cells.loose(2001).size == 0
    assert [ids[0] for _, ids in found] == ["m1998", "m1999", "m2000"]


def test_only_the_approximate_batch_search_while_a_graph_is_built_uses_the_cells() -> None:
    """Recall's searches (no width), a cache not being built, and a filter that passes few rows are exact."""
    rng = np.random.default_rng(17)
    vectors = _unit(rng, 2000)
    cache = _building_cache(vectors)
    everything = np.ones(cache.size, dtype=bool)
    cache.search(vectors[0], everything, 3)
    cache.search_many(vectors[:3], everything, 3)
    few = np.zeros(cache.size, dtype=bool)
    few[:100] = True
    assert cache.search_many(vectors[:3], few, 3, width=32) == cache._exact_many(vectors[:3], np.arange(100), 3)
    assert cache.cells is None
    cache.building = False
    cache.search_many(vectors[:3], everything, 3, width=32)
    assert cache.cells is None


def test_probing_fewer_cells_than_there_are() -> None:
    """A cache with as few rows as cells: every cell is one row, and PROBE of them are scored."""
    rng = np.random.default_rng(19)
    vectors = _unit(rng, 64).astype(np.float16)
    cells = CoarseCells(vectors, np.ones(64, dtype=bool))
    ((positions, _),) = cells.scored(vectors[:1].astype(np.float32), vectors, 64, vector_cache_module._scores_of_many)
    assert positions.size == PROBE and 0 in positions.tolist()


@pytest.mark.skipif(not ann_available(), reason="usearch (the `embedded` extra) is not installed")
def test_the_write_paths_search_during_a_build_finds_what_exact_search_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace past the graph threshold, its graph held mid-build: the batch search (the write path's duplicate
    check) of restated memories finds each one's original, as exact search does; once the graph is attached the
    cells are gone."""
    release = threading.Event()
    real_add = HnswIndex.add

    def held_add(
        self: HnswIndex, keys: np.ndarray, vectors: np.ndarray, expansion: int | None = None, **kw: Any
    ) -> None:
        release.wait(60)
        real_add(self, keys, vectors, expansion, **kw)

    monkeypatch.setattr(HnswIndex, "add", held_add)
    db = open_db(tmp_path / "r.db")
    options = VectorOptions(ann_threshold=100, ann_params=EXHAUSTIVE, background=True)
    store, index = SqliteMemoryStore(db), SqliteSearchIndex(db, vectors=options)
    episodes = corpus_episodes("acme", 600)
    write_episodes(store, "acme", episodes)
    restated = EMBEDDER.embed([e.content.upper() + "!" for e in episodes[::7]])
    flt = MemoryFilter(layers=("episodic",))
    try:
        found = index.vector_search_many("acme", restated, flt, 3)
        cache = index._vectors.loaded("acme", "episodic", db.generation("acme"))
        assert cache is not None and cache.building and cache.cells is not None
        exact = exact_index(db).vector_search_many("acme", restated, flt, 3)
        assert [c[0].id for c in found] == [c[0].id for c in exact] == [e.id for e in episodes[::7]]
    finally:
        release.set()
    assert index.wait_for_graphs(timeout=60)
    assert cache.ann is not None and cache.cells is None and not cache.building
    db.close()
