"""A deployment without a search cluster (`rearview:search=table`, `aws.search` `store`), end to end on moto through
the real handlers: writes are stored and found by recall from the table itself, index sync has no index to keep in
step and still fires Hindsight's triggers, and an erase has no index to reach."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from support.aws_stack import OPENSEARCH_INDEX, AwsStack, FakeLambdaContext, StreamDriver, aws_stack
from support.events import load_event

pytestmark = pytest.mark.integration

NS = "acme:u-42"


@pytest.fixture
def stack() -> Iterator[AwsStack]:
    with aws_stack() as s:
        s.env["REARVIEW_AWS__SEARCH"] = "store"
        s.env.pop("REARVIEW_AWS__OPENSEARCH_ENDPOINT", None)
        yield s


def call(handler: Any, event: dict[str, Any]) -> dict[str, Any]:
    response = handler(event, FakeLambdaContext())
    assert response["statusCode"] == 200, response
    return dict(json.loads(response["body"]))


def test_recall_finds_what_was_written_with_no_index_at_all(stack: AwsStack) -> None:
    write, worker = stack.load_function("write").handler, stack.load_function("write_worker").handler
    sync, recall = stack.load_function("index_sync").handler, stack.load_function("recall").handler
    for memory_id, content in (("ep-flight", "Booked the 9:40 flight to Lisbon"), ("ep-desk", "Ordered a desk")):
        event = load_event("memory_write", path=f"/v1/namespaces/{NS}/memories", body={"content": content,
                                                                                        "id": memory_id})  # fmt: skip
        assert write(event, FakeLambdaContext())["statusCode"] == 202
    stack.drain(worker)
    StreamDriver(stack).pump(sync)  # nothing to index; the batch is still taken whole

    found = call(recall, load_event("recall", path=f"/v1/namespaces/{NS}/recall", body={"query": "flight to Lisbon"}))
    assert [hit["id"] for hit in found["results"]][:1] == ["ep-flight"]
    assert stack.double.documents(OPENSEARCH_INDEX) == [], "no cluster is asked"
    receipt = call(stack.load_function("erase").handler, load_event("namespace_erase", path=f"/v1/namespaces/{NS}"))
    assert receipt["namespaces"][NS]["episodic"] == 2 and receipt["namespaces"][NS]["index"] == 0
