"""The HNSW graph of a large namespace (SQLite backend): the same results as exact search, saved beside the
database, repaired or rebuilt from the store when its file is stale or missing, one per namespace."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from rearview.adapters.sqlite import SqliteMemoryStore, SqliteSearchIndex, VectorOptions
from rearview.adapters.sqlite.ann_index import AnnParams, HnswIndex, ann_available, repair_of
from rearview.adapters.sqlite.vector_cache import top_of
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Fact
from rearview.domain.search import Candidate, MemoryFilter
from support.vector_corpus import (
    EMBEDDER,
    EXHAUSTIVE,
    T0,
    corpus_episodes,
    corpus_queries,
    exact_index,
    graphed_index,
    open_db,
    write_episodes,
)

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not ann_available(), reason="usearch (the `embedded` extra) is not installed"),
]


def _ids(found: list[Candidate]) -> list[tuple[str, float]]:
    return [(c.id, round(c.score, 5)) for c in found]


def _same(graphed: list[Candidate], exact: list[Candidate]) -> None:
    """What exact search finds, in the same order, with the same scores (both score the cache's float16 vectors
    with one kernel, whatever the graph holds, and break ties by ref)."""
    assert _ids(graphed) == _ids(exact)


FILTERS = [
    MemoryFilter(),
    MemoryFilter(layers=("episodic",)),
    MemoryFilter(session_id="s1"),
    MemoryFilter(since=T0 + timedelta(minutes=50)),
]


@pytest.mark.parametrize("flt", FILTERS)
def test_a_graph_backed_namespace_returns_what_exact_search_returns(tmp_path: Path, flt: MemoryFilter) -> None:
    with open_db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        write_episodes(store, "acme", corpus_episodes("acme", 300))
        graphed, exact = graphed_index(db), exact_index(db)
        for query in corpus_queries():
            for limit in (1, 10, 60):
                _same(graphed.vector_search("acme", query, flt, limit), exact.vector_search("acme", query, flt, limit))
        batch = corpus_queries()
        graphed_many = graphed.vector_search_many("acme", batch, flt, 3)
        for found, expected in zip(graphed_many, exact.vector_search_many("acme", batch, flt, 3), strict=True):
            _same(found, expected)
        assert graphed.graph_count() == 1 and exact.graph_count() == 0


def test_every_vector_built_or_added_into_the_graph_is_reachable() -> None:
    """usearch's concurrent insertions leave some nodes reachable from no other (USearch#735; a few of every
    thousand, most builds): the graph is built and extended on one thread, so a search for each vector finds it."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((2000, 64))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float16)
    keys = np.arange(1, 2001, dtype=np.int64)
    graph = HnswIndex.build(64, AnnParams(), keys[:1500], vectors[:1500])
    graph.add(keys[1500:], vectors[1500:])
    found = graph.search(vectors.astype(np.float32), 1)
    assert [int(key) for key, nearest in zip(keys, found, strict=True) if key not in nearest] == []


def test_scores_tied_at_the_cut_keep_the_first_rows() -> None:
    """Exact search scores every row, the graph's search a subset in row order: the same memory of a tie must win
    in both, whatever the partition does with equal scores."""
    assert top_of(np.array([[0.2] * 50 + [0.9]], dtype=np.float32), 5).tolist() == [[50, 0, 1, 2, 3]]
    scores = np.random.default_rng(3).integers(0, 4, (20, 200)).astype(np.float32) / 4
    for limit in (1, 5, 60, 200, 300):
        expected = [np.lexsort((np.arange(200), -row))[:limit].tolist() for row in scores]
        assert top_of(scores, limit).tolist() == expected
        # One row at a time (a short row is ranked by a stable sort, not the partition): the same order.
        assert [top_of(row.reshape(1, -1), limit)[0].tolist() for row in scores] == expected
    long = np.random.default_rng(4).integers(0, 4, (1, 3000)).astype(np.float32) / 4
    for limit in (1, 60, 3000):
        assert top_of(long, limit).tolist() == [np.lexsort((np.arange(3000), -long[0]))[:limit].tolist()]


