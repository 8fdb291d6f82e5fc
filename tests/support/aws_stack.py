"""The AWS deployment in a test process: DynamoDB, its stream and SQS on moto, OpenSearch on its test double, and the
Lambda functions loaded from functions/<name>/handler.py with the environment the CDK app gives them.

Delivery is driven by the test, the way the Lambda event source mappings would drive it, without sleeping:

- `deliver(handler)` receives up to 10 messages from the write queue (moto counts the receives), calls the handler
  with an SQS event, deletes the messages it did not report as failed, and makes the failed ones visible again at
  once (as if their visibility timeout had run out). `deliver_jobs(handler)` does the same with the FIFO
  consolidation queue (one job per invocation, as its event source's batch size is).
- `StreamDriver.pump(handler)` feeds the table's new stream records to index sync, retrying from the first record
  it reports failed (ReportBatchItemFailures semantics), and everything if it raises.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from support.dynamodb_stream import StreamReader, moto_streams_client
from support.modules import load_module

REGION = "us-east-1"
TABLE = "rearview-test"
OPENSEARCH_INDEX = "rearview-memories"
MAX_RECEIVE_COUNT = 5
EMBEDDING_DIM = 256
# Functions told the write queue's URL (the CDK app's _QUEUE_SENDERS): only they accept instead of storing.
QUEUE_SENDERS = ("write",)
# Functions told the consolidation queue's URL (the CDK app's _JOB_SENDERS): they send the triggers' jobs.
JOB_SENDERS = ("write", "write_worker", "index_sync", "consolidate", "mcp")
CONSOLIDATION_MAX_RECEIVE_COUNT = 3
CONSOLIDATION_SAFETY_SECONDS = 30


@dataclass
class FakeLambdaContext:
    """What Powertools reads from a Lambda context."""

    function_name: str = "rearview-test"
    memory_limit_in_mb: int = 512
    remaining_millis: int = 60_000
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:rearview-test"
    aws_request_id: str = "00000000-0000-4000-8000-000000000000"
    log_group_name: str = "/aws/lambda/rearview-test"
    log_stream_name: str = "2026/03/10/[$LATEST]test"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis


@dataclass
class AwsStack:
    """Clients and resource names of one moto account, plus the OpenSearch double."""

    dynamodb: Any
    sqs: Any
    streams: Any
    queue_url: str
    dlq_url: str
    jobs_url: str
    jobs_dlq_url: str
    opensearch_url: str
    double: Any
    env: dict[str, str] = field(default_factory=dict)
    _loaded: int = 0

    def function_env(self, name: str) -> dict[str, str]:
        """The environment the CDK app gives function `name`."""
        env = dict(self.env)
        if name in QUEUE_SENDERS:
            env["REARVIEW_AWS__WRITE_QUEUE_URL"] = self.queue_url
        if name in JOB_SENDERS:
            env["REARVIEW_AWS__CONSOLIDATION_QUEUE_URL"] = self.jobs_url
        if name == "write_worker":
            env["REARVIEW_AWS__DEAD_LETTER_QUEUE_URL"] = self.dlq_url
            env["REARVIEW_AWS__MAX_RECEIVE_COUNT"] = str(MAX_RECEIVE_COUNT)
        if name == "consolidation_worker":
            env["REARVIEW_AWS__CONSOLIDATION_DEAD_LETTER_QUEUE_URL"] = self.jobs_dlq_url
            env["REARVIEW_AWS__CONSOLIDATION_MAX_RECEIVE_COUNT"] = str(CONSOLIDATION_MAX_RECEIVE_COUNT)
            env["REARVIEW_AWS__CONSOLIDATION_SAFETY_SECONDS"] = str(CONSOLIDATION_SAFETY_SECONDS)
        env["POWERTOOLS_SERVICE_NAME"] = f"rearview-{name}"
        return env

    def settings(self, name: str) -> Any:
        """The Settings function `name` validates at its cold start."""
        from rearview.settings import Settings

        with _environment(self.function_env(name)):
            return Settings()

    def load_function(self, name: str) -> ModuleType:
        """functions/<name>/handler.py, imported afresh (a cold start) under that function's environment."""
        self._loaded += 1
        with _environment(self.function_env(name)):
            return load_module(f"functions/{name}/handler.py", f"_rearview_fn_{name}_{self._loaded}")

    # --- SQS ------------------------------------------------------------------------------------------------

    def deliver(
        self,
        handler: Any,
        *,
        lose_delete: Callable[[dict[str, Any]], bool] | None = None,
        queue_url: str | None = None,
        batch_size: int = 10,
        context: FakeLambdaContext | None = None,
    ) -> dict[str, Any]:
        """One poll of the write queue (or `queue_url`) into `handler`; returns the handler's response plus
        `received`.

        `lose_delete(message)`: True for a succeeded message that is not deleted, so it is delivered again (an
        at-least-once duplicate, as when a poller's delete is lost).
        """
        queue_url = queue_url or self.queue_url
        response = self.sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=batch_size,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            VisibilityTimeout=30,
        )
        messages = response.get("Messages", [])
        if not messages:
            return {"batchItemFailures": [], "received": 0}
        event = {"Records": [_sqs_record(m, queue_url) for m in messages]}
        result = handler(event, context or FakeLambdaContext(function_name="rearview-write_worker"))
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        for message in messages:
            if message["MessageId"] in failed or (lose_delete is not None and lose_delete(message)):
                self.sqs.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        return {**result, "received": len(messages), "message_ids": [m["MessageId"] for m in messages]}

    def deliver_jobs(self, handler: Any, *, remaining_millis: int = 300_000) -> dict[str, Any]:
        """One poll of the consolidation queue into `handler`, one job per invocation (the event source's batch
        size), with `remaining_millis` left in the invocation."""
        context = FakeLambdaContext(function_name="rearview-consolidation_worker", remaining_millis=remaining_millis)
        return self.deliver(handler, queue_url=self.jobs_url, batch_size=1, context=context)

    def queued_jobs(self) -> list[dict[str, Any]]:
        """The consolidation queue's messages (body, group, dedup id), read without consuming them."""
        found: list[dict[str, Any]] = []
        handles: list[str] = []
        while True:
            response = self.sqs.receive_message(
                QueueUrl=self.jobs_url, MaxNumberOfMessages=10, AttributeNames=["All"], VisibilityTimeout=30
            )
            messages = response.get("Messages", [])
            if not messages:
                break
            for message in messages:
                attributes = message.get("Attributes", {})
                found.append({
                    "job": json.loads(message["Body"]),
                    "group": attributes.get("MessageGroupId"),
                    "dedup": attributes.get("MessageDeduplicationId"),
                })  # fmt: skip
                handles.append(message["ReceiptHandle"])
        for handle in handles:
            self.sqs.change_message_visibility(QueueUrl=self.jobs_url, ReceiptHandle=handle, VisibilityTimeout=0)
        return found

    def drain(self, handler: Any, *, max_polls: int = 100_000) -> int:
        """Deliver until the queue is empty; returns the number of polls."""
        for polls in range(1, max_polls + 1):
            if self.deliver(handler)["received"] == 0:
                return polls
        raise AssertionError(f"the write queue did not drain in {max_polls} polls")

    def dead_letters(self, queue_url: str | None = None) -> list[dict[str, Any]]:
        """Every message in the write DLQ (or `queue_url`), consumed: body and message attributes as plain
        strings."""
        queue_url = queue_url or self.dlq_url
        found: list[dict[str, Any]] = []
        while True:
            response = self.sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=300
            )
            messages = response.get("Messages", [])
            if not messages:
                return found
            for message in messages:
                attributes = {k: v.get("StringValue") for k, v in message.get("MessageAttributes", {}).items()}
                found.append({"body": message["Body"], **attributes})
                self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def _sqs_record(message: dict[str, Any], queue_url: str) -> dict[str, Any]:
    """A received message as a record of Lambda's SQS event."""
    queue_name = queue_url.rsplit("/", 1)[-1]
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {
            k: {"stringValue": v.get("StringValue"), "dataType": v.get("DataType")}
            for k, v in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:123456789012:{queue_name}",
        "awsRegion": REGION,
    }


