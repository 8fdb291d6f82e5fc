"""Graph work in the background (`SERVED_IN_BACKGROUND`, `graph_keeper`): a bulk load leaves its namespace's graph
built without a query; rows the graph does not hold yet are searched exactly beside it; a graph saved while rows
were pending is checked vector by vector when opened again, so what was pending is never silently lost; the keeper
stops with the database."""

from __future__ import annotations

import json
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rearview.adapters.sqlite import SqliteMemoryStore, SqliteSearchIndex, VectorOptions
from rearview.adapters.sqlite.ann_index import HnswIndex, ann_available, repair_of
from rearview.adapters.sqlite.graph_keeper import _SWITCH_INTERVAL, GraphKeeper, _switch_interval
from rearview.adapters.sqlite.vector_caches import VectorCaches
from rearview.domain.changes import ChangeSet
from rearview.domain.search import MemoryFilter
from support.vector_corpus import (
    EMBEDDER,
    EXHAUSTIVE,
    T0,
    corpus_episodes,
    corpus_queries,
    exact_index,
    open_db,
    write_episodes,
)

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not ann_available(), reason="usearch (the `embedded` extra) is not installed"),
]


def _background(
    db_path: Path, ann_dir: Path | None, threshold: int = 50
) -> tuple[SqliteMemoryStore, SqliteSearchIndex]:
    db = open_db(db_path)
    options = VectorOptions(ann_threshold=threshold, ann_dir=ann_dir, ann_params=EXHAUSTIVE, background=True)
    return SqliteMemoryStore(db), SqliteSearchIndex(db, vectors=options)


def _ids(index: SqliteSearchIndex, query: np.ndarray) -> list[str]:
    return [c.id for c in index.vector_search("acme", query, MemoryFilter(), 10)]


def test_a_bulk_load_past_the_threshold_builds_its_graph_without_a_query(tmp_path: Path) -> None:
    store, index = _background(tmp_path / "r.db", tmp_path / "ann")
    write_episodes(store, "acme", corpus_episodes("acme", 120))
    write_episodes(store, "small", corpus_episodes("small", 20))
    assert index.wait_for_graphs(timeout=60)
    assert index.graph_count() == 1  # acme's, loaded and built by the keeper; small is below the threshold
    assert len(list((tmp_path / "ann").glob("*.usearch"))) == 1  # and saved
    store.db.close()


def test_rows_the_graph_does_not_hold_yet_are_searched_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, index = _background(tmp_path / "r.db", None)
    write_episodes(store, "acme", corpus_episodes("acme", 120))
    assert index.wait_for_graphs(timeout=60)
    assert index.graph_count() == 1
    # The keeper is held back: what is written next stays pending, out of the graph.
    monkeypatch.setattr(GraphKeeper, "schedule", lambda self, key: None)
    searched: list[int] = []
    real_search = HnswIndex.search

    def search(self: HnswIndex, queries: np.ndarray, count: int, width: int | None = None) -> list[np.ndarray]:
        searched.append(len(self))
        return real_search(self, queries, count, width)

    monkeypatch.setattr(HnswIndex, "search", search)
    write_episodes(store, "acme", corpus_episodes("acme", 30, start=120))
    exact = exact_index(store.db)
    for query in corpus_queries():
        assert _ids(index, query) == _ids(exact, query)
    assert set(searched) == {120}  # through the graph, which holds only the first 120
    store.db.close()


