"""MemoryStore contract: what every backend must do, whatever it is built on."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Evidence, Fact
from rearview.domain.search import MemoryFilter
from rearview.domain.working import WorkingEntry
from rearview.errors import ConcurrentUpdate, EmbeddingMismatch, InvalidInput
from support.contract_backends import FILTERS, T0, Backend, expected_ids, filter_dataset, time_of
from support.stats import usage_stats

pytestmark = pytest.mark.contract

EpisodeMaker = Callable[..., Episode]
FactMaker = Callable[..., Fact]


def _full_episode(episode: EpisodeMaker, namespace: str = "acme", memory_id: str = "ep-1") -> Episode:
    return episode(
        namespace,
        memory_id,
        "Met Dana at the Lisbon office to plan the Q3 launch",
        tags=["work", "launch"],
        importance=0.73,
        access_count=4,
        last_accessed_at=datetime(2026, 2, 3, 4, 5, 6, 789012, tzinfo=UTC),
        created_at=datetime(2026, 2, 1, 10, 0, 0, 123456, tzinfo=UTC),
        confirmations=3,
        redacted=True,
        occurred_at=datetime(2026, 1, 31, 23, 59, 59, 999999, tzinfo=UTC),
        event_type="meeting",
        entities=["Dana", "Lisbon office"],
        outcome="launch moved to July",
        session_id="s-9",
        consolidated=True,
        metadata={"project": "apollo", "n": 2.0, "i": 2, "ok": True, "none": None, "list": [1, "x", 2.5],
                  "nested": {"deep": {"er": "est"}}, "ünï": "cödé"},
        source="https://example.org/minutes?id=7",
        expires_at=datetime(2026, 9, 1, 0, 0, 0, 250000, tzinfo=UTC),
        parent_id="ep-1",
        chunk_index=0,
        chunk_count=3,
    )  # fmt: skip


def _full_fact(fact: FactMaker, namespace: str = "acme", memory_id: str = "fa-1") -> Fact:
    return fact(
        namespace,
        memory_id,
        "Prefers vegetarian food",
        tags=["diet"],
        importance=0.61,
        access_count=2,
        last_accessed_at=datetime(2026, 2, 5, 1, 2, 3, 456789, tzinfo=UTC),
        created_at=datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
        confirmations=5,
        redacted=False,
        dimension="diet",
        confidence=0.92,
        provenance=["ep-1", "ep-2"],
        last_confirmed_at=datetime(2026, 2, 4, 8, 0, 0, 1, tzinfo=UTC),
        status="superseded",
        superseded_by="fa-2",
        superseded_at=datetime(2026, 2, 6, 7, 8, 9, 10, tzinfo=UTC),
        entities=["Dana"],
        metadata={"team": {"id": 7}, "score": 0.5},
        source="user said",
        expires_at=datetime(2027, 1, 1, tzinfo=UTC),
    )


def _assert_utc(value: datetime | None) -> None:
    if value is not None:
        assert value.tzinfo is not None and value.utcoffset() == timedelta(0)


# --- round trips --------------------------------------------------------------------------------------------


def test_episode_round_trips_every_field(backend: Backend, episode: EpisodeMaker) -> None:
    stored = _full_episode(episode)
    vector = backend.query_vector(stored.content)
    backend.store.apply("acme", ChangeSet(upserts=[(stored, vector)]))

    loaded = backend.store.get("acme", "ep-1")

    assert loaded == stored
    assert isinstance(loaded, Episode)
    for value in (loaded.occurred_at, loaded.created_at, loaded.last_accessed_at):
        _assert_utc(value)
    assert backend.store.get_many("acme", ["ep-1"]) == {"ep-1": stored}
    np.testing.assert_array_equal(backend.store.get_vectors("acme", ["ep-1"])["ep-1"], vector.astype(np.float32))


def test_fact_round_trips_every_field(backend: Backend, fact: FactMaker) -> None:
    stored = _full_fact(fact)
    backend.write("acme", stored)

    loaded = backend.store.get("acme", "fa-1")

    assert loaded == stored
    assert isinstance(loaded, Fact)
    for value in (loaded.last_confirmed_at, loaded.created_at, loaded.last_accessed_at, loaded.superseded_at):
        _assert_utc(value)


def test_datetimes_in_other_zones_come_back_as_the_same_instant_in_utc(backend: Backend, episode: EpisodeMaker) -> None:
    plus_two = timezone(timedelta(hours=2))
    local = datetime(2026, 5, 1, 12, 0, tzinfo=plus_two)
    backend.write("acme", episode("acme", "e", "lunch", occurred_at=local))

    loaded = backend.store.get("acme", "e")

    assert loaded is not None and isinstance(loaded, Episode)
    assert loaded.occurred_at == local
    _assert_utc(loaded.occurred_at)
    assert loaded.occurred_at.hour == 10


def test_missing_ids_are_absent(backend: Backend, episode: EpisodeMaker) -> None:
    backend.write("acme", episode("acme", "here", "present"))

    assert backend.store.get("acme", "gone") is None
    assert set(backend.store.get_many("acme", ["here", "gone"])) == {"here"}
    assert backend.store.get_many("acme", []) == {}
    assert set(backend.store.get_vectors("acme", ["here", "gone"])) == {"here"}


# --- optimistic locking and atomicity ---------------------------------------------------------------------


def test_inserting_an_existing_id_again_is_refused(backend: Backend, episode: EpisodeMaker) -> None:
    backend.write("acme", episode("acme", "e1", "first"))

    with pytest.raises(ConcurrentUpdate):
        backend.write("acme", episode("acme", "e1", "second"))

    loaded = backend.store.get("acme", "e1")
    assert loaded is not None and loaded.content == "first"


def test_inserting_an_id_of_the_other_layer_is_refused(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker
) -> None:
    backend.write("acme", episode("acme", "x1", "an episode"))

    with pytest.raises(ConcurrentUpdate):
        backend.write("acme", fact("acme", "x1", "a fact"))

    assert isinstance(backend.store.get("acme", "x1"), Episode)


def test_update_with_the_next_version_replaces_the_memory(backend: Backend, episode: EpisodeMaker) -> None:
    original = episode("acme", "e1", "first", tags=["a"])
    backend.write("acme", original)

    updated = original.model_copy(update={"content": "second", "tags": ["b"], "version": 2, "confirmations": 2})
    backend.write("acme", updated)

    assert backend.store.get("acme", "e1") == updated


@pytest.mark.parametrize("version", [3, 5])
def test_update_with_a_stale_version_is_refused(backend: Backend, episode: EpisodeMaker, version: int) -> None:
    original = episode("acme", "e1", "first")
    backend.write("acme", original)

    with pytest.raises(ConcurrentUpdate):
        backend.write("acme", original.model_copy(update={"content": "lost", "version": version}))

    assert backend.store.get("acme", "e1") == original


def test_update_of_a_missing_memory_is_refused(backend: Backend, episode: EpisodeMaker) -> None:
    with pytest.raises(ConcurrentUpdate):
        backend.write("acme", episode("acme", "ghost", "never inserted", version=2))

    assert backend.store.get("acme", "ghost") is None


def test_update_without_a_vector_keeps_the_stored_vector(backend: Backend, fact: FactMaker) -> None:
    original = fact("acme", "f1", "likes tea")
    backend.write("acme", original)
    before = backend.store.get_vectors("acme", ["f1"])["f1"]

    confirmed = original.model_copy(update={"confirmations": 2, "version": 2})
    backend.store.apply("acme", ChangeSet(upserts=[(confirmed, None)]))

    np.testing.assert_array_equal(backend.store.get_vectors("acme", ["f1"])["f1"], before)
    assert backend.store.get("acme", "f1") == confirmed


def test_a_failing_change_set_applies_nothing(backend: Backend, episode: EpisodeMaker, fact: FactMaker) -> None:
    kept = episode("acme", "kept", "stays as it is")
    backend.write("acme", kept)
    new = episode("acme", "new", "would be inserted first")
    edited = kept.model_copy(update={"content": "would be edited", "version": 2})
    stale = fact("acme", "stale", "never stored", version=4)
    vectors = backend.embedder.embed([new.content, edited.content, stale.content])

    with pytest.raises(ConcurrentUpdate):
        backend.store.apply(
            "acme",
            ChangeSet(upserts=[(new, vectors[0]), (edited, vectors[1]), (stale, vectors[2])], deletes=["kept"]),
        )

    assert backend.store.get("acme", "new") is None
    assert backend.store.get("acme", "kept") == kept
    assert backend.store.list_memories("acme", MemoryFilter()) == [kept]


def test_a_vector_of_another_dimension_is_refused_and_nothing_is_applied(
    backend: Backend, episode: EpisodeMaker
) -> None:
    kept = episode("acme", "kept", "stays as it is")
    backend.write("acme", kept)
    wrong = np.ones(backend.embedder.dim + 1, dtype=np.float32)

    with pytest.raises(InvalidInput):
        backend.store.apply("acme", ChangeSet(upserts=[(episode("acme", "new", "a new one"), wrong)], deletes=["kept"]))

    assert backend.store.get("acme", "new") is None
    assert backend.store.get("acme", "kept") == kept


def test_what_a_caller_holds_is_not_what_the_store_holds(backend: Backend, episode: EpisodeMaker) -> None:
    written = episode("acme", "e1", "packed the tent", tags=["camping"])
    backend.write("acme", written)
    written.tags.append("changed after writing")

    loaded = backend.store.get("acme", "e1")
    assert loaded is not None and loaded.tags == ["camping"]
    loaded.tags.append("changed after reading")
    backend.store.get_vectors("acme", ["e1"])["e1"][:] = 0

    again = backend.store.get("acme", "e1")
    assert again is not None and again.tags == ["camping"]
    assert backend.store.list_memories("acme", MemoryFilter())[0].tags == ["camping"]
    assert np.any(backend.store.get_vectors("acme", ["e1"])["e1"])


def test_deletes_remove_memories_of_either_layer(backend: Backend, episode: EpisodeMaker, fact: FactMaker) -> None:
    backend.write("acme", episode("acme", "e1", "one"), episode("acme", "e2", "two"), fact("acme", "f1", "three"))

    backend.delete("acme", "e1", "f1", "never-existed")

    assert set(backend.store.get_many("acme", ["e1", "e2", "f1"])) == {"e2"}
    assert backend.store.get_vectors("acme", ["e1", "f1"]) == {}


def test_a_deleted_id_can_be_inserted_again(backend: Backend, episode: EpisodeMaker) -> None:
    backend.write("acme", episode("acme", "e1", "first life"))
    backend.delete("acme", "e1")

    backend.write("acme", episode("acme", "e1", "second life"))

    loaded = backend.store.get("acme", "e1")
    assert loaded is not None and loaded.content == "second life"


# --- working memory -----------------------------------------------------------------------------------------


def _entry(namespace: str, session: str, key: str, value: object, at: datetime, ttl: float) -> WorkingEntry:
    return WorkingEntry(
        namespace=namespace,
        session_id=session,
        key=key,
        value=value,
        updated_at=at,
        expires_at=at + timedelta(seconds=ttl),
    )


def test_working_entries_round_trip_json_values(backend: Backend) -> None:
    value = {"plan": ["book flight", "pack"], "count": 3, "ok": True, "none": None, "note": "café 東京"}
    backend.store.put_working(_entry("acme", "s1", "task", value, T0, 60))
    backend.store.put_working(_entry("acme", "s1", "mood", "focused", T0, 60))

    entries = backend.store.get_working("acme", "s1", T0)

    by_key = {e.key: e for e in entries}
    assert set(by_key) == {"task", "mood"}
    assert by_key["task"].value == value
    assert by_key["task"].expires_at == T0 + timedelta(seconds=60)
    assert by_key["task"].updated_at == T0
    _assert_utc(by_key["task"].expires_at)


def test_working_put_overwrites_the_key(backend: Backend) -> None:
    backend.store.put_working(_entry("acme", "s1", "k", 1, T0, 60))
    backend.store.put_working(_entry("acme", "s1", "k", 2, T0 + timedelta(seconds=10), 60))

    entries = backend.store.get_working("acme", "s1", T0 + timedelta(seconds=20))

    assert [(e.key, e.value) for e in entries] == [("k", 2)]
    assert entries[0].expires_at == T0 + timedelta(seconds=70)


def test_expired_working_entries_are_never_returned(backend: Backend) -> None:
    backend.store.put_working(_entry("acme", "s1", "short", "a", T0, 10))
    backend.store.put_working(_entry("acme", "s1", "long", "b", T0, 100))

    assert {e.key for e in backend.store.get_working("acme", "s1", T0 + timedelta(seconds=9))} == {
        "short",
        "long",
    }
    # Expiry is exclusive: at expires_at the entry is gone.
    assert {e.key for e in backend.store.get_working("acme", "s1", T0 + timedelta(seconds=10))} == {"long"}
    assert backend.store.get_working("acme", "s1", T0 + timedelta(seconds=100)) == []
    # A later put (which may clean up) does not bring the expired entry back either.
    backend.store.put_working(_entry("acme", "s1", "later", "c", T0 + timedelta(seconds=50), 100))
    assert {e.key for e in backend.store.get_working("acme", "s1", T0 + timedelta(seconds=50))} == {
        "long",
        "later",
    }


def test_working_sessions_are_separate(backend: Backend) -> None:
    backend.store.put_working(_entry("acme", "s1", "k", "one", T0, 60))
    backend.store.put_working(_entry("acme", "s2", "k", "two", T0, 60))

    assert [e.value for e in backend.store.get_working("acme", "s1", T0)] == ["one"]
    assert [e.value for e in backend.store.get_working("acme", "s2", T0)] == ["two"]


def test_clear_working_of_one_session(backend: Backend) -> None:
    for key in ("a", "b"):
        backend.store.put_working(_entry("acme", "s1", key, key, T0, 60))
    backend.store.put_working(_entry("acme", "s2", "c", "c", T0, 60))

    assert backend.store.clear_working("acme", "s1") == 2

    assert backend.store.get_working("acme", "s1", T0) == []
    assert [e.key for e in backend.store.get_working("acme", "s2", T0)] == ["c"]
    assert backend.store.clear_working("acme", "s1") == 0


def test_clear_working_of_every_session(backend: Backend) -> None:
    backend.store.put_working(_entry("acme", "s1", "a", 1, T0, 60))
    backend.store.put_working(_entry("acme", "s2", "b", 2, T0, 60))

    assert backend.store.clear_working("acme") == 2

    assert backend.store.get_working("acme", "s1", T0) == []
    assert backend.store.get_working("acme", "s2", T0) == []


# --- listing and filters ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(FILTERS))
def test_list_memories_applies_every_filter(filter_backend: Backend, name: str) -> None:
    data = filter_dataset()
    flt = FILTERS[name]

    listed = filter_backend.store.list_memories("acme", flt)

    assert {m.id for m in listed} == expected_ids(data, flt)
    assert len(listed) == len({m.id for m in listed})


def test_list_memories_is_oldest_first_across_layers(backend: Backend, episode: EpisodeMaker, fact: FactMaker) -> None:
    data = filter_dataset()
    # Written in an order unrelated to time.
    backend.write("acme", *reversed(data))

    listed = backend.store.list_memories("acme", MemoryFilter(include_superseded=True))

    assert [m.id for m in listed] == [m.id for m in sorted(data, key=time_of)]
    assert backend.store.list_memories("acme", MemoryFilter(include_superseded=True), limit=3) == listed[:3]
    assert backend.store.list_memories("acme", MemoryFilter(), limit=0) == []


# --- facts --------------------------------------------------------------------------------------------------


def test_facts_citing_finds_facts_by_provenance(backend: Backend, fact: FactMaker) -> None:
    backend.write(
        "acme",
        fact("acme", "fa", "likes jazz", provenance=["e1", "e2"]),
        fact("acme", "fb", "plays piano", provenance=["e3"]),
        fact("acme", "fc", "liked rock", provenance=["e1"], status="superseded", superseded_by="fa"),
    )

    assert {f.id for f in backend.store.facts_citing("acme", ["e1"])} == {"fa", "fc"}
    assert {f.id for f in backend.store.facts_citing("acme", ["e2", "e3"])} == {"fa", "fb"}
    assert backend.store.facts_citing("acme", ["e9"]) == []
    assert backend.store.facts_citing("acme", []) == []


def test_facts_citing_follows_provenance_updates(backend: Backend, fact: FactMaker) -> None:
    original = fact("acme", "fa", "likes jazz", provenance=["e1", "e2"])
    backend.write("acme", original)

    backend.write("acme", original.model_copy(update={"provenance": ["e2"], "version": 2}))

    assert backend.store.facts_citing("acme", ["e1"]) == []
    assert [f.id for f in backend.store.facts_citing("acme", ["e2"])] == ["fa"]


def test_active_fact_for_dimension(backend: Backend, fact: FactMaker) -> None:
    backend.write(
        "acme",
        fact("acme", "old", "eats meat", dimension="diet", status="superseded", superseded_by="new"),
        fact("acme", "new", "is vegetarian", dimension="diet"),
        fact("acme", "lang", "speaks Portuguese", dimension="language"),
    )

    found = backend.store.active_fact_for_dimension("acme", "diet")
    assert found is not None and found.id == "new"
    assert backend.store.active_fact_for_dimension("acme", "city") is None


def test_active_fact_for_dimension_ignores_a_superseded_only_dimension(backend: Backend, fact: FactMaker) -> None:
    backend.write("acme", fact("acme", "old", "eats meat", dimension="diet", status="superseded"))

    assert backend.store.active_fact_for_dimension("acme", "diet") is None


# --- recent episodes -----------------------------------------------------------------------------------------


def test_recent_episodes_are_those_created_since_newest_first(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker
) -> None:
    minute = timedelta(minutes=1)
    # occurred_at runs backwards, so an order by occurrence would come out reversed.
    episodes = [
        episode("acme", f"e{i}", f"event {i}", created_at=T0 + i * minute, occurred_at=T0 - i * minute)
        for i in range(5)
    ]
    backend.write("acme", *episodes, fact("acme", "f", "a fact", created_at=T0 + 9 * minute))
    backend.write("acme2", episode("acme2", "other", "another namespace", created_at=T0 + 9 * minute))

    assert [e.id for e in backend.store.recent_episodes("acme", T0 + 2 * minute)] == ["e4", "e3", "e2"]
    assert [e.id for e in backend.store.recent_episodes("acme", T0 + 2 * minute, limit=2)] == ["e4", "e3"]
    assert backend.store.recent_episodes("acme", T0 + 2 * minute, limit=2)[0] == episodes[4]
    assert backend.store.recent_episodes("acme", T0 + 10 * minute) == []


# --- access, recall counters, stats -------------------------------------------------------------------------


def test_record_access_counts_without_changing_the_version(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker
) -> None:
    e = episode("acme", "e1", "one")
    backend.write("acme", e, fact("acme", "f1", "two"))
    at = T0 + timedelta(hours=5, microseconds=17)

    backend.store.record_access("acme", ["e1", "f1", "missing"], at)
    backend.store.record_access("acme", ["e1"], at + timedelta(hours=1))

    # `get` counts every access at once; every read does once the store has settled them (a store that keeps
    # them apart, as DynamoDB does, folds them then; the others have nothing to fold).
    counted = [backend.store.get("acme", i) for i in ("e1", "f1")]
    assert [(m.access_count, m.last_accessed_at) for m in counted if m] == [(2, at + timedelta(hours=1)), (1, at)]
    backend.store.settle_access("acme", at + timedelta(hours=2))
    loaded = backend.store.get_many("acme", ["e1", "f1"])
    assert (loaded["e1"].access_count, loaded["e1"].last_accessed_at) == (2, at + timedelta(hours=1))
    assert (loaded["f1"].access_count, loaded["f1"].last_accessed_at) == (1, at)
    assert loaded["e1"].version == 1
    assert backend.store.get("acme", "e1") == loaded["e1"], "settled once, counted once"
    # The next update through the write path still only needs version + 1.
    backend.write("acme", e.model_copy(update={"content": "one, edited", "version": 2}))
    edited = backend.store.get("acme", "e1")
    assert edited is not None and edited.content == "one, edited"


def test_repeated_reads_see_every_change_and_keep_what_a_reader_changed_to_itself(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker
) -> None:
    """What a store remembers of earlier reads (SQLite keeps the memories and vectors it read) never shows: each
    read is the stored state, whatever was read or done to a read memory before."""
    e, f = episode("acme", "e1", "one", tags=["a"], entities=["Dana"]), fact("acme", "f1", "two", provenance=["e1"])
    backend.write("acme", e, f, episode("acme", "e2", "three"))
    ids = ["e2", "f1", "e1"]
    first, vectors = backend.store.get_many("acme", ids), backend.store.get_vectors("acme", ids)
    assert backend.store.get_many("acme", ids) == first == backend.store.get_many("acme", ids, shared=True)
    # What a reader does to what it got stays with it.
    for memory in first.values():
        memory.content = "changed by the reader"
        memory.tags.append("reader")
    first["e1"].entities.append("reader")
    first["f1"].provenance.append("reader")  # type: ignore[union-attr]
    vectors["e1"][:] = 0
    again = backend.store.get_many("acme", ids)
    assert again["e1"] == e and again["f1"] == f and again["e2"].content == "three"
    assert np.any(backend.store.get_vectors("acme", ["e1"])["e1"])
    # Counted accesses show on the next read, of the memories counted only.
    at = T0 + timedelta(hours=1)
    backend.store.record_access("acme", ["e1", "f1"], at)
    backend.store.settle_access("acme", at + timedelta(hours=1))
    counted = backend.store.get_many("acme", ids)
    assert backend.store.get_many("acme", ids, shared=True) == counted
    assert [(counted[i].access_count, counted[i].last_accessed_at) for i in ids] == [(0, None), (1, at), (1, at)]
    assert counted["e1"] == e.model_copy(update={"access_count": 1, "last_accessed_at": at})
    # An update, a new vector and a delete show on the next read.
    edited = e.model_copy(update={"content": "one, edited", "version": 2})
    new_vector = backend.query_vector("something else entirely")
    backend.store.apply("acme", ChangeSet(upserts=[(edited, new_vector)], deletes=["e2"]))
    after = backend.store.get_many("acme", ids)
    assert backend.store.get_many("acme", ids, shared=True) == after
    assert set(after) == {"e1", "f1"} and after["e1"].content == "one, edited" and after["e1"].version == 2
    np.testing.assert_array_equal(backend.store.get_vectors("acme", ids)["e1"], new_vector.astype(np.float32))
    assert set(backend.store.get_vectors("acme", ids)) == {"e1", "f1"}
    # Another namespace with the same ids is another memory.
    backend.write("other", episode("other", "e1", "someone else's"))
    assert backend.store.get_many("other", ids)["e1"].content == "someone else's"
    assert backend.store.get_many("acme", ["e1"])["e1"].content == "one, edited"


def test_stats_counts_each_layer(backend: Backend, episode: EpisodeMaker, fact: FactMaker) -> None:
    backend.clock.set(T0 + timedelta(minutes=3))
    backend.write("acme", *filter_dataset())
    backend.store.put_working(_entry("acme", "s1", "live", 1, T0, 600))
    backend.store.put_working(_entry("acme", "s1", "dead", 1, T0, 5))
    backend.store.record_recall("acme", True, T0)
    backend.store.record_recall("acme", False, T0)
    backend.store.record_recall("acme", True, T0)

    stats = usage_stats(backend.store, "acme", T0 + timedelta(seconds=60))

    assert stats.namespace == "acme"
    assert stats.counts == {"working": 1, "episodic": 4, "semantic": 3, "semantic_superseded": 1}
    assert stats.last_write_at == T0 + timedelta(minutes=3)
    assert (stats.recall_count, stats.recall_hits) == (3, 2)
    assert stats.hit_rate == pytest.approx(2 / 3)


def test_lists_every_written_namespace(backend: Backend, episode: EpisodeMaker, fact: FactMaker) -> None:
    store = backend.store
    assert store.list_namespaces() == []
    backend.write("acme", episode("acme", "e1", "met the landlord"))
    backend.write("acme:u-42", fact("acme:u-42", "f1", "likes tea"))
    backend.write("zeta", episode("zeta", "e2", "went hiking"))
    assert store.list_namespaces() == ["acme", "acme:u-42", "zeta"]
    # By prefix, as the namespace listing and a subtree's erase ask (`acme` also starts `acme2`: a prefix is text).
    backend.write("acme2", episode("acme2", "e3", "met the plumber"))
    assert store.list_namespaces("acme") == ["acme", "acme2", "acme:u-42"]
    assert store.list_namespaces("acme:") == ["acme:u-42"]
    assert store.list_namespaces("acme:u-42") == ["acme:u-42"]
    assert store.list_namespaces("nobody") == []


def test_lists_the_namespaces_with_unconsolidated_episodes(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker
) -> None:
    store = backend.store
    assert store.namespaces_with_unconsolidated() == []
    backend.write("acme", episode("acme", "e1", "met the landlord"))
    backend.write("acme:u-42", fact("acme:u-42", "f1", "likes tea"))
    backend.write("zeta", episode("zeta", "e2", "went hiking", consolidated=True))
    backend.write("beta", episode("beta", "e3", "went sailing"), episode("beta", "e4", "went rowing"))
    assert sorted(store.namespaces_with_unconsolidated()) == ["acme", "beta"]
    done = store.get("acme", "e1")
    assert done is not None
    store.apply("acme", ChangeSet(upserts=[(done.model_copy(update={"consolidated": True, "version": 2}), None)]))
    assert sorted(store.namespaces_with_unconsolidated()) == ["beta"]


def test_counts_the_unconsolidated_episodes_of_the_namespace_alone(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker
) -> None:
    store = backend.store
    assert store.unconsolidated_count("acme") == 0
    backend.write(
        "acme",
        episode("acme", "e1", "met the landlord"),
        episode("acme", "e2", "paid the deposit"),
        episode("acme", "e3", "signed the lease"),
        episode("acme", "e4", "moved in", consolidated=True),
        fact("acme", "f1", "rents in Lisbon"),
    )
    # A child and a string-prefix namespace hold episodes of their own, which are not counted.
    backend.write("acme:u-42", episode("acme:u-42", "e1", "went hiking"), episode("acme:u-42", "e5", "went rowing"))
    backend.write("acme2", episode("acme2", "e1", "went sailing"))

    assert store.unconsolidated_count("acme") == 3
    assert (store.unconsolidated_count("acme:u-42"), store.unconsolidated_count("acme2")) == (2, 1)
    # Counting up to a threshold stops there (the count trigger asks no more of it).
    assert [store.unconsolidated_count("acme", at_most=n) for n in (0, 1, 2, 3, 50)] == [0, 1, 2, 3, 3]

    done = list(store.get_many("acme", ["e1", "e2"]).values())
    store.apply(
        "acme", ChangeSet(upserts=[(m.model_copy(update={"consolidated": True, "version": 2}), None) for m in done])
    )
    assert store.unconsolidated_count("acme") == 1

    backend.delete("acme", "e3")
    assert store.unconsolidated_count("acme") == 0
    assert store.unconsolidated_count("acme:u-42") == 2

    # An episode marked unconsolidated again (a run undone) is counted again.
    again = store.get("acme", "e4")
    assert again is not None
    store.apply("acme", ChangeSet(upserts=[(again.model_copy(update={"consolidated": False, "version": 2}), None)]))
    assert store.unconsolidated_count("acme") == 1


def test_stats_of_an_empty_namespace(backend: Backend) -> None:
    stats = usage_stats(backend.store, "nobody", T0)

    assert stats.counts == {"working": 0, "episodic": 0, "semantic": 0, "semantic_superseded": 0}
    assert stats.last_write_at is None
    assert (stats.recall_count, stats.recall_hits, stats.hit_rate) == (0, 0, None)


def test_deletes_update_stats_and_last_write(backend: Backend, episode: EpisodeMaker) -> None:
    backend.write("acme", episode("acme", "e1", "one"), episode("acme", "e2", "two"))
    backend.clock.advance(hours=2)

    backend.delete("acme", "e1")

    stats = usage_stats(backend.store, "acme", T0)
    assert stats.counts["episodic"] == 1
    assert stats.last_write_at == T0 + timedelta(hours=2)


# --- namespace isolation ------------------------------------------------------------------------------------

# (reader, other): a parent and its child, and two names where one is a string prefix of the other.
NAMESPACE_PAIRS = [("acme", "acme:u-42"), ("acme:u-42", "acme"), ("acme", "acme2"), ("acme2", "acme")]


def _write_namespace(backend: Backend, episode: EpisodeMaker, fact: FactMaker, namespace: str) -> None:
    # The same ids in both namespaces, with contents that say whose they are.
    backend.write(
        namespace,
        episode(namespace, "e1", f"hiking trip with {namespace}", tags=["t"], event_type="trip",
                session_id="s1"),
        episode(namespace, "e2", f"budget review for {namespace}", tags=["t"], session_id="s1"),
        fact(namespace, "f1", f"{namespace} likes hiking", dimension="hobby", provenance=["e1"], tags=["t"]),
        fact(namespace, "f0", f"{namespace} played chess", dimension="hobby", provenance=["e1"],
             status="superseded"),
    )  # fmt: skip
    backend.store.put_working(_entry(namespace, "s1", "k", namespace, T0, 600))


@pytest.mark.parametrize(("reader", "other"), NAMESPACE_PAIRS)
def test_no_read_of_a_namespace_returns_another_namespaces_data(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker, reader: str, other: str
) -> None:
    _write_namespace(backend, episode, fact, other)
    store, index = backend.store, backend.index
    every = MemoryFilter(include_superseded=True)

    # Nothing of `other` is visible from `reader` while `reader` is empty ...
    assert store.get(reader, "e1") is None
    assert store.get_many(reader, ["e1", "e2", "f1", "f0"]) == {}
    assert store.get_vectors(reader, ["e1", "e2", "f1"]) == {}
    assert store.list_memories(reader, every) == []
    assert store.facts_citing(reader, ["e1"]) == []
    assert store.active_fact_for_dimension(reader, "hobby") is None
    assert store.get_working(reader, "s1", T0) == []
    assert store.recent_episodes(reader, T0 - timedelta(days=1)) == []
    assert usage_stats(store, reader, T0).counts == {
        "working": 0,
        "episodic": 0,
        "semantic": 0,
        "semantic_superseded": 0,
    }
    assert index.keyword_search(reader, "hiking budget review likes", every, 10) == []
    assert index.vector_search(reader, backend.query_vector("hiking trip"), every, 10) == []

    # ... and once `reader` has its own data, every read returns only that.
    _write_namespace(backend, episode, fact, reader)
    assert all(m.namespace == reader for m in store.get_many(reader, ["e1", "e2", "f1", "f0"]).values())
    got = store.get(reader, "e1")
    assert got is not None and got.content == f"hiking trip with {reader}"
    listed = store.list_memories(reader, every)
    assert sorted(m.id for m in listed) == ["e1", "e2", "f0", "f1"]
    assert all(m.namespace == reader for m in listed)
    assert all(f.namespace == reader for f in store.facts_citing(reader, ["e1"]))
    assert len(store.facts_citing(reader, ["e1"])) == 2
    active = store.active_fact_for_dimension(reader, "hobby")
    assert active is not None and active.namespace == reader
    assert [e.value for e in store.get_working(reader, "s1", T0)] == [reader]
    assert sorted(e.id for e in store.recent_episodes(reader, T0 - timedelta(days=1))) == ["e1", "e2"]
    assert all(e.namespace == reader for e in store.recent_episodes(reader, T0 - timedelta(days=1)))
    assert usage_stats(store, reader, T0).counts == {
        "working": 1,
        "episodic": 2,
        "semantic": 1,
        "semantic_superseded": 1,
    }
    reader_vectors = store.get_vectors(reader, ["e1"])
    np.testing.assert_allclose(reader_vectors["e1"], backend.query_vector(f"hiking trip with {reader}"), atol=1e-6)
    keyword = index.keyword_search(reader, "hiking budget review likes", every, 10)
    assert sorted(c.id for c in keyword) == ["e1", "e2", "f1"]
    vector = index.vector_search(reader, backend.query_vector("hiking trip"), every, 10)
    assert sorted(c.id for c in vector) == ["e1", "e2", "f0", "f1"]


@pytest.mark.parametrize(("reader", "other"), NAMESPACE_PAIRS)
def test_writes_to_a_namespace_leave_another_untouched(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker, reader: str, other: str
) -> None:
    _write_namespace(backend, episode, fact, reader)
    _write_namespace(backend, episode, fact, other)

    backend.delete(other, "e1", "f1")
    backend.store.clear_working(other)
    backend.store.record_access(other, ["e2"], T0)
    backend.store.record_recall(other, True, T0)
    # Same id, version 2 in `other`: must not see (or touch) `reader`'s e2.
    backend.write(other, episode(other, "e2", "edited", version=2, tags=["t"], session_id="s1"))

    assert set(backend.store.get_many(reader, ["e1", "e2", "f1", "f0"])) == {"e1", "e2", "f1", "f0"}
    e2 = backend.store.get(reader, "e2")
    assert e2 is not None and (e2.content, e2.version, e2.access_count) == (
        f"budget review for {reader}",
        1,
        0,
    )
    assert len(backend.store.get_working(reader, "s1", T0)) == 1
    assert usage_stats(backend.store, reader, T0).recall_count == 0
    assert {c.id for c in backend.index.keyword_search(reader, "hiking", MemoryFilter(), 10)} == {"e1", "f1"}


def test_a_memory_must_belong_to_the_namespace_it_is_written_to(backend: Backend, episode: EpisodeMaker) -> None:
    with pytest.raises(Exception, match="namespace"):
        backend.write("acme", episode("acme2", "e1", "misfiled"))

    assert backend.store.get("acme", "e1") is None
    assert backend.store.get("acme2", "e1") is None


# --- persistence --------------------------------------------------------------------------------------------


def test_everything_survives_close_and_reopen(backend: Backend, episode: EpisodeMaker, fact: FactMaker) -> None:
    data = filter_dataset()
    backend.write("acme", *data)
    backend.store.put_working(_entry("acme", "s1", "k", {"v": 1}, T0, 600))
    backend.store.record_recall("acme", True, T0)
    vectors_before = backend.store.get_vectors("acme", [m.id for m in data])

    again = backend.reopen(None)

    assert again.store.list_memories("acme", MemoryFilter(include_superseded=True)) == sorted(data, key=time_of)
    vectors_after = again.store.get_vectors("acme", [m.id for m in data])
    assert set(vectors_after) == set(vectors_before)
    for memory_id, vector in vectors_before.items():
        np.testing.assert_array_equal(vectors_after[memory_id], vector)
    assert [e.value for e in again.store.get_working("acme", "s1", T0)] == [{"v": 1}]
    assert usage_stats(again.store, "acme", T0).recall_count == 1
    assert [c.id for c in again.index.keyword_search("acme", "Berlin", MemoryFilter(), 10)][0] in {"e1", "f1"}
    assert again.index.vector_search("acme", again.query_vector("paid the rent"), MemoryFilter(), 1)[0].id == "e3"


def test_reopening_with_another_embedding_dimension_is_refused(backend: Backend, episode: EpisodeMaker) -> None:
    backend.write("acme", episode("acme", "e1", "something"))

    with pytest.raises(EmbeddingMismatch) as raised:
        backend.reopen(HashingEmbedder(dim=64))

    message = str(raised.value)
    assert "512" in message and "64" in message
    assert "hashing-512" in message and "hashing-64" in message
    # The data is untouched and opens fine with the original embedder.
    again = backend.reopen(None)
    assert again.store.get("acme", "e1") is not None


def test_hindsight_fields_round_trip(backend: Backend, episode: EpisodeMaker, fact: FactMaker) -> None:
    """What consolidation reads and writes comes back as written: outcomes and repeats of episodes; kind, facets,
    evidence and who induced it of facts."""
    evidence = Evidence(episodes=3, occurrences=5, sessions=2, days=3, first_at=T0, last_at=T0 + timedelta(days=4),
                        failures=2, successes=1)  # fmt: skip
    backend.write(
        "acme",
        episode("acme", "e1", "called the geocoding API", outcome="HTTP 413", outcome_status="failure",
                confirmations=3, last_occurred_at=T0 + timedelta(hours=5), session_ids=["s2", "s3"]),
        fact("acme", "f1", "geocoding API: 100 or more addresses failed", kind="lesson", dimension="tool:geocoding",
             facets={"fails": "413", "works": "50 addresses"}, evidence=evidence, induced_by="rules",
             first_seen_at=T0 - timedelta(days=2), provenance=["e1"]),
    )  # fmt: skip
    got_episode, got_fact = backend.store.get("acme", "e1"), backend.store.get("acme", "f1")
    assert isinstance(got_episode, Episode) and isinstance(got_fact, Fact)
    assert (got_episode.outcome_status, got_episode.confirmations, got_episode.session_ids) == (
        "failure",
        3,
        ["s2", "s3"],
    )
    assert got_episode.last_seen_at == T0 + timedelta(hours=5)
    assert (got_fact.kind, got_fact.facets, got_fact.evidence, got_fact.induced_by) == (
        "lesson",
        {"fails": "413", "works": "50 addresses"},
        evidence,
        "rules",
    )
    assert got_fact.first_seen_at == T0 - timedelta(days=2)
    listed = backend.store.list_memories("acme", MemoryFilter(kinds=("lesson",)))
    assert [m.id for m in listed] == ["f1"]
