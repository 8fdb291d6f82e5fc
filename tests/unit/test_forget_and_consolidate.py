from datetime import timedelta

import pytest

from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.changes import ChangeSet
from rearview.domain.forget import ForgetRequest
from rearview.domain.memory import Episode, Fact
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.working import WorkingWrite
from rearview.domain.write import MemoryWrite
from rearview.errors import InvalidInput, NotFound
from rearview.service.forget import ForgetService, without_turn

pytestmark = pytest.mark.unit
NS = "acme:u-42"


def remember(services: Services, content: str, **kw: object) -> str:
    res = services.writer.write(NS, MemoryWrite(content=content, **kw))
    assert res.status == "stored", res
    return res.id


def induced_fact(services: Services, fid: str, provenance: list[str], clock: ManualClock) -> None:
    fact = Fact(
        id=fid,
        namespace=NS,
        content=f"fact {fid} about the garden",
        provenance=provenance,
        created_at=clock.now(),
        last_confirmed_at=clock.now(),
    )
    vec = services.embedder.embed([fact.content])[0]
    services.store.apply(NS, ChangeSet(upserts=[(fact, vec)]))


def test_forget_by_id_cascades_to_what_was_induced_from_it(services: Services, clock: ManualClock) -> None:
    """Facts induced from a forgotten episode are induced again from what is left: here nothing is left that
    supports them, so both go."""
    a = remember(services, "Planted tomatoes in the back garden on Saturday")
    b = remember(services, "Watered the basil and the tomatoes before work")
    induced_fact(services, "f-only-a", [a], clock)
    induced_fact(services, "f-a-and-b", [a, b], clock)
    receipt = services.forgetter.forget(NS, ForgetRequest(ids=[a]))
    assert receipt.deleted == {"working": 0, "episodic": 1, "semantic": 2}
    assert set(receipt.ids) == {a, "f-only-a", "f-a-and-b"} and receipt.facts_updated == []
    assert services.store.get(NS, a) is None and services.store.get(NS, "f-a-and-b") is None


def test_without_reinduction_a_fact_only_loses_the_forgotten_ids(services: Services, clock: ManualClock) -> None:
    a = remember(services, "Planted tomatoes in the back garden on Saturday")
    b = remember(services, "Watered the basil and the tomatoes before work")
    induced_fact(services, "f-only-a", [a], clock)
    induced_fact(services, "f-a-and-b", [a, b], clock)
    receipt = ForgetService(services.store).forget(NS, ForgetRequest(ids=[a]))
    assert receipt.deleted == {"working": 0, "episodic": 1, "semantic": 1}
    assert set(receipt.ids) == {a, "f-only-a"} and receipt.facts_updated == ["f-a-and-b"]
    survivor = services.store.get(NS, "f-a-and-b")
    assert isinstance(survivor, Fact) and survivor.provenance == [b]


def test_forget_without_cascade_leaves_facts(services: Services, clock: ManualClock) -> None:
    a = remember(services, "Planted tomatoes in the back garden on Saturday")
    induced_fact(services, "f1", [a], clock)
    receipt = services.forgetter.forget(NS, ForgetRequest(ids=[a], cascade=False))
    assert receipt.ids == [a] and services.store.get(NS, "f1") is not None


def test_forgotten_memory_is_never_recalled(services: Services) -> None:
    a = remember(services, "The staging password rotation happens every Friday")
    services.forgetter.forget_one(NS, a)
    resp = services.recaller.recall(NS, RecallQuery(query="staging password rotation Friday"))
    assert a not in [h.id for h in resp.results]


def test_forget_one_unknown_id_is_not_found(services: Services) -> None:
    with pytest.raises(NotFound):
        services.forgetter.forget_one(NS, "nope")


def test_forget_by_filter(services: Services, clock: ManualClock) -> None:
    old = remember(
        services, "Old trip to Porto with the family", occurred_at=clock.now() - timedelta(days=40), tags=["travel"]
    )
    new = remember(services, "New trip to Madrid for the conference", occurred_at=clock.now(), tags=["travel"])
    other = remember(
        services, "Quarterly budget review with finance", occurred_at=clock.now() - timedelta(days=40), tags=["work"]
    )
    receipt = services.forgetter.forget(NS, ForgetRequest(tags=["travel"], until=clock.now() - timedelta(days=1)))
    assert receipt.ids == [old] and receipt.deleted["episodic"] == 1
    assert services.store.get(NS, new) and services.store.get(NS, other)


