"""The local consolidation worker: jobs folded per namespace, a bounded queue, a busy namespace tried again later,
a failing run that does not stop the others, a graceful stop, and the schedule's sweeps. The clock is injected
and moved by the tests; nothing sleeps (the tests wait on the worker's own condition, with a timeout)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from rearview.bootstrap import build, local_consolidation
from rearview.clock import ManualClock
from rearview.domain.hindsight_runs import ConsolidationJob, TriggerReason
from rearview.domain.memory import Fact
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.service.hindsight.local_worker import (
    MAX_TARGETED_EPISODES,
    RETRY_DELAYS,
    LocalConsolidationWorker,
    WorkerCounts,
    fold,
)
from rearview.settings import HindsightSettings, Settings
from support.hindsight_jobs import FakeRunner, NoSchedule

pytestmark = pytest.mark.unit
NS = "acme:u-7"
# Bound on waiting for the worker's thread; never reached when the code is right.
WAIT = 10.0


def job(
    clock: ManualClock, reason: TriggerReason, *episodes: str, ns: str = NS, minutes: float = 0
) -> ConsolidationJob:
    at = clock.now() + timedelta(minutes=minutes)
    return ConsolidationJob(namespace=ns, reason=reason, requested_at=at, episode_ids=list(episodes))


def fake_worker(clock: ManualClock, runner: FakeRunner | None = None, **options: Any) -> LocalConsolidationWorker:
    settings = HindsightSettings(schedule_hours=0)
    return LocalConsolidationWorker(runner or FakeRunner(), NoSchedule(), clock, settings, **options)


@pytest.fixture
def stopped() -> Iterator[list[LocalConsolidationWorker]]:
    """Workers a test started, stopped at its end whatever happened."""
    workers: list[LocalConsolidationWorker] = []
    yield workers
    for worker in workers:
        worker.stop(WAIT)


def started(worker: LocalConsolidationWorker, stopped: list[LocalConsolidationWorker]) -> LocalConsolidationWorker:
    stopped.append(worker)
    return worker.start()


# --- folding and the bound (a worker not started yet: its queue stands still) --------------------------------


def test_jobs_for_one_namespace_fold_into_one(clock: ManualClock) -> None:
    worker = fake_worker(clock)
    worker.send(job(clock, "count", minutes=2))
    worker.send(job(clock, "failure_streak", "e1", "e2", minutes=1))
    worker.send(job(clock, "session_end", ns="acme:other"))

    [held, other] = worker.pending()
    assert (held.reason, held.episode_ids, held.requested_at) == (
        "failure_streak",
        [],
        clock.now() + timedelta(minutes=1),
    )
    assert other.namespace == "acme:other"
    assert worker.counts() == WorkerCounts(sent=3, folded=1, waiting=2)


def test_targeted_jobs_unite_their_episodes_and_an_untargeted_one_absorbs_them(clock: ManualClock) -> None:
    streak = fold(job(clock, "failure_streak", "e1", "e2"), job(clock, "failure_streak", "e2", "e3"))
    assert streak.episode_ids == ["e1", "e2", "e3"]
    assert fold(streak, job(clock, "schedule")).episode_ids == []
    assert fold(streak, job(clock, "schedule")).reason == "failure_streak"
    many = [f"e{n}" for n in range(MAX_TARGETED_EPISODES)]
    assert fold(job(clock, "failure_streak", *many), job(clock, "failure_streak", "x")).episode_ids == []


@pytest.mark.parametrize(
    ("first", "second", "kept"),
    [
        ("manual", "schedule", "schedule"),
        ("count", "schedule", "count"),
        ("count", "session_end", "session_end"),
        ("failure_streak", "session_end", "failure_streak"),
    ],
)
def test_a_fold_keeps_the_strongest_reason(
    clock: ManualClock, first: TriggerReason, second: TriggerReason, kept: str
) -> None:
    assert fold(job(clock, first), job(clock, second)).reason == kept
    assert fold(job(clock, second), job(clock, first)).reason == kept


def test_a_session_end_folded_into_a_count_keeps_its_session(clock: ManualClock) -> None:
    ended = job(clock, "session_end").model_copy(update={"session_id": "s-4"})
    assert fold(job(clock, "count"), ended).session_id == "s-4"


def test_a_full_queue_drops_a_new_namespace_with_a_warning_but_still_folds(
    clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    worker = fake_worker(clock, capacity=2)
    worker.send(job(clock, "count", ns="acme:a"))
    worker.send(job(clock, "count", ns="acme:b"))
    with caplog.at_level(logging.WARNING):
        worker.send(job(clock, "count", ns="acme:c"))
    worker.send(job(clock, "failure_streak", "e1", ns="acme:a"))

    assert [j.namespace for j in worker.pending()] == ["acme:a", "acme:b"]
    assert worker.counts() == WorkerCounts(sent=4, folded=1, dropped=1, waiting=2)
    assert any("queue full" in r.getMessage() and "acme:c" in r.getMessage() for r in caplog.records)


# --- running --------------------------------------------------------------------------------------------------


def test_jobs_run_oldest_first_and_a_failing_one_does_not_stop_the_others(
    clock: ManualClock, stopped: list[LocalConsolidationWorker], caplog: pytest.LogCaptureFixture
) -> None:
    runner = FakeRunner(failing={"acme:broken"})
    worker = fake_worker(clock, runner)
    for ns in ("acme:a", "acme:broken", "acme:b"):
        worker.send(job(clock, "count", ns=ns))
    started(worker, stopped)

    assert worker.drain(WAIT)
    assert [j.namespace for j in runner.ran] == ["acme:a", "acme:b"]
    assert worker.counts() == WorkerCounts(sent=3, ran=2, failed=1)
    assert any(r.exc_info and "acme:broken" in r.getMessage() for r in caplog.records)


def test_a_busy_namespace_is_tried_again_after_the_delay(
    tmp_path: Path, clock: ManualClock, stopped: list[LocalConsolidationWorker]
) -> None:
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), clock=clock)
    worker = LocalConsolidationWorker(services.runner, services.triggers, clock, HindsightSettings(schedule_hours=0))
    services.writer.write(NS, MemoryWrite(content="Please reply in Chinese."))
    assert services.ledger.acquire_lease(NS, "another process", clock.now(), 600)
    worker.send(job(clock, "count"))
    started(worker, stopped)

    assert worker.wait_for(lambda c: c.retried == 1 and not c.busy, WAIT)
    assert [j.namespace for j in worker.pending()] == [NS] and services.ledger.runs(NS) == []
    worker.send(job(clock, "failure_streak", "e9"))  # folded into the job that waits to be tried again
    services.ledger.release_lease(NS, "another process")
    clock.advance(seconds=RETRY_DELAYS[0].total_seconds())
    worker.wake()

    assert worker.drain(WAIT)
    [run] = services.ledger.runs(NS)
    assert run.reason == "failure_streak" and worker.counts().ran == 1
    services.close()


def test_a_namespace_busy_on_every_try_is_given_up(
    clock: ManualClock, stopped: list[LocalConsolidationWorker], caplog: pytest.LogCaptureFixture
) -> None:
    from rearview.errors import RunInProgress

    class AlwaysBusy(FakeRunner):
        def run(self, job: ConsolidationJob, req: Any = None, *, seconds_left: Any = None) -> Any:
            raise RunInProgress("busy")

    worker = started(fake_worker(clock, AlwaysBusy()), stopped)
    worker.send(job(clock, "count"))
    for tries, delay in enumerate(RETRY_DELAYS, start=1):

        def retried(c: WorkerCounts, n: int = tries) -> bool:
            return c.retried == n and not c.busy

        assert worker.wait_for(retried, WAIT)
        clock.advance(seconds=delay.total_seconds())
        worker.wake()

    assert worker.drain(WAIT)
    assert worker.counts() == WorkerCounts(sent=1, failed=1, retried=len(RETRY_DELAYS))
    assert any("gave up" in r.getMessage() for r in caplog.records)


def test_a_failure_streak_written_with_the_worker_attached_becomes_a_lesson(tmp_path: Path, clock: ManualClock) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", hindsight=HindsightSettings(schedule_hours=0))
    services = build(settings, clock=clock)
    with local_consolidation(services) as worker:
        assert worker is not None and services.consolidation.jobs is worker
        for n in range(3):
            clock.advance(minutes=5)
            services.writer.write(NS, MemoryWrite(content=f"Sent batch {n} of 100 rows to the importer",
                                                  event_type="tool_call", entities=["importer"],
                                                  outcome="HTTP 413 Payload Too Large"))  # fmt: skip
        assert worker.drain(WAIT)
    assert services.consolidation.jobs is None
    [lesson] = services.store.list_memories(NS, MemoryFilter(layers=("semantic",), kinds=("lesson",)))
    assert isinstance(lesson, Fact) and "importer" in lesson.content.lower()
    assert services.stats.of(NS).hindsight.last_run_reason == "failure_streak"
    services.close()


def test_the_worker_setting_off_attaches_nothing(tmp_path: Path, clock: ManualClock) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", hindsight=HindsightSettings(worker=False))
    services = build(settings, clock=clock)
    with local_consolidation(services) as worker:
        assert worker is None and services.consolidation.jobs is None
    services.close()


def test_the_serve_banner_says_whether_consolidation_runs_by_itself() -> None:
    from rearview.cli.serve import hindsight_banner

    assert hindsight_banner(HindsightSettings(), worker=True) == (
        "hindsight: consolidation runs by itself on 3 failures in a row, 50 new episodes, session end, every 24 h"
    )
    assert hindsight_banner(HindsightSettings(count_trigger=0, schedule_hours=0), worker=True).endswith(
        "on 3 failures in a row, session end"
    )
    assert hindsight_banner(HindsightSettings(worker=False), worker=False).startswith("hindsight: worker off")


# --- stopping ---------------------------------------------------------------------------------------------------


def test_stop_lets_the_running_job_wind_down_and_takes_no_other(
    clock: ManualClock, stopped: list[LocalConsolidationWorker]
) -> None:
    runner = FakeRunner(gate=threading.Event())
    worker = started(fake_worker(clock, runner), stopped)
    worker.send(job(clock, "count", ns="acme:a"))
    assert runner.entered.wait(WAIT)
    worker.send(job(clock, "count", ns="acme:b"))
    result: list[bool] = []
    stopper = threading.Thread(target=lambda: result.append(worker.stop(WAIT)))
    stopper.start()
    assert worker.wait_for(lambda c: c.waiting == 0, WAIT)  # the stop began: acme:b will not run

    assert runner.gate is not None
    runner.gate.set()
    stopper.join(WAIT)
    assert result == [True]
    assert [j.namespace for j in runner.ran] == ["acme:a"]
    # The running job was told it had no time left: it starts no further cluster and applies what it has.
    assert runner.seconds_left_at_end == [0.0]
    worker.send(job(clock, "count", ns="acme:c"))
    assert worker.counts() == WorkerCounts(sent=3, ran=1, dropped=2)


def test_a_run_still_going_at_the_timeout_is_left_behind(clock: ManualClock) -> None:
    runner = FakeRunner(gate=threading.Event())
    worker = fake_worker(clock, runner).start()
    worker.send(job(clock, "count"))
    assert runner.entered.wait(WAIT)

    assert worker.stop(timeout=0.01) is False
    assert runner.gate is not None
    runner.gate.set()
    assert worker.stop(WAIT) is True


def test_a_run_is_told_to_stop_starting_clusters_before_its_lease_ends(
    clock: ManualClock, stopped: list[LocalConsolidationWorker]
) -> None:
    runner = FakeRunner(gate=threading.Event())
    worker = started(fake_worker(clock, runner, lease_seconds=100), stopped)
    worker.send(job(clock, "count"))
    assert runner.entered.wait(WAIT)
    clock.advance(seconds=60)
    assert runner.gate is not None
    runner.gate.set()
    assert worker.drain(WAIT)
    assert runner.seconds_left_at_end == [pytest.approx(30.0)]  # 90 % of the 100 s lease, 60 s of it gone


# --- the schedule -----------------------------------------------------------------------------------------------


def test_the_schedule_is_caught_up_at_start_and_swept_again_later(
    tmp_path: Path, clock: ManualClock, stopped: list[LocalConsolidationWorker]
) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", hindsight=HindsightSettings(schedule_hours=24))
    services = build(settings, clock=clock)
    services.writer.write("acme:a", MemoryWrite(content="Ordered new running shoes"))
    services.writer.write("acme:b", MemoryWrite(content="Booked a dentist appointment"))
    worker = started(LocalConsolidationWorker(services.runner, services.triggers, clock, settings.hindsight), stopped)

    assert worker.drain(WAIT)
    assert {ns: [r.reason for r in services.ledger.runs(ns)] for ns in ("acme:a", "acme:b")} == {
        "acme:a": ["schedule"],
        "acme:b": ["schedule"],
    }
    services.writer.write("acme:a", MemoryWrite(content="Returned the running shoes"))
    clock.advance(hours=1)  # a sweep comes, but acme:a ran an hour ago
    worker.wake()
    assert worker.drain(WAIT)
    assert len(services.ledger.runs("acme:a")) == 1
    clock.advance(hours=23)
    worker.wake()
    assert worker.drain(WAIT)
    assert [r.reason for r in services.ledger.runs("acme:a")] == ["schedule", "schedule"]
    assert len(services.ledger.runs("acme:b")) == 1  # nothing new there
    services.close()


def test_no_schedule_means_no_sweep(
    tmp_path: Path, clock: ManualClock, stopped: list[LocalConsolidationWorker]
) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", hindsight=HindsightSettings(schedule_hours=0))
    services = build(settings, clock=clock)
    services.writer.write("acme:a", MemoryWrite(content="Ordered new running shoes"))
    worker = started(LocalConsolidationWorker(services.runner, services.triggers, clock, settings.hindsight), stopped)
    assert worker.drain(WAIT)
    assert services.ledger.runs("acme:a") == [] and worker.counts().sent == 0
    services.close()
