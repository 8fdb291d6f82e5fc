"""The emulator's event sources and timers against moto's server (real boto3 over HTTP, as `rearview emulate` runs
them), each driven one poll or tick at a time: a small template deployed by `resources.deploy`, and a function that
is a Python callable recording what it was given, so each of Lambda's delivery rules is seen to hold.

- SQS: partial batch failures (only the listed records come back), receive counts growing, the dead-letter queue
  after `maxReceiveCount`, a failed invocation retrying the whole batch, an unknown identifier failing it all.
- DynamoDB Streams: batch size, bisection on a function error, retries, then the batch's metadata to the on-failure
  queue; the TTL sweeper's deletes carrying DynamoDB's service identity, a user's delete not.
- The schedule: a Scheduled Event per tick, nothing while the rule is disabled in EventBridge, a failing target
  retried by its policy and then sent to its dead-letter queue with the error.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rearview.emulator.containers import FunctionError
from rearview.emulator.resources import Deployment, deploy
from rearview.emulator.sqs_poller import SqsPoller
from rearview.emulator.stream_poller import TTL_IDENTITY, StreamPoller, TtlDeletes
from rearview.emulator.template import REGION, EventSource, Template
from rearview.emulator.timers import ScheduleTicker, TtlSweeper

pytestmark = pytest.mark.integration

MAX_RECEIVES = 3
_STACKS = itertools.count(1)

TEMPLATE: dict[str, Any] = {
    "Resources": {
        "Worker": {"Type": "AWS::Lambda::Function", "Properties": {}},
        "Dlq": {"Type": "AWS::SQS::Queue", "Properties": {"MessageRetentionPeriod": 1209600}},
        "Work": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "VisibilityTimeout": 60,
                "RedrivePolicy": {"deadLetterTargetArn": {"Fn::GetAtt": ["Dlq", "Arn"]}, "maxReceiveCount": 3},
            },
        },
        "Failures": {"Type": "AWS::SQS::Queue", "Properties": {}},
        "Table": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                ],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                "BillingMode": "PAY_PER_REQUEST",
                "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
                "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
            },
        },
        "Hourly": {
            "Type": "AWS::Events::Rule",
            "Properties": {
                "ScheduleExpression": "rate(1 hour)",
                "State": "ENABLED",
                "Targets": [
                    {
                        "Arn": {"Fn::GetAtt": ["Worker", "Arn"]},
                        "Id": "Target0",
                        "RetryPolicy": {"MaximumRetryAttempts": 1},
                        "DeadLetterConfig": {"Arn": {"Fn::GetAtt": ["Dlq", "Arn"]}},
                    }
                ],
            },
        },
    }
}


class Function:
    """The invoked function: records each event, and fails as told (raise, or list some records)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.failing_bodies: set[str] = set()
        self.raise_when: str | None = None
        self.unknown_identifier = False

    def __call__(self, function: str, event: dict[str, Any], timeout: float | None) -> Any:
        self.events.append(event)
        records = event.get("Records", [])
        if self.raise_when is not None and (not records or any(self.raise_when in json.dumps(r) for r in records)):
            raise FunctionError(function, "ValueError", f"refused {self.raise_when}")
        if self.unknown_identifier:
            return {"batchItemFailures": [{"itemIdentifier": "no-such-message"}]}
        failed = [r["messageId"] for r in records if r.get("body") in self.failing_bodies]
        return {"batchItemFailures": [{"itemIdentifier": m} for m in failed]}


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _client(moto_url: str, service: str) -> Any:
    import boto3

    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=moto_url,
        region_name=REGION,
        aws_access_key_id="emulated",
        aws_secret_access_key="emulated",
    )


@pytest.fixture
def deployed(moto_url: str, tmp_path: Path) -> Deployment:
    """The template deployed afresh under a stack name of the test's own (moto's server outlives a test)."""
    stack = f"Stack{next(_STACKS)}"
    template = Template(tmp_path / f"{stack}.template.json", json.loads(json.dumps(TEMPLATE)))
    return deploy(template, _client(moto_url, "dynamodb"), _client(moto_url, "sqs"), _client(moto_url, "events"), "")


def _source(source: str, **properties: Any) -> EventSource:
    return EventSource("Mapping", "Worker", source, properties)


def _bodies(sqs: Any, url: str) -> list[str]:
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])
    return sorted(m["Body"] for m in got.get("Messages", []))


# --- SQS ----------------------------------------------------------------------------------------------------------


