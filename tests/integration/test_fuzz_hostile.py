"""Hostile fuzzing of every route and every MCP tool over real HTTP (the LocalServer on SQLite), with hypothesis.

Where test_fuzz_openapi.py generates what the OpenAPI document describes, this sends what an attacker would: the
values that used to end in a 500 (NaN, Infinity, 1e999, integers of thousands of digits, lone surrogates, JSON
nested hundreds deep, dates at the calendar's edge, `as_of` 0001-01-01 with "yesterday"), wrong and missing
content types, malformed and truncated JSON, unknown fields, hostile path segments; each put into an otherwise valid
request of a random route, or a random tool call over `/mcp` (raw JSON-RPC, as a client that does not validate
would send it). It runs as a hypothesis state machine, so ids flow from one request into the next (stateful links):
a memory written is read, fed back on, forgotten and deleted by its id; a key created is revoked by its id.

Properties: no 5xx, ever; every 4xx is JSON naming the problem; a tool error always carries a message (a crash
reads only "Error executing tool X").

REARVIEW_FUZZ_REQUESTS sets how many requests to send (default 600; `make test-long` and the recorded run use
5,000 or more); REARVIEW_FUZZ_REPORT names a JSON file to write the tally to.
"""

from __future__ import annotations

import http.client
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, multiple, rule

from rearview.api.local_server import LocalServer
from rearview.api.mcp import TOOL_NAMES
from rearview.api.routes import API_ROUTES, Route
from rearview.bootstrap import build
from rearview.settings import Settings
from support.mcp_calls import HANDSHAKE_VERSION, TOOL_ARGS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LONG = os.environ.get("REARVIEW_LONG_TESTS") == "1"
REQUESTS = int(os.environ.get("REARVIEW_FUZZ_REQUESTS") or (5000 if LONG else 600))
STEPS = 50
ADMIN_TOKEN = "hostile-fuzz-admin-token"
NS = "acme:u-1"

TALLY: Counter[str] = Counter()
FAILURES: list[str] = []


class Raw(str):
    """JSON text put into a body as it is: what json.dumps cannot write (NaN, surrogates, huge numbers)."""


HOSTILE_VALUES: list[Any] = [
    Raw("NaN"),
    Raw("Infinity"),
    Raw("-Infinity"),
    Raw("1e999"),
    Raw("-1e999"),
    Raw("9" * 5000),
    Raw("-" + "9" * 4400),
    Raw("1" * 41),
    Raw('"\\ud800"'),
    Raw('"tail \\udfff"'),
    Raw('"pair reversed \\udc00\\ud800"'),
    Raw("[" * 40 + "]" * 40),
    Raw("[" * 1200 + "]" * 1200),
    Raw('{"a":' * 300 + "1" + "}" * 300),
    "9999-12-31",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
    "10000-01-01T00:00:00Z",
    "what happened on 9999-12-31 and 0001-01-01?",
    "yesterday",
    "3000 years ago",
    "\x00\x01\x7f",
    "\u202e\u200b\ufeff",
    "a" * 5000,
    "x" * 70000,
    "' OR 1=1 --",
    '"*" NEAR/2 OR content:',
    "ｓｋ－ｌｉｖｅ－４ｅＣ３９ＨｑＬｙｊＷＤａｒｊｔＴ１ｚｄｐ７ｄｃ",
    "my password is hunter2 and card 4111 1111 1111 1111",
    -1,
    0,
    2**63,
    -(2**63),
    1.5,
    True,
    None,
    [],
    {},
    [None],
    {"": None},
    ["\x00"],
]
HOSTILE_BODIES: list[str | None] = [
    None,
    "",
    "{",
    '{"content": "trun',
    "[]",
    "null",
    "0",
    '"text"',
    "NaN",
    "[" * 5000 + "]" * 5000,
    '{"a": 1, "a": 2}',
    "\ufeff{}",
    "{}" + " " * 10,
    "{} {}",
]
CONTENT_TYPES: list[str | None] = [
    "application/json",
    "application/json",
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    None,
]
HOSTILE_SEGMENTS = ["%ff", "%00", "..", "a" * 300, "a:b:c:d:e", "%E2%80%AE", "%2F", "x%20y", "%C3%BCn%C3%AF", "-"]

# One valid body per operation that takes one; the fuzzer mutates these.
BODIES: dict[str, dict[str, Any]] = {
    "put_working": {"value": {"step": 2}, "ttl_seconds": 600},
    "write_memory": {"content": "Booked the 9:40 flight to Lisbon", "tags": ["travel"], "entities": ["Lisbon"]},
    "write_batch": {"items": [{"content": "Ordered the vegan menu for the offsite"}]},
    "recall": {"query": "what did I book yesterday?", "top_k": 5},
    "forget": {"tags": ["travel"]},
    "consolidate": {},
    "brief": {"task": "book a flight to Lisbon", "tool": "booking API"},
    "feedback": {"memory_id": "missing", "verdict": "useful"},
    "create_key": {"namespace": "acme", "permissions": ["read"]},
    "put_retention": {"episode_max_age_days": 365, "archive_after_days": 30},
}
PATH_VALUES = {"ns": NS, "sid": "s-1", "key": "plan", "id": "missing", "key_id": "0123456789abcdef"}
ROUTES = list(API_ROUTES)


