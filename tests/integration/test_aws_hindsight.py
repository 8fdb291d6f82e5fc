"""Hindsight II on AWS, end to end on moto (DynamoDB with its stream, SQS FIFO queues with their DLQs) and the
OpenSearch test double, through the real function handlers:

HTTP write (202) -> write queue -> write_worker (stores; its triggers send a job) -> FIFO consolidation queue
(one message group per namespace; repeats folded) -> consolidation_worker (a run under the lease, within the time
left) -> a lesson in DynamoDB -> brief and feedback.

Also: the worker's dead-letter policy on the real queues, the schedule that only enqueues, the stream's triggers
(TTL removal of working memory: a session that timed out), and triggers that fail without failing anything else.

The `brief` and `feedback` HTTP routes are being added on another branch; until they are here, the brief and the
feedback are called on the services the recall and write functions build (`services.briefer.brief`,
`services.feedback.feedback`), over the same table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from rearview.adapters.dynamodb import DynamoDBHindsightLedger, DynamoDBMemoryStore
from rearview.adapters.sqs_consolidation_jobs import SqsConsolidationJobs
from rearview.api.consolidation_lambda import consolidation_job_handler
from rearview.api.lambda_runtime import FunctionRuntime
from rearview.api.stream_sync import index_sync_handler
from rearview.bootstrap import Services, build
from rearview.domain.brief import BriefRequest, FeedbackRequest
from rearview.domain.hindsight_runs import ConsolidationJob
from rearview.domain.memory import Episode, Fact
from rearview.domain.search import MemoryFilter
from rearview.settings import Settings
from support.aws_stack import (
    CONSOLIDATION_MAX_RECEIVE_COUNT,
    CONSOLIDATION_SAFETY_SECONDS,
    OPENSEARCH_INDEX,
    TABLE,
    AwsStack,
    FakeLambdaContext,
    StreamDriver,
    aws_stack,
)
from support.events import load_event
from support.hindsight_jobs import RecordingJobs

pytestmark = pytest.mark.integration

NS = "acme:agent-1"
OTHER = "acme:agent-2"


@pytest.fixture
def stack() -> Iterator[AwsStack]:
    with aws_stack() as s:
        yield s


def call(handler: Any, event: dict[str, Any]) -> tuple[int, Any]:
    response = handler(event, FakeLambdaContext())
    body = response.get("body")
    return response["statusCode"], json.loads(body) if body else None


def write(handler: Any, namespace: str, body: dict[str, Any]) -> str:
    status, accepted = call(handler, load_event("memory_write", path=f"/v1/namespaces/{namespace}/memories", body=body))
    assert status == 202, accepted
    return str(accepted["id"])


def geocoder_failure(n: int) -> dict[str, Any]:
    return {
        "content": f"Geocoding batch {n} of the {['spring', 'summer', 'autumn'][n % 3]} customer list failed",
        "event_type": "tool_call",
        "entities": ["geocoder"],
        "outcome": "HTTP 413 Payload Too Large",
        "outcome_status": "failure",
        "session_id": "s1",
    }


def preferences(write_handler: Any, namespace: str) -> None:
    for session, text in enumerate(["Please reply in Chinese.", "Chinese please.", "Answer in Chinese, thanks."]):
        write(write_handler, namespace, {"content": text, "session_id": f"s{session}"})


def store(stack: AwsStack) -> DynamoDBMemoryStore:
    return DynamoDBMemoryStore(TABLE, client=stack.dynamodb)


def lessons(stack: AwsStack, namespace: str) -> list[Fact]:
    found = store(stack).list_memories(namespace, MemoryFilter(layers=("semantic",), kinds=("lesson",)))
    return [m for m in found if isinstance(m, Fact)]


def services_of(stack: AwsStack, function: str) -> Services:
    """The services function `function` builds at its cold start (its environment, the same table)."""
    return build(stack.settings(function))


def job_dead_letters(stack: AwsStack) -> list[dict[str, Any]]:
    return stack.dead_letters(stack.jobs_dlq_url)


# --- the write path to a lesson ---------------------------------------------------------------------------------


def test_three_failures_written_on_aws_become_a_lesson_that_brief_offers_and_feedback_moves(stack: AwsStack) -> None:
    write_fn = stack.load_function("write").handler
    worker = stack.load_function("write_worker").handler
    sync = stack.load_function("index_sync").handler
    consolidation = stack.load_function("consolidation_worker").handler
    ids = [write(write_fn, NS, geocoder_failure(n)) for n in range(3)]

    stack.drain(worker)

    [queued] = stack.queued_jobs()
    assert queued["group"] == NS
    assert queued["job"]["reason"] == "failure_streak" and sorted(queued["job"]["episode_ids"]) == sorted(ids)
    # The stream sees the same streak; so does a repeat of the job: both are folded by the deduplication id.
    stream = StreamDriver(stack)
    assert stream.pump(sync) > 0
    SqsConsolidationJobs(stack.jobs_url, client=stack.sqs).send(ConsolidationJob.model_validate(queued["job"]))
    assert [q["dedup"] for q in stack.queued_jobs()] == [queued["dedup"]]

    delivered = stack.deliver_jobs(consolidation)

    assert (delivered["received"], delivered["batchItemFailures"]) == (1, [])
    assert stack.deliver_jobs(consolidation)["received"] == 0
    [lesson] = lessons(stack, NS)
    assert "geocoder" in lesson.content.lower()
    assert all(isinstance(e, Episode) and e.consolidated for e in store(stack).get_many(NS, ids).values())
    [run] = DynamoDBHindsightLedger(TABLE, client=stack.dynamodb).runs(NS)
    assert run.reason == "failure_streak" and run.induced.get("lesson") == 1 and run.error is None
    # The run's own changes (its episodes marked, the lesson) reach the stream, and trigger nothing.
    recorded = RecordingJobs()
    recording_sync = index_sync_handler(
        FunctionRuntime("index_sync", settings=stack.settings("index_sync"), build=lambda s: build(s, jobs=recorded))
    )
    assert stream.pump(recording_sync) > 0 and stream.pending == []
    assert recorded.jobs == []

    brief = services_of(stack, "recall").briefer.brief(NS, BriefRequest(task="Clean the addresses", tool="geocoder"))
    assert [item.memory.id for item in brief.items][:1] == [lesson.id]
    feedback = services_of(stack, "write").feedback.feedback(NS, FeedbackRequest(memory_id=lesson.id, verdict="useful"))
    assert feedback.confidence_after > feedback.confidence_before
    stored = store(stack).get(NS, lesson.id)
    assert isinstance(stored, Fact) and stored.confidence == pytest.approx(feedback.confidence_after)


def test_a_job_for_one_namespace_touches_nothing_of_another(stack: AwsStack) -> None:
    write_fn = stack.load_function("write").handler
    worker = stack.load_function("write_worker").handler
    consolidation = stack.load_function("consolidation_worker").handler
    for n in range(3):
        write(write_fn, NS, geocoder_failure(n))
    preferences(write_fn, OTHER)
    stack.drain(worker)
    waiting = store(stack).unconsolidated_count(OTHER)
    assert [(q["group"], q["job"]["namespace"]) for q in stack.queued_jobs()] == [(NS, NS)]

    assert stack.deliver_jobs(consolidation)["batchItemFailures"] == []

    assert lessons(stack, NS) and store(stack).unconsolidated_count(NS) == 0
    assert store(stack).unconsolidated_count(OTHER) == waiting > 0
    assert store(stack).list_memories(OTHER, MemoryFilter(layers=("semantic",))) == []
    assert DynamoDBHindsightLedger(TABLE, client=stack.dynamodb).runs(OTHER) == []


def test_a_turn_written_with_extract_on_aws_becomes_its_facts_through_an_extract_job(stack: AwsStack) -> None:
    write_fn = stack.load_function("write").handler
    worker = stack.load_function("write_worker").handler
    consolidation = stack.load_function("consolidation_worker").handler
    turn = write(write_fn, NS, {"content": "I'm vegetarian, and I live in Lisbon.", "extract": True})
    write(write_fn, OTHER, {"content": "I live in Oslo.", "session_id": "s1"})

    stack.drain(worker)
    [queued] = stack.queued_jobs()
    assert (queued["group"], queued["job"]["reason"], queued["job"]["episode_ids"]) == (NS, "extract", [turn])
    assert stack.deliver_jobs(consolidation)["batchItemFailures"] == []

    facts = store(stack).list_memories(NS, MemoryFilter(layers=("semantic",)))
    assert sorted((f.dimension, f.provenance) for f in facts if isinstance(f, Fact)) == [
        ("diet", [turn]),
        ("home_city", [turn]),
    ]
    [episode] = store(stack).get_many(NS, [turn]).values()
    assert isinstance(episode, Episode) and not episode.consolidated
    [run] = DynamoDBHindsightLedger(TABLE, client=stack.dynamodb).runs(NS)
    assert (run.reason, run.induced.get("fact"), run.error) == ("extract", 2, None)
    assert store(stack).list_memories(OTHER, MemoryFilter(layers=("semantic",))) == []


# --- the worker's dead-letter policy on the queues ---------------------------------------------------------------


def send_job(stack: AwsStack, namespace: str, reason: str = "count") -> None:
    from datetime import UTC, datetime

    job = ConsolidationJob(namespace=namespace, reason=reason, requested_at=datetime.now(UTC))
    SqsConsolidationJobs(stack.jobs_url, client=stack.sqs).send(job)


def test_a_job_whose_namespace_is_busy_is_retried_and_never_dead_lettered(stack: AwsStack) -> None:
    from datetime import UTC, datetime

    consolidation = stack.load_function("consolidation_worker").handler
    preferences(stack.load_function("write").handler, NS)
    stack.drain(stack.load_function("write_worker").handler)
    ledger = DynamoDBHindsightLedger(TABLE, client=stack.dynamodb)
    assert ledger.acquire_lease(NS, "a manual run", datetime.now(UTC), 600)
    send_job(stack, NS)

    for _ in range(CONSOLIDATION_MAX_RECEIVE_COUNT - 1):
        delivered = stack.deliver_jobs(consolidation)
        assert [f["itemIdentifier"] for f in delivered["batchItemFailures"]] == delivered["message_ids"]
    last = stack.deliver_jobs(consolidation)  # its last receive: dropped, the lease holder has the namespace

    assert (last["received"], last["batchItemFailures"]) == (1, [])
    assert stack.deliver_jobs(consolidation)["received"] == 0
    assert job_dead_letters(stack) == []
    assert store(stack).unconsolidated_count(NS) > 0


def test_poison_is_dead_lettered_at_once_with_its_reason(stack: AwsStack) -> None:
    consolidation = stack.load_function("consolidation_worker").handler
    stack.sqs.send_message(
        QueueUrl=stack.jobs_url, MessageBody="{not a job", MessageGroupId=NS, MessageDeduplicationId="poison-1"
    )

    assert stack.deliver_jobs(consolidation)["batchItemFailures"] == []

    [letter] = job_dead_letters(stack)
    assert letter["body"] == "{not a job" and letter["reason"] == "poison" and letter["error"]


class FailingApplyStore:
    """The real DynamoDB store, except that applying changes fails (the store is down for consolidation)."""

    def __init__(self, inner: DynamoDBMemoryStore) -> None:
        self._inner = inner

    def apply(self, namespace: str, changes: Any) -> None:
        raise ConnectionError("the table did not answer")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_failing_run_is_retried_then_dead_lettered_with_its_reason_and_error(stack: AwsStack) -> None:
    preferences(stack.load_function("write").handler, NS)
    stack.drain(stack.load_function("write_worker").handler)
    settings = stack.settings("consolidation_worker")

    def build_failing(s: Settings) -> Services:
        inner = DynamoDBMemoryStore(TABLE, client=stack.dynamodb, settings=s.aws, embedder_name="hashing-256", dim=256)
        return build(s, store=FailingApplyStore(inner))

    consolidation = FunctionRuntime("consolidation_worker", settings=settings, build=build_failing)
    handler = consolidation_job_handler(consolidation)
    send_job(stack, NS)

    failures = [stack.deliver_jobs(handler)["batchItemFailures"] for _ in range(CONSOLIDATION_MAX_RECEIVE_COUNT)]

    assert [len(f) for f in failures] == [1] * (CONSOLIDATION_MAX_RECEIVE_COUNT - 1) + [0]
    [letter] = job_dead_letters(stack)
    assert letter["reason"] == "retries_exhausted" and "the table did not answer" in letter["error"]
    assert json.loads(letter["body"])["namespace"] == NS
    runs = DynamoDBHindsightLedger(TABLE, client=stack.dynamodb).runs(NS)
    assert len(runs) == CONSOLIDATION_MAX_RECEIVE_COUNT and all(r.error for r in runs)
    assert store(stack).unconsolidated_count(NS) > 0


def test_the_time_budget_defers_clusters_the_invocation_cannot_finish(stack: AwsStack) -> None:
    preferences(stack.load_function("write").handler, NS)
    stack.drain(stack.load_function("write_worker").handler)
    waiting = store(stack).unconsolidated_count(NS)
    consolidation = stack.load_function("consolidation_worker").handler
    send_job(stack, NS)

    # As much time left as the safety margin: the deadline has come before the first cluster.
    delivered = stack.deliver_jobs(consolidation, remaining_millis=CONSOLIDATION_SAFETY_SECONDS * 1000)

    assert delivered["batchItemFailures"] == []
    assert store(stack).unconsolidated_count(NS) == waiting > 0
    assert store(stack).list_memories(NS, MemoryFilter(layers=("semantic",))) == []
    [run] = DynamoDBHindsightLedger(TABLE, client=stack.dynamodb).runs(NS)
    assert (run.clusters, run.clusters_deferred) == (0, 1)

    # The next job picks them up (another reason: a second count job this soon would be folded into the first).
    send_job(stack, NS, reason="schedule")
    while stack.deliver_jobs(consolidation)["received"]:
        pass
    assert store(stack).unconsolidated_count(NS) == 0


# --- the schedule ---------------------------------------------------------------------------------------------


def test_the_schedule_enqueues_each_namespace_with_a_backlog_once_and_the_worker_runs_them(stack: AwsStack) -> None:
    write_fn = stack.load_function("write").handler
    consolidate = stack.load_function("consolidate").handler
    consolidation = stack.load_function("consolidation_worker").handler
    for namespace in ("acme:u-1", "acme:u-2", "acme:u-3"):
        preferences(write_fn, namespace)
    stack.drain(stack.load_function("write_worker").handler)
    status, _ = call(consolidate, load_event("consolidate", path="/v1/namespaces/acme:u-3/consolidate"))
    assert status == 200  # the HTTP route runs at once: u-3 has no backlog left
    assert store(stack).namespaces_with_unconsolidated() == ["acme:u-1", "acme:u-2"]
    schedule = load_event("consolidate_schedule", kind="eventbridge")

    report = consolidate(schedule, FakeLambdaContext())
    again = consolidate(schedule, FakeLambdaContext())  # a retried or overlapping invocation

    assert report == again == {"enqueued": 2, "failed": {}}
    queued = stack.queued_jobs()
    assert sorted((q["group"], q["job"]["reason"]) for q in queued) == [
        ("acme:u-1", "schedule"),
        ("acme:u-2", "schedule"),
    ]
    while stack.deliver_jobs(consolidation)["received"]:
        pass
    assert store(stack).namespaces_with_unconsolidated() == []
    assert all(store(stack).list_memories(ns, MemoryFilter(layers=("semantic",))) for ns in ("acme:u-1", "acme:u-2"))
    assert consolidate(schedule, FakeLambdaContext()) == {"enqueued": 0, "failed": {}}
    assert stack.queued_jobs() == []


# --- the stream's triggers, sessions, and triggers that fail -------------------------------------------------------


def test_working_memory_removed_by_ttl_sends_a_session_end_job(stack: AwsStack) -> None:
    sync = stack.load_function("index_sync").handler
    event = load_event("ttl_expiry_working", kind="dynamodb")

    assert sync(event, FakeLambdaContext()) == {"batchItemFailures": []}

    [queued] = stack.queued_jobs()
    assert queued["group"] == "acme:u-42"
    assert (queued["job"]["reason"], queued["job"]["session_id"]) == ("session_end", "s-7")
    # The same session's other keys expiring a moment later fold into the same job.
    assert sync(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert len(stack.queued_jobs()) == 1


def test_ending_a_session_through_the_write_function_sends_one_session_end_job(stack: AwsStack) -> None:
    write_fn = stack.load_function("write").handler
    sync = stack.load_function("index_sync").handler
    working = f"/v1/namespaces/{NS}/sessions/s9/working"
    assert call(write_fn, load_event("working_put", path=f"{working}/draft", body={"value": "email to Dana"}))[0] == 200

    status, body = call(write_fn, load_event("working_clear", path=working))

    assert status == 200 and body["cleared"] == 1
    # The stream carries the caller's delete too: not a TTL removal, so no second job.
    assert StreamDriver(stack).pump(sync) > 0
    [queued] = stack.queued_jobs()
    assert (queued["group"], queued["job"]["reason"], queued["job"]["session_id"]) == (NS, "session_end", "s9")


class ExplodingJobs:
    """A consolidation queue that refuses every job."""

    def __init__(self) -> None:
        self.attempts = 0

    def send(self, job: ConsolidationJob) -> None:
        self.attempts += 1
        raise ConnectionError("the consolidation queue did not answer")


def test_a_trigger_that_fails_never_fails_the_write_or_the_stream_batch(stack: AwsStack) -> None:
    jobs = ExplodingJobs()

    def build_exploding(settings: Settings) -> Services:
        return build(settings, jobs=jobs)

    from rearview.adapters.sqs_write_queue import SqsDeadLetters

    worker = FunctionRuntime(
        "write_worker",
        settings=stack.settings("write_worker"),
        build=build_exploding,
        dead_letters=SqsDeadLetters(stack.dlq_url, client=stack.sqs),
    ).queue_handler()
    sync = index_sync_handler(
        FunctionRuntime("index_sync", settings=stack.settings("index_sync"), build=build_exploding)
    )
    write_fn = stack.load_function("write").handler
    ids = [write(write_fn, NS, geocoder_failure(n)) for n in range(3)]

    assert stack.deliver(worker)["batchItemFailures"] == []
    stream = StreamDriver(stack)
    handled = stream.pump(sync)

    assert jobs.attempts >= 2  # the write worker's streak and the stream's
    assert handled > 0 and stream.pending == []
    assert set(store(stack).get_many(NS, ids)) == set(ids)
    assert set(ids) <= {doc["memory_id"] for doc in stack.double.documents(OPENSEARCH_INDEX)}
    assert stack.dead_letters() == [] and stack.queued_jobs() == []