def test_a_batch_of_queries_scores_pending_rows_as_exact_search_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The write path's duplicate check: many queries at once, the pending rows scored for all of them together.
    store, index = _background(tmp_path / "r.db", None)
    write_episodes(store, "acme", corpus_episodes("acme", 120))
    assert index.wait_for_graphs(timeout=60)
    monkeypatch.setattr(GraphKeeper, "schedule", lambda self, key: None)
    searched: list[int] = []
    real_search = HnswIndex.search

    def search(self: HnswIndex, queries: np.ndarray, count: int, width: int | None = None) -> list[np.ndarray]:
        searched.append(len(queries))
        return real_search(self, queries, count, width)

    monkeypatch.setattr(HnswIndex, "search", search)
    # Pending: new rows, and rows the graph holds under their old vectors, rewritten with other words.
    write_episodes(store, "acme", corpus_episodes("acme", 30, start=120))
    rewritten = [
        e.model_copy(update={"id": f"acme-{i}", "version": 2})
        for i, e in enumerate(corpus_episodes("acme", 10, start=500))
    ]
    write_episodes(store, "acme", rewritten)
    exact = exact_index(store.db)
    queries = corpus_queries()
    # Every row, and a filter most rows pass (still through the graph) that leaves out some pending rows.
    for flt in (MemoryFilter(), MemoryFilter(until=T0 + timedelta(minutes=135))):
        found = index.vector_search_many("acme", queries, flt, 10)
        expected = exact.vector_search_many("acme", queries, flt, 10)
        assert [[c.id for c in hits] for hits in found] == [[c.id for c in hits] for hits in expected]
        for hits, exact_hits in zip(found, expected, strict=True):
            assert [c.score for c in hits] == pytest.approx([c.score for c in exact_hits], abs=1e-5)
    assert searched == [len(queries)] * 2  # both through the graph, all queries in one search
    store.db.close()


def test_a_graph_saved_with_rows_pending_is_checked_vector_by_vector_when_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann_dir = tmp_path / "ann"
    store, index = _background(tmp_path / "r.db", ann_dir)
    episodes = corpus_episodes("acme", 120)
    write_episodes(store, "acme", episodes)
    assert index.wait_for_graphs(timeout=60)
    index.vector_search("acme", corpus_queries()[0], MemoryFilter(), 10)
    monkeypatch.setattr(GraphKeeper, "schedule", lambda self, key: None)
    # A memory's vector replaced under the same ref (a reindex), and a new one: both pending when the graph is saved.
    changed = episodes[7].model_copy(update={"version": 2})
    new_vector = EMBEDDER.embed(["glacier lagoon quartz canyon"])[0]
    store.apply("acme", ChangeSet(upserts=[(changed, new_vector)]))
    write_episodes(store, "acme", corpus_episodes("acme", 1, start=500))
    index.save_graphs()
    (stamp_path,) = ann_dir.glob("*.usearch.json")
    assert json.loads(stamp_path.read_text(encoding="utf-8"))["generation"] == -1
    store.db.close()
    monkeypatch.undo()

    # Opened again, without background work: the saved graph is repaired before it answers.
    db = open_db(tmp_path / "r.db")
    reopened = SqliteSearchIndex(db, vectors=VectorOptions(ann_threshold=50, ann_dir=ann_dir, ann_params=EXHAUSTIVE))
    hits = reopened.vector_search("acme", new_vector, MemoryFilter(), 3)
    assert hits[0].id == changed.id and hits[0].score == pytest.approx(1.0, abs=2e-3)
    exact = exact_index(db)
    for query in corpus_queries():
        assert _ids(reopened, query) == _ids(exact, query)
    assert reopened.graph_count() == 1
    db.close()


def test_the_keeper_stops_when_the_database_closes(tmp_path: Path) -> None:
    store, index = _background(tmp_path / "r.db", None)
    write_episodes(store, "acme", corpus_episodes("acme", 120))
    keeper = index._vectors._keeper
    assert keeper is not None
    assert index.wait_for_graphs(timeout=60)
    thread = keeper._thread
    assert thread is not None and thread.is_alive()
    store.db.close()
    assert not thread.is_alive()


def test_the_switch_interval_is_lowered_while_a_keeper_runs_and_put_back_after_the_last() -> None:
    first, second = GraphKeeper(lambda key: False), GraphKeeper(lambda key: False)
    first.schedule(("acme", "episodic"))
    second.schedule(("beta", "episodic"))
    assert first.wait_idle(timeout=10) and second.wait_idle(timeout=10)
    assert sys.getswitchinterval() <= _SWITCH_INTERVAL
    first.stop()
    assert sys.getswitchinterval() <= _SWITCH_INTERVAL  # the second still runs
    second.stop()
    # Put back, unless a keeper another test left (say, of a database not yet collected) still runs: whichever
    # keeper of the process stops last puts back what the first one found.
    with _switch_interval._lock:
        expected = _switch_interval._set if _switch_interval._running else _switch_interval._saved
        assert sys.getswitchinterval() == expected


