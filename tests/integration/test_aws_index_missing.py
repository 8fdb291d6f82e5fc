"""Day one and an outage of the search index on AWS, through the real function handlers on moto and the OpenSearch
double: with the index missing (a new deployment before index_setup made it, or an index dropped) or unreachable,
writes are stored and recall answers 200 from the table's own search of the namespace, never another's, counting
each such search as `SearchFallbacks`; the index_setup custom resource then makes the index, and recall reads it
again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from rearview.api.index_setup import index_setup_handler
from support.aws_stack import OPENSEARCH_INDEX, AwsStack, FakeLambdaContext, StreamDriver, aws_stack
from support.events import load_event

pytestmark = pytest.mark.integration

NS = "acme:u-42"
OTHER = "acme:u-7"  # in the test key's scope: isolation here is the store's, not the key's
CONTENT = "Booked the night train to Vienna for the architecture summit"


@pytest.fixture
def stack() -> Iterator[AwsStack]:
    with aws_stack() as s:
        # Recall finds a memory through the index (or the fallback) only: no read of recent episodes beside it.
        s.env["REARVIEW_AWS__FRESHNESS_WINDOW_SECONDS"] = "0"
        yield s


def call(handler: Any, event: dict[str, Any]) -> tuple[int, Any]:
    response = handler(event, FakeLambdaContext())
    body = response.get("body")
    return response["statusCode"], json.loads(body) if body else None


def write(stack: AwsStack, namespace: str, content: str) -> str:
    """Write through the write function and store it through the worker; the memory's id."""
    handler = stack.load_function("write").handler
    status, accepted = call(
        handler, load_event("memory_write", path=f"/v1/namespaces/{namespace}/memories", body={"content": content})
    )
    assert status == 202, accepted
    delivered = stack.deliver(stack.load_function("write_worker").handler)
    assert delivered["received"] == 1 and delivered["batchItemFailures"] == [], delivered
    return str(accepted["id"])


def recall(stack: AwsStack, namespace: str, query: str) -> tuple[int, Any]:
    """A recall by a freshly started recall function (a cold start: no memory of an earlier outage)."""
    handler = stack.load_function("recall").handler
    return call(handler, load_event("recall", path=f"/v1/namespaces/{namespace}/recall", body={"query": query}))


def fallbacks(output: str) -> int:
    """How many searches the functions' EMF metric lines counted as answered by the store."""
    counted = 0
    for line in output.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            value = json.loads(line).get("SearchFallbacks")
            counted += sum(value) if isinstance(value, list) else int(value or 0)
    return counted


def index_exists(stack: AwsStack) -> bool:
    return stack.double.handle("HEAD", f"/{OPENSEARCH_INDEX}", b"")[0] == 200


def custom_resource_event(request_type: str) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-custom-resource-response.example/presigned",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/Rearview/guid",
        "RequestId": "req-1",
        "LogicalResourceId": "SearchIndex",
        "ResourceType": "Custom::RearviewSearchIndex",
        "ResourceProperties": {"IndexName": OPENSEARCH_INDEX, "Dimension": "256"},
    }


def test_a_deployment_without_its_index_recalls_from_the_table_until_index_setup_makes_it(
    stack: AwsStack, capsys: pytest.CaptureFixture[str]
) -> None:
    stack.double.handle("DELETE", f"/{OPENSEARCH_INDEX}", b"")
    assert not index_exists(stack)
    mine = write(stack, NS, CONTENT)
    theirs = write(stack, OTHER, CONTENT)  # the same words in another namespace
    capsys.readouterr()

    status, body = recall(stack, NS, "night train to Vienna")

    assert status == 200, body
    assert [hit["id"] for hit in body["results"]] == [mine]  # the table's search of this namespace only
    assert fallbacks(capsys.readouterr().out) >= 1
    status, body = recall(stack, OTHER, "night train to Vienna")
    assert status == 200 and [hit["id"] for hit in body["results"]] == [theirs]

    # Deploy: CloudFormation invokes index_setup, whose answer goes to the pre-signed URL.
    function = stack.load_function("index_setup")
    answers: list[dict[str, Any]] = []
    handler = index_setup_handler(function.runtime, respond=lambda event, answer: answers.append(answer))
    handler(custom_resource_event("Create"), FakeLambdaContext(function_name="rearview-index_setup"))

    (answer,) = answers
    assert answer["Status"] == "SUCCESS", answer
    assert answer["PhysicalResourceId"] == OPENSEARCH_INDEX and answer["Data"] == {"Created": "true"}
    assert index_exists(stack)
    # index_sync fills it from the stream; recall reads the index again, and counts no fallback.
    assert StreamDriver(stack).pump(stack.load_function("index_sync").handler) >= 1
    capsys.readouterr()
    status, body = recall(stack, NS, "night train to Vienna")
    assert status == 200 and [hit["id"] for hit in body["results"]] == [mine]
    assert fallbacks(capsys.readouterr().out) == 0

    # A later deploy finds the index there: nothing to create, and nothing lost.
    handler(custom_resource_event("Update"), FakeLambdaContext(function_name="rearview-index_setup"))
    assert answers[-1]["Status"] == "SUCCESS" and answers[-1]["Data"] == {"Created": "false"}
    assert {doc["memory_id"] for doc in stack.double.documents(OPENSEARCH_INDEX)} == {mine, theirs}


def test_recall_survives_an_unreachable_index(stack: AwsStack, capsys: pytest.CaptureFixture[str]) -> None:
    mine = write(stack, NS, CONTENT)
    write(stack, OTHER, CONTENT)
    StreamDriver(stack).pump(stack.load_function("index_sync").handler)
    stack.double.set_down(True)
    capsys.readouterr()
    try:
        status, body = recall(stack, NS, "night train to Vienna")
    finally:
        stack.double.set_down(False)
    assert status == 200, body
    assert [hit["id"] for hit in body["results"]] == [mine]
    assert fallbacks(capsys.readouterr().out) >= 1