def test_only_the_listed_records_come_back_until_the_dead_letter_queue(moto_url: str, deployed: Deployment) -> None:
    sqs, work = _client(moto_url, "sqs"), deployed.queues["Work"]
    assert deployed.queues["Work"].max_receive_count == MAX_RECEIVES
    for body in ("ok-1", "poison", "ok-2"):
        sqs.send_message(QueueUrl=work.url, MessageBody=body)
    function = Function()
    function.failing_bodies = {"poison"}
    poller = SqsPoller(
        _source("Work", BatchSize=10, FunctionResponseTypes=["ReportBatchItemFailures"]),
        work, sqs, function, retry_seconds=0,
    )  # fmt: skip

    for _ in range(MAX_RECEIVES + 2):
        poller.poll_once()

    delivered = [
        (r["body"], int(r["attributes"]["ApproximateReceiveCount"])) for e in function.events for r in e["Records"]
    ]
    # The good records were delivered once and deleted; the listed one came back, its receive count growing.
    assert sorted(b for b, _ in delivered if b.startswith("ok")) == ["ok-1", "ok-2"]
    assert [n for b, n in delivered if b == "poison"] == list(range(1, MAX_RECEIVES + 1))
    assert all(
        r["eventSource"] == "aws:sqs" and r["eventSourceARN"] == work.arn for e in function.events for r in e["Records"]
    )
    assert poller.failed_records == MAX_RECEIVES
    # Past the maximum, SQS's redrive policy moved it to the dead-letter queue; the queue is empty.
    assert _bodies(sqs, deployed.queues["Dlq"].url) == ["poison"]
    assert _bodies(sqs, work.url) == []


def test_a_failed_invocation_or_an_unknown_identifier_retries_the_whole_batch(
    moto_url: str, deployed: Deployment
) -> None:
    sqs, work = _client(moto_url, "sqs"), deployed.queues["Work"]
    for body in ("a", "b"):
        sqs.send_message(QueueUrl=work.url, MessageBody=body)
    function = Function()
    poller = SqsPoller(
        _source("Work", BatchSize=10, FunctionResponseTypes=["ReportBatchItemFailures"]),
        work, sqs, function, retry_seconds=0,
    )  # fmt: skip

    function.raise_when = '"body": "a"'
    poller.poll_once()
    function.raise_when = None
    function.unknown_identifier = True
    poller.poll_once()
    function.unknown_identifier = False
    poller.poll_once()

    batches = [sorted(r["body"] for r in e["Records"]) for e in function.events]
    assert batches == [["a", "b"], ["a", "b"], ["a", "b"]]
    receive_counts = [{int(r["attributes"]["ApproximateReceiveCount"]) for r in e["Records"]} for e in function.events]
    assert receive_counts == [{1}, {2}, {3}]
    assert _bodies(sqs, work.url) == []


def test_without_report_batch_item_failures_a_returned_list_is_ignored(moto_url: str, deployed: Deployment) -> None:
    sqs, work = _client(moto_url, "sqs"), deployed.queues["Work"]
    sqs.send_message(QueueUrl=work.url, MessageBody="poison")
    function = Function()
    function.failing_bodies = {"poison"}
    poller = SqsPoller(_source("Work", BatchSize=10), work, sqs, function, retry_seconds=0)

    poller.poll_once()
    assert poller.poll_once() == 0

    assert len(function.events) == 1 and poller.failed_records == 0
    assert _bodies(sqs, work.url) == [] and _bodies(sqs, deployed.queues["Dlq"].url) == []


# --- DynamoDB Streams and the TTL -----------------------------------------------------------------------------------


def _put(dynamodb: Any, table: str, sk: str, **extra: Any) -> None:
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "NS#a"}, "sk": {"S": sk}, **extra})


