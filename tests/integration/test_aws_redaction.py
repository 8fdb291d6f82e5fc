"""Redaction on AWS before anything leaves the write function (issue 18): on moto, through the real handlers, a
secret in any field of a write is replaced before the message is queued, so neither SQS, nor its dead-letter queue
(which receives that same body), nor the table, nor the index, nor the functions' logs ever hold it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from rearview.adapters.dynamodb import DynamoDBMemoryStore
from rearview.domain.search import MemoryFilter
from support.aws_stack import OPENSEARCH_INDEX, TABLE, AwsStack, FakeLambdaContext, StreamDriver, aws_stack
from support.events import load_event

pytestmark = pytest.mark.integration

NS = "acme:u-42"
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
CARD = "4111 1111 1111 1111"
ZERO_WIDTH_AWS = "AKIA\u200bIOSFODNN7\u200dEXAMPLE"
# What must never be seen again, anywhere.
PARTS = ("4eC39HqLyjWDarjtT1zdp7dc", "4111 1111 1111 1111", "IOSFODNN7")


@pytest.fixture
def stack() -> Iterator[AwsStack]:
    with aws_stack() as s:
        yield s


def _raw_queue_bodies(stack: AwsStack) -> list[str]:
    """The write queue's message bodies, read and made visible again (not consumed)."""
    response = stack.sqs.receive_message(QueueUrl=stack.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=30)
    messages = response.get("Messages", [])
    for message in messages:
        stack.sqs.change_message_visibility(
            QueueUrl=stack.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )
    return [message["Body"] for message in messages]


def test_no_secret_reaches_the_queue_the_table_the_index_or_the_logs(
    stack: AwsStack, capsys: pytest.CaptureFixture[str]
) -> None:
    write = stack.load_function("write").handler
    worker = stack.load_function("write_worker").handler
    sync = stack.load_function("index_sync").handler
    memory: dict[str, Any] = {
        "content": f"Deploy with {STRIPE}; the card on file is {CARD}",
        "outcome": f"worked once {ZERO_WIDTH_AWS} was rotated",
        "tags": [STRIPE],
        "entities": [CARD],
        "event_type": "deploy",
    }
    response = write(load_event("memory_write", path=f"/v1/namespaces/{NS}/memories", body=memory), FakeLambdaContext())
    accepted = json.loads(response["body"])
    assert response["statusCode"] == 202 and accepted["redacted"] is True, accepted

    [body] = _raw_queue_bodies(stack)
    assert "[REDACTED:" in body and not any(part in body for part in PARTS), body
    stack.drain(worker)
    StreamDriver(stack).pump(sync)

    [stored] = DynamoDBMemoryStore(TABLE, client=stack.dynamodb).list_memories(NS, MemoryFilter())
    indexed = stack.double.documents(OPENSEARCH_INDEX)
    everywhere = json.dumps([stored.model_dump(mode="json"), indexed, capsys.readouterr()], ensure_ascii=False)
    assert stored.id == accepted["id"] and len(indexed) == 1
    assert not any(part in everywhere for part in PARTS)
