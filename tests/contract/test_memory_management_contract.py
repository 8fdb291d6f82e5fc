"""MemoryStore contract, management half: pages newest first with a cursor, version history, the facts a fact
superseded, restoring memories as they were, and erasing a namespace; on every backend."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from rearview.domain.changes import ChangeSet
from rearview.domain.history import ArchivedVersion
from rearview.domain.listing import PagePosition
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.search import MemoryFilter
from rearview.domain.working import WorkingEntry
from rearview.errors import ConcurrentUpdate
from support.contract_backends import T0, Backend, filter_dataset

pytestmark = pytest.mark.contract

EpisodeMaker = Callable[..., Episode]
FactMaker = Callable[..., Fact]
MINUTE = timedelta(minutes=1)
EVERY = MemoryFilter(include_superseded=True)


def _pages(backend: Backend, namespace: str, flt: MemoryFilter, size: int) -> list[list[str]]:
    pages: list[list[str]] = []
    after: PagePosition | None = None
    while True:
        page = backend.store.page_memories(namespace, flt, size, after)
        if not page:
            return pages
        pages.append([m.id for m in page])
        after = PagePosition.of(page[-1])


# --- pages --------------------------------------------------------------------------------------------------


def test_pages_are_newest_first_across_layers(backend: Backend, episode: EpisodeMaker, fact: FactMaker) -> None:
    backend.write(
        "acme",
        episode("acme", "e1", "first", occurred_at=T0),
        fact("acme", "f1", "second", last_confirmed_at=T0 + MINUTE),
        episode("acme", "e2", "third", occurred_at=T0 + 2 * MINUTE),
        fact("acme", "f2", "fourth", last_confirmed_at=T0 + 3 * MINUTE),
    )

    assert _pages(backend, "acme", EVERY, 3) == [["f2", "e2", "f1"], ["e1"]]
    assert _pages(backend, "acme", EVERY, 500) == [["f2", "e2", "f1", "e1"]]


def test_memories_at_the_same_instant_are_ordered_by_id_and_paged_without_loss(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker
) -> None:
    backend.write(
        "acme",
        *(episode("acme", f"e{i}", f"same time {i}") for i in range(5)),
        fact("acme", "e2x", "a fact at the same time"),
    )

    assert _pages(backend, "acme", EVERY, 2) == [["e4", "e3"], ["e2x", "e2"], ["e1", "e0"]]


def test_pages_apply_every_filter(backend: Backend) -> None:
    backend.write("acme", *filter_dataset())
    day = timedelta(days=1)
    cases = {
        MemoryFilter(layers=("episodic",)): ["e4", "e3", "e2", "e1"],
        MemoryFilter(tags=("travel",)): ["e2", "f1", "e1"],
        MemoryFilter(event_types=("booking",)): ["e2"],
        MemoryFilter(kinds=("lesson",)): ["f4"],
        MemoryFilter(since=T0 + day, until=T0 + 3 * day): ["f4", "e3", "e2"],
        MemoryFilter(): ["f3", "e4", "f4", "e3", "e2", "f1", "e1"],
        EVERY: ["f3", "e4", "f4", "e3", "f2", "e2", "f1", "e1"],
    }
    for flt, expected in cases.items():
        assert [m.id for m in backend.store.page_memories("acme", flt, 500)] == expected, flt
        assert sum(_pages(backend, "acme", flt, 2), []) == expected, flt


def test_a_cursor_stays_valid_while_writes_happen(backend: Backend, episode: EpisodeMaker) -> None:
    backend.write(
        "acme", *(episode("acme", f"old-{i:02d}", f"memory {i}", occurred_at=T0 + i * MINUTE) for i in range(10))
    )
    first = backend.store.page_memories("acme", EVERY, 4)
    # Written between the pages: newer than everything (already passed), in the middle, and older than everything.
    backend.write(
        "acme",
        episode("acme", "new-top", "newest", occurred_at=T0 + 60 * MINUTE),
        episode("acme", "new-mid", "middle", occurred_at=T0 + 150 * timedelta(seconds=2)),
    )
    backend.delete("acme", "old-03")
    rest = _pages_after(backend, first[-1], 3)

    listed = [m.id for m in first] + rest
    originals = [f"old-{i:02d}" for i in reversed(range(10)) if i != 3]
    assert [i for i in listed if i.startswith("old")] == originals
    assert len(listed) == len(set(listed))
    assert "new-top" not in listed and "new-mid" in listed


def _pages_after(backend: Backend, last: Memory, size: int) -> list[str]:
    found: list[str] = []
    after = PagePosition.of(last)
    while page := backend.store.page_memories("acme", EVERY, size, after):
        found += [m.id for m in page]
        after = PagePosition.of(page[-1])
    return found


# --- history ------------------------------------------------------------------------------------------------


def test_an_update_in_earnest_archives_the_replaced_version(backend: Backend, fact: FactMaker) -> None:
    original = fact("acme", "f1", "Prefers tea", confidence=0.7)
    backend.write("acme", original)
    edited = original.model_copy(update={"content": "Prefers green tea", "version": 2})
    backend.store.apply("acme", ChangeSet(upserts=[(edited, None)], cause="edit", actor="key-1"))

    (archive,) = backend.store.history("acme", "f1")
    assert archive.memory == original
    assert (archive.replaced_by, archive.actor, archive.replaced_at) == ("edit", "key-1", T0)
    assert backend.store.get("acme", "f1") == edited


def test_bookkeeping_updates_archive_nothing(backend: Backend, episode: EpisodeMaker) -> None:
    original = episode("acme", "e1", "Deployed the billing service")
    backend.write("acme", original)
    update = {"consolidated": True, "confirmations": 3, "context": "before", "version": 2}
    backend.store.apply("acme", ChangeSet(upserts=[(original.model_copy(update=update), None)], cause="consolidation"))

    assert backend.store.history("acme", "e1") == []


def test_history_is_oldest_first_and_forgetting_removes_it(backend: Backend, fact: FactMaker) -> None:
    memory = fact("acme", "f1", "v1 text")
    backend.write("acme", memory)
    for version, cause in ((2, "edit"), (3, "feedback"), (4, "consolidation")):
        memory = memory.model_copy(update={"content": f"v{version} text", "version": version})
        backend.store.apply("acme", ChangeSet(upserts=[(memory, None)], cause=cause))  # type: ignore[arg-type]

    archives = backend.store.history("acme", "f1")
    assert [(a.version, a.memory.content, a.replaced_by) for a in archives] == [
        (1, "v1 text", "edit"),
        (2, "v2 text", "feedback"),
        (3, "v3 text", "consolidation"),
    ]
    # A forget restating a memory archives nothing and, asked to, drops what was kept.
    restated = memory.model_copy(update={"content": "restated", "version": 5})
    backend.store.apply("acme", ChangeSet(upserts=[(restated, None)], cause="forget", purge_history=["f1"]))
    assert backend.store.history("acme", "f1") == []
    backend.store.apply(
        "acme", ChangeSet(upserts=[(restated.model_copy(update={"content": "x", "version": 6}), None)], cause="edit")
    )
    backend.delete("acme", "f1")
    assert backend.store.history("acme", "f1") == []


def test_a_refused_change_set_archives_nothing(backend: Backend, fact: FactMaker) -> None:
    original = fact("acme", "f1", "Prefers tea")
    backend.write("acme", original)
    stale = original.model_copy(update={"content": "Prefers coffee", "version": 3})
    with pytest.raises(ConcurrentUpdate):
        backend.store.apply("acme", ChangeSet(upserts=[(stale, None)], cause="edit"))
    assert backend.store.history("acme", "f1") == []


def test_facts_superseded_by(backend: Backend, fact: FactMaker) -> None:
    backend.write(
        "acme",
        fact("acme", "f1", "lives in Paris", status="superseded", superseded_by="f2", superseded_at=T0),
        fact("acme", "f0", "lives in Rome", status="superseded", superseded_by="f2", superseded_at=T0,
             created_at=T0 - MINUTE),
        fact("acme", "f2", "lives in Berlin"),
        fact("acme", "f3", "lives in Oslo", status="superseded", superseded_by="f9", superseded_at=T0),
    )  # fmt: skip

    assert [f.id for f in backend.store.facts_superseded_by("acme", "f2")] == ["f0", "f1"]
    assert backend.store.facts_superseded_by("acme", "f1") == []
    assert backend.store.facts_superseded_by("acme2", "f2") == []


def test_restore_inserts_memories_at_their_own_version_with_their_history(backend: Backend, fact: FactMaker) -> None:
    earlier = fact("acme", "f1", "Prefers tea", version=1)
    current = fact("acme", "f1", "Prefers green tea", version=4, access_count=3)
    archive = ArchivedVersion(memory=earlier, replaced_by="edit", replaced_at=T0 + MINUTE, actor="k")
    vector = backend.embedder.embed([current.content])[0]
    backend.store.apply(
        "acme", ChangeSet(upserts=[(current, vector)], restore=True, archived=[archive], cause="import")
    )

    assert backend.store.get("acme", "f1") == current
    assert backend.store.history("acme", "f1") == [archive]
    # Restoring an id already stored is refused, as an insert is.
    with pytest.raises(ConcurrentUpdate):
        backend.store.apply("acme", ChangeSet(upserts=[(current, vector)], restore=True, cause="import"))


# --- expiry -----------------------------------------------------------------------------------------------


def test_expired_memories_are_found_in_every_namespace_soonest_first(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker
) -> None:
    """What the retention sweep forgets (with forget's cascade): the memories of any namespace whose `expires_at`
    has come, soonest first, up to the limit; never one still to expire or one that never does."""
    hour = timedelta(hours=1)
    backend.write(
        "acme",
        episode("acme", "e-soon", "expires first", expires_at=T0 + hour),
        episode("acme", "e-later", "expires at three", expires_at=T0 + 3 * hour),
        episode("acme", "e-never", "never expires"),
        fact("acme", "f-two", "a fact that expires at two", expires_at=T0 + 2 * hour),
    )
    backend.write("globex:u-1", episode("globex:u-1", "g-one", "expires at one and a half", expires_at=T0 + 1.5 * hour))

    assert backend.store.expired_memories(T0, 10) == []
    assert backend.store.expired_memories(T0 + hour, 10) == [("acme", "e-soon")]
    assert backend.store.expired_memories(T0 + 2 * hour, 10) == [
        ("acme", "e-soon"),
        ("globex:u-1", "g-one"),
        ("acme", "f-two"),
    ]
    assert backend.store.expired_memories(T0 + 4 * hour, 2) == [("acme", "e-soon"), ("globex:u-1", "g-one")]

    backend.delete("acme", "e-soon", "f-two")
    assert backend.store.expired_memories(T0 + 4 * hour, 10) == [("globex:u-1", "g-one"), ("acme", "e-later")]


# --- erase --------------------------------------------------------------------------------------------------


def _entry(namespace: str) -> WorkingEntry:
    return WorkingEntry(
        namespace=namespace, session_id="s1", key="k", value=1, updated_at=T0, expires_at=T0 + timedelta(hours=1)
    )


@pytest.mark.parametrize("other", ["acme:u-42", "acme2", "acm"])
def test_erasing_a_namespace_removes_everything_of_it_and_nothing_else(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker, other: str
) -> None:
    for namespace in ("acme", other):
        first = fact(namespace, "f1", f"{namespace} prefers tea")
        backend.write(namespace, episode(namespace, "e1", f"{namespace} went hiking"), first)
        edited = first.model_copy(update={"content": f"{namespace} prefers coffee", "version": 2})
        backend.store.apply(namespace, ChangeSet(upserts=[(edited, None)], cause="edit"))
        backend.store.put_working(_entry(namespace))

    counts = backend.store.erase_namespace("acme")

    assert (counts.episodic, counts.semantic, counts.working, counts.versions) == (1, 1, 1, 1)
    assert backend.store.get_many("acme", ["e1", "f1"]) == {}
    assert backend.store.history("acme", "f1") == []
    assert backend.store.get_working("acme", "s1", T0) == []
    assert backend.store.page_memories("acme", EVERY, 10) == []
    assert "acme" not in backend.store.list_namespaces()
    assert other in backend.store.list_namespaces()
    assert backend.index.keyword_search("acme", "hiking", EVERY, 10) == []
    assert backend.index.vector_search("acme", backend.query_vector("acme went hiking"), EVERY, 10) == []
    assert sorted(backend.store.get_many(other, ["e1", "f1"])) == ["e1", "f1"]
    assert len(backend.store.history(other, "f1")) == 1
    assert [c.id for c in backend.index.keyword_search(other, "hiking", EVERY, 10)] == ["e1"]


def test_an_erased_namespace_can_be_written_again(backend: Backend, episode: EpisodeMaker) -> None:
    backend.write("acme", episode("acme", "e1", "went hiking in the Alps"))
    backend.index.vector_search("acme", backend.query_vector("hiking"), EVERY, 10)  # warms any cache
    backend.store.erase_namespace("acme")
    backend.write("acme", episode("acme", "e2", "went sailing on the lake"))

    assert [m.id for m in backend.store.page_memories("acme", EVERY, 10)] == ["e2"]
    found = backend.index.vector_search("acme", backend.query_vector("went sailing on the lake"), EVERY, 10)
    assert [c.id for c in found] == ["e2"]
    assert "acme" in backend.store.list_namespaces()
    assert backend.store.erase_namespace("nobody").total() == 0


# --- isolation and the index --------------------------------------------------------------------------------

NAMESPACE_PAIRS = [("acme", "acme:u-42"), ("acme:u-42", "acme"), ("acme", "acme2"), ("acme2", "acme")]


@pytest.mark.parametrize(("reader", "other"), NAMESPACE_PAIRS)
def test_no_management_read_returns_another_namespaces_data(
    backend: Backend, episode: EpisodeMaker, fact: FactMaker, reader: str, other: str
) -> None:
    first = fact(other, "f1", "lives in Paris")
    backend.write(other, episode(other, "e1", "moved house"), first, fact(other, "f0", "lived in Rome",
                  status="superseded", superseded_by="f1", superseded_at=T0))  # fmt: skip
    backend.store.apply(other, ChangeSet(upserts=[(first.model_copy(update={"content": "x", "version": 2}), None)]))

    assert backend.store.page_memories(reader, EVERY, 10) == []
    assert backend.store.history(reader, "f1") == []
    assert backend.store.facts_superseded_by(reader, "f1") == []
    assert backend.store.erase_namespace(reader).total() == 0
    assert len(backend.store.page_memories(other, EVERY, 10)) == 3
    assert len(backend.store.history(other, "f1")) == 1


def test_an_edited_text_is_searched_and_the_old_one_is_not(backend: Backend, episode: EpisodeMaker) -> None:
    original = episode("acme", "e1", "Booked an aisle seat on the Lisbon flight")
    backend.write("acme", original)
    edited = original.model_copy(update={"content": "Booked a window seat on the Lisbon flight", "version": 2})
    vector = backend.embedder.embed([edited.content])[0]
    backend.store.apply("acme", ChangeSet(upserts=[(edited, vector)], cause="edit"))

    assert [c.id for c in backend.index.keyword_search("acme", "window", EVERY, 10)] == ["e1"]
    assert backend.index.keyword_search("acme", "aisle", EVERY, 10) == []
    best = backend.index.vector_search("acme", backend.query_vector(edited.content), EVERY, 1)
    assert best[0].id == "e1" and best[0].score > 0.99