class StreamDriver:
    """Feeds the table's stream to index sync as the DynamoDB event source mapping does (batches of 100)."""

    def __init__(self, stack: AwsStack) -> None:
        self._reader = StreamReader(stack.dynamodb, stack.streams, TABLE)
        self.pending: list[dict[str, Any]] = []

    def pump(self, handler: Any, *, batch_size: int = 100) -> int:
        """Deliver every pending record until all are handled or a batch fails; returns the records handled."""
        self.pending.extend(self._reader.read())
        handled = 0
        while self.pending:
            batch = self.pending[:batch_size]
            try:
                result = handler({"Records": batch}, FakeLambdaContext(function_name="rearview-index_sync"))
            except Exception:
                return handled  # the whole batch is retried on the next pump
            failures = [f["itemIdentifier"] for f in (result or {}).get("batchItemFailures", [])]
            if failures:
                sequence = [r["dynamodb"]["SequenceNumber"] for r in batch]
                first = min(sequence.index(f) for f in failures if f in sequence)
                handled += first
                self.pending = self.pending[first:]
                return handled
            handled += len(batch)
            self.pending = self.pending[len(batch) :]
        return handled


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _consolidation_queues(sqs: Any) -> tuple[str, str]:
    """The FIFO consolidation queue redriven to its FIFO DLQ, as the CDK app declares them; their URLs."""
    dlq_url = sqs.create_queue(QueueName="rearview-consolidation-dlq.fifo", Attributes={"FifoQueue": "true"})[
        "QueueUrl"
    ]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": CONSOLIDATION_MAX_RECEIVE_COUNT}
    queue_url = sqs.create_queue(
        QueueName="rearview-consolidation.fifo",
        Attributes={"FifoQueue": "true", "VisibilityTimeout": "30", "RedrivePolicy": json.dumps(redrive)},
    )["QueueUrl"]
    return queue_url, dlq_url


