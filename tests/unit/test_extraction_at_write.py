"""Extraction at write: `extract: true` turns one conversation turn into the facts and preferences it states, through
the consolidation path (the rules here, a model when one is configured), each citing its turn. Off by default; a
turn about someone else, small talk or a semantic write asks for nothing; a later turn that changes a value
supersedes the old one; an extraction that cannot run never fails the write. Through the real services and SQLite.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from rearview.adapters.induction_prompt import ONE_TURN_ASK, user_message
from rearview.adapters.sqs_consolidation_jobs import deduplication_id
from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.hindsight import EvidenceCluster, InducedMemory, Induction
from rearview.domain.hindsight_runs import ConsolidationJob
from rearview.domain.memory import Episode, Fact
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.errors import InvalidInput
from rearview.service.hindsight.clusters import turn_clusters
from rearview.service.hindsight.consolidation import ConsolidationService
from rearview.service.hindsight.local_worker import MAX_TARGETED_EPISODES, LocalConsolidationWorker
from rearview.settings import ConsolidateTuning, HindsightSettings
from support.hindsight_jobs import FakeRunner, NoSchedule

pytestmark = pytest.mark.unit
NS = "acme:u-7"


def said(services: Services, text: str, *, extract: bool | None = True, **fields: object) -> str:
    result = services.writer.write(NS, MemoryWrite(content=text, extract=extract, **fields))
    assert result.status in ("stored", "merged"), result
    return result.merged_into or result.id


def held(services: Services, *, superseded: bool = False) -> list[Fact]:
    found = services.store.list_memories(NS, MemoryFilter(layers=("semantic",), include_superseded=superseded))
    return [m for m in found if isinstance(m, Fact)]


def test_a_turn_written_with_extract_becomes_the_facts_it_states_each_citing_the_turn(services: Services) -> None:
    turn = said(services, "I'm vegetarian, by the way, and I live in Berlin.")
    facts = {f.dimension: f for f in held(services)}
    assert set(facts) == {"diet", "home_city"}
    assert "vegetarian" in facts["diet"].content and "Berlin" in facts["home_city"].content
    for fact in facts.values():
        assert fact.provenance == [turn] and fact.induced_by == "rules"
        # Said once: less sure than a fact heard again and again (three times in two sessions give about 0.6).
        assert fact.confidence < 0.5
    [episode] = services.store.get_many(NS, [turn]).values()
    assert isinstance(episode, Episode) and not episode.consolidated  # consolidation still counts it as evidence


def test_without_extract_one_turn_teaches_nothing(services: Services) -> None:
    said(services, "I'm vegetarian, by the way, and I live in Berlin.", extract=None)
    said(services, "我对花生过敏。", extract=False)
    assert held(services) == []


def test_a_chinese_turn_is_stated_in_chinese_and_a_request_becomes_a_preference(services: Services) -> None:
    said(services, "我对花生过敏。")
    said(services, "Answer in Chinese from now on, please.")
    facts = {f.dimension: f for f in held(services)}
    assert facts["allergy"].content == "用户对花生过敏"
    assert facts["language"].kind == "preference" and facts["language"].facets == {"replies": "Chinese"}


@pytest.mark.parametrize(
    "text",
    ["My sister loves jazz and lives in Rome.", "What's the weather like today?", "Thanks, that's all for now!"],
)
def test_someone_elses_turn_and_small_talk_state_nothing(services: Services, text: str) -> None:
    said(services, text)
    assert held(services) == []


def test_a_later_turn_that_changes_a_value_supersedes_it_and_keeps_the_history(
    services: Services, clock: ManualClock
) -> None:
    said(services, "I live in Berlin.")
    clock.advance(days=30)
    moved = said(services, "I moved to Lisbon last month.")
    [now] = held(services)
    assert "Lisbon" in now.content and now.provenance == [moved]
    [old] = [f for f in held(services, superseded=True) if f.id != now.id]
    assert "Berlin" in old.content and old.superseded_by == now.id


def test_the_same_fact_said_again_confirms_the_held_one(services: Services, clock: ManualClock) -> None:
    first = said(services, "I live in Berlin.")
    clock.advance(days=3)
    again = said(services, "I am based in Berlin.", session_id="s2")
    [fact] = held(services)
    assert set(fact.provenance) == {first, again} and fact.confirmations == 2


def test_extract_on_a_semantic_write_is_refused_naming_the_field(services: Services) -> None:
    with pytest.raises(InvalidInput) as refused:
        services.writer.write(NS, MemoryWrite(layer="semantic", content="The user is vegetarian", extract=True))
    assert refused.value.field == "extract" and "episodic" in str(refused.value)
    assert services.store.list_memories(NS, MemoryFilter()) == []
    # false is what a semantic write means anyway: accepted.
    assert services.writer.write(NS, MemoryWrite(layer="semantic", content="x is y", extract=False)).status == "stored"


def test_an_extraction_that_cannot_run_never_fails_the_write(
    services: Services, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = services.ledger
    assert ledger.acquire_lease(NS, "another-run", clock.now(), 600)
    with caplog.at_level(logging.ERROR):
        turn = said(services, "I live in Berlin.")
    assert services.store.get_many(NS, [turn])  # stored
    assert held(services) == []
    assert any("extraction" in r.getMessage() for r in caplog.records)
    ledger.release_lease(NS, "another-run")


def test_an_extraction_run_is_recorded_with_its_reason(services: Services) -> None:
    said(services, "I work at Harbor Analytics as a data engineer.")
    run = services.ledger.runs(NS, 5)[0]
    assert (run.reason, run.induced.get("fact"), run.new_episodes) == ("extract", 2, 0)


# --- the clusters, the model's prompt, the job queues ----------------------------------------------------------


def episode(text: str, id: str = "t1", **fields: object) -> Episode:
    at = datetime(2026, 3, 10, 12, tzinfo=UTC)
    return Episode(id=id, namespace=NS, content=text, occurred_at=at, created_at=at, **fields)


def test_a_model_is_given_a_turn_the_rules_recognise_nothing_in_and_asked_for_one_turn() -> None:
    turn = episode("Our twins start kindergarten in September, so mornings are chaos for me.")
    assert turn_clusters([turn], ConsolidateTuning(), open_ended=False) == []
    [cluster] = turn_clusters([turn], ConsolidateTuning(), open_ended=True)
    assert cluster.one_turn and cluster.ids == ["t1"]
    message = user_message(cluster)
    assert message.startswith(ONE_TURN_ASK) and '"one_turn": true' in message


def test_a_tool_outcome_is_no_turn_to_extract_from() -> None:
    turn = episode("I live in Berlin; called the geocoder", outcome="HTTP 500", outcome_status="failure")
    assert turn_clusters([turn], ConsolidateTuning(), open_ended=True) == []


class OneTurnModel:
    """A model inducer stand-in: states what it is told for each one-turn cluster, and counts tokens."""

    name = "fake-model"

    def __init__(self, statement: str) -> None:
        self.statement = statement
        self.seen: list[EvidenceCluster] = []

    def induce(self, clusters: Sequence[EvidenceCluster]) -> Induction:
        self.seen += clusters
        memories: list[InducedMemory | None] = [
            InducedMemory(kind="fact", statement=self.statement, dimension="family", provenance=c.ids) for c in clusters
        ]
        return Induction(memories=memories, tokens=50 * len(clusters))


def model_consolidator(services: Services, model: OneTurnModel) -> ConsolidationService:
    c = services.consolidator
    return ConsolidationService(c._store, c._embedder, c._clock, c._tuning, c._write_tuning, inducer=model)  # noqa: SLF001


def test_with_a_model_the_statement_is_the_models_and_the_checker_still_judges_it(services: Services) -> None:
    turn = said(services, "I'm training for the marathon in September, so mornings are busy for me.", extract=None)
    model = OneTurnModel("The user is training for a marathon in September")
    result = model_consolidator(services, model).extract(NS, [turn])
    [fact] = held(services)
    assert (fact.content, fact.provenance, fact.induced_by) == (model.statement, [turn], "fake-model")
    assert result.tokens == 50 and result.fallback is None and model.seen[0].one_turn

    wrong = said(services, "I'm learning the cello on weekends.", extract=None)
    bad = OneTurnModel("The user plays the violin in a Paris orchestra")
    result = model_consolidator(services, bad).extract(NS, [wrong])
    assert result.fallback is not None and "checker" in result.fallback
    assert [f.content for f in held(services)] == [model.statement]


def test_extraction_jobs_wait_apart_from_runs_and_fold_with_each_other(clock: ManualClock) -> None:
    worker = LocalConsolidationWorker(FakeRunner(), NoSchedule(), clock, HindsightSettings(schedule_hours=0))

    def job(reason: str, *ids: str) -> ConsolidationJob:
        return ConsolidationJob(namespace=NS, reason=reason, requested_at=clock.now(), episode_ids=list(ids))

    worker.send(job("count"))
    worker.send(job("extract", "t1"))
    worker.send(job("failure_streak", "f1"))
    worker.send(job("extract", "t2", "t1"))
    [run, extraction] = worker.pending()
    assert (run.reason, run.episode_ids) == ("failure_streak", [])
    assert (extraction.reason, extraction.episode_ids) == ("extract", ["t1", "t2"])

    many = [f"m{n}" for n in range(MAX_TARGETED_EPISODES)]
    worker.send(job("extract", *many))
    assert [len(j.episode_ids) for j in worker.pending() if j.reason == "extract"] == [2, MAX_TARGETED_EPISODES]


def test_sqs_folds_an_extraction_delivered_twice_but_not_two_different_ones(clock: ManualClock) -> None:
    def job(*ids: str, minutes: int = 0) -> ConsolidationJob:
        at = clock.now() + timedelta(minutes=minutes)
        return ConsolidationJob(namespace=NS, reason="extract", requested_at=at, episode_ids=list(ids))

    assert deduplication_id(job("t1", "t2")) == deduplication_id(job("t2", "t1", minutes=1))
    assert deduplication_id(job("t1")) != deduplication_id(job("t2"))


def test_one_mention_of_an_activity_is_an_event_and_a_routine_said_once_is_a_habit(services: Services) -> None:
    said(services, "Went for a 5k run in the park this morning.")
    assert held(services) == []
    turn = said(services, "I swim every morning before work, 40 laps.")
    [habit] = held(services)
    assert habit.dimension == "exercise" and "swim" in habit.content and habit.provenance == [turn]


@pytest.mark.parametrize(
    "text",
    [
        "Glad you found something that makes you happy! Life's too short to do anything else!",
        "I made this stained glass window to remind myself of my journey.",
        "How do you stay inclusive in your work as an artist?",
        "Starting and running my own biz has had its ups and downs.",
        "You must love seeing how you've grown as an artist.",
        "Seeing her walking down the aisle was my favourite memory.",
        "And in order not to forget to do something, I started writing down everything I needed.",
        "It all started August last year when we met at a festival.",
        "Unfortunately, I'm allergic, since I'm allergic to so much.",
        "Tim: J.K. Rowling is such an inspiring writer. Her books are so captivating with their detail and creative "
        "storytelling. I'm always taking notes on her style for my own writing. [shares a photo of a book]",
    ],
)
def test_a_word_the_rules_know_in_a_chatty_turn_states_nothing(services: Services, text: str) -> None:
    # Misreadings found on LoCoMo: a saying, a window or an aisle that is no seat, a question or a compliment to
    # someone else, a business run, "in order not to" read as a choice of tools, a month as an employer, adverbs
    # and conjunctions as allergens, a long turn copied as a definition.
    said(services, text)
    assert held(services) == []