def test_writes_and_deletes_reach_the_graph_in_place(tmp_path: Path) -> None:
    with open_db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        write_episodes(store, "acme", corpus_episodes("acme", 100))
        graphed, exact = graphed_index(db), exact_index(db)
        query = corpus_queries()[0]
        graphed.vector_search("acme", query, MemoryFilter(), 5)

        write_episodes(store, "acme", corpus_episodes("acme", 50, start=100))
        store.apply("acme", ChangeSet(deletes=[f"acme-{i}" for i in range(0, 100, 3)]))

        for query in corpus_queries():
            _same(
                graphed.vector_search("acme", query, MemoryFilter(), 20),
                exact.vector_search("acme", query, MemoryFilter(), 20),
            )


def _graph_files(ann_dir: Path) -> list[Path]:
    return sorted(ann_dir.glob("*.usearch"))


def test_the_graph_is_saved_beside_the_database_and_rebuilt_when_its_file_is_missing(tmp_path: Path) -> None:
    ann_dir = tmp_path / "ann"
    with open_db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        write_episodes(store, "acme", corpus_episodes("acme", 200))
        query = corpus_queries()[2]
        expected = _ids(exact_index(db).vector_search("acme", query, MemoryFilter(), 10))

        assert _ids(graphed_index(db, ann_dir).vector_search("acme", query, MemoryFilter(), 10)) == expected
        (saved,) = _graph_files(ann_dir)
        saved.unlink()

        assert _ids(graphed_index(db, ann_dir).vector_search("acme", query, MemoryFilter(), 10)) == expected
        assert _graph_files(ann_dir) == [saved]


def test_a_stale_or_unreadable_graph_file_is_repaired_from_the_store(tmp_path: Path) -> None:
    ann_dir = tmp_path / "ann"
    path = tmp_path / "rearview.db"
    with open_db(path) as db, open_db(path) as other:  # two objects on one file: another process writes meanwhile
        store, their_store = SqliteMemoryStore(db), SqliteMemoryStore(other)
        write_episodes(store, "acme", corpus_episodes("acme", 200))
        graphed_index(db, ann_dir).vector_search("acme", corpus_queries()[0], MemoryFilter(), 10)
        (saved,) = _graph_files(ann_dir)

        # The saved graph misses these writes, holds a deleted memory, and has an old vector for a rewritten one.
        write_episodes(their_store, "acme", corpus_episodes("acme", 20, start=200))
        their_store.apply("acme", ChangeSet(deletes=["acme-7"]))
        rewritten = store.get("acme", "acme-8")
        assert rewritten is not None
        moved = EMBEDDER.embed(["a violin concert by the harbor"])[0]
        their_store.apply("acme", ChangeSet(upserts=[(rewritten.model_copy(update={"version": 2}), moved)]))

        reopened = graphed_index(db, ann_dir)
        for query in [*corpus_queries(), moved]:
            _same(
                reopened.vector_search("acme", query, MemoryFilter(), 15),
                exact_index(db).vector_search("acme", query, MemoryFilter(), 15),
            )
        assert [c.id for c in reopened.vector_search("acme", moved, MemoryFilter(), 1)] == ["acme-8"]

        saved.write_bytes(b"not a graph")
        unreadable = graphed_index(db, ann_dir)
        query = corpus_queries()[4]
        _same(
            unreadable.vector_search("acme", query, MemoryFilter(), 15),
            exact_index(db).vector_search("acme", query, MemoryFilter(), 15),
        )


def test_each_namespace_and_layer_has_its_own_graph(tmp_path: Path) -> None:
    ann_dir = tmp_path / "ann"
    with open_db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        write_episodes(store, "acme", corpus_episodes("acme", 120))
        write_episodes(store, "umbrella", corpus_episodes("umbrella", 120))
        fact = Fact(id="f1", namespace="acme", content="river mountain coffee", created_at=T0, last_confirmed_at=T0)
        store.apply("acme", ChangeSet(upserts=[(fact, EMBEDDER.embed([fact.content])[0])]))
        index = graphed_index(db, ann_dir)

        for query in corpus_queries():
            acme = index.vector_search("acme", query, MemoryFilter(), 300)
            umbrella = index.vector_search("umbrella", query, MemoryFilter(), 300)
            assert len(acme) == 121 and all(c.id.startswith("acme-") or c.id == "f1" for c in acme)
            assert len(umbrella) == 120 and all(c.id.startswith("umbrella-") for c in umbrella)
        assert len(_graph_files(ann_dir)) == 3  # acme: episodes and facts; umbrella: episodes (it has no facts)


