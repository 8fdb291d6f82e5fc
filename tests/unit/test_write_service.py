from datetime import timedelta

import pytest

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.memory import Episode, Fact
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.errors import InvalidInput
from rearview.settings import Settings, WriteTuning

pytestmark = pytest.mark.unit
NS = "acme:u-42"


def ep(content: str, **kw: object) -> MemoryWrite:
    return MemoryWrite(layer="episodic", content=content, **kw)


def fact(content: str, **kw: object) -> MemoryWrite:
    return MemoryWrite(layer="semantic", content=content, **kw)


def test_episode_is_stored_with_its_fields(services: Services, clock: ManualClock) -> None:
    when = clock.now() - timedelta(days=2)
    res = services.writer.write(
        NS,
        ep(
            "Booked the flight to Lisbon for the conference on May 3",
            occurred_at=when,
            event_type="booking",
            entities=["Lisbon"],
            tags=["travel"],
            session_id="s-1",
            outcome="confirmed",
        ),
    )
    assert res.status == "stored" and res.importance is not None and res.importance >= 0.2
    stored = services.store.get(NS, res.id)
    assert isinstance(stored, Episode)
    assert stored.occurred_at == when and stored.event_type == "booking" and stored.entities == ["Lisbon"]
    assert stored.tags == ["travel"] and stored.session_id == "s-1" and stored.outcome == "confirmed"
    assert stored.created_at == clock.now() and not stored.consolidated


def test_small_talk_is_skipped_with_a_reason_and_not_stored(services: Services) -> None:
    res = services.writer.write(NS, ep("ok thanks!"))
    assert res.status == "skipped" and res.reason == "low_importance" and res.id
    assert services.stats.of(NS).counts["episodic"] == 0


def test_explicit_importance_overrides_the_score(services: Services) -> None:
    assert services.writer.write(NS, ep("ok thanks!", importance=0.9)).status == "stored"


def test_secrets_are_redacted_and_flagged(services: Services) -> None:
    res = services.writer.write(NS, ep("Deploy used key AKIAIOSFODNN7EXAMPLE for the staging bucket"))
    assert res.redacted
    stored = services.store.get(NS, res.id)
    assert stored is not None and "AKIAIOSFODNN7EXAMPLE" not in stored.content and "REDACTED" in stored.content
    assert stored.redacted


def test_same_id_twice_is_stored_once(services: Services) -> None:
    first = services.writer.write(NS, ep("The deploy of service billing failed with a timeout", id="evt-1"))
    again = services.writer.write(NS, ep("The deploy of service billing failed with a timeout", id="evt-1"))
    assert first.status == "stored" and again.status == "stored" and again.reason == "duplicate_id"
    assert services.stats.of(NS).counts["episodic"] == 1


def test_near_duplicate_is_merged_and_confirmed(services: Services) -> None:
    a = services.writer.write(NS, ep("Maria prefers window seats on long flights", tags=["travel"]))
    b = services.writer.write(NS, ep("Maria prefers window seats on long flights!", tags=["prefs"]))
    assert b.status == "merged" and b.id == a.id and b.merged_into == a.id
    stored = services.store.get(NS, a.id)
    assert stored is not None and stored.confirmations == 2 and stored.tags == ["travel", "prefs"]
    assert services.stats.of(NS).counts["episodic"] == 1


def test_near_duplicates_in_one_batch_are_merged(services: Services) -> None:
    out = services.writer.write_batch(
        NS, [ep("Maria prefers window seats on long flights"), ep("Maria prefers window seats on long flights")]
    )
    assert [r.status for r in out] == ["stored", "merged"] and out[1].id == out[0].id
    stored = services.store.get(NS, out[0].id)
    assert stored is not None and stored.confirmations == 2 and stored.version == 1


def test_near_duplicate_in_another_namespace_is_not_merged(services: Services) -> None:
    services.writer.write("acme:u-1", ep("Maria prefers window seats on long flights"))
    assert services.writer.write("acme:u-2", ep("Maria prefers window seats on long flights")).status == "stored"


def test_fact_with_same_dimension_supersedes_and_keeps_history(services: Services, clock: ManualClock) -> None:
    old = services.writer.write(NS, fact("The user is vegetarian", dimension="diet"))
    clock.advance(days=3)
    new = services.writer.write(NS, fact("The user is vegan since March", dimension="diet"))
    assert new.status == "stored" and new.superseded == [old.id]
    previous = services.store.get(NS, old.id)
    assert isinstance(previous, Fact) and previous.status == "superseded" and previous.superseded_by == new.id
    assert services.store.active_fact_for_dimension(NS, "diet") is not None
    hits = services.recaller.recall(NS, RecallQuery(query="what does the user eat, vegetarian or vegan?"))
    assert old.id not in [h.id for h in hits.results]
    with_history = services.recaller.recall(
        NS, RecallQuery(query="what does the user eat, vegetarian or vegan?", include_superseded=True)
    )
    assert old.id in [h.id for h in with_history.results]


