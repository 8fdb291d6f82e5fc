"""Per-key throttling end to end: real HTTP on the embedded server (SQLite on disk), and the AWS function handlers
on moto with the gateway authorizer's context. Past its limit a key gets 429 with Retry-After and a JSON error
naming the limit, over HTTP and MCP alike; a refused write is never accepted; another key is not throttled; the
next minute admits again. The clock is injected: nothing sleeps."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rearview.adapters.dynamodb import DynamoDBKeyStore
from rearview.api.lambda_runtime import FunctionRuntime, count_throttled
from rearview.api.local_server import LocalServer
from rearview.api.mcp_http import mcp_lambda_handler
from rearview.bootstrap import Services, build
from rearview.cli import app
from rearview.client import RearviewClient, Retry
from rearview.clock import ManualClock
from rearview.domain.quota import QuotaWindow
from rearview.domain.search import MemoryFilter
from rearview.errors import Throttled
from rearview.service.access import AccessService, split_key
from rearview.settings import Settings
from support.aws_stack import TABLE, AwsStack, FakeLambdaContext, aws_stack
from support.events import load_event
from support.mcp_calls import HANDSHAKE_VERSION
from support.modules import load_module

pytestmark = pytest.mark.integration

NS = "acme:u-42"
# 9:30:15 UTC: 45 seconds left in the minute, so Retry-After reads 45.
T0 = datetime(2026, 3, 10, 9, 30, 15, tzinfo=UTC)
NEXT_MINUTE = datetime(2026, 3, 10, 9, 31, 0, tzinfo=UTC)
ADMIN_TOKEN = "operator-token-for-the-throttling-tests"
MCP_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": HANDSHAKE_VERSION,
}


def assert_throttled(status: int, headers: dict[str, str], body: Any, limit: int, retry_after: int = 45) -> None:
    assert status == 429, (status, body)
    assert {k.lower(): v for k, v in headers.items()}["retry-after"] == str(retry_after)
    assert body["error"] == "throttled"
    assert f"{limit} request" in body["message"] and "per minute" in body["message"], body["message"]


# --- the embedded server: real HTTP, SQLite on disk ----------------------------------------------------------------


def http(url: str, method: str, path: str, token: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), json.loads(err.read())


def mcp(url: str, token: str) -> tuple[int, dict[str, str], Any]:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    request = urllib.request.Request(url + "/mcp", data=MCP_LIST.encode(), method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), json.loads(err.read())


def cli(data_dir: Path, *args: str) -> str:
    env = {"REARVIEW_DATA_DIR": str(data_dir), "REARVIEW_EMBEDDER": "hashing"}
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def local(tmp_path: Path) -> Iterator[tuple[Services, ManualClock]]:
    clock = ManualClock(T0)
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", api_token=ADMIN_TOKEN)
    settings.throttle.requests_per_minute = 5
    services = build(settings, clock=clock)
    yield services, clock
    services.close()


def test_the_embedded_server_throttles_a_key_past_its_limit_over_http_and_mcp(
    local: tuple[Services, ManualClock],
) -> None:
    services, clock = local
    data_dir = services.settings.data_dir
    limited = cli(data_dir, "keys", "create", "--namespace", "acme", "--permissions", "read,write",
                  "--requests-per-minute", "3").strip()  # fmt: skip
    other = services.access.create_key("acme", ["read", "write"])[1]  # the default: 5 a minute
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        url = server.url
        remembered = http(url, "POST", f"/v1/namespaces/{NS}/memories", limited, {"content": "Booked the Lisbon venue"})
        assert remembered[0] == 201, remembered
        assert http(url, "GET", f"/v1/namespaces/{NS}/stats", limited)[0] == 200
        assert mcp(url, limited)[0] == 200
        # The fourth request of the minute: refused before anything is done, so the write is not stored.
        status, headers, body = http(
            url, "POST", f"/v1/namespaces/{NS}/memories", limited, {"content": "Flooded write about the Porto trip"}
        )
        assert_throttled(status, headers, body, 3)
        assert_throttled(*mcp(url, limited), 3)
        contents = [m.content for m in services.store.list_memories(NS, MemoryFilter())]
        assert contents == ["Booked the Lisbon venue"], "the refused write was never accepted"
        # Another key of the same tenant is counted apart.
        for _ in range(5):
            assert http(url, "GET", f"/v1/namespaces/{NS}/stats", other)[0] == 200
        assert_throttled(*http(url, "GET", f"/v1/namespaces/{NS}/stats", other), 5)

        # The Python client, out of retries, says so with the wait.
        with RearviewClient(url, token=limited, retry=Retry(attempts=0)) as client, pytest.raises(Throttled) as caught:
            client.stats(NS)
        assert caught.value.retry_after == 45 and "3 requests per minute" in caught.value.message

        clock.set(NEXT_MINUTE)
        assert http(url, "GET", f"/v1/namespaces/{NS}/stats", limited)[0] == 200, "the next minute admits again"

        # The operator lifts the key's limit over HTTP; the next requests are never refused.
        status, _, info = http(url, "PATCH", f"/v1/keys/{split_key(limited)[0]}", ADMIN_TOKEN,
                               {"requests_per_minute": 0})  # fmt: skip
        assert status == 200 and info["requests_per_minute"] == 0
        assert all(http(url, "GET", f"/v1/namespaces/{NS}/stats", limited)[0] == 200 for _ in range(8))

    listed = json.loads(cli(data_dir, "keys", "limit", split_key(limited)[0], "default", "--json"))
    assert listed["requests_per_minute"] is None, "back to the default from the command line"


# --- AWS: the function handlers on moto, behind the authorizer's context -------------------------------------------


AUTHORIZER = load_module("functions/authorizer/handler.py", "throttling_authorizer_handler")


class Functions:
    """The write, recall and mcp handlers over one injected clock, and the real authorizer over the table."""

    def __init__(self, stack: AwsStack, clock: ManualClock) -> None:
        self.stack = stack
        self.clock = clock

        def runtime(name: str) -> FunctionRuntime:
            settings = stack.settings(name)
            settings.throttle.requests_per_minute = 4
            return FunctionRuntime(
                name, settings=settings, build=lambda s: build(s, clock=clock, on_throttled=count_throttled)
            )

        self.write = runtime("write").http_handler()
        self.recall = runtime("recall").http_handler()
        self.mcp = mcp_lambda_handler(runtime("mcp"))
        self.access = AccessService(DynamoDBKeyStore(TABLE, client=stack.dynamodb), clock, admin_token=None)

    def authorizer_context(self, plaintext: str) -> dict[str, Any]:
        event = {"identitySource": [f"Bearer {plaintext}"], "routeKey": "POST /v1/namespaces/{ns}/memories"}
        decision = AUTHORIZER.authorize(event, self.access)
        assert decision["isAuthorized"], decision
        return dict(decision["context"])

    def call(self, handler: Any, event: dict[str, Any], plaintext: str) -> tuple[int, dict[str, str], Any]:
        event["requestContext"]["authorizer"] = {"lambda": self.authorizer_context(plaintext)}
        response = handler(event, FakeLambdaContext())
        return response["statusCode"], dict(response.get("headers") or {}), json.loads(response.get("body") or "null")

    def queued(self) -> int:
        attributes = self.stack.sqs.get_queue_attributes(
            QueueUrl=self.stack.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )
        return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def write_event(content: str) -> dict[str, Any]:
    return load_event("memory_write", path=f"/v1/namespaces/{NS}/memories", body={"content": content})


def test_the_aws_functions_throttle_a_key_in_the_table_and_count_the_metric(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with aws_stack() as stack:
        clock = ManualClock(T0)
        fns = Functions(stack, clock)
        # A key made through the write function's key route, with its own limit of 2.
        admin_context = load_event("keys_create")["requestContext"]["authorizer"]["lambda"]
        event = load_event("keys_create", body={"namespace": "acme", "permissions": ["read", "write"],
                                                "requests_per_minute": 2})  # fmt: skip
        event["requestContext"]["authorizer"] = {"lambda": admin_context}
        created = fns.write(event, FakeLambdaContext())
        assert created["statusCode"] == 201, created
        limited = json.loads(created["body"])["key"]
        assert fns.authorizer_context(limited)["requests_per_minute"] == "2", "the limit rides the cached context"
        other = fns.access.create_key("acme", ["read", "write"])[1]  # the default: 4 a minute

        for n in range(2):
            assert fns.call(fns.write, write_event(f"Accepted write number {n}"), limited)[0] == 202
        assert_throttled(*fns.call(fns.write, write_event("Flooded write"), limited), 2)
        assert fns.queued() == 2, "every accepted write queued, the refused one never accepted"
        recall = load_event("recall", path=f"/v1/namespaces/{NS}/recall", body={"query": "write"})
        assert_throttled(*fns.call(fns.recall, recall, limited), 2)  # another function, the same counter
        mcp_event = load_event("mcp_tools_call", body=MCP_LIST, headers=MCP_HEADERS)
        assert_throttled(*fns.call(fns.mcp, mcp_event, limited), 2)
        assert '"Throttled"' in capsys.readouterr().out, "the functions' EMF output carries the metric"

        # One key's flood leaves another's quota alone.
        for n in range(4):
            assert fns.call(fns.write, write_event(f"Other tenant key write {n}"), other)[0] == 202
        assert_throttled(*fns.call(fns.write, write_event("One too many"), other), 4)

        # The counter: an item per key and minute, expiring an hour after its window.
        window = QuotaWindow.containing(T0)
        item = stack.dynamodb.get_item(
            TableName=TABLE, Key={"pk": {"S": f"QUOTA#{split_key(limited)[0]}"}, "sk": {"S": f"WINDOW#{window.epoch}"}}
        )["Item"]
        assert item["requests"] == {"N": "2"}
        assert int(item["ttl"]["N"]) == int((window.end + timedelta(hours=1)).timestamp())

        clock.set(NEXT_MINUTE)
        assert fns.call(fns.write, write_event("Next minute write"), limited)[0] == 202
        assert fns.call(fns.mcp, load_event("mcp_tools_call", body=MCP_LIST, headers=MCP_HEADERS), limited)[0] == 200
        assert fns.queued() == 7
