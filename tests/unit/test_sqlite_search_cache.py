"""What the contract suite cannot see of the SQLite backend: vector caches, keyword-query pruning, threads."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex, VectorOptions
from rearview.adapters.sqlite import search_index as sqlite_search_index
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode
from rearview.domain.search import MemoryFilter
from rearview.domain.working import WorkingEntry
from support.sqlite_trace import traced
from support.stats import usage_stats

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=64)


def _db(path: Path) -> SqliteDatabase:
    return SqliteDatabase(path, embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)


def _episode(namespace: str, memory_id: str, content: str, minutes: int = 0, version: int = 1) -> Episode:
    at = T0 + timedelta(minutes=minutes)
    return Episode(id=memory_id, namespace=namespace, content=content, occurred_at=at, created_at=at, version=version)


def _write(store: SqliteMemoryStore, namespace: str, *episodes: Episode) -> None:
    vectors = EMBEDDER.embed([e.content for e in episodes])
    store.apply(namespace, ChangeSet(upserts=list(zip(episodes, vectors, strict=True))))


def _vector_ids(index: SqliteSearchIndex, namespace: str, text: str, limit: int = 100) -> list[str]:
    query = EMBEDDER.embed([text])[0]
    return [c.id for c in index.vector_search(namespace, query, MemoryFilter(), limit)]


def _topics(namespace: str, count: int) -> list[Episode]:
    return [_episode(namespace, f"{namespace}-{i}", f"note {i} about topic {i * 7 % 13}", i) for i in range(count)]


def test_writes_through_another_database_object_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    with _db(path) as mine, _db(path) as theirs:  # two objects on one file: two processes, in effect
        index = SqliteSearchIndex(mine)
        other_store = SqliteMemoryStore(theirs)
        _write(other_store, "acme", *_topics("acme", 10))
        assert len(_vector_ids(index, "acme", "topic")) == 10  # cache loaded

        _write(other_store, "acme", _episode("acme", "new", "a violin concert downtown"))
        assert _vector_ids(index, "acme", "a violin concert downtown", 1) == ["new"]

        other_store.apply("acme", ChangeSet(deletes=["new", "acme-0"]))
        remaining = _vector_ids(index, "acme", "a violin concert downtown")
        assert "new" not in remaining and "acme-0" not in remaining
        assert len(remaining) == 9


def test_writes_through_the_same_database_update_the_cache_in_place(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
        _write(store, "acme", *_topics("acme", 10))
        _vector_ids(index, "acme", "topic")
        assert index.cached_vector_count() == 10

        _write(store, "acme", _episode("acme", "new", "a violin concert downtown"))

        # Grown without a search in between: updated in place, not dropped for a reload.
        assert index.cached_vector_count() == 11
        assert _vector_ids(index, "acme", "a violin concert downtown", 1) == ["new"]
        store.apply("acme", ChangeSet(deletes=["new"]))
        assert "new" not in _vector_ids(index, "acme", "a violin concert downtown")


def test_a_memory_gets_searchable_when_it_gains_its_first_vector(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
        bare = _episode("acme", "bare", "a harp recital").model_copy(update={"tags": ["music"]})
        store.apply("acme", ChangeSet(upserts=[(bare, None)]))
        _write(store, "acme", *_topics("acme", 5))
        assert "bare" not in _vector_ids(index, "acme", "a harp recital")
        assert [c.id for c in index.keyword_search("acme", "harp", MemoryFilter(), 10)] == ["bare"]

        vector = EMBEDDER.embed([bare.content])[0]
        store.apply("acme", ChangeSet(upserts=[(bare.model_copy(update={"version": 2}), vector)]))

        assert _vector_ids(index, "acme", "a harp recital", 1) == ["bare"]
        tagged = index.vector_search("acme", vector, MemoryFilter(tags=("music",)), 10)
        assert [c.id for c in tagged] == ["bare"]


def test_least_recently_used_namespaces_leave_the_cache_first(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        for namespace in ("a", "b", "c"):
            _write(store, namespace, *_topics(namespace, 30))
        unbounded = SqliteSearchIndex(db)
        expected = {ns: sorted(_vector_ids(unbounded, ns, "topic 3")) for ns in ("a", "b", "c")}
        one_cache = unbounded.cached_bytes() // 3
        index = SqliteSearchIndex(db, vectors=VectorOptions(max_bytes=2 * one_cache))

        for namespace in ("a", "b", "c", "a"):
            assert sorted(_vector_ids(index, namespace, "topic 3")) == expected[namespace]
            assert 0 < index.cached_bytes() <= 2 * one_cache
        assert index.cached_vector_count() == 60  # "c" and "a": "b" was the least recently used


def test_a_namespace_larger_than_the_cache_is_searched_but_not_kept(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        small, unbounded = SqliteSearchIndex(db, vectors=VectorOptions(max_bytes=1000)), SqliteSearchIndex(db)
        _write(store, "acme", *_topics("acme", 30))

        assert _vector_ids(small, "acme", "topic 5") == _vector_ids(unbounded, "acme", "topic 5")
        assert small.cached_vector_count() == 0


def test_cached_vectors_are_float16_and_score_as_the_stored_float32_ones(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
        episodes = _topics("acme", 40)
        _write(store, "acme", *episodes)
        query = EMBEDDER.embed(["note about topic 5"])[0]
        stored = store.get_vectors("acme", [e.id for e in episodes])

        found = index.vector_search("acme", query, MemoryFilter(), 40)

        exact = {memory_id: float(vector @ query) for memory_id, vector in stored.items()}
        assert {c.id: c.score for c in found} == pytest.approx(exact, abs=2e-3)


def test_common_terms_are_left_out_when_rarer_ones_exist(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        _write(store, "acme", *[_episode("acme", f"c{i}", f"common filler number {i}", i) for i in range(10)])
        _write(store, "acme", _episode("acme", "r", "common and rare together", 20))
        pruned = SqliteSearchIndex(db, common_term_matches=3, scored_matches_budget=4, recent_matches=2)
        full = SqliteSearchIndex(db)

        assert len(full.keyword_search("acme", "common rare", MemoryFilter(), 100)) == 11
        assert [c.id for c in pruned.keyword_search("acme", "common rare", MemoryFilter(), 100)] == ["r"]
        # Every term common: the rarest one, over its most recent matches only.
        assert {c.id for c in pruned.keyword_search("acme", "common", MemoryFilter(), 100)} == {"r", "c9"}
        # Terms that match nothing cost nothing and find nothing.
        assert pruned.keyword_search("acme", "absent words", MemoryFilter(), 100) == []


EPISODES = MemoryFilter(layers=("episodic",))


def _count_queries(db: SqliteDatabase) -> list[str]:
    """The match-count queries this thread's connection runs from now on."""
    seen: list[str] = []
    db.connection().set_trace_callback(lambda sql: seen.append(sql) if sql.startswith("SELECT count(*)") else None)
    return seen