def test_a_failing_stream_batch_is_bisected_retried_then_sent_to_the_on_failure_queue(
    moto_url: str, deployed: Deployment
) -> None:
    dynamodb, sqs = _client(moto_url, "dynamodb"), _client(moto_url, "sqs")
    table, failures = deployed.tables["Table"], deployed.queues["Failures"]
    for sk in ("EP#1", "EP#poison", "EP#3", "WM#skipped"):
        _put(dynamodb, table.name, sk)
    function = Function()
    function.raise_when = "EP#poison"
    source = _source(
        "Table", BatchSize=2, MaximumRetryAttempts=1, BisectBatchOnFunctionError=True,
        StartingPosition="TRIM_HORIZON", FilterCriteria={"Filters": [{"Pattern": json.dumps(
            {"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "EP#"}]}}}}
        )}]}, DestinationConfig={"OnFailure": {"Destination": failures.arn}},
    )  # fmt: skip
    poller = StreamPoller(source, table, deployed, _client(moto_url, "dynamodbstreams"), function, sqs, TtlDeletes())

    assert poller.poll_once() == 4

    keys = [[r["dynamodb"]["Keys"]["sk"]["S"] for r in e["Records"]] for e in function.events]
    # Batches of two, the filtered record never delivered; the failing batch halved, the good half delivered, the
    # poison record retried once and given up.
    assert keys == [["EP#1", "EP#poison"], ["EP#1"], ["EP#poison"], ["EP#3"]]
    assert all(r["eventSourceARN"] == table.stream_arn for e in function.events for r in e["Records"])
    (message,) = sqs.receive_message(QueueUrl=failures.url)["Messages"]
    info = json.loads(message["Body"])
    assert info["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert info["DDBStreamBatchInfo"]["batchSize"] == 1 and info["DDBStreamBatchInfo"]["streamArn"] == table.stream_arn
    assert poller.delivered == 2


def test_the_ttl_sweeper_deletes_what_expired_as_dynamodb_would(moto_url: str, deployed: Deployment) -> None:
    dynamodb = _client(moto_url, "dynamodb")
    table = deployed.tables["Table"]
    assert table.ttl_attribute == "expires_at"
    now = 1_900_000_000  # the sweep's clock is given: epoch seconds
    _put(dynamodb, table.name, "WM#old", expires_at={"N": str(now - 10)})
    _put(dynamodb, table.name, "WM#due", expires_at={"N": str(now)})
    _put(dynamodb, table.name, "WM#later", expires_at={"N": str(now + 3600)})
    _put(dynamodb, table.name, "EP#forever")
    _put(dynamodb, table.name, "EP#user-deleted")
    ttl_deletes, function = TtlDeletes(), Function()
    poller = StreamPoller(
        _source("Table", BatchSize=100, StartingPosition="TRIM_HORIZON"), table, deployed,
        _client(moto_url, "dynamodbstreams"), function, _client(moto_url, "sqs"), ttl_deletes,
    )  # fmt: skip
    poller.poll_once()
    function.events.clear()

    assert TtlSweeper(table, dynamodb, ttl_deletes, period=60).sweep(now) == 2
    dynamodb.delete_item(TableName=table.name, Key={"pk": {"S": "NS#a"}, "sk": {"S": "EP#user-deleted"}})
    poller.poll_once()

    left = sorted(i["sk"]["S"] for i in dynamodb.scan(TableName=table.name)["Items"])
    assert left == ["EP#forever", "WM#later"]
    removes = {r["dynamodb"]["Keys"]["sk"]["S"]: r.get("userIdentity") for e in function.events for r in e["Records"]}
    assert removes == {"WM#old": TTL_IDENTITY, "WM#due": TTL_IDENTITY, "EP#user-deleted": None}


# --- the schedule -------------------------------------------------------------------------------------------------


def test_the_schedule_ticks_only_while_enabled_and_dead_letters_a_failing_target(
    moto_url: str, deployed: Deployment
) -> None:
    events, sqs = _client(moto_url, "events"), _client(moto_url, "sqs")
    (schedule,) = deployed.template.schedules()
    function = Function()
    ticker = ScheduleTicker(schedule, deployed, events, sqs, function)
    assert ticker.period == 3600

    ticker.tick()
    (event,) = function.events
    assert event["detail-type"] == "Scheduled Event" and event["source"] == "aws.events"
    assert event["resources"] == [events.describe_rule(Name=ticker.rule_name)["Arn"]]

    events.disable_rule(Name=ticker.rule_name)
    ticker.tick()
    assert len(function.events) == 1
    events.enable_rule(Name=ticker.rule_name)

    function.raise_when = "Scheduled Event"
    ticker.tick()
    # One attempt and the policy's one retry, then the dead-letter queue with EventBridge's error attributes.
    assert len(function.events) == 3 and ticker.failures == 1
    (message,) = sqs.receive_message(QueueUrl=deployed.queues["Dlq"].url, MessageAttributeNames=["All"])["Messages"]
    assert json.loads(message["Body"])["detail-type"] == "Scheduled Event"
    attributes = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
    assert attributes["ERROR_CODE"] == "ValueError" and attributes["TARGET_ARN"].endswith(
        ":function:" + deployed.function_name("Worker")
    )