def test_forget_session_clears_working_memory(services: Services) -> None:
    services.working.put(NS, "s-1", "k1", WorkingWrite(value=1))
    services.working.put(NS, "s-1", "k2", WorkingWrite(value=2))
    services.working.put(NS, "s-2", "k1", WorkingWrite(value=3))
    receipt = services.forgetter.forget(NS, ForgetRequest(session_id="s-1"))
    assert receipt.deleted["working"] == 2
    assert services.working.get(NS, "s-1").entries == {} and services.working.get(NS, "s-2").entries == {"k1": 3}


def test_empty_forget_is_refused(services: Services) -> None:
    remember(services, "Something worth keeping about the garden")
    with pytest.raises(InvalidInput) as err:
        services.forgetter.forget(NS, ForgetRequest())
    assert err.value.field == "ids"
    assert services.stats.of(NS).counts["episodic"] == 1


def test_forget_never_touches_another_namespace(services: Services) -> None:
    mine = remember(services, "Planted tomatoes in the back garden on Saturday", tags=["garden"])
    receipt = services.forgetter.forget("acme", ForgetRequest(ids=[mine]))
    assert receipt.ids == [] and services.store.get(NS, mine) is not None
    receipt = services.forgetter.forget("acme", ForgetRequest(tags=["garden"]))
    assert receipt.ids == [] and services.store.get(NS, mine) is not None


def test_working_memory_expires(services: Services, clock: ManualClock) -> None:
    services.working.put(NS, "s", "short", WorkingWrite(value="x", ttl_seconds=60))
    services.working.put(NS, "s", "long", WorkingWrite(value="y"))
    clock.advance(seconds=61)
    assert services.working.get(NS, "s").entries == {"long": "y"}
    clock.advance(hours=2)
    assert services.working.get(NS, "s").entries == {}


def test_stats(services: Services) -> None:
    remember(services, "Ordered an oat milk flat white at the corner cafe")
    services.writer.write(NS, MemoryWrite(layer="semantic", content="The user drinks oat milk"))
    services.working.put(NS, "s", "k", WorkingWrite(value=1))
    services.recaller.recall(NS, RecallQuery(query="oat milk"))
    services.recaller.recall(NS, RecallQuery(query="xylophone quartet zebra"))
    stats = services.stats.of(NS)
    assert stats.counts["episodic"] == 1 and stats.counts["semantic"] == 1 and stats.counts["working"] == 1
    assert stats.recall_count == 2 and stats.recall_hits == 1 and stats.hit_rate == pytest.approx(0.5)
    assert stats.last_write_at is not None


def test_a_forgotten_turn_leaves_the_context_of_the_turns_after_it(services: Services, clock: ManualClock) -> None:
    t = clock.now() - timedelta(hours=1)

    def turn(content: str, seconds: int, session: str = "s-1") -> str:
        return remember(services, content, session_id=session, occurred_at=t + timedelta(seconds=seconds))

    question = turn("Did the vet say anything about Pixie's allergy?", 0)
    reply = turn("She needs a grain free diet from now on", 1)
    later = turn("Pixie hated the new food at first", 2)
    other = turn("The vet is open until six on Fridays", 0, session="s-2")
    stored = services.store.get(NS, reply)
    assert isinstance(stored, Episode) and "allergy" in stored.context
    assert any(
        c.id == reply for c in services.index.keyword_search(NS, "allergy", MemoryFilter(), 10, context_weight=0.4)
    )

    services.forgetter.forget(NS, ForgetRequest(ids=[question]))

    stored = services.store.get(NS, reply)
    assert isinstance(stored, Episode) and stored.context == "" and stored.version == 2
    assert services.index.keyword_search(NS, "allergy", MemoryFilter(), 10, context_weight=0.4) == []
    # The turn after the reply keeps the reply as its context; another session is not touched.
    kept = services.store.get(NS, later)
    assert isinstance(kept, Episode) and kept.context == "She needs a grain free diet from now on" and kept.version == 1
    untouched = services.store.get(NS, other)
    assert untouched is not None and untouched.version == 1


@pytest.mark.parametrize(
    ("context", "content", "left"),
    [
        ("ok\nbooked it", "ok", "booked it"),  # a whole turn, never a part of a word
        ("booked it", "ok", "booked it"),
        ("Where to?\nLisbon, twice\nok", "Lisbon, twice", "Where to?\nok"),
        ("a turn\nover two lines", "a turn\nover two lines", ""),
        ("same\nsame", "same", ""),
    ],
)
def test_a_forgotten_turn_is_removed_from_a_context_as_whole_lines(context: str, content: str, left: str) -> None:
    assert without_turn(context, content) == left
