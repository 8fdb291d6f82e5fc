"""The index_setup custom resource: it runs the adapter's ensure_index at deploy, retries while OpenSearch Serverless
applies a new data-access policy, keeps the index on Delete, and always answers CloudFormation."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest

from rearview.api import index_setup
from rearview.api.index_setup import index_setup_handler, provision, put_response
from rearview.api.lambda_runtime import FunctionRuntime
from rearview.ports import IndexMaintenance
from rearview.settings import Settings
from support.aws_stack import FakeLambdaContext

pytestmark = pytest.mark.unit


def _event(request_type: str = "Create", **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-custom-resource-response.example/presigned",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/Rearview/guid",
        "RequestId": "req-1",
        "LogicalResourceId": "SearchIndex",
        "ResourceType": "Custom::RearviewSearchIndex",
        "ResourceProperties": {"IndexName": "rearview-memories", "Dimension": "512"},
        **extra,
    }


class Index:
    """IndexMaintenance that refuses `refusals` times (a policy not applied yet), then creates the index."""

    def __init__(self, refusals: int = 0) -> None:
        self.refusals = refusals
        self.calls = 0

    def ensure_index(self) -> bool:
        self.calls += 1
        if self.calls <= self.refusals:
            raise PermissionError("403 security_exception: data access policy not applied yet")
        return True


def _maker(index: Index) -> Callable[[], IndexMaintenance | None]:
    return lambda: cast(IndexMaintenance, index)


def _never_sleep(seconds: float) -> None:
    raise AssertionError(f"no retry expected, asked to sleep {seconds}s")


def test_create_ensures_the_index_and_names_it_as_the_physical_id() -> None:
    index = Index()
    answer = provision(_event(), _maker(index), lambda: 600.0, _never_sleep)
    assert index.calls == 1
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == "rearview-memories"
    assert answer["Data"] == {"Created": "true"}
    assert (answer["RequestId"], answer["LogicalResourceId"]) == ("req-1", "SearchIndex")


def test_refusals_are_retried_with_backoff_until_the_index_is_made() -> None:
    index, slept = Index(refusals=2), list[float]()
    answer = provision(
        _event("Update", PhysicalResourceId="rearview-memories"), _maker(index), lambda: 600.0, slept.append
    )
    assert answer["Status"] == "SUCCESS" and index.calls == 3
    assert slept == list(index_setup.BACKOFF_SECONDS[:2])


def test_when_time_runs_out_cloudformation_is_told_why() -> None:
    index, left = Index(refusals=100), [60.0]

    def remaining() -> float:
        return left[0]

    def sleep(seconds: float) -> None:
        left[0] -= seconds

    answer = provision(_event(), _maker(index), remaining, sleep)
    assert answer["Status"] == "FAILED" and "data access policy" in answer["Reason"]
    assert left[0] >= index_setup.RETRY_MARGIN_SECONDS - max(index_setup.BACKOFF_SECONDS)


def test_delete_keeps_the_index() -> None:
    index = Index()
    answer = provision(
        _event("Delete", PhysicalResourceId="rearview-memories"), _maker(index), lambda: 600.0, _never_sleep
    )
    assert answer["Status"] == "SUCCESS" and index.calls == 0


def test_the_handler_always_answers_even_when_provisioning_breaks() -> None:
    answers: list[dict[str, Any]] = []
    runtime = FunctionRuntime("index_setup", settings=Settings(backend="memory", embedder="hashing"))
    handler = index_setup_handler(runtime, respond=lambda event, body: answers.append(body))
    handler(_event(), FakeLambdaContext())
    # The local backends have no separate index: nothing to make, and CloudFormation hears so.
    assert answers[-1]["Status"] == "SUCCESS" and "no separate search index" in answers[-1]["Reason"]

    def explode(*_: Any) -> Any:
        raise RuntimeError("boom")

    broken = index_setup_handler(runtime, respond=lambda event, body: answers.append(body))
    original = index_setup.provision
    index_setup.provision = explode  # type: ignore[assignment]
    try:
        broken(_event(), FakeLambdaContext())
    finally:
        index_setup.provision = original
    assert answers[-1]["Status"] == "FAILED" and "boom" in answers[-1]["Reason"]


@pytest.fixture
def response_server() -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    received: list[tuple[dict[str, str], bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:  # noqa: N802 - the http.server API
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((dict(self.headers), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/presigned?sig=abc", received
    finally:
        server.shutdown()
        thread.join(5)


def test_the_answer_is_put_to_the_presigned_url_without_a_content_type(
    response_server: tuple[str, list[tuple[dict[str, str], bytes]]],
) -> None:
    url, received = response_server
    put_response({"ResponseURL": url}, {"Status": "SUCCESS", "PhysicalResourceId": "rearview-memories"})
    ((headers, body),) = received
    assert json.loads(body)["Status"] == "SUCCESS"
    assert headers.get("Content-Type", "") == ""