def test_writes_and_searches_while_the_keeper_builds_end_where_exact_search_does(tmp_path: Path) -> None:
    """Change sets land, one after another, while the keeper builds and extends the graph and searches run between
    them: every search finds what exact search finds at that moment, and so does the settled graph at the end."""
    store, index = _background(tmp_path / "r.db", tmp_path / "ann", threshold=40)
    exact = exact_index(store.db)
    flt = MemoryFilter()
    for step in range(12):
        write_episodes(store, "acme", corpus_episodes("acme", 25, start=25 * step))
        if step % 3 == 2:
            store.apply("acme", ChangeSet(deletes=[f"acme-{25 * step - 7}"]))
        for query in corpus_queries()[:6]:
            assert _ids(index, query) == _ids(exact, query)
    assert index.wait_for_graphs(timeout=60)
    assert index.graph_count() == 1
    for query in corpus_queries():
        assert [c.id for c in index.vector_search("acme", query, flt, 10)] == _ids(exact, query)
    store.db.close()


def test_a_failed_build_is_scheduled_again_by_the_next_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, index = _background(tmp_path / "r.db", None)
    real_add = HnswIndex.add
    failures = [RuntimeError("out of memory")]

    def add(self: HnswIndex, keys: np.ndarray, vectors: np.ndarray, expansion: int | None = None, **kw: Any) -> None:
        if failures:
            raise failures.pop()
        real_add(self, keys, vectors, expansion, **kw)

    monkeypatch.setattr(HnswIndex, "add", add)
    write_episodes(store, "acme", corpus_episodes("acme", 120))
    assert index.wait_for_graphs(timeout=60)
    assert not failures and index.graph_count() == 0  # the first build failed: searched exactly meanwhile
    write_episodes(store, "acme", corpus_episodes("acme", 1, start=120))
    assert index.wait_for_graphs(timeout=60)
    assert index.graph_count() == 1
    exact = exact_index(store.db)
    for query in corpus_queries():
        assert _ids(index, query) == _ids(exact, query)
    store.db.close()


