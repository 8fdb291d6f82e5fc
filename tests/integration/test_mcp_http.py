"""MCP over Streamable HTTP through two doors: `/mcp` on the LocalServer (real HTTP, driven by the SDK's streamable
HTTP client) and the `mcp` Lambda handler (API Gateway v2 events from events/http/mcp_*.json).

Then the tenancy matrix for every tool, through both doors: no key -> 401 with `WWW-Authenticate: Bearer`; bad,
revoked, expired key -> 401; right key but another namespace -> refused (a tool error); missing permission ->
refused; right key -> the tool's result.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult

from rearview.api.lambda_runtime import FunctionRuntime
from rearview.api.local_server import LocalServer, local_context
from rearview.api.mcp import TOOL_NAMES, TOOL_PERMISSIONS
from rearview.api.mcp_http import mcp_lambda_handler
from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings
from support.events import load_event
from support.mcp_calls import (
    HANDSHAKE_VERSION,
    TOOL_ARGS,
    call_body,
    error_text,
    permissions_without,
    run,
    seed_feedback_memory,
    tool_result,
)
from support.modules import load_module
from support.stats import usage_stats

pytestmark = pytest.mark.integration

NS = "acme:u-42"
ACCEPT = "application/json, text/event-stream"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


# A door takes (method, JSON body or None, headers) and answers like HTTP would.
Door = Callable[[str, str | None, dict[str, str]], Answer]


def http_door(server: LocalServer, host: str | None = None) -> Door:
    def send(method: str, body: str | None, headers: dict[str, str]) -> Answer:
        request = urllib.request.Request(
            server.url + "/mcp", method=method, data=body.encode() if body is not None else None, headers=headers
        )
        if host is not None:
            request.add_header("Host", host)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return Answer(response.status, dict(response.headers), response.read().decode())
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, dict(exc.headers), exc.read().decode())

    return send


def _handler_module() -> Any:
    return load_module("functions/mcp/handler.py", "mcp_function_handler")


@pytest.fixture
def lambda_handler(settings: Settings, world: Services) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The `mcp` function's handler, on a runtime whose services are the test's (as Lambda would build them)."""
    runtime = FunctionRuntime("mcp", settings=settings, build=lambda _: world)
    return mcp_lambda_handler(runtime)


def lambda_door(handler: Callable[[dict[str, Any], Any], dict[str, Any]]) -> Door:
    def send(method: str, body: str | None, headers: dict[str, str]) -> Answer:
        event = load_event("mcp_tools_call", method=method, body=body, headers=headers)
        if "authorization" not in {k.lower() for k in headers}:
            event["headers"].pop("authorization", None)
        response = handler(event, local_context(event["requestContext"]["requestId"]))
        return Answer(response["statusCode"], dict(response.get("headers") or {}), response.get("body") or "")

    return send


def headers_for(key: str | None, **extra: str) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": HANDSHAKE_VERSION}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return {**headers, **extra}


# --- the local server, driven by the SDK's client ----------------------------------------------------------------


