"""The AWS deployment end to end on moto and the OpenSearch test double, through the real function handlers:
HTTP event -> write function (202) -> SQS -> write_worker -> DynamoDB -> stream -> index_sync -> OpenSearch ->
recall function; forget removes the memory from both stores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from rearview.domain.memory import Episode
from support.aws_stack import EMBEDDING_DIM, OPENSEARCH_INDEX, AwsStack, FakeLambdaContext, StreamDriver, aws_stack
from support.events import load_event
from support.stats import usage_stats

pytestmark = pytest.mark.integration

NS = "acme:u-42"


@pytest.fixture
def stack() -> Iterator[AwsStack]:
    with aws_stack() as s:
        yield s


def index_sync_handler(stack: AwsStack) -> Any:
    """The index_sync function (functions/index_sync/handler.py)."""
    return stack.load_function("index_sync").handler


def call(handler: Any, event: dict[str, Any]) -> tuple[int, Any]:
    response = handler(event, FakeLambdaContext())
    body = response.get("body")
    return response["statusCode"], json.loads(body) if body else None


def recall_ids(recall: Any, query: str) -> list[str]:
    status, body = call(recall, load_event("recall", path=f"/v1/namespaces/{NS}/recall", body={"query": query}))
    assert status == 200, body
    return [hit["id"] for hit in body["results"]]


def indexed_ids(stack: AwsStack) -> set[str]:
    return {doc["memory_id"] for doc in stack.double.documents(OPENSEARCH_INDEX)}


def test_a_write_is_accepted_stored_indexed_recalled_and_forgotten(stack: AwsStack) -> None:
    write = stack.load_function("write").handler
    worker = stack.load_function("write_worker").handler
    recall = stack.load_function("recall").handler
    forget = stack.load_function("forget").handler
    stack.env["REARVIEW_AWS__FRESHNESS_WINDOW_SECONDS"] = "0"
    recall_index_only = stack.load_function("recall").handler
    sync = index_sync_handler(stack)
    stream = StreamDriver(stack)
    content = "Booked the night train to Vienna for the architecture summit"

    status, accepted = call(
        write, load_event("memory_write", path=f"/v1/namespaces/{NS}/memories", body={"content": content})
    )

    assert status == 202 and accepted["status"] == "accepted"
    memory_id = accepted["id"]
    get_event = load_event("memory_get", path=f"/v1/namespaces/{NS}/memories/{memory_id}")
    assert call(recall, get_event)[0] == 404  # queued, not stored yet

    delivered = stack.deliver(worker)

    assert delivered["received"] == 1 and delivered["batchItemFailures"] == []
    status, stored = call(recall, get_event)
    assert status == 200 and stored["content"] == content and stored["id"] == memory_id
    # Read-your-writes: not indexed yet, and still recalled (from the store's recent episodes) ...
    assert memory_id not in indexed_ids(stack)
    assert recall_ids(recall, "night train to Vienna") == [memory_id]
    # ... which the index alone cannot do until the stream reaches it.
    assert recall_ids(recall_index_only, "night train to Vienna") == []

    assert stream.pump(sync) >= 1

    assert memory_id in indexed_ids(stack)
    assert recall_ids(recall_index_only, "night train to Vienna") == [memory_id]

    status, receipt = call(forget, load_event("memory_delete", path=f"/v1/namespaces/{NS}/memories/{memory_id}"))
    assert status == 200 and receipt["ids"] == [memory_id]
    assert call(recall, get_event)[0] == 404
    stream.pump(sync)
    assert memory_id not in indexed_ids(stack)
    assert recall_ids(recall, "night train to Vienna") == []
    assert recall_ids(recall_index_only, "night train to Vienna") == []


def test_batches_are_accepted_whole_and_stored_once_even_when_delivered_twice(stack: AwsStack) -> None:
    write = stack.load_function("write").handler
    worker = stack.load_function("write_worker").handler
    items = [
        {"content": "Signed the lease for the flat on Rua Augusta", "id": "lease"},
        {"content": "Dana prefers morning meetings before ten", "layer": "semantic", "dimension": "meetings"},
        {"content": "ok"},  # below the importance threshold: answered at once, never queued
    ]

    status, body = call(write, load_event("memory_batch", path=f"/v1/namespaces/{NS}/memories/batch",
                                          body={"items": items}))  # fmt: skip

    assert status == 200
    statuses = [r["status"] for r in body["results"]]
    assert statuses == ["accepted", "accepted", "skipped"]
    ids = [r["id"] for r in body["results"][:2]]
    assert ids[0] == "lease"
    # The poller's delete is lost: the message comes back and is processed a second time.
    first = stack.deliver(worker, lose_delete=lambda _: True)
    again = stack.deliver(worker)

    assert (first["received"], first["batchItemFailures"]) == (1, [])
    assert (again["received"], again["batchItemFailures"]) == (1, [])
    assert again["message_ids"] == first["message_ids"]
    assert stack.deliver(worker)["received"] == 0

    from rearview.adapters.dynamodb import DynamoDBMemoryStore

    store = DynamoDBMemoryStore("rearview-test", client=stack.dynamodb)
    stored = store.get_many(NS, ids)
    assert set(stored) == set(ids)
    assert stored["lease"].version == 1 and stored["lease"].confirmations == 1
    assert usage_stats(store, NS, stored["lease"].created_at).counts["episodic"] == 1


def test_a_write_that_merged_confirms_its_memory_once_when_delivered_twice(stack: AwsStack) -> None:
    # A merged write stores no id of its own: its redelivery is known as the occurrence the memory took in.
    write = stack.load_function("write").handler
    worker = stack.load_function("write_worker").handler
    content = "The user prefers an aisle seat on long flights"
    path = f"/v1/namespaces/{NS}/memories"
    status, first = call(write, load_event("memory_write", path=path, body={"content": content}))
    assert status == 202
    stack.deliver(worker)
    StreamDriver(stack).pump(index_sync_handler(stack))  # indexed: the next write finds it as a near-duplicate
    call(write, load_event("memory_write", path=path, body={"content": content, "session_id": "s-2"}))

    once = stack.deliver(worker, lose_delete=lambda _: True)
    twice = stack.deliver(worker)

    assert (once["received"], twice["received"]) == (1, 1) and twice["message_ids"] == once["message_ids"]
    from rearview.adapters.dynamodb import DynamoDBMemoryStore

    stored = DynamoDBMemoryStore("rearview-test", client=stack.dynamodb).get(NS, first["id"])
    assert isinstance(stored, Episode) and stored.confirmations == 2 and "s-2" in stored.sessions


def test_working_memory_is_written_synchronously_by_the_write_function(stack: AwsStack) -> None:
    write = stack.load_function("write").handler
    path = f"/v1/namespaces/{NS}/sessions/s1/working/task"

    status, entry = call(write, load_event("working_put", path=path, body={"value": {"step": 2}}))

    assert status == 200 and entry["value"] == {"step": 2}
    status, view = call(write, load_event("working_get", path=f"/v1/namespaces/{NS}/sessions/s1/working"))
    assert status == 200 and view["entries"] == {"task": {"step": 2}}
    assert (
        stack.sqs.get_queue_attributes(QueueUrl=stack.queue_url, AttributeNames=["ApproximateNumberOfMessages"])[
            "Attributes"
        ]["ApproximateNumberOfMessages"]
        == "0"
    )


def test_a_load_with_its_vectors_is_stored_by_the_write_function_and_indexed(stack: AwsStack) -> None:
    write = stack.load_function("write").handler
    worker = stack.load_function("write_worker").handler
    recall = stack.load_function("recall").handler
    path = f"/v1/namespaces/{NS}/load"
    unit = [0.0] * EMBEDDING_DIM
    unit[7] = 2.0
    items = [
        {"id": "h1", "content": "Signed the lease for the flat on Rua Augusta", "vector": unit, "session_id": "s"},
        {"id": "h2", "content": "Paid the deposit for the Rua Augusta flat", "vector": unit, "session_id": "s"},
    ]

    status, refused = call(write, load_event("memory_load", path=path, body={"items": [*items, {"content": "No"}]}))
    assert status == 422 and refused["field"] == "items.2.vector" and "queued" in refused["message"], refused
    status, loaded = call(write, load_event("memory_load", path=path, body={"items": items}))

    assert status == 200 and (loaded["loaded"], loaded["embedded"], loaded["ids"]) == (2, 0, ["h1", "h2"]), loaded
    assert stack.deliver(worker)["received"] == 0, "a load is stored by the request, not queued"
    status, stored = call(recall, load_event("memory_get", path=f"/v1/namespaces/{NS}/memories/h2"))
    assert status == 200 and stored["context"] == items[0]["content"]
    StreamDriver(stack).pump(index_sync_handler(stack))
    assert {"h1", "h2"} <= indexed_ids(stack)
    assert call(write, load_event("memory_load", path=path, body={"items": items}))[1]["skipped"] == 2