def _encode(value: Any) -> str:
    """JSON text of a value that may hold Raw pieces."""
    raws: list[str] = []

    def mark(item: Any) -> Any:
        if isinstance(item, Raw):
            raws.append(str(item))
            return f"\x00RAW{len(raws) - 1}\x00"
        if isinstance(item, dict):
            return {k: mark(v) for k, v in item.items()}
        if isinstance(item, list):
            return [mark(v) for v in item]
        return item

    text = json.dumps(mark(value))
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x00RAW{i}\x00"), raw)
    return text


@st.composite
def mutated(draw: st.DrawFn, template: dict[str, Any]) -> Any:
    """The template with a few fields (or unknown ones) set to hostile values, one nested a level down."""
    body = json.loads(json.dumps(template))
    fields = [*template, "bogus", "__proto__", "content", "as_of", "since", "until", "value", "items"]
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(fields))
        value = draw(st.sampled_from(HOSTILE_VALUES))
        if draw(st.booleans()) and isinstance(body.get(name), list) and body[name]:
            body[name] = [value]
        elif draw(st.booleans()) and isinstance(body.get("items"), list) and isinstance(body["items"][:1], list):
            first = body["items"][0] if body["items"] and isinstance(body["items"][0], dict) else {}
            body["items"] = [{**first, name: value}]
        else:
            body[name] = value
    return body


@st.composite
def hostile_request(draw: st.DrawFn, route: Route) -> tuple[str, str | None, str | None]:
    """(path, body text or None, content type or None) for one request to `route`."""
    values = dict(PATH_VALUES)
    if draw(st.integers(0, 9)) == 0:
        values[draw(st.sampled_from(list(values)))] = draw(st.sampled_from(HOSTILE_SEGMENTS))
    path = route.path
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    template = BODIES.get(route.operation)
    choice = draw(st.integers(0, 9))
    if choice < 6 and template is not None:
        body: str | None = _encode(draw(mutated(template)))
    elif choice < 8:
        body = draw(st.sampled_from(HOSTILE_BODIES))
    else:
        body = _encode(template) if template is not None else None
    return path, body, draw(st.sampled_from(CONTENT_TYPES))