async def _session(url: str, key: str | None, mode: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"} if key else None)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        tools = await client.list_tools()
        return [tools, *[await client.call_tool(name, args) for name, args in calls]]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_client_lists_and_calls_every_tool_over_local_http(
    server: LocalServer, world: Services, mode: str
) -> None:
    key = world.access.create_key("acme", ["read", "write", "forget", "consolidate"])[1]
    calls = [(name, {**TOOL_ARGS[name], "namespace": NS}) for name in TOOL_ARGS]  # the order their state needs

    tools, *results = run(_session(server.url + "/mcp", key, mode, calls))

    assert sorted(t.name for t in tools.tools) == sorted(TOOL_NAMES)
    by_tool: dict[str, CallToolResult] = dict(zip(TOOL_ARGS, results, strict=True))
    for name, result in by_tool.items():
        assert not result.is_error, (name, result.content)
        # Recall and brief answer compact text unless asked for JSON.
        assert isinstance(result.structured_content, dict) or name in ("recall", "brief"), name
    assert by_tool["remember"].structured_content["status"] == "stored"
    assert f"id {by_tool['remember'].structured_content['id']})" in getattr(by_tool["recall"].content[0], "text", "")
    assert by_tool["explain_recall"].structured_content["trace"]["stages"]
    assert by_tool["working_memory_get"].structured_content["namespace"] == NS
    assert by_tool["memory_stats"].structured_content["namespace"] == NS
    # forget ran before stats: the remembered episode (tagged offsite) is gone.
    assert by_tool["forget"].structured_content["deleted"]["episodic"] == 1
    assert usage_stats(world.store, NS, world.clock.now()).counts["episodic"] == 0


def test_other_namespace_over_local_http_is_a_tool_error(server: LocalServer, world: Services) -> None:
    key = world.access.create_key("acme", ["read"])[1]

    _, result = run(_session(server.url + "/mcp", key, "auto", [("recall", {"query": "x", "namespace": "globex"})]))

    assert result.is_error and "scope does not include 'globex'" in result.content[0].text


def test_the_sdk_client_without_a_key_is_turned_away_with_401(server: LocalServer, world: Services) -> None:
    world.access.create_key("acme", ["read"])
    seen: list[tuple[int, str | None]] = []

    async def record(response: httpx2.Response) -> None:
        seen.append((response.status_code, response.headers.get("www-authenticate")))

    async def connect() -> None:
        async with (
            httpx2.AsyncClient(event_hooks={"response": [record]}) as http,
            Client(streamable_http_client(server.url + "/mcp", http_client=http), mode="legacy"),
        ):
            pass

    with pytest.raises(Exception):  # noqa: B017 - the SDK reports the refusal in its own (grouped) error types
        run(connect())

    assert seen and all(status == 401 for status, _ in seen)
    assert seen[0][1] == 'Bearer realm="rearview"'


def test_open_mode_needs_no_key_and_uses_the_default_namespace(server: LocalServer) -> None:
    # No key in the data directory and a loopback bind: the local server is open, /mcp included.
    _, stats = run(_session(server.url + "/mcp", None, "auto", [("memory_stats", {})]))

    assert stats.structured_content["namespace"] == "default"


def test_only_post_is_routed(server: LocalServer, world: Services) -> None:
    key = world.access.create_key("acme", ["read"])[1]
    door = http_door(server)

    for method in ("GET", "DELETE", "PUT"):
        answer = door(method, None, headers_for(key))
        assert answer.status == 405, method
        assert answer.headers["Allow"] == "POST"
        assert answer.json()["error"] == "method_not_allowed"


def test_a_foreign_host_header_is_refused_with_421_on_loopback(server: LocalServer, world: Services) -> None:
    key = world.access.create_key("acme", ["read"])[1]
    body = call_body("memory_stats", {})

    foreign = http_door(server, host="rebound.attacker.example")("POST", body, headers_for(key))
    local = http_door(server, host=f"localhost:{server.port}")("POST", body, headers_for(key))
    cross_origin = http_door(server)("POST", body, headers_for(key, Origin="https://attacker.example"))

    assert foreign.status == 421
    assert local.status == 200 and tool_result(local.body)["structuredContent"]["namespace"] == "acme"
    assert cross_origin.status == 403


def test_the_sdk_checks_content_type_and_accept(server: LocalServer, world: Services) -> None:
    key = world.access.create_key("acme", ["read"])[1]
    door = http_door(server)

    assert door("POST", call_body("memory_stats", {}), headers_for(key, **{"Content-Type": "text/plain"})).status == 400
    assert door("POST", call_body("memory_stats", {}), headers_for(key, Accept="text/html")).status == 406


# --- the Lambda handler, with the sample events --------------------------------------------------------------------


def _event_with_key(name: str, key: str) -> dict[str, Any]:
    return load_event(name, headers={"authorization": f"Bearer {key}"})


def test_the_lambda_handler_answers_the_sample_events(
    lambda_handler: Callable[[dict[str, Any], Any], dict[str, Any]], world: Services
) -> None:
    key = world.access.create_key("acme", ["read", "write"])[1]
    world.writer.write(NS, MemoryWrite(content="Dana booked the TAP flight to Lisbon for March 14", id="ep-flight"))

    def invoke(name: str) -> dict[str, Any]:
        event = _event_with_key(name, key)
        response = lambda_handler(event, local_context(event["requestContext"]["requestId"]))
        assert response["statusCode"] == 200, response
        assert response["headers"]["content-type"].startswith("application/json")
        message = json.loads(response["body"])
        assert message["jsonrpc"] == "2.0" and message["id"] == json.loads(event["body"])["id"]
        return dict(message["result"])

    initialized = invoke("mcp_initialize")
    assert initialized["protocolVersion"] == HANDSHAKE_VERSION
    assert initialized["serverInfo"]["name"] == "rearview"
    assert "tools" in initialized["capabilities"]

    listed = invoke("mcp_tools_list")
    assert sorted(t["name"] for t in listed["tools"]) == sorted(TOOL_NAMES)

    called = invoke("mcp_tools_call")
    assert called.get("isError") is not True
    # Recall answers compact text by default: one line per memory, ending with its id.
    [line] = called["content"][0]["text"].splitlines()
    assert "Lisbon" in line and line.endswith("id ep-flight)")


def test_the_lambda_handler_takes_any_host_behind_api_gateway(
    lambda_handler: Callable[[dict[str, Any], Any], dict[str, Any]], world: Services
) -> None:
    # API Gateway routes only requests addressed to the API's own domains; a custom domain must work too.
    key = world.access.create_key("acme", ["read"])[1]
    event = load_event("mcp_tools_list", headers={"authorization": f"Bearer {key}", "host": "memory.example.com"})

    response = lambda_handler(event, local_context("r-1"))

    assert response["statusCode"] == 200


def test_the_lambda_handler_answers_405_and_401(
    lambda_handler: Callable[[dict[str, Any], Any], dict[str, Any]],
) -> None:
    get = lambda_handler(load_event("mcp_tools_list", method="GET", body=None), local_context("r-1"))
    assert get["statusCode"] == 405 and get["headers"]["Allow"] == "POST"

    # The sample event's key is a placeholder: no such key.
    post = lambda_handler(load_event("mcp_tools_list"), local_context("r-2"))
    assert post["statusCode"] == 401
    assert post["headers"]["WWW-Authenticate"].startswith('Bearer realm="rearview", error="invalid_token"')


def test_the_lambda_handler_imports_without_the_sdk_or_services() -> None:
    # Building the handler builds nothing: the services and the mcp SDK wait for the first invocation.
    module = _handler_module()

    assert callable(module.handler)
    assert module.runtime._services is None


# --- the tenancy matrix, every tool, both doors ----------------------------------------------------------------------


@dataclass(frozen=True)
class Keys:
    right: str
    narrow: str
    revoked: str
    expired: str
    without: dict[str, str]


@pytest.fixture
def keys(world: Services, clock: ManualClock) -> Keys:
    all_data = ["read", "write", "forget", "consolidate"]
    create = world.access.create_key
    revoked_key, revoked = create("acme", all_data)
    world.access.revoke(revoked_key.key_id)
    expired = create("acme", all_data, expires_at=clock.now().replace(year=clock.now().year + 1))[1]
    keys = Keys(
        right=create("acme", all_data)[1],
        narrow=create(NS, all_data)[1],
        revoked=revoked,
        expired=expired,
        without={tool: create("acme", permissions_without(TOOL_PERMISSIONS[tool]))[1] for tool in TOOL_NAMES},
    )
    clock.advance(days=366)  # the expired key's time has passed; the others never expire
    return keys


@pytest.fixture(params=["local_http", "lambda"])
def door(
    request: pytest.FixtureRequest,
    settings: Settings,
    world: Services,
    lambda_handler: Callable[[dict[str, Any], Any], dict[str, Any]],
) -> Iterator[Door]:
    if request.param == "lambda":
        yield lambda_door(lambda_handler)
        return
    with LocalServer(settings, world, port=0) as srv:
        yield http_door(srv)


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_tenancy_matrix(tool: str, door: Door, keys: Keys, world: Services) -> None:
    seed_feedback_memory(world, NS)
    args = {**TOOL_ARGS[tool], "namespace": NS}
    body = call_body(tool, args)

    missing = door("POST", body, headers_for(None))
    assert missing.status == 401
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="rearview"'
    assert missing.json()["error"] == "unauthorized"

    for bad, why in [
        ("rv_0123456789abcdef_not-a-secret", "unknown or invalid"),
        ("not-even-a-key", "malformed"),
        (keys.revoked, "revoked"),
        (keys.expired, "expired"),
    ]:
        answer = door("POST", body, headers_for(bad))
        assert answer.status == 401, (tool, why)
        assert answer.headers["WWW-Authenticate"].startswith('Bearer realm="rearview", error="invalid_token"')
        assert why in answer.json()["message"]

    for key, other in [(keys.right, "acme2"), (keys.right, "globex:u-42"), (keys.narrow, "acme")]:
        answer = door("POST", call_body(tool, {**args, "namespace": other}), headers_for(key))
        assert answer.status == 200
        assert f"scope does not include '{other}'" in error_text(tool_result(answer.body))
    assert (
        usage_stats(world.store, "acme2", world.clock.now()).counts
        == usage_stats(world.store, "empty", world.clock.now()).counts
    )

    answer = door("POST", body, headers_for(keys.without[tool]))
    assert answer.status == 200
    assert f"lacks the '{TOOL_PERMISSIONS[tool].value}' permission" in error_text(tool_result(answer.body))

    for key in (keys.right, keys.narrow):
        answer = door("POST", body, headers_for(key))
        assert answer.status == 200
        result = tool_result(answer.body)
        assert result.get("isError") is not True, result
        # Recall and brief answer compact text unless asked for JSON; every other tool, its model.
        assert isinstance(result.get("structuredContent"), dict) or tool in ("recall", "brief"), result