def test_a_search_is_an_exact_scan_unless_it_walks_the_graph(tmp_path: Path) -> None:
    """What recall's feedback asks before it widens its first list: a search that walks the graph costs as much as
    the width asked for, one that scores the passing rows exactly costs the same at any width."""
    with open_db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        write_episodes(store, "acme", corpus_episodes("acme", 120))
        write_episodes(store, "small", corpus_episodes("small", 30))
        index = SqliteSearchIndex(db, vectors=VectorOptions(ann_threshold=100, ann_params=EXHAUSTIVE))
        assert index.scans_exactly("acme", MemoryFilter()), "a cache not loaded yet: its first search scans"

        for namespace in ("acme", "small"):
            index.vector_search(namespace, corpus_queries()[0], MemoryFilter(), 5)
        assert index.wait_for_graphs(timeout=30) and index.graph_count() == 1
        assert not index.scans_exactly("acme", MemoryFilter())
        assert not index.scans_exactly("acme", MemoryFilter(layers=("episodic",)))
        # A quarter of the rows pass: they are scored exactly. The facts' layer and the small namespace: no graph.
        assert index.scans_exactly("acme", MemoryFilter(session_id="s1"))
        assert index.scans_exactly("acme", MemoryFilter(layers=("semantic",)))
        assert index.scans_exactly("small", MemoryFilter())


def test_closing_the_database_saves_the_graphs_changed_since_their_last_save(tmp_path: Path) -> None:
    ann_dir = tmp_path / "ann"
    path = tmp_path / "rearview.db"
    with open_db(path) as db:
        store = SqliteMemoryStore(db)
        write_episodes(store, "acme", corpus_episodes("acme", 100))
        graphed_index(db, ann_dir).vector_search("acme", corpus_queries()[0], MemoryFilter(), 5)
        (saved,) = _graph_files(ann_dir)
        before = saved.stat().st_mtime_ns
        write_episodes(store, "acme", corpus_episodes("acme", 5, start=100))  # too few changes to save on their own
        assert saved.stat().st_mtime_ns == before

    assert saved.stat().st_mtime_ns > before
    stamp = json.loads(saved.with_name(saved.name + ".json").read_text(encoding="utf-8"))
    assert stamp["size"] == 105


def test_the_write_paths_duplicate_check_finds_near_duplicates_through_the_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rearview.adapters.sqlite.ann_index import HnswIndex
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.domain.write import MemoryWrite
    from rearview.settings import IndexTuning, Settings

    settings = Settings(embedder="hashing", data_dir=tmp_path, index=IndexTuning(ann_threshold=50))
    services = build(settings, clock=ManualClock(T0))
    topics = [f"{word} appointment with doctor {word} number {i}" for i, word in enumerate(["alpha", "beta"] * 100)]

    def write(namespace: str, texts: list[str], prefix: str) -> list[str]:
        items = [
            MemoryWrite(layer="episodic", id=f"{prefix}{i}", content=t, importance=1.0) for i, t in enumerate(texts)
        ]
        return [r.status for r in services.writer.write_batch(namespace, items)]

    assert set(write("acme", topics, "a")) == {"stored"}
    assert set(write("umbrella", topics[:10], "u")) == {"stored"}
    assert isinstance(services.index, SqliteSearchIndex)
    assert services.index.wait_for_graphs(timeout=60)  # built in the background (SERVED_IN_BACKGROUND)
    searched: list[int] = []
    real_search = HnswIndex.search

    def search(self: HnswIndex, queries: np.ndarray, count: int, width: int | None = None) -> list[np.ndarray]:
        searched.append(len(self))
        return real_search(self, queries, count, width)

    monkeypatch.setattr(HnswIndex, "search", search)

    # The same texts again (and one new): merged into the stored ones, found through acme's graph; umbrella's
    # near-duplicates of acme's texts are not acme's.
    statuses = write("acme", [topics[3], topics[150], "a quiet evening of chess"], "b")
    assert statuses == ["merged", "merged", "stored"]
    assert searched == [200]  # one graph search for the batch, over acme's 200 vectors
    assert write("umbrella", [topics[150]], "v") == ["stored"]
    assert searched == [200]  # umbrella's 10 are below the threshold: searched exactly


