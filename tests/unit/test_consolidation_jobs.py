"""Consolidation jobs on a queue, without AWS: the message body, the FIFO group and deduplication ids, the worker's
dead-letter policy over the real runner (embedded backend), and the triggers read from the table's stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rearview.adapters.dynamodb import expired_session
from rearview.adapters.sqs_consolidation_jobs import (
    MAX_GROUP_ID_CHARS,
    SqsConsolidationDeadLetters,
    SqsConsolidationJobs,
    deduplication_id,
    message_group_id,
)
from rearview.api.consolidation_lambda import consolidate_handler, consolidation_job_handler
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.changes import IndexChange
from rearview.domain.hindsight_runs import ConsolidationJob, consolidation_job_body, parse_consolidation_job
from rearview.domain.memory import Episode
from rearview.domain.write import MemoryWrite, PoisonMessage
from rearview.service.hindsight.job_worker import ConsolidationJobWorker
from rearview.service.hindsight.stream_triggers import StreamTriggers, episodes_written
from rearview.settings import HindsightSettings, Settings
from support.events import load_event
from support.hindsight_jobs import RecordingJobs

pytestmark = pytest.mark.unit
NS = "acme:u-7"
MAX_RECEIVES = 3


def _job(clock: ManualClock, reason: str = "count", ns: str = NS, **fields: Any) -> ConsolidationJob:
    return ConsolidationJob(namespace=ns, reason=reason, requested_at=clock.now(), **fields)


# --- the body and the FIFO ids --------------------------------------------------------------------------------


def test_the_body_round_trips_and_leaves_out_what_is_unset(clock: ManualClock) -> None:
    job = _job(clock, "failure_streak", episode_ids=["e2", "e1"])
    body = consolidation_job_body(job)
    assert "session_id" not in body
    assert parse_consolidation_job(body) == job


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[]",
        '{"namespace": "acme", "reason": "count"}',
        '{"namespace": "bad namespace!", "reason": "count", "requested_at": "2026-03-10T12:00:00Z"}',
        '{"namespace": "acme", "reason": "whenever", "requested_at": "2026-03-10T12:00:00Z"}',
        '{"namespace": "acme", "reason": "count", "requested_at": "2026-03-10T12:00:00Z", "extra": 1}',
    ],
)
def test_anything_but_a_job_is_poison(body: str) -> None:
    with pytest.raises(PoisonMessage):
        parse_consolidation_job(body)


def test_repeats_of_a_trigger_within_five_minutes_share_a_deduplication_id(clock: ManualClock) -> None:
    clock.set(clock.now().replace(minute=0, second=5))
    first = _job(clock, "count")
    clock.advance(minutes=4)
    assert deduplication_id(_job(clock, "count")) == deduplication_id(first)
    assert deduplication_id(_job(clock, "schedule")) != deduplication_id(first)
    assert deduplication_id(_job(clock, "count", ns="acme:u-8")) != deduplication_id(first)
    clock.advance(minutes=1)
    assert deduplication_id(_job(clock, "count")) != deduplication_id(first)  # the next five minutes


def test_a_failure_streak_is_identified_by_its_episodes_whenever_it_is_sent(clock: ManualClock) -> None:
    first = _job(clock, "failure_streak", episode_ids=["e1", "e2", "e3"])
    clock.advance(minutes=3)
    again = _job(clock, "failure_streak", episode_ids=["e3", "e1", "e2"])
    longer = _job(clock, "failure_streak", episode_ids=["e1", "e2", "e3", "e4"])
    assert deduplication_id(again) == deduplication_id(first) != deduplication_id(longer)
    assert deduplication_id(_job(clock, "failure_streak", ns="acme:u-8", episode_ids=["e1", "e2", "e3"])) != (
        deduplication_id(first)
    )
    assert all(len(deduplication_id(j)) <= 128 for j in (first, longer))


def test_the_message_group_is_the_namespace_or_its_hash_when_too_long() -> None:
    assert message_group_id(NS) == NS
    long_namespace = ":".join(["a" * 64] * 4)
    assert len(message_group_id(long_namespace)) <= MAX_GROUP_ID_CHARS
    assert message_group_id(long_namespace) != message_group_id(long_namespace[:-1] + "b")


@dataclass
class RecordingSqs:
    """The one SQS call the adapters make, recorded."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    def send_message(self, **request: Any) -> dict[str, str]:
        self.calls.append(request)
        return {"MessageId": str(len(self.calls))}