class Client:
    """Raw HTTP to the server under test, tallying every answer and checking the properties."""

    def __init__(self, server: LocalServer) -> None:
        self.port = server.port

    def send(
        self, method: str, path: str, body: str | None, content_type: str | None, *, mcp: bool = False
    ) -> tuple[int, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        if content_type:
            headers["Content-Type"] = content_type
        if mcp:
            headers |= {"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": HANDSHAKE_VERSION}
        data = body.encode("utf-8", "surrogatepass") if body is not None else None
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        text = response.read().decode("utf-8", "replace")
        connection.close()
        status = response.status
        TALLY["requests"] += 1
        TALLY["mcp" if mcp else "http"] += 1
        TALLY[f"{status // 100}xx"] += 1
        where = f"{method} {path} {content_type} {(body or '')[:200]!r}"
        if status >= 500:
            FAILURES.append(f"{status} {where}: {text[:300]}")
        assert status < 500, (where, status, text[:1000])
        # JSON bodies parsed; an export's ndjson (or an MCP event stream) kept as text.
        json_body = (response.getheader("Content-Type") or "").split(";")[0].strip() == "application/json"
        parsed = json.loads(text) if text and json_body and text.lstrip()[:1] in "{[" else text
        if 400 <= status < 500 and not mcp:
            assert isinstance(parsed, dict) and parsed.get("error") and len(parsed.get("message", "")) >= 8, parsed
        return status, parsed


def _tool_result_is_sound(tool: str, parsed: Any) -> None:
    """A tool error names its problem; only a crash reads `Error executing tool <name>` and nothing more."""
    if not isinstance(parsed, dict) or "result" not in parsed:
        return
    result = parsed["result"]
    if result.get("isError"):
        text = " ".join(block.get("text", "") for block in result.get("content", []))
        TALLY["tool_errors"] += 1
        if text.strip() == f"Error executing tool {tool}":
            FAILURES.append(f"tool {tool} crashed: {text}")
        assert text.strip() != f"Error executing tool {tool}", text


def _mcp_body(tool: str, arguments: Any) -> str:
    envelope = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return _encode(envelope)


@pytest.fixture(scope="module")
def fuzz_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    data_dir = Path(tmp_path_factory.mktemp("hostile")) / "data"
    services = build(Settings(data_dir=data_dir, embedder="hashing", api_token=ADMIN_TOKEN))
    server = LocalServer(services.settings, services, host="127.0.0.1", port=0).start()
    yield Client(server)
    server.shutdown()
    services.close()


@pytest.mark.timeout(max(300, int(REQUESTS * 0.5)))
def test_hostile_requests_over_http_and_mcp_never_5xx(fuzz_client: Client) -> None:
    client = fuzz_client

    class HostileApi(RuleBasedStateMachine):
        memories = Bundle("memories")
        keys = Bundle("keys")

        @rule(target=memories, content=st.sampled_from(["Booked the Lisbon flight", "Paid the 9:40 fare"]))
        def write(self, content: str) -> Any:
            status, body = client.send("POST", f"/v1/namespaces/{NS}/memories", json.dumps({"content": content}),
                                       "application/json")  # fmt: skip
            return body["id"] if status in (200, 201) else multiple()

        @rule(memory=memories, op=st.sampled_from(["get", "feedback", "forget", "delete", "rewrite", "mcp"]))
        def use(self, memory: str, op: str) -> None:
            base = f"/v1/namespaces/{NS}"
            if op == "get":
                client.send("GET", f"{base}/memories/{memory}", None, None)
            elif op == "feedback":
                body = {"memory_id": memory, "verdict": "wrong", "correction": "The fare was 90 euros, token ghp_x"}
                client.send("POST", f"{base}/feedback", json.dumps(body), "application/json")
            elif op == "forget":
                client.send(
                    "POST", f"{base}/forget", json.dumps({"ids": [memory], "cascade": True}), "application/json"
                )
            elif op == "delete":
                client.send("DELETE", f"{base}/memories/{memory}?cascade=false", None, None)
            elif op == "rewrite":
                body = {"id": memory, "content": "Something else entirely under the same id"}
                client.send("POST", f"{base}/memories", json.dumps(body), "application/json")
            else:
                _tool_result_is_sound("feedback", client.send(
                    "POST", "/mcp", _mcp_body("feedback", {"memory_id": memory, "verdict": "useful"}),
                    "application/json", mcp=True)[1])  # fmt: skip

        @rule(target=keys)
        def create_key(self) -> Any:
            body = json.dumps({"namespace": "acme", "permissions": ["read"]})
            status, created = client.send("POST", "/v1/keys", body, "application/json")
            return created["key_id"] if status == 201 else multiple()

        @rule(key_id=consumes(keys))
        def revoke_key(self, key_id: str) -> None:
            client.send("DELETE", f"/v1/keys/{key_id}", None, None)

        @rule(data=st.data(), route=st.sampled_from(ROUTES))
        def hostile_http(self, data: st.DataObject, route: Route) -> None:
            path, body, content_type = data.draw(hostile_request(route))
            client.send(route.method, path, body, content_type)

        @rule(data=st.data(), tool=st.sampled_from(TOOL_NAMES))
        def hostile_mcp(self, data: st.DataObject, tool: str) -> None:
            hostile_tool_call(data, tool)

        @rule(data=st.data(), tool=st.sampled_from(TOOL_NAMES))
        def hostile_mcp_again(self, data: st.DataObject, tool: str) -> None:
            hostile_tool_call(data, tool)  # a second rule: as many tool calls as route requests

    def hostile_tool_call(data: st.DataObject, tool: str) -> None:
        arguments: Any = data.draw(mutated(TOOL_ARGS[tool]))
        if data.draw(st.integers(0, 9)) == 0:
            arguments = data.draw(st.sampled_from([[], "text", None, 3, Raw("NaN")]))
        content_type = data.draw(st.sampled_from(["application/json"] * 4 + ["text/plain", None]))
        answer = client.send("POST", "/mcp", _mcp_body(tool, arguments), content_type, mcp=True)
        _tool_result_is_sound(tool, answer[1])

    HostileApi.TestCase.settings = settings(
        max_examples=max(REQUESTS // STEPS, 1),
        stateful_step_count=STEPS,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        # No shrinking: a failure is reported with the request that caused it (FAILURES), and the run stays bounded.
        phases=(Phase.generate,),
    )
    HostileApi.TestCase().runTest()
    report = os.environ.get("REARVIEW_FUZZ_REPORT")
    summary = {key: TALLY[key] for key in sorted(TALLY)}
    print(f"\nhostile fuzz: {summary}")
    if report:
        Path(report).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    assert not FAILURES, FAILURES[:20]
    assert TALLY["requests"] >= REQUESTS * 0.5, summary
    assert TALLY["mcp"] > 0 and TALLY["http"] > 0, summary
