"""Hindsight triggers: what makes a consolidation run due, through the real write path on the embedded backend."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.write import MemoryWrite
from rearview.settings import HindsightSettings, Settings
from support.hindsight_jobs import RecordingJobs

pytestmark = pytest.mark.unit
NS = "acme:u-1"


@pytest.fixture
def jobs() -> RecordingJobs:
    return RecordingJobs()


def _services(tmp_path: Path, clock: ManualClock, jobs: RecordingJobs, **hindsight: object) -> Services:
    settings = Settings(
        data_dir=tmp_path / "data",
        embedder="hashing",
        hindsight=HindsightSettings(**hindsight),
    )
    return build(settings, clock=clock, jobs=jobs)


@pytest.fixture
def services(tmp_path: Path, clock: ManualClock, jobs: RecordingJobs) -> Iterator[Services]:
    svc = _services(tmp_path, clock, jobs, count_trigger=0)
    yield svc
    svc.close()


def call(
    services: Services, clock: ManualClock, text: str, status: str, *, tool: str = "geocoder", ns: str = NS
) -> str:
    clock.advance(minutes=5)
    result = services.writer.write(
        ns,
        MemoryWrite(
            content=text,
            event_type="tool_call",
            entities=[tool],
            outcome="HTTP 413" if status == "failure" else "ok",
            outcome_status=status,
            session_id="s1",
        ),
    )
    return result.merged_into or result.id


def test_three_failures_in_a_row_of_one_tool_send_one_targeted_job(
    services: Services, clock: ManualClock, jobs: RecordingJobs
) -> None:
    ids = [call(services, clock, f"Geocoded batch {n} of 100 addresses", "failure") for n in range(2)]
    assert jobs.jobs == []
    ids.append(call(services, clock, "Geocoded batch 3 of 100 addresses", "failure"))
    [job] = jobs.jobs
    assert job.reason == "failure_streak" and job.namespace == NS
    assert sorted(job.episode_ids) == sorted(ids)


def test_a_success_between_failures_breaks_the_streak(
    services: Services, clock: ManualClock, jobs: RecordingJobs
) -> None:
    call(services, clock, "Uploaded the report to the archive bucket", "failure", tool="archive")
    call(services, clock, "Uploaded the invoices to the archive bucket", "success", tool="archive")
    call(services, clock, "Uploaded the photos to the archive bucket", "failure", tool="archive")
    call(services, clock, "Uploaded the contracts to the archive bucket", "failure", tool="archive")
    assert "failure_streak" not in jobs.reasons()


def test_failures_of_other_subjects_do_not_add_up(services: Services, clock: ManualClock, jobs: RecordingJobs) -> None:
    call(services, clock, "Called the weather service for Oslo", "failure", tool="weather")
    call(services, clock, "Called the maps service for Bergen", "failure", tool="maps")
    call(services, clock, "Called the weather service for Tromso", "failure", tool="weather")
    assert jobs.jobs == []


def test_a_streak_that_goes_on_sends_a_job_every_streak_length(
    services: Services, clock: ManualClock, jobs: RecordingJobs
) -> None:
    for n in range(7):
        call(services, clock, f"Exported spreadsheet number {n} to the ledger tool", "failure", tool="ledger")
    assert jobs.reasons() == ["failure_streak", "failure_streak"]
    assert [len(j.episode_ids) for j in jobs.jobs] == [3, 6]


def test_a_success_after_failures_sends_a_job_with_what_worked(
    services: Services, clock: ManualClock, jobs: RecordingJobs
) -> None:
    failed = [call(services, clock, f"Sent batch {n} of 100 rows to the importer", "failure", tool="importer")
              for n in range(2)]  # fmt: skip
    worked = call(services, clock, "Sent a batch of 50 rows to the importer", "success", tool="importer")
    [job] = jobs.jobs
    assert job.reason == "failure_streak" and set(job.episode_ids) == {*failed, worked}


def test_repeats_merged_into_one_episode_count_as_a_streak(
    services: Services, clock: ManualClock, jobs: RecordingJobs
) -> None:
    ids = {call(services, clock, "Geocoding the customer list failed with HTTP 413", "failure") for _ in range(3)}
    assert len(ids) == 1
    [job] = jobs.jobs
    assert job.reason == "failure_streak" and job.episode_ids == list(ids)


def test_streaks_are_counted_per_namespace(services: Services, clock: ManualClock, jobs: RecordingJobs) -> None:
    call(services, clock, "Geocoded batch 1 of 100 addresses", "failure", ns="acme:u-1")
    call(services, clock, "Geocoded batch 2 of 100 addresses", "failure", ns="acme:u-2")
    call(services, clock, "Geocoded batch 3 of 100 addresses", "failure", ns="acme:u-1")
    assert jobs.jobs == []


def test_count_trigger_fires_when_enough_episodes_wait(tmp_path: Path, clock: ManualClock, jobs: RecordingJobs) -> None:
    services = _services(tmp_path, clock, jobs, count_trigger=4, failure_streak=0)
    texts = ["Booked a table at Noma", "Paid the electricity bill", "Met Sara for coffee", "Renewed the passport"]
    for n, text in enumerate(texts):
        clock.advance(minutes=1)
        services.writer.write(NS, MemoryWrite(content=text, session_id="s"))
        assert jobs.reasons() == ([] if n < 3 else ["count"])
    services.consolidation.consolidate(NS)
    clock.advance(minutes=1)
    services.writer.write(NS, MemoryWrite(content="Watered the garden plants", session_id="s"))
    assert jobs.reasons() == ["count"]
    services.close()


def test_triggers_set_to_zero_send_nothing(tmp_path: Path, clock: ManualClock, jobs: RecordingJobs) -> None:
    services = _services(tmp_path, clock, jobs, count_trigger=0, failure_streak=0, session_end=False)
    for n in range(4):
        call(services, clock, f"Geocoded batch {n} of 100 addresses", "failure")
    assert services.working.end_session(NS, "s1").consolidation_job_sent is False
    assert jobs.jobs == []
    services.close()


def test_ending_a_session_clears_it_and_sends_a_job(services: Services, jobs: RecordingJobs) -> None:
    from rearview.domain.working import WorkingWrite

    services.working.put(NS, "s9", "draft", WorkingWrite(value={"step": 2}))
    ended = services.working.end_session(NS, "s9")
    assert (ended.cleared, ended.consolidation_job_sent) == (1, True)
    [job] = jobs.jobs
    assert (job.reason, job.session_id, job.namespace) == ("session_end", "s9", NS)
    assert services.working.get(NS, "s9").entries == {}


def test_schedule_is_due_for_namespaces_with_a_backlog_and_no_recent_run(
    services: Services, clock: ManualClock
) -> None:
    services.writer.write("acme:a", MemoryWrite(content="Ordered new running shoes"))
    services.writer.write("acme:b", MemoryWrite(content="Booked a dentist appointment"))
    assert sorted(j.namespace for j in services.triggers.due_by_schedule()) == ["acme:a", "acme:b"]
    services.consolidation.consolidate("acme:a")
    services.writer.write("acme:a", MemoryWrite(content="Returned the running shoes"))
    assert [j.namespace for j in services.triggers.due_by_schedule()] == ["acme:b"]
    clock.advance(hours=24)
    assert sorted(j.namespace for j in services.triggers.due_by_schedule()) == ["acme:a", "acme:b"]


class _BrokenJobs:
    def send(self, job: object) -> None:
        raise ConnectionError("queue unreachable")


def test_a_job_that_cannot_be_sent_never_fails_the_session_end(services: Services) -> None:
    from rearview.domain.working import WorkingWrite

    services.consolidation.attach(_BrokenJobs())
    services.working.put(NS, "s9", "draft", WorkingWrite(value={"step": 2}))
    ended = services.working.end_session(NS, "s9")
    assert (ended.cleared, ended.consolidation_job_sent) == (1, False)


def test_no_jobs_sink_means_no_trigger_reads(tmp_path: Path, clock: ManualClock) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing")
    services = build(settings, clock=clock)
    assert services.consolidation.jobs is None
    for n in range(3):
        call(services, clock, f"Geocoded batch {n} of 100 addresses", "failure")
    services.close()


def test_a_failing_trigger_never_fails_the_write(tmp_path: Path, clock: ManualClock) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing")
    services = build(settings, clock=clock, jobs=_BrokenJobs())
    ids = [call(services, clock, f"Geocoded batch {n} of 100 addresses", "failure") for n in range(3)]
    assert len(services.store.get_many(NS, ids)) == 3
    services.close()


def test_next_trigger_says_how_far_the_count_and_the_schedule_are(
    tmp_path: Path, clock: ManualClock, jobs: RecordingJobs
) -> None:
    services = _services(tmp_path, clock, jobs, count_trigger=10, schedule_hours=24)
    services.writer.write(NS, MemoryWrite(content="Ordered new running shoes"))
    services.consolidation.consolidate(NS)
    clock.advance(hours=1)
    services.writer.write(NS, MemoryWrite(content="Returned the running shoes"))
    hindsight = services.stats.of(NS).hindsight
    assert hindsight is not None and hindsight.unconsolidated == 1
    assert hindsight.next_trigger["count_episodes_needed"] == 9
    assert hindsight.next_trigger["schedule_at"] == (clock.now() + timedelta(hours=23)).isoformat()
    services.close()


def test_the_schedule_skips_a_namespace_whose_day_is_spent(
    tmp_path: Path, clock: ManualClock, jobs: RecordingJobs
) -> None:
    services = _services(tmp_path, clock, jobs, daily_max_clusters=1, schedule_hours=1)
    clock.set(clock.now().replace(hour=1))
    for day in range(3):
        clock.advance(minutes=10)
        for text in ("Please reply in Chinese.", "Keep your answers short."):
            services.writer.write(NS, MemoryWrite(content=text, session_id=f"s{day}"))
    assert services.consolidation.consolidate(NS).capped_by == "daily clusters"
    clock.advance(hours=2)
    assert services.store.unconsolidated_count(NS) > 0 and services.triggers.due_by_schedule() == []
    clock.set((clock.now() + timedelta(days=1)).replace(hour=0, minute=5))
    assert [j.namespace for j in services.triggers.due_by_schedule()] == [NS]
    services.close()