def test_the_adapters_send_fifo_messages(clock: ManualClock) -> None:
    sqs = RecordingSqs()
    job = _job(clock, "session_end", session_id="s1")
    SqsConsolidationJobs("https://sqs/jobs.fifo", client=sqs).send(job)
    SqsConsolidationDeadLetters("https://sqs/dlq.fifo", client=sqs).send("not json", "poison", "")
    SqsConsolidationDeadLetters("https://sqs/dlq.fifo", client=sqs).send(consolidation_job_body(job), "x", "boom")
    sent, poison, parked = sqs.calls
    assert (sent["MessageGroupId"], sent["MessageDeduplicationId"]) == (NS, deduplication_id(job))
    assert parse_consolidation_job(sent["MessageBody"]) == job
    assert poison["MessageGroupId"] == "unparsed" and poison["MessageAttributes"]["error"]["StringValue"] == "-"
    assert parked["MessageGroupId"] == NS and parked["MessageAttributes"]["reason"]["StringValue"] == "x"


# --- the worker's policy ----------------------------------------------------------------------------------------


@dataclass
class FakeDeadLetters:
    letters: list[tuple[str, str, str]] = field(default_factory=list)

    def send(self, body: str, reason: str, error: str) -> None:
        self.letters.append((body, reason, error))


@pytest.fixture
def services(tmp_path: Path, clock: ManualClock) -> Iterator[Services]:
    svc = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), clock=clock)
    yield svc
    svc.close()


@pytest.fixture
def dead_letters() -> FakeDeadLetters:
    return FakeDeadLetters()


@pytest.fixture
def worker(services: Services, dead_letters: FakeDeadLetters) -> ConsolidationJobWorker:
    return ConsolidationJobWorker(services.runner, dead_letters, max_receive_count=MAX_RECEIVES)


def _preferences(services: Services, clock: ManualClock, ns: str = NS) -> None:
    for day in range(3):
        clock.advance(days=1)
        services.writer.write(ns, MemoryWrite(content="Please reply in Chinese.", session_id=f"s{day}"))


def test_a_job_runs_and_is_recorded_with_its_reason(
    services: Services, worker: ConsolidationJobWorker, clock: ManualClock
) -> None:
    _preferences(services, clock)
    outcome = worker.process(consolidation_job_body(_job(clock, "count")), 1)
    assert outcome.status == "ran" and outcome.namespace == NS
    assert outcome.result is not None and outcome.result.induced["preference"] == 1
    assert [run.reason for run in services.ledger.runs(NS)] == ["count"]


def test_poison_goes_straight_to_the_dead_letters(worker: ConsolidationJobWorker, dead_letters: Any) -> None:
    outcome = worker.process("{not json", 1)
    assert (outcome.status, outcome.reason) == ("dead_lettered", "poison")
    [(body, reason, error)] = dead_letters.letters
    assert (body, reason) == ("{not json", "poison") and error


def test_a_held_lease_is_retried_and_never_dead_lettered(
    services: Services, worker: ConsolidationJobWorker, dead_letters: FakeDeadLetters, clock: ManualClock
) -> None:
    _preferences(services, clock)
    assert services.ledger.acquire_lease(NS, "a manual run", clock.now(), 600)
    body = consolidation_job_body(_job(clock))
    for receive in range(1, MAX_RECEIVES):
        with pytest.raises(Exception, match="in progress"):
            worker.process(body, receive)
    outcome = worker.process(body, MAX_RECEIVES)
    assert outcome.status == "busy" and dead_letters.letters == []
    assert services.ledger.runs(NS) == []  # refused before it started: nothing to record