def test_an_older_fact_arriving_late_never_supersedes_a_newer_one(services: Services, clock: ManualClock) -> None:
    """A write the queue delivers after a later one (a retry): what it says is older, so it is kept as history."""
    said_first, said_later = clock.now(), clock.now() + timedelta(hours=1)
    clock.advance(hours=2)
    newer = services.writer.write(NS, fact("The user is vegan since March", dimension="diet", occurred_at=said_later))
    late = services.writer.write(NS, fact("The user is vegetarian", dimension="diet", occurred_at=said_first))

    assert (late.status, late.reason, late.superseded) == ("stored", "superseded_on_arrival", [])
    current = services.store.active_fact_for_dimension(NS, "diet")
    assert current is not None and current.id == newer.id
    stale = services.store.get(NS, late.id)
    assert isinstance(stale, Fact) and stale.status == "superseded" and stale.superseded_by == newer.id


def test_contradicting_fact_supersedes_the_old_one(services: Services) -> None:
    old = services.writer.write(NS, fact("The user likes jazz music very much"))
    new = services.writer.write(NS, fact("The user does not like jazz music very much"))
    assert new.status == "stored" and new.superseded == [old.id]


def test_repeated_fact_is_confirmed_not_duplicated(services: Services, clock: ManualClock) -> None:
    first = services.writer.write(NS, fact("The user's name is Dana Okafor", confidence=0.6))
    clock.advance(days=1)
    again = services.writer.write(NS, fact("The user's name is Dana Okafor"))
    assert again.status == "merged" and again.id == first.id
    stored = services.store.get(NS, first.id)
    assert isinstance(stored, Fact) and stored.confidence > 0.6 and stored.last_confirmed_at == clock.now()


def test_a_fact_said_again_for_the_time_of_its_last_confirmation_is_that_confirmation(
    services: Services, clock: ManualClock
) -> None:
    # The same statement for the same time (a redelivered queued write, a line imported twice) is one occurrence.
    first = services.writer.write(NS, fact("The user's name is Dana Okafor", confidence=0.6))
    when = clock.now() + timedelta(days=1)
    confirmed = services.writer.write(NS, fact("The user's name is Dana Okafor", occurred_at=when))
    again = services.writer.write(NS, fact("The user's name is Dana Okafor", occurred_at=when))
    assert (confirmed.status, again.status, again.reason) == ("merged", "merged", "same_occurrence")
    assert again.merged_into == first.id
    stored = services.store.get(NS, first.id)
    assert isinstance(stored, Fact) and stored.confirmations == 2 and stored.last_confirmed_at == when


def test_invalid_item_rejects_the_whole_batch(services: Services) -> None:
    with pytest.raises(InvalidInput) as err:
        services.writer.write_batch(NS, [ep("Valid memory about the Lisbon trip"), fact("x" * 501)])
    assert err.value.field == "items.1.content" and "500" in err.value.message
    assert services.stats.of(NS).counts["episodic"] == 0


def test_episode_cannot_carry_a_dimension(services: Services) -> None:
    with pytest.raises(InvalidInput) as err:
        services.writer.write(NS, ep("I moved to Berlin in 2024", dimension="city"))
    assert err.value.field == "dimension"


def test_bad_namespace_is_rejected(services: Services) -> None:
    with pytest.raises(InvalidInput) as err:
        services.writer.write("a:b:c:d:e", ep("I moved to Berlin in 2024"))
    assert err.value.field == "namespace" and "4" in err.value.message


def test_a_short_reply_is_not_merged_into_the_question_it_answers(services: Services) -> None:
    # With contextual indexing both vectors carry the question; the reply still says something else.
    q = services.writer.write(NS, ep("Did you finally book the ferry to Naxos for the summer trip?", session_id="s-9"))
    a = services.writer.write(NS, ep("Yes, booked it yesterday!", session_id="s-9"))
    assert q.status == "stored" and a.status == "stored" and a.id != q.id


def test_an_episode_keeps_the_turn_before_it_in_its_session_as_context(services: Services, clock: ManualClock) -> None:
    t = clock.now()
    first = services.writer.write(NS, ep("How long have you had the turtles?", session_id="s-7", occurred_at=t))
    # In one batch, the earlier item of the batch is the context of the later one; a stored turn of the session is
    # the context of the batch's first; another session and a memory without a session have none.
    batch = services.writer.write_batch(
        NS,
        [
            ep("Three years now, since the move", session_id="s-7", occurred_at=t + timedelta(seconds=1)),
            ep("They eat lettuce and worms every day", session_id="s-7", occurred_at=t + timedelta(seconds=2)),
            ep("The ferry to Naxos leaves at noon", session_id="s-8", occurred_at=t + timedelta(seconds=3)),
            ep("Renewed the passport at the consulate", occurred_at=t + timedelta(seconds=4)),
        ],
    )
    contexts = [services.store.get(NS, r.id) for r in [first, *batch]]
    assert [c.context for c in contexts if isinstance(c, Episode)] == [
        "",
        "How long have you had the turtles?",
        "Three years now, since the move",
        "",
        "",
    ]
    # ... and keyword search finds the reply through the question it answers, below the question itself.
    found = services.index.keyword_search(NS, "turtles", MemoryFilter(), 10, context_weight=0.4)
    assert [c.id for c in found] == [first.id, batch[0].id]


def test_without_context_turns_an_episode_has_no_context(settings: Settings, clock: ManualClock) -> None:
    services = build(settings.model_copy(update={"write": WriteTuning(context_turns=0)}), clock=clock)
    try:
        services.writer.write(NS, ep("How long have you had the turtles?", session_id="s-7"))
        reply = services.writer.write(NS, ep("Three years now, since the move", session_id="s-7"))
        stored = services.store.get(NS, reply.id)
        assert isinstance(stored, Episode) and stored.context == ""
    finally:
        services.close()
