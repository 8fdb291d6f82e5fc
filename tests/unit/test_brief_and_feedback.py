"""Brief (the preferences and lessons offered before a task) and feedback (what the agent says of them after),
through the real services on the embedded backend."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.brief import BriefRequest, FeedbackRequest
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Fact, Kind
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.working import WorkingWrite
from rearview.domain.write import MemoryWrite
from rearview.errors import InvalidInput, NotFound
from rearview.ids import new_ulid

pytestmark = pytest.mark.unit
NS = "acme:u-5"

GEOCODER_LESSON = "The geocoder rejects batches of 100 addresses with HTTP 413; batches of 50 succeed."
AISLE = "Prefers aisle seats on flights."
CHINESE = "Wants replies in Chinese."
MARKDOWN = "Wants tables in Markdown."


def held(
    services: Services,
    content: str,
    kind: Kind,
    dimension: str | None,
    *,
    facets: dict[str, str] | None = None,
    confidence: float = 0.8,
    ns: str = NS,
    confirmed_days_ago: float = 0,
) -> str:
    now = services.clock.now()
    fact = Fact(
        id=new_ulid(now),
        namespace=ns,
        content=content,
        kind=kind,
        dimension=dimension,
        facets=facets or {},
        confidence=confidence,
        created_at=now,
        last_confirmed_at=now - timedelta(days=confirmed_days_ago),
    )
    vector = np.asarray(services.embedder.embed([content])[0], dtype=np.float32)
    services.store.apply(ns, ChangeSet(upserts=[(fact, vector)]))
    return fact.id


def brief(services: Services, task: str, **fields: object) -> list[tuple[str, str]]:
    response = services.briefer.brief(NS, BriefRequest(task=task, **fields))
    return [(item.memory.content, item.why) for item in response.items]


@pytest.fixture
def memories(services: Services) -> dict[str, str]:
    return {
        "geocoder": held(services, GEOCODER_LESSON, "lesson", "tool:geocoder", facets={"fix": "batches of 50"}),
        "aisle": held(services, AISLE, "preference", "travel", facets={"seat": "aisle"}),
        "chinese": held(services, CHINESE, "preference", "language", facets={"replies": "Chinese"}),
        "pandas": held(services, "Prefers polars over pandas.", "preference", "tools", facets={"pandas": "polars"}),
        "vegetarian": held(services, "Is vegetarian.", "fact", "diet", facets={"diet": "vegetarian"}),
    }


def test_the_lesson_about_the_tool_about_to_be_used_comes_first(services: Services, memories: dict[str, str]) -> None:
    offered = brief(services, "Clean up the new customer addresses", tool="geocoder")
    assert offered[0][0] == GEOCODER_LESSON and "geocoder" in offered[0][1]


def test_a_lesson_whose_subject_the_task_names_comes_first(services: Services, memories: dict[str, str]) -> None:
    offered = brief(services, "Run the geocoder over last week's signups")
    assert offered[0][0] == GEOCODER_LESSON and "named in the task" in offered[0][1]


def test_a_preference_about_the_tasks_topic_is_offered_without_a_shared_word(
    services: Services, memories: dict[str, str]
) -> None:
    offered = dict(brief(services, "Book me a flight to Osaka on Friday"))
    assert "the task mentions 'flight'" in offered[AISLE]
    assert GEOCODER_LESSON not in offered


def test_a_preference_for_another_tool_is_offered_when_the_task_uses_the_one_it_replaces(
    services: Services, memories: dict[str, str]
) -> None:
    offered = brief(services, "Load the sales CSV with pandas and chart it")
    assert offered[0] == ("Prefers polars over pandas.", "prefers polars over pandas, which the task uses")


def test_every_reply_preferences_come_with_any_task_below_the_specific_ones(
    services: Services, memories: dict[str, str]
) -> None:
    offered = brief(services, "Summarise the quarterly report", top_k=5)
    assert (CHINESE, "applies to every reply (language)") in offered
    specific = brief(services, "Geocode the addresses", tool="geocoder")
    assert [c for c, _ in specific].index(GEOCODER_LESSON) < [c for c, _ in specific].index(CHINESE)


def test_a_diet_fact_is_offered_for_a_task_about_food(services: Services, memories: dict[str, str]) -> None:
    assert "Is vegetarian." in dict(brief(services, "Find a restaurant for dinner tonight"))


def test_nothing_applies_says_so(services: Services) -> None:
    response = services.briefer.brief(NS, BriefRequest(task="Rotate the TLS certificates"))
    assert response.items == [] and response.no_relevant_memory


def test_confidence_is_decayed_and_weak_memories_are_left_out(services: Services, clock: ManualClock) -> None:
    held(services, GEOCODER_LESSON, "lesson", "tool:geocoder", confirmed_days_ago=180)
    held(services, "The mailer drops attachments over 10 MB.", "lesson", "tool:mailer", confidence=0.15)
    response = services.briefer.brief(NS, BriefRequest(task="Send the geocoder results by mailer"))
    [item] = response.items
    assert item.memory.content == GEOCODER_LESSON and item.confidence == pytest.approx(0.4, abs=0.01)


def test_the_budget_and_top_k_cut_the_offers(services: Services, memories: dict[str, str]) -> None:
    assert len(brief(services, "Book a flight and geocode the hotel address", top_k=1)) == 1
    response = services.briefer.brief(
        NS, BriefRequest(task="Book a flight and geocode the hotel address", tool="geocoder", token_budget=25)
    )
    assert response.truncated and len(response.items) == 1


def test_the_sessions_working_memory_comes_with_the_brief(services: Services, memories: dict[str, str]) -> None:
    services.working.put(NS, "s1", "step", WorkingWrite(value="collecting addresses"))
    response = services.briefer.brief(NS, BriefRequest(task="Geocode the addresses", session_id="s1"))
    assert response.working == {"step": "collecting addresses"}


def test_a_brief_sees_only_its_namespace(services: Services) -> None:
    held(services, GEOCODER_LESSON, "lesson", "tool:geocoder", ns="acme:other")
    assert services.briefer.brief(NS, BriefRequest(task="Geocode", tool="geocoder")).items == []


def test_only_what_a_brief_returns_is_counted_as_returned(services: Services, memories: dict[str, str]) -> None:
    brief(services, "Geocode the addresses", tool="geocoder", top_k=1)
    found = {mid: services.store.get(NS, mid) for mid in memories.values()}  # `get` counts what is not folded yet
    assert {mid for mid, m in found.items() if m is not None and m.access_count} == {memories["geocoder"]}


def test_recall_gives_a_lesson_about_a_named_tool_a_fair_place(services: Services, clock: ManualClock) -> None:
    for n in range(12):
        clock.advance(minutes=5)
        services.writer.write(
            NS,
            MemoryWrite(content=f"Called the geocoder with batch {n} of 100 addresses", event_type="tool_call",
                        entities=["geocoder"], outcome="HTTP 413"),
        )  # fmt: skip
    lesson = held(services, GEOCODER_LESSON, "lesson", "tool:geocoder")
    response = services.recaller.recall(NS, RecallQuery(query="what happens when I call the geocoder", top_k=5))
    assert lesson in [h.id for h in response.results[:3]]


# --- feedback -------------------------------------------------------------------------------------------------


def test_useful_feedback_confirms_and_counts_as_adopted_after_a_brief(
    services: Services, memories: dict[str, str], clock: ManualClock
) -> None:
    brief(services, "Geocode the addresses", tool="geocoder")
    clock.advance(days=30)
    result = services.feedback.feedback(NS, FeedbackRequest(memory_id=memories["geocoder"], verdict="useful"))
    assert result.adopted and result.confidence_after > result.confidence_before
    fact = services.store.get(NS, memories["geocoder"])
    assert isinstance(fact, Fact) and fact.last_confirmed_at == clock.now() and fact.confirmations == 2
    counts = services.stats.of(NS).hindsight.feedback["lesson"]  # type: ignore[union-attr]
    assert (counts.useful, counts.adopted) == (1, 1)


def test_useful_feedback_on_a_memory_never_returned_is_not_adoption(
    services: Services, memories: dict[str, str]
) -> None:
    result = services.feedback.feedback(NS, FeedbackRequest(memory_id=memories["aisle"], verdict="useful"))
    assert not result.adopted
    assert services.stats.of(NS).hindsight.feedback["preference"].adopted == 0  # type: ignore[union-attr]


def test_wrong_feedback_lowers_confidence(services: Services, memories: dict[str, str]) -> None:
    result = services.feedback.feedback(NS, FeedbackRequest(memory_id=memories["aisle"], verdict="wrong"))
    assert result.confidence_after == pytest.approx(0.4) and result.corrected_by is None
    fact = services.store.get(NS, memories["aisle"])
    assert isinstance(fact, Fact) and fact.status == "active" and fact.confidence == pytest.approx(0.4)


def test_a_correction_supersedes_the_wrong_memory_and_is_what_recall_and_brief_return(
    services: Services, memories: dict[str, str]
) -> None:
    result = services.feedback.feedback(
        NS,
        FeedbackRequest(memory_id=memories["aisle"], verdict="wrong", correction="Prefers window seats on flights."),
    )
    assert result.corrected_by
    old = services.store.get(NS, memories["aisle"])
    new = services.store.get(NS, result.corrected_by)
    assert isinstance(old, Fact) and (old.status, old.superseded_by) == ("superseded", result.corrected_by)
    assert isinstance(new, Fact) and (new.kind, new.dimension, new.facets) == (
        "preference",
        "travel",
        {"seat": "window"},
    )
    offered = [c for c, _ in brief(services, "Book a flight to Lisbon")]
    assert "Prefers window seats on flights." in offered and AISLE not in offered
    hits = services.recaller.recall(NS, RecallQuery(query="which seats on flights", layers=["semantic"])).results
    assert [h.content for h in hits][:1] == ["Prefers window seats on flights."]
    history = services.store.list_memories(NS, MemoryFilter(layers=("semantic",), include_superseded=True))
    assert memories["aisle"] in {m.id for m in history}


def test_not_useful_changes_nothing_but_is_counted(services: Services, memories: dict[str, str]) -> None:
    before = services.store.get(NS, memories["chinese"])
    result = services.feedback.feedback(NS, FeedbackRequest(memory_id=memories["chinese"], verdict="not_useful"))
    after = services.store.get(NS, memories["chinese"])
    assert isinstance(before, Fact) and isinstance(after, Fact) and after.confidence == before.confidence
    assert result.confidence_after == pytest.approx(result.confidence_before)
    assert services.stats.of(NS).hindsight.feedback["preference"].not_useful == 1  # type: ignore[union-attr]


def test_feedback_on_an_episode_moves_its_importance(services: Services) -> None:
    written = services.writer.write(NS, MemoryWrite(content="Deployed the billing service to eu-west-1"))
    result = services.feedback.feedback(NS, FeedbackRequest(memory_id=written.id, verdict="useful"))
    assert result.confidence_after == pytest.approx(result.confidence_before + 0.1)


def test_bad_feedback_is_refused_naming_the_field(services: Services, memories: dict[str, str]) -> None:
    with pytest.raises(NotFound) as missing:
        services.feedback.feedback(NS, FeedbackRequest(memory_id="01NOSUCHMEMORY", verdict="useful"))
    assert missing.value.field == "memory_id"
    with pytest.raises(InvalidInput) as stray:
        services.feedback.feedback(
            NS, FeedbackRequest(memory_id=memories["aisle"], verdict="useful", correction="Window seats.")
        )
    assert stray.value.field == "correction"
    fact = services.store.get(NS, memories["aisle"])
    assert isinstance(fact, Fact) and fact.confidence == 0.8 and fact.version == 1


def test_feedback_cannot_reach_another_namespace(services: Services) -> None:
    other = held(services, GEOCODER_LESSON, "lesson", "tool:geocoder", ns="acme:other")
    with pytest.raises(NotFound):
        services.feedback.feedback(NS, FeedbackRequest(memory_id=other, verdict="wrong"))
    fact = services.store.get("acme:other", other)
    assert isinstance(fact, Fact) and fact.confidence == 0.8
