"""Consolidation runs as jobs: the lease, the caps, the record, and a run that fails applying nothing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.hindsight import EvidenceCluster, Induction
from rearview.domain.hindsight_runs import ConsolidationJob
from rearview.domain.memory import Episode
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.errors import RunInProgress
from rearview.service.hindsight.rule_inducer import RuleInducer
from rearview.settings import HindsightSettings, Settings
from support.hindsight_jobs import InlineJobs

pytestmark = pytest.mark.unit
NS = "acme:u-3"

# Three requests, each said in three sessions: three preferences (language, length, emojis).
REQUESTS = ["Please reply in Chinese.", "Keep your answers short.", "No emojis please."]


def _services(tmp_path: Path, clock: ManualClock, inducer: Any = None, **hindsight: Any) -> Services:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", hindsight=HindsightSettings(**hindsight))
    return build(settings, clock=clock, inducer=inducer)


@pytest.fixture
def services(tmp_path: Path, clock: ManualClock) -> Iterator[Services]:
    svc = _services(tmp_path, clock)
    yield svc
    svc.close()


def _three_preferences(services: Services, clock: ManualClock) -> None:
    for day in range(3):
        clock.advance(days=1)
        for text in REQUESTS:
            services.writer.write(NS, MemoryWrite(content=text, session_id=f"s{day}"))


def _unconsolidated(services: Services) -> list[str]:
    found = services.store.list_memories(NS, MemoryFilter(layers=("episodic",), consolidated=False))
    return [m.content for m in found]


def _job(clock: ManualClock, reason: str = "count") -> ConsolidationJob:
    return ConsolidationJob(namespace=NS, reason=reason, requested_at=clock.now())


def test_a_run_is_recorded_with_what_it_did(services: Services, clock: ManualClock) -> None:
    _three_preferences(services, clock)
    result = services.runner.run(_job(clock))
    assert result.induced["preference"] == 3 and result.reason == "count" and result.run_id
    [run] = services.ledger.runs(NS)
    assert (run.run_id, run.reason, run.new_episodes, run.induced["preference"]) == (result.run_id, "count", 3, 3)
    hindsight = services.stats.of(NS).hindsight
    assert hindsight is not None
    assert (hindsight.runs, hindsight.induced["preference"], hindsight.last_run_reason) == (1, 3, "count")
    assert hindsight.today is not None and hindsight.today.clusters == 3
    assert [r.run_id for r in hindsight.recent_runs] == [result.run_id]


def test_a_held_lease_refuses_a_second_run_until_it_expires(services: Services, clock: ManualClock) -> None:
    _three_preferences(services, clock)
    assert services.ledger.acquire_lease(NS, "another-worker", clock.now(), 600)
    with pytest.raises(RunInProgress):
        services.consolidation.consolidate(NS)
    assert len(_unconsolidated(services)) == 3
    clock.advance(seconds=601)
    assert services.consolidation.consolidate(NS).induced["preference"] == 3
    assert services.ledger.acquire_lease(NS, "another-worker", clock.now(), 600)


class _FailingApplyStore:
    """The real store, except that applying a consolidation's changes fails (the process dies there)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.fail = False

    def apply(self, namespace: str, changes: Any) -> None:
        if self.fail:
            raise ConnectionError("store unreachable")
        self._store.apply(namespace, changes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_run_that_fails_applies_nothing_and_is_recorded(tmp_path: Path, clock: ManualClock) -> None:
    base = _services(tmp_path, clock)
    failing = _FailingApplyStore(base.store)
    services = build(base.settings, clock=clock, store=failing, index=base.index, keys=base.access.keys,
                     ledger=base.ledger)  # fmt: skip
    _three_preferences(services, clock)
    failing.fail = True
    with pytest.raises(ConnectionError):
        services.consolidation.consolidate(NS)
    failing.fail = False
    assert len(_unconsolidated(services)) == 3
    [run] = services.ledger.runs(NS)
    assert run.error is not None and "store unreachable" in run.error
    assert services.stats.of(NS).hindsight.runs_failed == 1  # type: ignore[union-attr]
    assert services.consolidation.consolidate(NS).induced["preference"] == 3  # the lease was given back
    base.close()


def test_the_run_cap_defers_clusters_and_keeps_their_episodes_waiting(tmp_path: Path, clock: ManualClock) -> None:
    services = _services(tmp_path, clock, run_max_clusters=1)
    _three_preferences(services, clock)
    first = services.consolidation.consolidate(NS)
    assert (first.clusters, first.clusters_deferred, first.capped_by) == (1, 2, "run clusters")
    assert len(_unconsolidated(services)) == 2
    second = services.consolidation.consolidate(NS)
    third = services.consolidation.consolidate(NS)
    assert (second.clusters, third.clusters, third.clusters_deferred) == (1, 1, 0)
    assert _unconsolidated(services) == []
    services.close()


def test_the_daily_cap_waits_for_the_next_utc_day(tmp_path: Path, clock: ManualClock) -> None:
    services = _services(tmp_path, clock, daily_max_clusters=2)
    _three_preferences(services, clock)
    first = services.consolidation.consolidate(NS)
    assert (first.clusters, first.capped_by) == (2, "daily clusters")
    skipped = services.consolidation.consolidate(NS)
    assert (skipped.clusters, skipped.capped_by) == (0, "daily clusters")
    assert len(services.ledger.runs(NS)) == 1
    clock.set((clock.now() + timedelta(days=1)).replace(hour=0, minute=0, second=1))
    assert services.consolidation.consolidate(NS).clusters == 1
    services.close()


class _TokenSpendingInducer:
    """A model-like inducer: the rules' memories, at 100 tokens a cluster."""

    name = "metered-model"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def induce(self, clusters: Sequence[EvidenceCluster]) -> Induction:
        self.calls.append(len(clusters))
        induction = RuleInducer().induce(clusters)
        induction.tokens = 100 * len(clusters)
        return induction


def test_the_token_cap_stops_a_model_before_it_overspends(tmp_path: Path, clock: ManualClock) -> None:
    inducer = _TokenSpendingInducer()
    services = _services(tmp_path, clock, inducer=inducer, run_max_tokens=250)
    _three_preferences(services, clock)
    result = services.consolidation.consolidate(NS)
    assert result.tokens == 200 and result.tokens <= 250
    assert (result.clusters, result.clusters_deferred, result.capped_by) == (2, 1, "run tokens")
    assert services.stats.of(NS).hindsight.tokens == 200  # type: ignore[union-attr]
    services.close()


def test_a_deadline_defers_what_it_leaves(services: Services, clock: ManualClock) -> None:
    _three_preferences(services, clock)
    result = services.runner.run(_job(clock), seconds_left=lambda: 0.0)
    assert (result.clusters, result.clusters_deferred, result.capped_by) == (0, 3, "time")
    assert len(_unconsolidated(services)) == 3
    assert services.runner.run(_job(clock), seconds_left=lambda: 30.0).clusters == 3


def test_a_targeted_run_consolidates_only_its_episodes(services: Services, clock: ManualClock) -> None:
    services.writer.write(NS, MemoryWrite(content="Bought a new kettle"))
    ids = []
    for n in range(3):
        clock.advance(minutes=5)
        result = services.writer.write(
            NS,
            MemoryWrite(
                content=f"Geocoded batch {n} of 100 addresses",
                event_type="tool_call",
                entities=["geocoder"],
                outcome="HTTP 413 Payload Too Large",
            ),
        )
        ids.append(result.id)
    run = services.runner.run(
        ConsolidationJob(namespace=NS, reason="failure_streak", requested_at=clock.now(), episode_ids=ids)
    )
    assert run.induced["lesson"] == 1 and run.new_episodes == 3
    assert _unconsolidated(services) == ["Bought a new kettle"]


def test_a_failure_streak_over_the_write_path_becomes_a_lesson_without_a_consolidate_call(
    services: Services, clock: ManualClock
) -> None:
    services.consolidation.attach(InlineJobs(services.runner))
    for n in range(3):
        clock.advance(minutes=5)
        services.writer.write(
            NS,
            MemoryWrite(
                content=f"Sent batch {n} of 100 rows to the importer",
                event_type="tool_call",
                entities=["importer"],
                outcome="HTTP 413 Payload Too Large",
            ),
        )
    lessons = services.store.list_memories(NS, MemoryFilter(layers=("semantic",), kinds=("lesson",)))
    assert len(lessons) == 1 and "importer" in lessons[0].content.lower()
    assert services.stats.of(NS).hindsight.last_run_reason == "failure_streak"  # type: ignore[union-attr]
    assert all(isinstance(m, Episode) and m.consolidated for m in services.store.list_memories(
        NS, MemoryFilter(layers=("episodic",))))  # fmt: skip


def test_runs_of_one_namespace_never_touch_another(services: Services, clock: ManualClock) -> None:
    _three_preferences(services, clock)
    services.writer.write("acme:other", MemoryWrite(content="Please reply in Chinese."))
    services.consolidation.consolidate(NS, ConsolidateRequest())
    assert services.ledger.runs("acme:other") == []
    assert services.store.unconsolidated_count("acme:other") == 1
    assert services.stats.of("acme:other").hindsight.runs == 0  # type: ignore[union-attr]


def test_what_finally_worked_restates_the_lesson_instead_of_adding_to_it(
    services: Services, clock: ManualClock
) -> None:
    services.consolidation.attach(InlineJobs(services.runner))
    for n, outcome in ((400, "HTTP 413"), (300, "HTTP 413"), (200, "HTTP 413"), (50, "200 OK")):
        clock.advance(minutes=5)
        services.writer.write(
            NS,
            MemoryWrite(content=f"Sent a batch of {n} rows to the importer", event_type="tool_call",
                        entities=["importer"], outcome=outcome),
        )  # fmt: skip
    [lesson] = services.store.list_memories(NS, MemoryFilter(layers=("semantic",), kinds=("lesson",)))
    assert "50" in lesson.content and "keeps failing" not in lesson.content and ";" in lesson.content
    assert lesson.content.count("importer") == 1
