"""Retention on AWS, on moto (DynamoDB with its stream, SQS) and the OpenSearch test double, through the real function
handlers: the forget function keeps the policies over HTTP (`RETENTION` items in the table) and, invoked by its
EventBridge rule, sweeps every namespace through the forget path; the table's stream carries the deletes to the
index. The clock is the real one: episodes are written as having happened long ago (`occurred_at`), not waited for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rearview.adapters.dynamodb import DynamoDBMemoryStore
from rearview.adapters.dynamodb.retention_policies import RETENTION_PK
from rearview.api.lambda_runtime import SWEEP_MARGIN_MILLIS
from rearview.bootstrap import build
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.memory import Episode, Fact
from rearview.domain.search import MemoryFilter
from support.aws_stack import OPENSEARCH_INDEX, TABLE, AwsStack, FakeLambdaContext, StreamDriver, aws_stack
from support.events import load_event

pytestmark = pytest.mark.integration

NS = "acme:team:agent-1"
OWNER = "acme:team"  # the policy is set here and governs NS
UNGOVERNED = "acme:agent-2"  # under no policy
POLICY = {"episode_max_age_days": 365, "archive_after_days": 30, "keep_accessed_at_least": 2}


@pytest.fixture
def stack() -> Iterator[AwsStack]:
    with aws_stack() as s:
        yield s


def call(handler: Any, event: dict[str, Any]) -> tuple[int, Any]:
    response = handler(event, FakeLambdaContext(function_name="rearview-forget"))
    body = response.get("body")
    return response["statusCode"], json.loads(body) if body else None


def write(handler: Any, namespace: str, content: str, days_ago: float, session: str = "s1") -> str:
    occurred_at = (datetime.now(UTC) - timedelta(days=days_ago)).isoformat()
    body = {"content": content, "occurred_at": occurred_at, "session_id": session}
    status, accepted = call(handler, load_event("memory_write", path=f"/v1/namespaces/{namespace}/memories", body=body))
    assert status == 202, accepted
    return str(accepted["id"])


def retention(handler: Any, method: str, namespace: str, body: Any = None) -> tuple[int, Any]:
    event = load_event(f"retention_{method}", path=f"/v1/namespaces/{namespace}/retention", body=body)
    return call(handler, event)


def indexed(stack: AwsStack) -> set[str]:
    return {doc["memory_id"] for doc in stack.double.documents(OPENSEARCH_INDEX)}


def test_policies_are_kept_over_http_as_table_items_and_inherited(stack: AwsStack) -> None:
    forget = stack.load_function("forget").handler

    assert retention(forget, "get", NS) == (200, {"namespace": NS, "policy": None, "set_on": None, "updated_at": None})
    status, body = retention(forget, "put", OWNER, POLICY)
    assert status == 200 and body["set_on"] == OWNER and body["policy"] == POLICY
    status, body = retention(forget, "get", NS)  # governed by the policy above it
    assert status == 200 and (body["set_on"], body["policy"]) == (OWNER, POLICY)

    status, refused = retention(forget, "put", NS, {"episode_max_age_days": 30, "archive_after_days": 90})
    assert status == 422 and "archive_after_days" in refused["message"]
    status, refused = retention(forget, "put", NS, {"episode_max_age_days": 30, "forever": True})
    assert status == 422 and refused["field"] == "forever"

    items = stack.dynamodb.query(
        TableName=TABLE, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": RETENTION_PK}}
    )["Items"]
    assert [item["sk"]["S"] for item in items] == [OWNER]
    status, body = retention(forget, "delete", OWNER)
    assert status == 200 and body["policy"] is None
    assert (
        stack.dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": RETENTION_PK}, "sk": {"S": OWNER}}).get("Item")
        is None
    )


def test_the_scheduled_sweep_forgets_archives_and_keeps_and_the_index_follows(stack: AwsStack) -> None:
    write_fn = stack.load_function("write").handler
    worker = stack.load_function("write_worker").handler
    forget = stack.load_function("forget").handler
    sync = stack.load_function("index_sync").handler
    stream = StreamDriver(stack)
    asked = ["Please reply in Chinese.", "Chinese please.", "Answer in Chinese, thanks."]
    ancient = [write(write_fn, NS, text, 400, session=f"s{n}") for n, text in enumerate(asked)]
    recalled = write(write_fn, NS, "The user is allergic to peanuts, said at the clinic", 400)
    old = write(write_fn, NS, "Booked the ferry to Naxos for the June holiday", 60)
    fresh = write(write_fn, NS, "Ordered the vegan menu for the March offsite", 1)
    elsewhere = write(write_fn, UNGOVERNED, "Flew to Lisbon for the Web Summit keynote", 400)
    stack.drain(worker)
    store = DynamoDBMemoryStore(TABLE, client=stack.dynamodb)
    for _ in range(2):
        store.record_access(NS, [recalled], datetime.now(UTC))
    build(stack.settings("consolidate")).consolidation.consolidate(NS, ConsolidateRequest())
    [preference] = [m for m in store.list_memories(NS, MemoryFilter(layers=("semantic",))) if isinstance(m, Fact)]
    assert set(preference.provenance) == set(ancient)
    stream.pump(sync)
    assert {*ancient, recalled, old, fresh, elsewhere, preference.id} <= indexed(stack)
    assert retention(forget, "put", OWNER, POLICY)[0] == 200

    sweep = forget(load_event("retention_schedule", kind="eventbridge"), FakeLambdaContext())

    [report] = sweep["namespaces"]
    assert (report["namespace"], report["set_on"]) == (NS, OWNER)
    assert (report["forgotten"], report["archived"], report["kept"], report["facts_removed"]) == (3, 1, 1, 1)
    assert all(store.get(NS, memory_id) is None for memory_id in [*ancient, old, preference.id])
    assert store.get(NS, recalled) is not None and store.get(NS, fresh) is not None
    assert store.get(UNGOVERNED, elsewhere) is not None  # no policy governs it
    stream.pump(sync)
    assert indexed(stack) == {recalled, fresh, elsewhere}
    # A second sweep finds nothing more to do; HTTP still reaches the same function.
    [again] = forget(load_event("retention_schedule", kind="eventbridge"), FakeLambdaContext())["namespaces"]
    assert (again["forgotten"], again["archived"], again["kept"]) == (0, 0, 1)
    status, receipt = call(forget, load_event("forget", path=f"/v1/namespaces/{NS}/forget", body={"ids": [fresh]}))
    assert status == 200 and receipt["deleted"]["episodic"] == 1


def test_a_sweep_with_too_little_time_left_stops_and_says_so(stack: AwsStack) -> None:
    write_fn = stack.load_function("write").handler
    forget = stack.load_function("forget").handler
    ancient = write(write_fn, NS, "Flew to Lisbon for the Web Summit keynote", 400)
    stack.drain(stack.load_function("write_worker").handler)
    assert retention(forget, "put", OWNER, {"episode_max_age_days": 365})[0] == 200
    store = DynamoDBMemoryStore(TABLE, client=stack.dynamodb)
    schedule = load_event("retention_schedule", kind="eventbridge")

    cut_short = forget(schedule, FakeLambdaContext(remaining_millis=SWEEP_MARGIN_MILLIS - 1))

    assert (cut_short["unfinished"], cut_short["namespaces"]) == (1, [])
    assert store.get(NS, ancient) is not None
    full = forget(schedule, FakeLambdaContext(remaining_millis=SWEEP_MARGIN_MILLIS + 20_000))
    assert full["unfinished"] == 0 and store.get(NS, ancient) is None


def test_the_sweep_forgets_expired_memories_with_the_cascade_before_the_ttl_does(stack: AwsStack) -> None:
    """A memory that expires is found by the `expiring` index and forgotten by the hourly sweep through forget's
    cascade (a fact induced from it alone goes too), and its table TTL is set a grace later, as a backstop only:
    DynamoDB's TTL delete would skip the cascade."""
    from rearview.adapters.dynamodb.table import EXPIRY_GRACE, TTL_ATTRIBUTE
    from rearview.domain.changes import ChangeSet
    from support.contract_backends import make_episode, make_fact

    forget = stack.load_function("forget").handler
    sync = stack.load_function("index_sync").handler
    stream = StreamDriver(stack)
    store = DynamoDBMemoryStore(TABLE, client=stack.dynamodb)
    now = datetime.now(UTC).replace(microsecond=0)
    gone, tomorrow = now - timedelta(minutes=1), now + timedelta(days=1)
    memories: list[Episode | Fact] = [
        make_episode(NS, "code", "The door code of lab 4 is 4411", occurred_at=now, expires_at=gone),
        make_fact(NS, "from-code", "Lab 4's door code is known", provenance=["code"], last_confirmed_at=now),
        make_episode(NS, "later", "Parking pass for the week is P-220", occurred_at=now, expires_at=tomorrow),
        make_episode(NS, "kept", "The user drives a blue Fiat", occurred_at=now),
    ]
    vectors = build(stack.settings("write")).embedder.embed([m.content for m in memories])
    store.apply(NS, ChangeSet(upserts=list(zip(memories, vectors, strict=True))))
    stream.pump(sync)
    assert {"code", "from-code", "later", "kept"} <= indexed(stack)
    item = stack.dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"NS#{NS}"}, "sk": {"S": "EP#later"}})["Item"]
    assert int(item[TTL_ATTRIBUTE]["N"]) == int((tomorrow + EXPIRY_GRACE).timestamp())

    sweep = forget(load_event("retention_schedule", kind="eventbridge"), FakeLambdaContext())

    assert sweep["expired"] == 2  # the expired episode, and the fact induced from it alone
    assert [store.get(NS, memory_id) is None for memory_id in ("code", "from-code", "later", "kept")] == [
        True,
        True,
        False,
        False,
    ]
    stream.pump(sync)
    assert not {"code", "from-code"} & indexed(stack)
    assert forget(load_event("retention_schedule", kind="eventbridge"), FakeLambdaContext())["expired"] == 0
