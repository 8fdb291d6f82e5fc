"""What a recall writes on AWS, counted on moto through the real function handlers: one DynamoDB write for the
recall and the accesses of everything it returned, and now and then a lease of the key's requests counted against
its limit (`rearview.service.throttle`). What the access counts feed keeps working: `get` and `stats` count them at
once, and the hourly sweep folds them into the memories, where retention's `keep_accessed_at_least` reads them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from rearview.adapters.dynamodb import DynamoDBMemoryStore
from rearview.clock import ManualClock
from rearview.domain.search import MemoryFilter
from support.aws_stack import TABLE, AwsStack, FakeLambdaContext, aws_stack
from support.events import load_event

pytestmark = pytest.mark.integration

NS = "acme:u-42"
RECALLS = 40
_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


@pytest.fixture
def stack() -> Iterator[AwsStack]:
    with aws_stack() as s:
        yield s


class WriteLog:
    """Every DynamoDB write a client made after `start`, by operation and partition key."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str]] = []

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if model.name in _WRITES:
            key = params.get("Key") or params.get("Item") or {}
            self.writes.append((model.name, str(key.get("pk", {}).get("S", "?"))))


def call(handler: Any, event: dict[str, Any]) -> dict[str, Any]:
    response = handler(event, FakeLambdaContext())
    assert response["statusCode"] == 200, response
    return dict(json.loads(response["body"]))


def test_a_recall_writes_once_however_many_memories_it_returns(stack: AwsStack) -> None:
    log = WriteLog()
    # Clients made from now on (the functions' own, built on their first invocation) report their calls.
    boto3._get_default_session().events.register("before-parameter-build.dynamodb", log)
    write, worker = stack.load_function("write").handler, stack.load_function("write_worker").handler
    texts = [f"Planned the Lisbon trip with Dana, step {i}: flights, hotel and the ferry" for i in range(12)]
    for start in (0, 6):
        items = [{"content": text, "id": f"ep-{start + i}"} for i, text in enumerate(texts[start : start + 6])]
        body = {"items": items}
        response = write(load_event("memory_batch", path=f"/v1/namespaces/{NS}/memories/batch", body=body),
                         FakeLambdaContext())  # fmt: skip
        assert response["statusCode"] == 200, response  # every item accepted onto the queue
        stack.drain(worker)
    recall_function = stack.load_function("recall")
    recall = recall_function.handler
    # The key's requests all fall in one minute (its counter's window), however long the test takes.
    recall_function.runtime.services().access.throttle.clock = ManualClock(datetime(2026, 12, 1, 9, 0, 5, tzinfo=UTC))
    event = load_event("recall", path=f"/v1/namespaces/{NS}/recall", body={"query": "Lisbon trip with Dana"})

    quota_writes = 0
    for _ in range(RECALLS):
        log.writes.clear()
        returned = [hit["id"] for hit in call(recall, event)["results"]]
        assert len(returned) >= 5
        data_writes = [w for w in log.writes if not w[1].startswith("QUOTA#")]
        assert data_writes == [("UpdateItem", f"NS#{NS}")], log.writes
        counted = [w for w in log.writes if w[1].startswith("QUOTA#")]
        assert [name for name, _ in counted] in ([], ["UpdateItem"]), log.writes
        quota_writes += len(counted)
    # The key's requests are counted in leases (up to 24 at the default 1,200 a minute, see service.throttle):
    # 40 recalls of one container are counted in leases of 1, 2, 4, 8, 16 and 24: 6 writes.
    assert quota_writes == 6, "one write per lease of the key's requests, not per request"

    # Counted at once where a caller reads them: one memory, and the namespace's stats.
    first = returned[0]
    got = call(recall, load_event("memory_get", path=f"/v1/namespaces/{NS}/memories/{first}"))
    assert got["access_count"] == RECALLS and got["last_accessed_at"] is not None
    stats = call(recall, load_event("stats", path=f"/v1/namespaces/{NS}/stats"))
    assert (stats["recall_count"], stats["recall_hits"]) == (RECALLS, RECALLS)

    # The hourly sweep folds the windows into the memories: one write per memory, however often it was recalled.
    log.writes.clear()
    sweep = stack.load_function("forget").handler(load_event("retention_schedule", kind="eventbridge"),
                                                   FakeLambdaContext())  # fmt: skip
    assert sweep["access_settled"] == len(returned)
    folded = [w for w in log.writes if w[0] == "UpdateItem" and w[1] == f"NS#{NS}"]
    assert len(folded) == len(returned) + 2, "a write per memory, the namespace's recall counters and its day's"
    store = DynamoDBMemoryStore(TABLE, client=stack.dynamodb)
    listed = {m.id: m.access_count for m in store.list_memories(NS, MemoryFilter())}
    assert all(listed[i] == RECALLS for i in returned) and sum(listed.values()) == RECALLS * len(returned)
    got = call(recall, load_event("memory_get", path=f"/v1/namespaces/{NS}/memories/{first}"))
    assert got["access_count"] == RECALLS
    assert call(recall, load_event("stats", path=f"/v1/namespaces/{NS}/stats"))["recall_count"] == RECALLS