def test_term_match_counts_are_reused_until_the_namespace_has_seen_enough_commits(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        _write(store, "acme", *[_episode("acme", f"c{i}", f"common filler number {i}", i) for i in range(10)])
        _write(store, "acme", _episode("acme", "r", "common and rare together", 20))
        index = SqliteSearchIndex(
            db, common_term_matches=3, scored_matches_budget=4, recent_matches=2, term_count_commits=2
        )
        counts = _count_queries(db)
        # (The facts' table is counted on its own; episodes alone keep the count queries easy to follow here.)

        assert [c.id for c in index.keyword_search("acme", "common rare", EPISODES, 100)] == ["r"]
        assert len(counts) == 3  # the namespace, "common", "rare"
        # Counted once: "rare" again (and "common" alone) costs no count.
        assert [c.id for c in index.keyword_search("acme", "rare common", EPISODES, 100)] == ["r"]
        assert {c.id for c in index.keyword_search("acme", "common", EPISODES, 100)} == {"r", "c9"}
        assert len(counts) == 3

        # "rare" turns common over three commits. Its count of 1 stands for two of them (a stale count only picks
        # the terms to score; the matches and scores are current), and is counted afresh after the third: with
        # every term now common, the rarest-counted one is scored over its most recent matches only.
        found = []
        for i in range(3):
            _write(store, "acme", _episode("acme", f"n{i}", f"rare again {i}", 30 + i))
            found.append({c.id for c in index.keyword_search("acme", "common rare", EPISODES, 100)})
        assert found == [{"r", "n0"}, {"r", "n0", "n1"}, {"r", "c9"}]
        assert len(counts) == 6
        # Each namespace is counted on its own.
        _write(store, "other", *[_episode("other", f"o{i}", f"common filler {i}", i) for i in range(10)])
        assert len(index.keyword_search("other", "common rare", EPISODES, 100)) == 2
        assert len(counts) == 9


def test_small_namespaces_are_scored_whole_whatever_the_thresholds(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        _write(store, "acme", *[_episode("acme", f"c{i}", f"common filler number {i}", i) for i in range(4)])
        pruned = SqliteSearchIndex(db, common_term_matches=1, scored_matches_budget=10, recent_matches=1)

        assert len(pruned.keyword_search("acme", "common filler", MemoryFilter(), 100)) == 4


def test_threads_write_and_search_concurrently(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
        errors: list[BaseException] = []
        connections: set[int] = set()

        def work(worker: int) -> None:
            try:
                connections.add(id(db.connection()))
                for i in range(20):
                    _write(store, "acme", _episode("acme", f"w{worker}-{i}", f"worker {worker} item {i}", i))
                    index.vector_search("acme", EMBEDDER.embed(["item"])[0], MemoryFilter(), 5)
                    index.keyword_search("acme", "worker item", MemoryFilter(), 5)
            except BaseException as exc:  # reported below, in the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert errors == []
        assert len(connections) == 4
        assert usage_stats(store, "acme", T0).counts["episodic"] == 80
        assert len(_vector_ids(index, "acme", "worker item", 1000)) == 80


def test_putting_working_memory_removes_the_sessions_expired_rows(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)

        def put(key: str, at: datetime, ttl: int, session: str = "s1") -> None:
            store.put_working(
                WorkingEntry(
                    namespace="acme",
                    session_id=session,
                    key=key,
                    value=key,
                    updated_at=at,
                    expires_at=at + timedelta(seconds=ttl),
                )
            )

        put("old", T0, 10)
        put("other-session", T0, 10, session="s2")
        put("new", T0 + timedelta(seconds=60), 10)

        # "old" is physically gone; the other session's expired row waits for its own session's next put.
        assert store.clear_working("acme", "s1") == 1
        assert store.clear_working("acme", "s2") == 1


def test_the_full_text_index_stays_in_sync_with_the_tables(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        episodes = _topics("acme", 20)
        _write(store, "acme", *episodes)
        edited = [
            e.model_copy(update={"content": e.content + " edited", "tags": ["x", "y"], "version": 2})
            for e in episodes[:5]
        ]
        store.apply("acme", ChangeSet(upserts=[(e, None) for e in edited], deletes=["acme-10", "acme-11"]))
        store.apply("acme", ChangeSet(deletes=["acme-0"]))
        store.record_access("acme", ["acme-1", "acme-12"], T0)

        conn = db.connection()
        # Raises SQLITE_CORRUPT_VTAB if the index disagrees with the content table.
        conn.execute("INSERT INTO fts_episodes(fts_episodes, rank) VALUES ('integrity-check', 1)")
        assert conn.execute("SELECT count(*) FROM fts_episodes").fetchone()[0] == 17
        assert conn.execute("SELECT count(*) FROM memory_tags").fetchone()[0] == 2 * 4
        index = SqliteSearchIndex(db)
        assert len(index.keyword_search("acme", "edited", MemoryFilter(), 100)) == 4


def test_one_change_set_may_insert_and_then_update_the_same_memory(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db)
        first = _episode("acme", "e", "first draft")
        second = first.model_copy(update={"content": "second draft", "version": 2})
        vector = EMBEDDER.embed([first.content])[0]

        store.apply("acme", ChangeSet(upserts=[(first, vector), (second, None)]))

        assert store.get("acme", "e") == second
        np.testing.assert_array_equal(store.get_vectors("acme", ["e"])["e"], vector)


def test_entity_shares_are_counted_over_the_latest_episodes_and_recounted_as_the_namespace_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_search_index, "_ENTITY_SAMPLE", 40)  # recount after 40 // 20 = 2 change sets
    db = _db(tmp_path / "db.sqlite")
    store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)

    def named(i: int, who: str) -> Episode:
        return _episode("acme", f"e{i}", f"note {i}", i).model_copy(update={"entities": [who]})

    _write(store, "acme", *(named(i, "Old") for i in range(60)))
    first = index.entity_shares("acme")
    assert first.episodes == 60 and first.shares == {"Old": 1.0}

    _write(store, "acme", *(named(i, "New") for i in range(60, 80)))
    assert index.entity_shares("acme") == first, "one change set since the count: kept"
    _write(store, "acme", named(80, "New"))
    _write(store, "acme", named(81, "New"))
    recounted = index.entity_shares("acme")
    # The latest 40 episodes: e81 back to e42; 22 of them name New, 18 Old.
    assert recounted.episodes == 82
    assert recounted.shares == pytest.approx({"New": 22 / 40, "Old": 18 / 40})


def test_searches_all_reads_the_generation_once(tmp_path: Path) -> None:
    """Whether a search of `limit` scores every row is counted at one generation, read once, masks included."""
    db = _db(tmp_path / "m.db")
    store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
    _write(store, "acme", *(_episode("acme", f"e{i}", f"note {i}", minutes=i) for i in range(6)))
    flt = MemoryFilter(since=T0 + timedelta(minutes=3))
    index.vector_search("acme", EMBEDDER.embed(["note"])[0], flt, 10)  # loads the caches
    answers: list[bool | None] = []
    seen = traced(db, lambda: answers.extend(index.searches_all("acme", flt, limit) for limit in (2, 3)))
    assert answers == [False, True]  # past the caches' sizes: counted from the masks
    assert len([s for s in seen if "FROM namespace_state" in s]) == 2, seen


def test_what_expired_is_looked_up_once_until_the_next_expiry_or_write(tmp_path: Path) -> None:
    """Recall searches three times at one time: the expired refs are read once, and stay right as the time moves
    (past the next expiry, or back) and as writes come (from this database object or another)."""
    path = tmp_path / "rearview.db"
    with _db(path) as db, _db(path) as theirs:
        store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
        soon, later = (_episode("acme", i, f"{i} violin lesson") for i in ("soon", "later"))
        _write(store, "acme", *_topics("acme", 3))
        _write(
            store,
            "acme",
            soon.model_copy(update={"expires_at": T0 + timedelta(hours=1)}),
            later.model_copy(update={"expires_at": T0 + timedelta(hours=3)}),
        )
        query = EMBEDDER.embed(["violin lesson"])[0]

        def alive(hours: float) -> set[str]:
            flt = MemoryFilter(alive_at=T0 + timedelta(hours=hours))
            return {c.id for c in index.vector_search("acme", query, flt, 10)} & {"soon", "later"}

        assert alive(0) == {"soon", "later"}
        lookups = traced(db, lambda: [alive(0), alive(0.5), alive(0.99)])
        assert not [s for s in lookups if "expires_at" in s], "the same refs until the next expiry"
        assert [alive(1), alive(2), alive(3), alive(0.5)] == [{"later"}, {"later"}, set(), {"soon", "later"}]

        # A write moves the generation: the refs are read again (here it made "later" never expire).
        _write(SqliteMemoryStore(theirs), "acme", later.model_copy(update={"version": 2}))
        assert alive(3) == {"later"}