class _Clock:
    """The keeper's clock, moved by hand (then `wake` it)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _quiet_caches(db_path: Path, clock: _Clock) -> tuple[SqliteMemoryStore, VectorCaches, GraphKeeper]:
    db = open_db(db_path)
    options = VectorOptions(ann_threshold=50, ann_params=EXHAUSTIVE, background=True, bulk_quiet_seconds=2.0)
    caches = VectorCaches(db, options, clock=clock)
    assert caches._keeper is not None
    return SqliteMemoryStore(db), caches, caches._keeper


def test_a_bulk_loads_graph_waits_until_the_load_has_been_quiet(tmp_path: Path) -> None:
    clock = _Clock()
    store, caches, keeper = _quiet_caches(tmp_path / "r.db", clock)
    write_episodes(store, "acme", corpus_episodes("acme", 60))
    clock.now = 1.5
    # Past the threshold. The load's change sets came 1.5 s apart, then 0.5 s: the graph waits twice the longest
    # time between two of them after the last (neither the quiet time alone, up at 4.0, nor twice the last gap).
    write_episodes(store, "acme", corpus_episodes("acme", 60, start=60))
    clock.now = 2.0
    write_episodes(store, "acme", corpus_episodes("acme", 60, start=120))
    clock.now = 4.5
    keeper.wake()
    assert not caches.wait_for_graphs(timeout=0.5)  # still deferred: nothing loaded or built during the load
    assert caches.vector_count() == 0 and caches.graph_count() == 0
    clock.now = 5.0
    keeper.wake()
    assert caches.wait_for_graphs(timeout=60)
    assert caches.vector_count() == 180 and caches.graph_count() == 1
    store.db.close()


def test_a_query_during_the_quiet_time_starts_the_build_at_once(tmp_path: Path) -> None:
    clock = _Clock()
    store, caches, keeper = _quiet_caches(tmp_path / "r.db", clock)
    write_episodes(store, "acme", corpus_episodes("acme", 120))
    assert not caches.wait_for_graphs(timeout=0.2)
    # What a search does first: the namespace's cache, loaded; its graph is then built at once, not at 2.0.
    cache = caches.get("acme", "episodic", store.db.generation("acme"))
    assert cache.alive_count == 120
    assert caches.wait_for_graphs(timeout=60)
    assert caches.graph_count() == 1 and clock.now == 0.0
    store.db.close()


def _settled_graph_matches_the_cache(index: SqliteSearchIndex) -> None:
    """The keeper is idle: the graph holds every alive row of the cache, under its ref, with its current vector, and
    nothing else; nothing waits."""
    cache = index._vectors._caches[("acme", "episodic")]
    assert cache.ann is not None and not cache.unsynced
    refs, vectors = cache.alive_rows()
    repair = repair_of(cache.ann, refs, vectors, check_vectors=True)
    assert repair.add.size == 0 and repair.remove.size == 0
    assert len(cache.ann) == refs.size


@pytest.mark.parametrize("held", ["before_its_first_insertion", "after_its_first_insertion"])
def test_rows_deleted_or_rewritten_while_the_keeper_inserts_them_end_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: str
) -> None:
    """The keeper inserts a chunk of rows holding the graph's lock only, a few at a time: it is held here before its
    first insertion, or after it (those rows in the graph and still pending), while writes land, a row of its chunk
    is deleted and another written again with a new vector. Writes and searches go on meanwhile and find what exact
    search finds; once it is let go, the graph holds exactly the alive rows with their current vectors."""
    store, index = _background(tmp_path / "r.db", None)
    write_episodes(store, "acme", corpus_episodes("acme", 120))
    assert index.wait_for_graphs(timeout=60)
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        if threading.current_thread().name == "rearview-graph-keeper" and not release.is_set():
            inside.set()
            assert release.wait(timeout=60)

    real_add = HnswIndex.add

    def add(self: HnswIndex, keys: np.ndarray, vectors: np.ndarray, expansion: int | None = None, **kw: Any) -> None:
        if held == "before_its_first_insertion":
            hold()
        real_add(self, keys, vectors, expansion, **kw)
        if held == "after_its_first_insertion":
            hold()  # those rows are in the graph, and still pending

    monkeypatch.setattr(HnswIndex, "add", add)
    episodes = corpus_episodes("acme", 20, start=120)
    write_episodes(store, "acme", episodes)
    assert inside.wait(timeout=60)  # the keeper holds the chunk of those 20 rows
    store.apply("acme", ChangeSet(deletes=["acme-125"]))
    new_vector = EMBEDDER.embed(["glacier lagoon quartz canyon museum"])[0]
    store.apply("acme", ChangeSet(upserts=[(episodes[10].model_copy(update={"version": 2}), new_vector)]))
    write_episodes(store, "acme", corpus_episodes("acme", 5, start=140))
    exact = exact_index(store.db)
    for query in [*corpus_queries(), new_vector]:
        assert _ids(index, query) == _ids(exact, query)
    hits = index.vector_search("acme", new_vector, MemoryFilter(), 1)
    assert hits[0].id == "acme-130" and hits[0].score == pytest.approx(1.0, abs=2e-3)
    release.set()
    assert index.wait_for_graphs(timeout=60)
    _settled_graph_matches_the_cache(index)
    for query in [*corpus_queries(), new_vector]:
        assert _ids(index, query) == _ids(exact, query)
    store.db.close()


def test_a_row_written_before_a_search_is_found_while_the_keeper_inserts_concurrently(tmp_path: Path) -> None:
    """One thread writes change sets (new rows, now and then one of them deleted at once) as fast as it can while the
    keeper inserts them; the test's thread searches meanwhile for each row committed before its search began, by the
    row's own vector: it comes back first every time (in the graph, or pending and scored exactly; never in between
    and missed). Settled, the graph holds exactly the alive rows."""
    store, index = _background(tmp_path / "r.db", None, threshold=40)
    write_episodes(store, "acme", corpus_episodes("acme", 60))
    assert index.wait_for_graphs(timeout=60)
    committed: list[tuple[str, np.ndarray]] = []
    lock = threading.Lock()
    failures: list[BaseException] = []

    def writer() -> None:
        try:
            for step in range(30):
                batch = corpus_episodes("acme", 10, start=60 + 10 * step)
                vectors = EMBEDDER.embed([m.content for m in batch])
                store.apply("acme", ChangeSet(upserts=list(zip(batch, vectors, strict=True))))
                gone = batch[3].id if step % 5 == 4 else None  # deleted before the searches look for it
                if gone is not None:
                    store.apply("acme", ChangeSet(deletes=[gone]))
                with lock:
                    committed.extend((m.id, v) for m, v in zip(batch, vectors, strict=True) if m.id != gone)
        except BaseException as error:  # reported by the test's thread
            failures.append(error)

    thread = threading.Thread(target=writer)
    thread.start()
    searched = 0
    while thread.is_alive() or searched == 0:
        with lock:
            targets = committed[-12:]
        for memory_id, vector in targets:
            assert index.vector_search("acme", vector, MemoryFilter(), 1)[0].id == memory_id
            searched += 1
    thread.join()
    assert not failures and searched > 0
    assert index.wait_for_graphs(timeout=60)
    _settled_graph_matches_the_cache(index)
    exact = exact_index(store.db)
    for query in corpus_queries():
        assert _ids(index, query) == _ids(exact, query)
    store.db.close()


def test_a_build_waits_for_writes_only_within_its_share() -> None:
    """While its cache was written to within `_WRITES_RECENT` (0.1 s), a build waits until it has waited
    `_WRITES_SHARE` (3) times as long as it has worked; not at all before it has worked, nor without a recent write,
    nor once the keeper stops."""
    from rearview.adapters.sqlite.vector_cache import VectorCache
    from rearview.adapters.sqlite.vector_caches import _WRITES_RECENT, _WRITES_SHARE, _BuildPacer

    clock = _Clock()

    def sleep(seconds: float) -> None:
        clock.now += seconds

    cache = VectorCache("episodic", 4, generation=1, capacity=4)
    pacer = _BuildPacer(clock, sleep)
    cache.written_at = clock.now
    pacer.wait_for_writes(cache, lambda: False)
    assert pacer.waited == 0.0  # nothing built yet: nothing to wait from
    sleep(0.02)  # builds
    cache.written_at = clock.now
    pacer.wait_for_writes(cache, lambda: False)  # the share runs out first: 3 x 0.02 < 0.1
    assert pacer.waited == pytest.approx(_WRITES_SHARE * 0.02, abs=0.006)
    assert pacer.worked == pytest.approx(0.02)
    sleep(0.1)  # builds
    cache.written_at = clock.now
    before = pacer.waited
    pacer.wait_for_writes(cache, lambda: False)  # the write gets old first
    assert pacer.waited - before == pytest.approx(_WRITES_RECENT, abs=0.006)
    assert pacer.waited <= _WRITES_SHARE * pacer.worked
    cache.written_at = clock.now - 1.0
    before = pacer.waited
    pacer.wait_for_writes(cache, lambda: False)
    assert pacer.waited == before
    cache.written_at = clock.now
    pacer.wait_for_writes(cache, lambda: True)
    assert pacer.waited == before


def test_a_paused_insertion_builds_the_same_graph() -> None:
    """`HnswIndex.add` with `pause` calls it every few insertions, and the graph is the one built without it."""
    from rearview.adapters.sqlite.ann_index import _PAUSE_EVERY, AnnParams

    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((600, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    keys = np.arange(1, 601, dtype=np.uint64)
    plain, paused = HnswIndex(16, AnnParams()), HnswIndex(16, AnnParams())
    plain.add(keys, vectors)
    pauses: list[int] = []
    paused.add(keys, vectors, pause=lambda: pauses.append(1))
    assert len(pauses) == 600 // _PAUSE_EVERY
    queries = rng.standard_normal((50, 16)).astype(np.float32)
    for a, b in zip(plain.search(queries, 10, 16), paused.search(queries, 10, 16), strict=True):
        assert a.tolist() == b.tolist()


def test_a_build_under_writes_that_never_stop_still_finishes(tmp_path: Path) -> None:
    """Writes through the duplicate check, one after another while the graph is built: the build yields to them
    within its share, and the graph is attached while they go on."""
    store, index = _background(tmp_path / "r.db", None, threshold=100)
    write_episodes(store, "acme", corpus_episodes("acme", 1500))
    queries = corpus_queries()[:4]
    deadline = time.monotonic() + 60
    while index.graph_count() == 0 and time.monotonic() < deadline:
        index.vector_search_many("acme", queries, MemoryFilter(), 3)
    assert index.graph_count() == 1
    store.db.close()
