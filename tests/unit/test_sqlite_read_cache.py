"""The SQLite store remembers the memories and vectors it read (read_cache) for the namespace's generation they
were read at: a read it answers from there is the read it would have made, in the same order, whoever changed the
database meanwhile (another connection, another process), and it reads only the access columns of those rows."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore
from rearview.adapters.sqlite.read_cache import GenerationCache, copied
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Evidence, Fact, Memory
from support.sqlite_trace import traced

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=32)
# Ids whose order is not the order they are asked in, nor their insertion order.
IDS = ["e7", "e10", "f2", "e1", "f1", "e3", "e22"]


def _open(path: Path) -> SqliteMemoryStore:
    return SqliteMemoryStore(SqliteDatabase(path, embedder_name=EMBEDDER.name, dim=EMBEDDER.dim))


def _memories() -> list[Memory]:
    episodes: list[Memory] = [
        Episode(
            id=i,
            namespace="acme",
            content=f"turn {i}",
            tags=["t"],
            entities=["Dana"],
            occurred_at=T0,
            created_at=T0,
            session_id="s1",
        )
        for i in ("e22", "e1", "e10", "e3", "e7")
    ]
    facts: list[Memory] = [
        Fact(
            id=i,
            namespace="acme",
            content=f"fact {i}",
            provenance=["e1"],
            facets={"k": "v"},
            evidence=Evidence(episodes=1, occurrences=1, sessions=1, days=1, first_at=T0, last_at=T0),
            last_confirmed_at=T0,
            created_at=T0,
        )
        for i in ("f2", "f1")
    ]
    return episodes + facts


@pytest.fixture
def path(tmp_path: Path) -> Path:
    store = _open(tmp_path / "m.db")
    store.apply("acme", ChangeSet(upserts=[(m, EMBEDDER.embed([m.content])[0]) for m in _memories()]))
    store.close()
    return tmp_path / "m.db"


def test_a_cached_read_is_the_uncached_read_in_the_same_order(path: Path) -> None:
    cold, warm = _open(path), _open(path)
    warm.get_many("acme", IDS[:3])  # some cached, some not
    warm.get_vectors("acme", IDS[2:5])
    for _ in range(2):
        fresh = cold.get_many("acme", IDS)
        cached = warm.get_many("acme", IDS)
        assert list(cached) == list(fresh) == ["e1", "e10", "e22", "e3", "e7", "f1", "f2"]
        assert cached == fresh
        assert [type(m) for m in cached.values()] == [type(m) for m in fresh.values()]
        assert all(
            c.model_fields_set == f.model_fields_set for c, f in zip(cached.values(), fresh.values(), strict=True)
        )
        fresh_vectors, cached_vectors = cold.get_vectors("acme", IDS), warm.get_vectors("acme", IDS)
        assert list(cached_vectors) == list(fresh_vectors) == list(fresh)
        for memory_id, vector in fresh_vectors.items():
            assert cached_vectors[memory_id].dtype == np.float32 and cached_vectors[memory_id].flags.writeable
            np.testing.assert_array_equal(cached_vectors[memory_id], vector)
        cold = _open(path)  # a cold store again for the second round, where the warm one has everything cached


def test_a_cached_read_reads_only_the_access_columns(path: Path) -> None:
    store = _open(path)
    store.get_many("acme", IDS)
    store.get_vectors("acme", IDS)
    many = traced(store.db, lambda: store.get_many("acme", IDS))
    vectors = traced(store.db, lambda: store.get_vectors("acme", IDS))
    rows = [s for s in many if s.startswith("SELECT") and "generation" not in s]
    assert rows and all(s.startswith("SELECT id, access_count, last_accessed_at FROM") for s in rows)
    assert [s for s in vectors if s.startswith("SELECT") and "generation" not in s] == []


def test_changes_by_another_connection_show_in_cached_reads(path: Path) -> None:
    reader, writer = _open(path), _open(path)
    before = reader.get_many("acme", IDS)
    reader.get_vectors("acme", IDS)
    at = T0 + timedelta(days=1)

    # Accesses counted elsewhere (and folded into the rows there) change no generation: the access columns are
    # read every time.
    writer.record_access("acme", ["e1", "f2"], at)
    writer.settle_access("acme", at)
    counted = reader.get_many("acme", IDS)
    assert (counted["e1"].access_count, counted["e1"].last_accessed_at) == (1, at)
    assert (counted["f2"].access_count, counted["f2"].last_accessed_at) == (1, at)
    assert counted["e3"] == before["e3"]

    # A change set elsewhere moves the generation: everything is read again.
    edited = writer.get("acme", "e3")
    assert isinstance(edited, Episode)
    edited = edited.model_copy(update={"content": "turn 3, edited", "version": 2})
    vector = EMBEDDER.embed(["something else"])[0]
    writer.apply("acme", ChangeSet(upserts=[(edited, vector)], deletes=["e7"]))
    after = reader.get_many("acme", IDS)
    assert after["e3"].content == "turn 3, edited" and "e7" not in after
    np.testing.assert_array_equal(reader.get_vectors("acme", ["e3"])["e3"], vector)
    assert "e7" not in reader.get_vectors("acme", IDS)


def test_accesses_counted_in_another_thread_show_in_cached_reads(path: Path) -> None:
    store = _open(path)
    store.get_many("acme", IDS)
    at = T0 + timedelta(hours=3)

    def count() -> None:
        store.record_access("acme", ["e10"], at)
        store.settle_access("acme", at)

    worker = threading.Thread(target=count)
    worker.start()
    worker.join()
    assert store.get_many("acme", ["e10"])["e10"].access_count == 1


def test_copies_are_the_memory_and_share_nothing_mutable_with_it(path: Path) -> None:
    store = _open(path)
    for memory in store.get_many("acme", IDS).values():
        copy = copied(memory)
        assert copy == memory and copy is not memory and type(copy) is type(memory)
        assert copy.model_fields_set == memory.model_fields_set
        assert copy.__dict__ is not memory.__dict__
        for name, value in memory.__dict__.items():
            if isinstance(value, list | dict | BaseModel):
                assert getattr(copy, name) is not value, name
    access = copied(store.get_many("acme", ["e1"])["e1"], {"access_count": 9})
    assert access.access_count == 9


def test_the_cache_keeps_the_most_recently_used_up_to_its_capacity() -> None:
    cache: GenerationCache[int] = GenerationCache(3)
    cache.keep("acme", 1, {"a": 1, "b": 2, "c": 3})
    assert cache.found("acme", 1, ["a"]) == {"a": 1}  # a is now the most recently used
    cache.keep("acme", 1, {"d": 4})
    assert len(cache) == 3
    assert cache.found("acme", 1, ["a", "b", "c", "d"]) == {"a": 1, "c": 3, "d": 4}
    # Another generation, another namespace: not the same entry.
    assert cache.found("acme", 2, ["a"]) == {} and cache.found("other", 1, ["a"]) == {}
    assert GenerationCache[int](0).found("acme", 1, ["a"]) == {}


def test_a_shared_read_hands_out_the_cached_memory_and_a_copy_read_does_not(path: Path) -> None:
    store = _open(path)
    first = store.get_many("acme", IDS, shared=True)  # read from the rows: the cache keeps these memories
    shared, again = store.get_many("acme", IDS, shared=True), store.get_many("acme", IDS, shared=True)
    copies = store.get_many("acme", IDS)
    assert first == shared == copies
    assert all(first[i] is shared[i] is again[i] for i in shared) and not any(copies[i] is shared[i] for i in shared)
    store.record_access("acme", ["e1"], T0 + timedelta(hours=1))
    store.settle_access("acme", T0 + timedelta(hours=1))
    counted = store.get_many("acme", IDS, shared=True)
    assert counted["e1"].access_count == 1 and shared["e1"].access_count == 0  # the old one is left as it was
    assert counted["e3"] is shared["e3"]


def test_a_copy_read_from_the_rows_leaves_the_cache_as_it_was_when_changed(path: Path) -> None:
    store = _open(path)
    read = store.get_many("acme", IDS)  # from the rows: the cache keeps copies of these
    expected = {i: m.model_copy(deep=True) for i, m in read.items()}
    for memory in read.values():
        memory.tags.append("changed")
        memory.entities.append("changed")
        memory.metadata["changed"] = True
    assert store.get_many("acme", IDS) == expected == store.get_many("acme", IDS, shared=True)


def test_a_vector_read_is_a_copy_of_its_own(path: Path) -> None:
    store = _open(path)
    first = store.get_vectors("acme", IDS)  # read from the rows
    expected = {i: v.copy() for i, v in first.items()}
    for vector in first.values():
        vector += 1.0
    second = store.get_vectors("acme", IDS)  # from the cache
    for memory_id, vector in second.items():
        np.testing.assert_array_equal(vector, expected[memory_id])
        assert vector.dtype == np.float32 and vector.flags.writeable and vector.flags.owndata
        vector += 1.0
    for memory_id, vector in store.get_vectors("acme", IDS).items():
        np.testing.assert_array_equal(vector, expected[memory_id])