@contextmanager
def aws_stack() -> Iterator[AwsStack]:
    """Create the table (with its stream), the write queue and the FIFO consolidation queue with their DLQs, and the
    OpenSearch index, on moto and the double; yields the stack while the mock is active."""
    import boto3
    from moto import mock_aws

    from rearview.adapters.dynamodb import create_table
    from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex
    from support.opensearch_double import OpenSearchDouble

    with mock_aws(), OpenSearchDouble() as double:
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        create_table(dynamodb, TABLE)
        dlq_url = sqs.create_queue(QueueName="rearview-write-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        queue_url = sqs.create_queue(
            QueueName="rearview-write-queue",
            Attributes={
                "VisibilityTimeout": "30",
                "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_RECEIVE_COUNT}),
            },
        )["QueueUrl"]
        jobs_url, jobs_dlq_url = _consolidation_queues(sqs)
        OpenSearchIndex(OpenSearchConnection(double.url, service=None), OPENSEARCH_INDEX, EMBEDDING_DIM).ensure_index()
        env = {
            "REARVIEW_BACKEND": "aws",
            "REARVIEW_EMBEDDER": "hashing",
            "REARVIEW_HASHING_DIM": str(EMBEDDING_DIM),
            "REARVIEW_AWS__REGION": REGION,
            "REARVIEW_AWS__TABLE_NAME": TABLE,
            "REARVIEW_AWS__OPENSEARCH_ENDPOINT": double.url,
            # `es`: a managed domain (our document ids); requests are SigV4-signed with moto's fake credentials.
            "REARVIEW_AWS__OPENSEARCH_SERVICE": "es",
            "REARVIEW_AWS__OPENSEARCH_INDEX": OPENSEARCH_INDEX,
            "POWERTOOLS_METRICS_NAMESPACE": "RearviewTest",
        }
        yield AwsStack(
            dynamodb=dynamodb,
            sqs=sqs,
            streams=moto_streams_client(REGION),
            queue_url=queue_url,
            dlq_url=dlq_url,
            jobs_url=jobs_url,
            jobs_dlq_url=jobs_dlq_url,
            opensearch_url=double.url,
            double=double,
            env=env,
        )