def test_an_extraction_still_refused_at_its_last_receive_waits_in_the_dead_letters(
    services: Services, worker: ConsolidationJobWorker, dead_letters: FakeDeadLetters, clock: ManualClock
) -> None:
    assert services.ledger.acquire_lease(NS, "a manual run", clock.now(), 600)
    body = consolidation_job_body(_job(clock, "extract", episode_ids=["t1"]))
    outcome = worker.process(body, MAX_RECEIVES)
    assert (outcome.status, outcome.reason) == ("dead_lettered", "retries_exhausted")
    [(letter, reason, error)] = dead_letters.letters
    assert (letter, reason) == (body, "retries_exhausted") and "in progress" in error


class _FailingApplyStore:
    """The real store, except that applying changes fails (the store is down)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.fail = False

    def apply(self, namespace: str, changes: Any) -> None:
        if self.fail:
            raise ConnectionError("store unreachable")
        self._store.apply(namespace, changes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_failing_run_is_retried_until_its_last_receive_then_dead_lettered(
    services: Services, dead_letters: FakeDeadLetters, clock: ManualClock
) -> None:
    failing = _FailingApplyStore(services.store)
    flaky = build(services.settings, clock=clock, store=failing, index=services.index, keys=services.access.keys,
                  ledger=services.ledger)  # fmt: skip
    worker = ConsolidationJobWorker(flaky.runner, dead_letters, max_receive_count=MAX_RECEIVES)
    _preferences(flaky, clock)
    failing.fail = True
    body = consolidation_job_body(_job(clock))
    for receive in range(1, MAX_RECEIVES):
        with pytest.raises(ConnectionError):
            worker.process(body, receive)
    outcome = worker.process(body, MAX_RECEIVES)
    assert (outcome.status, outcome.reason) == ("dead_lettered", "retries_exhausted")
    [(parked, reason, error)] = dead_letters.letters
    assert (parked, reason) == (body, "retries_exhausted") and "store unreachable" in error
    assert [run.error is not None for run in services.ledger.runs(NS)] == [True] * MAX_RECEIVES


def test_a_deadline_already_passed_applies_nothing_and_leaves_the_episodes_for_the_next_job(
    services: Services, worker: ConsolidationJobWorker, clock: ManualClock
) -> None:
    _preferences(services, clock)
    waiting = services.store.unconsolidated_count(NS)
    outcome = worker.process(consolidation_job_body(_job(clock)), 1, seconds_left=lambda: 0.0)
    assert outcome.status == "ran" and outcome.result is not None
    assert (outcome.result.clusters, outcome.result.clusters_deferred, outcome.result.capped_by) == (0, 1, "time")
    assert services.store.unconsolidated_count(NS) == waiting > 0
    assert worker.process(consolidation_job_body(_job(clock)), 1, seconds_left=lambda: 60.0).status == "ran"
    assert services.store.unconsolidated_count(NS) == 0


# --- the triggers read from the stream ----------------------------------------------------------------------------


def _episode(clock: ManualClock, memory_id: str = "e1", **fields: Any) -> Episode:
    return Episode(id=memory_id, namespace=NS, content="Geocoded the list", occurred_at=clock.now(),
                   created_at=clock.now(), **fields)  # fmt: skip


def test_inserts_and_merges_are_writes_other_updates_are_not(clock: ManualClock) -> None:
    inserted = _episode(clock, "e1")
    merged_before, merged = _episode(clock, "e2"), _episode(clock, "e2", confirmations=2, version=2)
    marked_before, marked = _episode(clock, "e3"), _episode(clock, "e3", consolidated=True, version=2)
    accessed_before, accessed = _episode(clock, "e4"), _episode(clock, "e4", access_count=3)
    changes = [
        IndexChange(NS, "episodic", "e1", memory=inserted),
        IndexChange(NS, "episodic", "e2", memory=merged, previous=merged_before),
        IndexChange(NS, "episodic", "e3", memory=marked, previous=marked_before),
        IndexChange(NS, "episodic", "e4", memory=accessed, previous=accessed_before),
        IndexChange(NS, "episodic", "e5"),  # a delete
        IndexChange("acme:u-8", "episodic", "e6", memory=_episode(clock, "e6")),
    ]
    written = episodes_written(changes)
    assert {ns: [e.id for e in eps] for ns, eps in written.items()} == {NS: ["e1", "e2"], "acme:u-8": ["e6"]}


def test_a_working_item_removed_by_ttl_is_an_expired_session() -> None:
    [record] = load_event("ttl_expiry_working", kind="dynamodb")["Records"]
    assert expired_session(record) == ("acme:u-42", "s-7")
    by_caller = {**record, "userIdentity": None}
    assert expired_session(by_caller) is None
    without_image = {**record, "dynamodb": {**record["dynamodb"], "OldImage": None}}
    assert expired_session(without_image) == ("acme:u-42", "s-7")
    [episode_expired] = load_event("remove_episode", kind="dynamodb")["Records"]
    assert expired_session({**episode_expired, "userIdentity": record["userIdentity"]}) is None
    [inserted] = load_event("insert_episode", kind="dynamodb")["Records"]
    assert expired_session(inserted) is None


class _ExplodingTriggers:
    """The real triggers, except that evaluating one namespace fails."""

    def __init__(self, triggers: Any, failing: str) -> None:
        self._triggers = triggers
        self._failing = failing

    def after_write(self, namespace: str, written: Any) -> list[ConsolidationJob]:
        if namespace == self._failing:
            raise ConnectionError("store unreachable")
        result: list[ConsolidationJob] = self._triggers.after_write(namespace, written)
        return result

    def session_ended(self, namespace: str, session_id: str) -> list[ConsolidationJob]:
        result: list[ConsolidationJob] = self._triggers.session_ended(namespace, session_id)
        return result


def test_stream_triggers_send_what_is_due_and_a_failure_stays_with_its_namespace(
    tmp_path: Path, clock: ManualClock
) -> None:
    settings = Settings(data_dir=tmp_path / "d", embedder="hashing", hindsight=HindsightSettings(count_trigger=1))
    services = build(settings, clock=clock)
    jobs = RecordingJobs()
    changes = []
    for ns in ("acme:a", "acme:b"):
        result = services.writer.write(ns, MemoryWrite(content="Booked the ferry to Naxos for June"))
        stored = services.store.get(ns, result.id)
        changes.append(IndexChange(ns, "episodic", result.id, memory=stored))
    triggers = StreamTriggers(_ExplodingTriggers(services.triggers, "acme:a"), jobs)  # type: ignore[arg-type]
    expired = [("acme:a", "s1"), ("acme:a", "s1"), ("acme:b", "s2")]

    report = triggers.evaluate(changes, expired)

    assert (report.jobs, report.failures) == (3, 1)
    assert [(j.namespace, j.reason, j.session_id) for j in jobs.jobs] == [
        ("acme:b", "count", None),
        ("acme:a", "session_end", "s1"),
        ("acme:b", "session_end", "s2"),
    ]
    services.close()


# --- the Lambda handlers over the sample events ---------------------------------------------------------------


def _runtime(services: Services, dead_letters: FakeDeadLetters, name: str = "consolidation_worker") -> Any:
    from rearview.api.lambda_runtime import FunctionRuntime

    settings = services.settings.model_copy(
        update={"aws": services.settings.aws.model_copy(update={"consolidation_max_receive_count": MAX_RECEIVES})}
    )
    return FunctionRuntime(name, settings=settings, build=lambda _: services, consolidation_dead_letters=dead_letters)


def test_the_worker_handler_runs_the_sample_job_with_the_invocations_time_left(
    services: Services, dead_letters: FakeDeadLetters
) -> None:
    from support.aws_stack import FakeLambdaContext

    handler = consolidation_job_handler(_runtime(services, dead_letters))
    event = load_event("consolidation_job", kind="sqs")

    assert handler(event, FakeLambdaContext(remaining_millis=120_000)) == {"batchItemFailures": []}

    [run] = services.ledger.runs("acme:u-42")
    assert run.reason == "failure_streak" and run.error is None and dead_letters.letters == []


def test_a_job_to_retry_fails_the_rest_of_its_fifo_batch_in_order(
    services: Services, dead_letters: FakeDeadLetters, clock: ManualClock
) -> None:
    from support.aws_stack import FakeLambdaContext

    handler = consolidation_job_handler(_runtime(services, dead_letters))
    [sample] = load_event("consolidation_job", kind="sqs")["Records"]
    records = [
        {**sample, "messageId": f"m{n}", "body": consolidation_job_body(_job(clock, ns=ns))}
        for n, ns in enumerate([NS, "acme:u-8", NS])
    ]
    assert services.ledger.acquire_lease("acme:u-8", "a manual run", clock.now(), 600)

    result = handler({"Records": records}, FakeLambdaContext())

    # The first ran; the second's namespace is busy: it and everything after it are retried, in their order.
    assert result == {"batchItemFailures": [{"itemIdentifier": "m1"}, {"itemIdentifier": "m2"}]}
    assert [run.reason for run in services.ledger.runs(NS)] == ["count"]
    assert dead_letters.letters == []


def test_the_schedule_enqueues_what_is_due_and_http_still_runs_now(
    tmp_path: Path, clock: ManualClock, dead_letters: FakeDeadLetters
) -> None:
    from support.aws_stack import FakeLambdaContext

    jobs = RecordingJobs()
    services = build(Settings(data_dir=tmp_path / "d", embedder="hashing"), clock=clock, jobs=jobs)
    _preferences(services, clock)
    _preferences(services, clock, ns="acme:u-8")
    handler = consolidate_handler(_runtime(services, dead_letters, "consolidate"))

    report = handler(load_event("consolidate_schedule", kind="eventbridge"), FakeLambdaContext())

    assert report == {"enqueued": 2, "failed": {}}
    assert sorted((j.namespace, j.reason) for j in jobs.jobs) == [(NS, "schedule"), ("acme:u-8", "schedule")]
    assert services.ledger.runs(NS) == []  # enqueued, not run
    response = handler(load_event("consolidate", path=f"/v1/namespaces/{NS}/consolidate"), FakeLambdaContext())
    assert response["statusCode"] == 200 and json.loads(response["body"])["reason"] == "manual"
    assert len(jobs.jobs) == 2
    services.close()


class _RefusingJobs:
    def send(self, job: ConsolidationJob) -> None:
        if job.namespace == NS:
            raise ConnectionError("queue unreachable")


def test_a_schedule_whose_send_fails_enqueues_the_others_then_fails_for_eventbridge_to_retry(
    tmp_path: Path, clock: ManualClock, dead_letters: FakeDeadLetters
) -> None:
    from rearview.api.consolidation_lambda import ScheduleEnqueueFailed
    from support.aws_stack import FakeLambdaContext

    services = build(Settings(data_dir=tmp_path / "d", embedder="hashing"), clock=clock, jobs=_RefusingJobs())
    _preferences(services, clock)
    _preferences(services, clock, ns="acme:u-8")
    handler = consolidate_handler(_runtime(services, dead_letters, "consolidate"))

    with pytest.raises(ScheduleEnqueueFailed, match="1 scheduled jobs"):
        handler(load_event("consolidate_schedule", kind="eventbridge"), FakeLambdaContext())
    services.close()