def test_written_rows_go_into_the_graph_at_their_own_construction_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AnnParams.expansion_writes: a build (and the graph's own width) stays at expansion_add, the rows written
    once the graph exists go in at expansion_writes, and the default reaches the search index bootstrap builds."""
    from usearch.index import Index

    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.settings import Settings

    widths: list[tuple[int, int]] = []
    real_add = Index.add

    here = threading.get_ident()

    def add(self: Index, keys: object, vectors: object, **kwargs: object) -> object:
        # Only this test's graphs (built on this thread): a graph an earlier test left building in the background
        # calls the same class.
        if threading.get_ident() == here:
            widths.append((len(np.asarray(keys).reshape(-1)), int(self.expansion_add)))
        return real_add(self, keys, vectors, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Index, "add", add)
    params = AnnParams(expansion_add=128, expansion_writes=40)
    with open_db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        write_episodes(store, "acme", corpus_episodes("acme", 30))
        index = SqliteSearchIndex(db, vectors=VectorOptions(ann_threshold=20, ann_params=params))
        index.vector_search("acme", corpus_queries()[0], MemoryFilter(), 5)  # loads the cache, builds the graph
        write_episodes(store, "acme", corpus_episodes("acme", 5, start=30))
        write_episodes(store, "acme", corpus_episodes("acme", 3, start=35))
        assert widths == [(30, 128), (5, 40), (3, 40)]
        graph = index._vectors.get("acme", "episodic", db.generation("acme")).ann
        assert graph is not None and int(graph._index.expansion_add) == 128
        _same(
            index.vector_search("acme", corpus_queries()[1], MemoryFilter(), 38),
            exact_index(db).vector_search("acme", corpus_queries()[1], MemoryFilter(), 38),
        )

    services = build(Settings(embedder="hashing", data_dir=tmp_path / "built"), clock=ManualClock(T0))
    assert isinstance(services.index, SqliteSearchIndex)
    assert services.index._vectors.ann.ann_params.expansion_writes == AnnParams().expansion_writes == 64
    services.close()


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_a_graph_holds_its_vectors_to_its_precision_and_a_changed_one_is_repaired(dtype: str) -> None:
    """A graph's vectors, cut to its type, are no change (bfloat16 keeps 8 bits of each value); a vector embedded
    anew is, however near."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((300, 64)).astype(np.float32)
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float16)
    refs = np.arange(1, 301, dtype=np.int64)
    graph = HnswIndex.build(64, AnnParams(dtype=dtype), refs, vectors)

    assert repair_of(graph, refs, vectors, check_vectors=True).size == 0
    held, given = graph.vectors_of(refs).astype(np.float32), vectors.astype(np.float32)
    assert (np.abs(held - given) <= np.abs(given) * 2.0**-7).all()

    moved = vectors.copy()
    near = vectors[5].astype(np.float32) + 0.1 * rng.standard_normal(64).astype(np.float32) / 8
    moved[5] = (near / np.linalg.norm(near)).astype(np.float16)
    repair = repair_of(graph, refs, moved, check_vectors=True)
    assert repair.add.tolist() == [5] and repair.remove.size == 0


def test_a_waiting_search_goes_before_the_next_step_of_whoever_held_the_graph() -> None:
    """The graph keeper adds rows in steps, each holding the graph's lock: a search that waits for one step gets the
    lock before the keeper's next, however quickly the keeper asks for it again (a plain lock let the keeper take
    it back before the search woke, step after step)."""
    from rearview.adapters.sqlite.ann_index import _SearchesFirst

    lock = _SearchesFirst()
    order: list[str] = []
    waiting = threading.Event()

    def search() -> None:
        waiting.set()
        with lock.searching():
            order.append("search")

    with lock:
        searcher = threading.Thread(target=search)
        searcher.start()
        waiting.wait(timeout=10)
        for _ in range(10_000):  # until the search is waiting for the lock, not only about to ask for it
            if lock.searches_waiting:
                break
            threading.Event().wait(0.001)
    with lock:  # the keeper's next step, asked for at once
        order.append("keeper")
    searcher.join(timeout=10)
    assert order == ["search", "keeper"]
