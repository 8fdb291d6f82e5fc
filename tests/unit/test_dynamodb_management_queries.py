"""What the management contract cannot see of the DynamoDB store (on moto): how it reads. A page of memories walks
the `by_time` index, the namespaces come from the sparse `by_namespace` index by prefix, history and erase read
the namespace's own partition: queries, never a scan; and a namespace's writes leave its `by_namespace` entry as
it was (its keys are set once)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from rearview.adapters.dynamodb import DynamoDBMemoryStore, create_table
from rearview.clock import ManualClock
from rearview.domain.changes import ChangeSet
from rearview.domain.listing import PagePosition
from rearview.domain.memory import Episode
from rearview.domain.search import MemoryFilter
from support.recording_client import RecordingClient

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
TABLE = "rearview-manage"
NAMESPACES = ["acme", "acme2", "acme:u-42", "acme:u-42:trip", "zeta"]


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingClient]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        recording = RecordingClient(client, page=2)
        store = DynamoDBMemoryStore(TABLE, client=recording, clock=ManualClock(T0))
        for namespace in NAMESPACES:
            episodes = [
                Episode(
                    id=f"e{i}",
                    namespace=namespace,
                    content=f"note {i}",
                    occurred_at=T0 + timedelta(minutes=i),
                    created_at=T0,
                )  # fmt: skip
                for i in range(5)
            ]
            store.apply(namespace, ChangeSet(upserts=[(e, None) for e in episodes]))
        recording.calls.clear()
        yield recording


def test_namespaces_by_prefix_are_a_query_of_the_sparse_index(recording: RecordingClient) -> None:
    store = DynamoDBMemoryStore(TABLE, client=recording)
    recording.calls.clear()  # the store's opening read of the table's embedder

    assert store.list_namespaces() == sorted(NAMESPACES)
    assert store.list_namespaces("acme:") == ["acme:u-42", "acme:u-42:trip"]
    assert store.list_namespaces("acme:u-42:") == ["acme:u-42:trip"]
    assert store.list_namespaces("nobody") == []

    assert recording.names() == {"query"}
    assert {request["IndexName"] for _, request in recording.calls} == {"by_namespace"}
    # Five namespaces in pages of two: the listing follows LastEvaluatedKey.
    assert len([r for _, r in recording.calls if ":prefix" not in r["ExpressionAttributeValues"]]) >= 3


def test_pages_history_and_erase_read_no_more_than_the_namespace(recording: RecordingClient) -> None:
    store = DynamoDBMemoryStore(TABLE, client=recording, clock=ManualClock(T0))

    first = store.page_memories("acme:u-42", MemoryFilter(), 3)
    rest = store.page_memories("acme:u-42", MemoryFilter(), 3, PagePosition.of(first[-1]))
    store.history("acme:u-42", "e1")
    erased = store.erase_namespace("acme:u-42")

    assert [m.id for m in first + rest] == ["e4", "e3", "e2", "e1", "e0"]
    assert erased.episodic == 5
    assert "scan" not in recording.names()
    queried = [request for name, request in recording.calls if name == "query"]
    assert {r.get("IndexName") for r in queried} <= {"by_time", None}
    assert all(
        value["S"].startswith("NS#acme:u-42")
        for r in queried
        for key, value in r["ExpressionAttributeValues"].items()
        if key in (":p", ":pk")
    )
    assert store.list_namespaces("acme:u-42") == ["acme:u-42:trip"]


def test_writes_leave_the_namespace_entry_as_it_was(recording: RecordingClient) -> None:
    store = DynamoDBMemoryStore(TABLE, client=recording, clock=ManualClock(T0))
    store.apply(
        "zeta",
        ChangeSet(upserts=[(Episode(id="e9", namespace="zeta", content="later", occurred_at=T0, created_at=T0), None)]),
    )
    store.record_recall("new-one", True, T0)

    state_updates = [
        request for name, request in recording.calls if name == "update_item" and request["Key"]["sk"] == {"S": "STATE"}
    ]
    assert state_updates and all("if_not_exists(ns_pk" in r["UpdateExpression"] for r in state_updates)
    # A namespace only recalled in is listed, as on the other backends.
    assert "new-one" in store.list_namespaces()
