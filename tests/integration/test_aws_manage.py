"""Memory by hand on AWS, end to end on moto (DynamoDB and its stream) and the OpenSearch test double, through the
real function handlers with the sample events: list (the recall function), edit (write), history (recall), export
(recall) and import (write), the namespaces (recall) and erase (erase). The index follows through index sync, so
recall from the index alone sees an edit and an erase."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from support.aws_stack import OPENSEARCH_INDEX, AwsStack, FakeLambdaContext, StreamDriver, aws_stack
from support.events import load_event

pytestmark = pytest.mark.integration

NS = "acme:u-42"
CHILD = "acme:u-42:trip"
ELSEWHERE = "acme:u-43"
MEMORIES = f"/v1/namespaces/{NS}/memories"
JSON = {"content-type": "application/json"}


@pytest.fixture
def stack() -> Iterator[AwsStack]:
    with aws_stack() as s:
        # Recall from the index alone: what it finds is what index sync put there.
        s.env["REARVIEW_AWS__FRESHNESS_WINDOW_SECONDS"] = "0"
        yield s


def call(handler: Any, event: dict[str, Any]) -> tuple[int, Any, dict[str, Any]]:
    response = handler(event, FakeLambdaContext())
    body = response.get("body") or ""
    content_type = str((response.get("headers") or {}).get("Content-Type", ""))
    return response["statusCode"], json.loads(body) if content_type.startswith("application/json") else body, response


class Deployment:
    def __init__(self, stack: AwsStack) -> None:
        self.stack = stack
        self.write = stack.load_function("write").handler
        self.worker = stack.load_function("write_worker").handler
        self.recall = stack.load_function("recall").handler
        self.erase = stack.load_function("erase").handler
        self.sync = stack.load_function("index_sync").handler
        self.stream = StreamDriver(stack)

    def remember(self, namespace: str, content: str, memory_id: str) -> None:
        body = {"content": content, "id": memory_id}
        status, accepted, _ = call(self.write, load_event("memory_write", path=f"/v1/namespaces/{namespace}/memories",
                                                          body=body))  # fmt: skip
        assert status == 202, accepted
        assert self.stack.deliver(self.worker)["batchItemFailures"] == []
        self.stream.pump(self.sync)

    def recalled(self, namespace: str, query: str) -> list[str]:
        event = load_event("recall", path=f"/v1/namespaces/{namespace}/recall", body={"query": query})
        status, body, _ = call(self.recall, event)
        assert status == 200, body
        return [hit["id"] for hit in body["results"]]

    def indexed_text(self, namespace: str, memory_id: str) -> str:
        """What the index holds to search a memory by."""
        (doc,) = [d for d in self.stack.double.documents(OPENSEARCH_INDEX)
                  if (d["namespace"], d["memory_id"]) == (namespace, memory_id)]  # fmt: skip
        return str(doc["search_text"])

    def indexed(self, namespace: str) -> set[str]:
        return {d["memory_id"] for d in self.stack.double.documents(OPENSEARCH_INDEX) if d["namespace"] == namespace}


@pytest.fixture
def aws(stack: AwsStack) -> Deployment:
    deployment = Deployment(stack)
    deployment.remember(NS, "Booked the 9:40 flight to Lisbon with an aisle seat", "ep-flight")
    deployment.remember(NS, "Dana sent the slides for the Porto workshop", "ep-slides")
    deployment.remember(NS, "Renewed the passport at the consulate", "ep-passport")
    deployment.remember(CHILD, "Packed the charger for the Lisbon trip", "ep-charger")
    deployment.remember(ELSEWHERE, "Ordered a standing desk for the home office", "ep-desk")
    return deployment


def test_list_pages_through_the_recall_function(aws: Deployment) -> None:
    status, first, _ = call(aws.recall, load_event("memories_list", path=MEMORIES, query={"limit": "2"}))
    assert status == 200 and len(first["items"]) == 2 and first["next_cursor"]
    aws.remember(NS, "Booked a table by the river for Friday", "ep-dinner")  # a write between the pages
    query = {"limit": "2", "cursor": first["next_cursor"]}
    status, rest, _ = call(aws.recall, load_event("memories_list", path=MEMORIES, query=query))

    assert status == 200 and rest["next_cursor"] is None
    assert sorted(m["id"] for m in first["items"] + rest["items"]) == ["ep-flight", "ep-passport", "ep-slides"]
    status, error, _ = call(aws.recall, load_event("memories_list", path=MEMORIES, query={"limit": "501"}))
    assert status == 422 and error["field"] == "limit"


def test_an_edit_is_reindexed_and_a_stale_version_is_refused(aws: Deployment) -> None:
    assert aws.recalled(NS, "aisle seat")[0] == "ep-flight"
    body = {"content": "Booked the 9:40 flight to Lisbon with a window seat"}
    edit = load_event("memory_edit", path=f"{MEMORIES}/ep-flight", body=body, headers={**JSON, "if-match": "1"})

    status, edited, _ = call(aws.write, edit)
    aws.stream.pump(aws.sync)

    assert status == 200 and edited["version"] == 2 and edited["content"] == body["content"]
    assert aws.recalled(NS, "window seat")[0] == "ep-flight"
    assert "window" in aws.indexed_text(NS, "ep-flight") and "aisle" not in aws.indexed_text(NS, "ep-flight")
    stale = load_event("memory_edit", path=f"{MEMORIES}/ep-flight", body={"content": "x y z"},
                       headers={**JSON, "if-match": "1"})  # fmt: skip
    status, error, _ = call(aws.write, stale)
    assert status == 412, error
    status, history, _ = call(aws.recall, load_event("memory_history", path=f"{MEMORIES}/ep-flight/history"))
    assert status == 200
    assert [(v["version"], v["changed_by"]) for v in history["versions"]] == [(1, "write"), (2, "edit")]
    assert "aisle seat" in history["versions"][0]["memory"]["content"]
    assert history["versions"][1]["actor"] == "3f9a0c4e5b6d7e8f"  # the key in the authorizer's context


def test_export_then_import_elsewhere_restores_ids_and_versions_once(aws: Deployment) -> None:
    edit = load_event("memory_edit", path=f"{MEMORIES}/ep-slides", body={"tags": ["porto"]}, headers=JSON)
    assert call(aws.write, edit)[0] == 200
    status, ndjson, response = call(aws.recall, load_event("export", path=f"/v1/namespaces/{NS}/export"))
    assert status == 200 and response["headers"]["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in ndjson.splitlines()]
    assert sorted(line["id"] for line in lines) == ["ep-flight", "ep-passport", "ep-slides"]

    target = f"/v1/namespaces/{ELSEWHERE}/import"
    ndjson_headers = {"content-type": "application/x-ndjson"}
    status, result, _ = call(aws.write, load_event("import", path=target, body=ndjson, headers=ndjson_headers))
    # Accepted onto the write queue (checked and redacted first), restored by the worker in chunks.
    assert status == 200 and (result["accepted"], result["restored"]) == (3, 0)
    queued = aws.stack.sqs.receive_message(QueueUrl=aws.stack.queue_url, VisibilityTimeout=0)["Messages"]
    assert [len(json.loads(m["Body"])["restore"]) for m in queued] == [3]
    assert aws.stack.deliver(aws.worker)["batchItemFailures"] == []
    again = call(aws.write, load_event("import", path=target, body=ndjson, headers=ndjson_headers))[1]
    assert again["accepted"] == 3 and aws.stack.deliver(aws.worker)["batchItemFailures"] == []
    aws.stream.pump(aws.sync)

    status, listed, _ = call(aws.recall, load_event("memories_list", path=f"/v1/namespaces/{ELSEWHERE}/memories",
                                                    query={"limit": "10"}))  # fmt: skip
    restored = {m["id"]: m for m in listed["items"]}
    assert set(restored) == {"ep-desk", "ep-flight", "ep-passport", "ep-slides"}
    assert restored["ep-slides"]["version"] == 2 and restored["ep-slides"]["namespace"] == ELSEWHERE
    assert {"ep-flight", "ep-slides"} <= aws.indexed(ELSEWHERE)
    history = call(
        aws.recall, load_event("memory_history", path=f"/v1/namespaces/{ELSEWHERE}/memories/ep-slides/history")
    )
    assert [v["version"] for v in history[1]["versions"]] == [1, 2]


def test_erase_takes_the_subtree_from_the_table_and_the_index(aws: Deployment) -> None:
    status, listed, _ = call(aws.recall, load_event("namespaces_list", query={"prefix": "acme:u-42"}))
    assert status == 200 and [n["namespace"] for n in listed["namespaces"]] == [NS, CHILD]
    assert aws.indexed(CHILD) == {"ep-charger"}

    status, receipt, _ = call(aws.erase, load_event("namespace_erase", path=f"/v1/namespaces/{NS}",
                                                    query={"subtree": "true"}))  # fmt: skip
    aws.stream.pump(aws.sync)

    assert (
        status == 200 and receipt["namespaces"][NS]["episodic"] == 3 and receipt["namespaces"][CHILD]["episodic"] == 1
    )
    assert aws.indexed(NS) == set() and aws.indexed(CHILD) == set()
    assert aws.recalled(NS, "Lisbon flight") == [] and aws.recalled(CHILD, "Lisbon charger") == []
    assert call(aws.recall, load_event("memories_list", path=MEMORIES, query={}))[1]["items"] == []
    # The sibling is untouched, in the table and in the index.
    assert aws.indexed(ELSEWHERE) == {"ep-desk"}
    assert aws.recalled(ELSEWHERE, "standing desk") == ["ep-desk"]


def test_a_write_queued_before_the_erase_does_not_bring_the_namespace_back(aws: Deployment) -> None:
    body = {"content": "Moved the Lisbon flight to 11:15", "id": "ep-moved"}
    status, _, _ = call(aws.write, load_event("memory_write", path=MEMORIES, body=body))
    assert status == 202  # accepted onto the queue, not stored yet

    status, receipt, _ = call(aws.erase, load_event("namespace_erase", path=f"/v1/namespaces/{NS}"))
    assert status == 200 and receipt["queued_writes_dropped_until"] is not None
    assert any("point-in-time recovery" in item for item in receipt["not_reached"])
    assert aws.stack.deliver(aws.worker)["batchItemFailures"] == []
    aws.stream.pump(aws.sync)

    assert call(aws.recall, load_event("memories_list", path=MEMORIES, query={}))[1]["items"] == []
    assert aws.indexed(NS) == set()
    assert aws.stack.sqs.receive_message(QueueUrl=aws.stack.dlq_url).get("Messages", []) == [], "nothing kept"
    # A write accepted after the erase is stored: the namespace may be used again.
    aws.remember(NS, "Booked a new flight to Lisbon", "ep-new")
    assert aws.recalled(NS, "flight to Lisbon") == ["ep-new"]


def test_a_large_import_goes_through_the_queue_in_chunks(aws: Deployment) -> None:
    from datetime import UTC, datetime

    from rearview.domain.memory import Episode
    from rearview.domain.transfer import IMPORT_CHUNK_ITEMS, exported

    at = datetime(2026, 3, 1, tzinfo=UTC)
    lines = [
        exported(Episode(id=f"ep-old-{i}", namespace="source", content=f"Old note number {i} about the Lisbon office",
                         occurred_at=at, created_at=at), []).model_dump_json()
        for i in range(2 * IMPORT_CHUNK_ITEMS + 20)
    ]  # fmt: skip
    target = f"/v1/namespaces/{ELSEWHERE}/import"
    event = load_event("import", path=target, body="\n".join(lines), headers={"content-type": "application/x-ndjson"})
    status, result, _ = call(aws.write, event)
    assert status == 200 and result["accepted"] == len(lines)

    sizes = []
    while messages := aws.stack.sqs.receive_message(QueueUrl=aws.stack.queue_url, MaxNumberOfMessages=10,
                                                    VisibilityTimeout=0).get("Messages", []):  # fmt: skip
        sizes += [len(json.loads(m["Body"])["restore"]) for m in messages]
        if sum(sizes) >= len(lines):
            break
    assert sorted(sizes) == [20, IMPORT_CHUNK_ITEMS, IMPORT_CHUNK_ITEMS]
    aws.stack.drain(aws.worker)
    listed = call(aws.recall, load_event("memories_list", path=f"/v1/namespaces/{ELSEWHERE}/memories",
                                         query={"limit": "200"}))[1]  # fmt: skip
    assert sum(1 for m in listed["items"] if m["id"].startswith("ep-old-")) == len(lines)
