"""Consolidation that learns: the behaviours a user of agent memory relies on, through the real services."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.forget import ForgetRequest
from rearview.domain.hindsight import Induction
from rearview.domain.memory import Episode, Fact
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.service.hindsight.consolidation import ConsolidationService
from rearview.service.hindsight.reconcile import Decision, Reconciler
from rearview.settings import ConsolidateTuning, Settings

pytestmark = pytest.mark.unit
NS = "acme:u-7"
START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)  # a Tuesday: every test begins there


def say(services: Services, clock: ManualClock, text: str, day: float, session: str, **fields: object) -> str:
    """One episode written at T0 + `day` (the clock moves there), its memory id (a merge answers its survivor's)."""
    clock.set(START + timedelta(days=day))
    result = services.writer.write(NS, MemoryWrite(content=text, session_id=session, **fields))
    assert result.status in ("stored", "merged"), result
    return result.merged_into or result.id


def consolidate(services: Services, clock: ManualClock, day: float) -> ConsolidateResult:
    clock.set(START + timedelta(days=day))
    return services.consolidator.consolidate(NS, ConsolidateRequest())


def facts(services: Services, *, superseded: bool = False) -> list[Fact]:
    found = services.store.list_memories(NS, MemoryFilter(layers=("semantic",), include_superseded=superseded))
    return [m for m in found if isinstance(m, Fact)]


@pytest.fixture(autouse=True)
def start(clock: ManualClock) -> None:
    clock.set(START)


def test_five_wordings_of_one_request_become_a_preference_stated_anew(services: Services, clock: ManualClock) -> None:
    wordings = [
        "Please answer in Chinese from now on.",
        "Can you reply in Chinese? It's easier for me.",
        "Chinese please, not English",
        "I'd rather you respond in Mandarin.",
        "Write your answers in Chinese, thanks.",
    ]
    for day, text in enumerate(wordings):
        say(services, clock, text, day, f"s{day}")
    result = consolidate(services, clock, 6)
    [preference] = facts(services)
    assert preference.kind == "preference" and preference.dimension == "language"
    assert preference.facets == {"replies": "Chinese"} and "Chinese" in preference.content
    assert preference.content not in wordings
    assert preference.evidence is not None and (preference.evidence.occurrences, preference.evidence.sessions) == (5, 5)
    assert result.induced == {"preference": 1, "fact": 0, "lesson": 0} and result.new_episodes == 5
    assert 0.5 < preference.confidence < 0.95


def test_five_identical_requests_merge_on_write_and_still_count_five_times(
    services: Services, clock: ManualClock
) -> None:
    ids = {say(services, clock, "Reply in Chinese.", day, session) for day, session in
           ((0, "a"), (1, "a"), (4, "b"), (8, "c"), (12, "c"))}  # fmt: skip
    assert len(ids) == 1
    [episode] = services.store.get_many(NS, list(ids)).values()
    assert isinstance(episode, Episode) and episode.confirmations == 5 and episode.sessions == ["a", "b", "c"]
    assert episode.last_seen_at == START + timedelta(days=12)
    consolidate(services, clock, 13)
    [preference] = facts(services)
    assert preference.kind == "preference" and preference.evidence is not None
    assert preference.evidence.occurrences == 5 and preference.provenance == list(ids)


def test_failed_calls_then_the_call_that_worked_become_a_lesson(services: Services, clock: ManualClock) -> None:
    for i, size in enumerate((200, 150, 100, 50)):
        say(services, clock, f"Called the geocoding API with a batch of {size} addresses", i * 0.01, "s1",
            event_type="tool_call", entities=["geocoding API"],
            outcome="200 OK" if size == 50 else "HTTP 413 Payload Too Large")  # fmt: skip
    consolidate(services, clock, 1)
    [lesson] = facts(services)
    assert lesson.kind == "lesson" and lesson.dimension is not None and lesson.dimension.startswith("tool:")
    assert "413" in lesson.content and "50 addresses" in lesson.content and "100 or more" in lesson.content
    assert lesson.evidence is not None and (lesson.evidence.failures, lesson.evidence.successes) == (3, 1)


def test_the_outcome_is_stored_returned_and_filtered_on(services: Services, clock: ManualClock) -> None:
    failed = say(services, clock, "Exported the orders table to CSV", 0, "s1", outcome="timed out after 300s")
    worked = say(services, clock, "Exported the orders table to CSV month by month", 0.1, "s1", outcome="done")
    clock.set(START + timedelta(days=1))
    response = services.recaller.recall(NS, RecallQuery(query="export orders csv", outcomes=["failure"]))
    assert [hit.id for hit in response.results] == [failed]
    assert response.results[0].outcome_status == "failure" and response.results[0].outcome == "timed out after 300s"
    both = services.recaller.recall(NS, RecallQuery(query="export orders csv"))
    assert {hit.id: hit.outcome_status for hit in both.results} == {failed: "failure", worked: "success"}


def test_a_newer_habit_supersedes_the_old_one_which_stays_as_history(services: Services, clock: ManualClock) -> None:
    for day in range(0, 60, 5):
        say(services, clock, f"Went for my morning run, {day % 4 + 3}k.", day, f"r{day}")
    consolidate(services, clock, 61)
    for day in range(70, 92, 4):
        say(services, clock, f"Swam {day % 7 + 20} laps this morning.", day, f"w{day}")
    result = consolidate(services, clock, 93)
    [current] = facts(services)
    assert current.facets == {"routine": "swimming", "when": "morning"} and "morning" in current.content
    [old] = [f for f in facts(services, superseded=True) if f.status == "superseded"]
    assert old.facets["routine"] == "running" and old.superseded_by == current.id
    assert result.superseded == 1
    recalled = services.recaller.recall(NS, RecallQuery(query="what exercise does the user do in the morning?"))
    assert current.id in [h.id for h in recalled.results] and old.id not in [h.id for h in recalled.results]


def test_a_refinement_merges_into_one_memory_per_dimension(services: Services, clock: ManualClock) -> None:
    for day, text in enumerate(["Show the quarterly numbers as a table.", "Put the price comparison in a table please.",
                                "Give me the benchmark results as a markdown table."]):  # fmt: skip
        say(services, clock, text, day * 3, f"t{day}")
    consolidate(services, clock, 10)
    for day, text in enumerate(["List the setup steps as a numbered list.", "Please number the deployment steps.",
                                "Walk me through the migration step by step please."]):  # fmt: skip
        say(services, clock, text, 11 + day * 3, f"n{day}")
    result = consolidate(services, clock, 20)
    [merged] = facts(services)
    assert merged.facets == {"data": "a markdown table", "steps": "a numbered list"}
    assert "table" in merged.content and "numbered list" in merged.content
    assert [d.action for d in result.decisions] == ["refined"]


def test_a_run_without_new_episodes_changes_nothing(services: Services, clock: ManualClock) -> None:
    for day in range(4):
        say(services, clock, "Keep your answers short please.", day * 2, f"s{day}")
    first = consolidate(services, clock, 9)
    before = facts(services)
    again = consolidate(services, clock, 10)
    assert first.facts_created == 1 and again.new_episodes == 0 and again.decisions == []
    assert facts(services) == before


def test_more_evidence_later_confirms_the_memory_instead_of_adding_one(services: Services, clock: ManualClock) -> None:
    for day in range(3):
        say(services, clock, f"No emojis please ({day}).", day, f"s{day}")
    consolidate(services, clock, 4)
    [held] = facts(services)
    say(services, clock, "Again: stop adding emojis to the summaries.", 30, "s9")
    result = consolidate(services, clock, 31)
    [confirmed] = facts(services)
    assert confirmed.id == held.id and [d.action for d in result.decisions] == ["confirmed"]
    assert confirmed.last_confirmed_at > held.last_confirmed_at and len(confirmed.provenance) == 4


@pytest.mark.parametrize(
    "texts",
    [
        ["Answer this one in French, it's for my colleague."],  # a one-off request
        ["Please reply in German.", "German please."],  # asked twice only
        ["I live in Oslo these days."],  # a fact said once
        ["Had lunch with Tom at the Thai place.", "Had lunch with Tom again today."],  # events, not facts
    ],
)
def test_one_off_events_are_never_induced(services: Services, clock: ManualClock, texts: list[str]) -> None:
    for day, text in enumerate(texts):
        say(services, clock, text, day * 3, f"s{day}")
    result = consolidate(services, clock, 10)
    assert facts(services) == [] and result.facts_created == 0


def test_forgetting_a_source_restates_the_memory_from_what_is_left(services: Services, clock: ManualClock) -> None:
    ids = [
        say(services, clock, text, day * 4, f"s{day}")
        for day, text in enumerate(
            [
                "I live in Lisbon, by the river Tagus.",
                "Since I moved to Lisbon I walk more.",
                "Here in Lisbon it is sunny.",
                "I live in Lisbon, near Alfama.",
            ]
        )  # fmt: skip
    ]
    consolidate(services, clock, 20)
    [held] = facts(services)
    receipt = services.forgetter.forget(NS, ForgetRequest(ids=[ids[0]]))
    [restated] = facts(services)
    assert receipt.facts_updated == [held.id] and restated.id == held.id
    assert ids[0] not in restated.provenance and restated.evidence is not None and restated.evidence.episodes == 3
    assert "Tagus" not in restated.model_dump_json()


def test_forgetting_too_many_sources_deletes_the_memory(services: Services, clock: ManualClock) -> None:
    ids = [say(services, clock, text, day * 4, f"s{day}") for day, text in
           enumerate(["I'm a nurse, so my shifts change.", "As a nurse I can't take calls."])]  # fmt: skip
    consolidate(services, clock, 20)
    [held] = facts(services)
    receipt = services.forgetter.forget(NS, ForgetRequest(ids=[ids[1]]))
    assert facts(services, superseded=True) == [] and held.id in receipt.ids


def test_a_memory_nothing_confirms_goes_stale_and_ranks_lower(services: Services, clock: ManualClock) -> None:
    for day in range(3):
        say(services, clock, f"Use metric units please ({day}).", day, f"s{day}")
    consolidate(services, clock, 4)
    fresh = services.recaller.recall(NS, RecallQuery(query="which units does the user want?", layers=["semantic"]))
    assert fresh.results and not fresh.results[0].stale
    clock.set(START + timedelta(days=4 + 3 * 365))
    old = services.recaller.recall(NS, RecallQuery(query="which units does the user want?", layers=["semantic"]))
    [hit] = old.results
    assert hit.stale and hit.confidence is not None and hit.confidence < fresh.results[0].confidence  # type: ignore[operator]
    assert hit.kind == "preference" and hit.evidence is not None


def test_a_learned_habit_supersedes_the_written_fact_it_contradicts_in_free_text(
    services: Services, clock: ManualClock
) -> None:
    """A fact written by hand, with no dimension, and a later habit the agent's notes say has stopped: the induced
    memory is judged against it like any other and replaces it, the written one kept as history."""
    written = services.writer.write(NS, MemoryWrite(layer="semantic", content="The user drinks coffee every morning"))
    for day, note in enumerate(
        ["The user said he quit coffee and drinks green tea now.", "Ordered green tea for the user, who quit coffee."]
    ):
        say(services, clock, note, 10 + 5 * day, f"s{day}", event_type="agent_note")

    result = consolidate(services, clock, 30)

    active = {f.content for f in facts(services)}
    assert written.id in {s for d in result.decisions for s in d.superseded}
    assert "The user drinks coffee every morning" not in active
    assert any("coffee" in c or "tea" in c for c in active)


def test_a_colleagues_repeated_wish_is_not_learned_as_the_users(services: Services, clock: ManualClock) -> None:
    for day, note in enumerate(
        [
            "The user's colleague Priya prefers meetings after 3pm.",
            "Priya, the user's teammate, asked again for meetings after 3pm.",
            "User forwarded Priya's note: she prefers meetings after 3pm.",
        ]
    ):
        say(services, clock, note, 3 * day, f"s{day}", event_type="agent_note")

    consolidate(services, clock, 10)

    assert facts(services) == []


def test_a_memory_made_and_confirmed_in_one_run_is_listed_once() -> None:
    # Two clusters stating one memory: the first makes it, the second confirms it; a superseded version kept as
    # history is not a memory of the run.
    decisions = [
        Decision("pref-1", "created", "preference", None),
        Decision("pref-1", "confirmed", "preference", None),
        Decision("pref-0", "history", "preference", None),
        Decision("fact-2", "refined", "fact", None),
    ]
    result = ConsolidateResult(
        namespace="acme:u-1", episodes_considered=0, clusters=0, facts_created=0, facts_confirmed=0,
        episodes_consolidated=0,
    )  # fmt: skip
    ConsolidationService._fill(
        result, cast(Reconciler, SimpleNamespace(decisions=decisions)), [], [], [], Induction([]), None
    )

    assert result.fact_ids == ["pref-1", "fact-2"]
    assert (result.facts_created, result.facts_confirmed) == (1, 2)


# --- change points (`consolidate.change_points`, off by default) ------------------------------------------------


@pytest.fixture
def changing(tmp_path: Path, clock: ManualClock) -> Iterator[Services]:
    """The services with change points on."""
    settings = Settings(
        data_dir=tmp_path / "changing", embedder="hashing", consolidate=ConsolidateTuning(change_points=True)
    )
    services = build(settings, clock=clock)
    yield services
    services.close()


def _runs_in_the_evening(services: Services, clock: ManualClock) -> Fact:
    for day, text in enumerate(
        [
            "logged my 5k this evening after work, legs felt great",
            "another evening run today, 6k along the canal",
            "evening run again, kept it easy at 5k",
        ]
    ):
        say(services, clock, text, 4 * day, f"e{day}")
    consolidate(services, clock, 10)
    [habit] = facts(services)
    assert "evening" in habit.content
    return habit


def test_one_turn_saying_a_learned_habit_changed_supersedes_it(changing: Services, clock: ManualClock) -> None:
    """Said once, explicitly, of what was learned: enough to end it. The turns after the change (a dawn run that
    shares the words of the old habit) do not keep the old habit current."""
    habit = _runs_in_the_evening(changing, clock)
    say(changing, clock, "new routine: I run at dawn now, before the kids wake up", 30, "d0")
    say(changing, clock, "dawn run done, 5k before breakfast", 33, "d1")

    result = consolidate(changing, clock, 34)

    [current] = facts(changing)
    assert "dawn" in current.content and "evening" not in current.content
    [old] = [f for f in facts(changing, superseded=True) if f.status == "superseded"]
    assert old.id == habit.id and old.superseded_by == current.id
    assert result.superseded == 1


def test_giving_up_a_habit_said_once_in_chinese_supersedes_it(changing: Services, clock: ManualClock) -> None:
    """The habit written by hand, the change reported by the agent, in Chinese."""
    habit = changing.writer.write(NS, MemoryWrite(layer="semantic", content="用户每天下午喝一杯全糖奶茶"))
    say(changing, clock, "用户体检血糖偏高，说从今天起戒奶茶了。", 40, "q0", event_type="agent_note")

    result = consolidate(changing, clock, 41)

    [current] = facts(changing)
    assert "戒奶茶" in current.content and current.provenance
    assert [d.superseded for d in result.decisions] == [[habit.id]]


def test_a_change_said_of_something_else_ends_nothing_and_one_turn_starts_nothing(
    changing: Services, clock: ManualClock
) -> None:
    habit = _runs_in_the_evening(changing, clock)
    say(changing, clock, "I started a new job at Acme this week, the office is near the harbour", 30, "j0")
    say(changing, clock, "no longer using the old laptop, switched to the new one", 31, "j1")

    result = consolidate(changing, clock, 32)

    assert [f.id for f in facts(changing)] == [habit.id]
    assert result.superseded == 0 and result.facts_created == 0


def test_change_points_are_off_by_default(services: Services, clock: ManualClock) -> None:
    habit = _runs_in_the_evening(services, clock)
    say(services, clock, "new routine: I run at dawn now, before the kids wake up", 30, "d0")

    result = consolidate(services, clock, 31)

    assert [f.id for f in facts(services)] == [habit.id] and result.superseded == 0


def test_two_requests_minutes_apart_in_one_chat_are_one_occasion(services: Services, clock: ManualClock) -> None:
    """Asked twice in one chat minutes apart (or asked, and noted as done), then once elsewhere: two occasions, no
    preference yet. A third chat makes it one."""
    say(services, clock, "Please reply in Chinese.", 1.0, "a")
    say(services, clock, "Can you answer in Chinese? It's easier for me.", 1.01, "a")
    say(services, clock, "Chinese please, not English", 6.0, "b")
    consolidate(services, clock, 7)
    assert facts(services) == []

    say(services, clock, "Write your answers in Chinese, thanks.", 12.0, "c")
    consolidate(services, clock, 13)
    assert [f.kind for f in facts(services)] == ["preference"]
