"""Issue 18 over real HTTP (the LocalServer on SQLite, raw http.client and sockets, the real MCP SDK client): the
cross-site matrix, the connection limits, and one regression test per item the issue listed."""

from __future__ import annotations

import http.client
import json
import os
import socket
import sqlite3
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from rearview.api.local_server import LocalServer
from rearview.api.routes import API_ROUTES, MCP_ROUTE
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.search import MemoryFilter
from rearview.domain.working import WorkingWrite
from rearview.errors import ConfigurationError
from rearview.settings import ServerSettings, Settings
from support.mcp_calls import HANDSHAKE_VERSION, run

pytestmark = pytest.mark.integration

NS = "acme:u-42"
MUTATING = [route for route in (*API_ROUTES, MCP_ROUTE) if route.method != "GET"]
PATH_VALUES = {"ns": NS, "sid": "s-1", "key": "plan", "id": "m-1", "key_id": "0123456789abcdef"}
BODIES: dict[str, Any] = {
    "put_working": {"value": 1},
    "write_memory": {"content": "Booked the 9:40 flight to Lisbon"},
    "write_batch": {"items": [{"content": "Booked the 9:40 flight to Lisbon"}]},
    "recall": {"query": "Lisbon"},
    "forget": {"tags": ["travel"]},
    "consolidate": {},
    "brief": {"task": "book a flight"},
    "feedback": {"memory_id": "m-1", "verdict": "useful"},
    "create_key": {"namespace": "acme", "permissions": ["read"]},
    "put_retention": {"episode_max_age_days": 1},
    "mcp": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_stats", "arguments": {}}},
}


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


def send(
    server: LocalServer,
    method: str,
    path: str,
    body: str | bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    payload = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    connection.request(method, path, body=payload, headers=headers or {})
    response = connection.getresponse()
    answer = Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode())
    connection.close()
    return answer


def json_headers(**extra: str) -> dict[str, str]:
    return {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **extra}


@pytest.fixture
def world(tmp_path: Path, clock: ManualClock) -> Iterator[Services]:
    """Open mode: no key, no token, on loopback: the setting a page of another site attacks."""
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), clock=clock)
    yield services
    services.close()


@pytest.fixture
def server(world: Services) -> Iterator[LocalServer]:
    with LocalServer(world.settings, world, host="127.0.0.1", port=0) as running:
        yield running


def _path(route_path: str) -> str:
    for name, value in PATH_VALUES.items():
        route_path = route_path.replace("{" + name + "}", value)
    return route_path


# --- the cross-site matrix --------------------------------------------------------------------------------------

CROSS_SITE = {
    "foreign Origin": ({"Origin": "https://attacker.example"}, "application/json"),
    "foreign Host": ({"Host": "rebound.attacker.example:8765"}, "application/json"),
    "no content type": ({}, None),
    "text/plain": ({}, "text/plain"),
    "form": ({}, "application/x-www-form-urlencoded"),
    "null Origin": ({"Origin": "null"}, "application/json"),
}


@pytest.mark.parametrize("case", list(CROSS_SITE))
@pytest.mark.parametrize("route", MUTATING, ids=[r.route_key for r in MUTATING])
def test_no_mutating_route_accepts_a_cross_site_request(
    server: LocalServer, world: Services, route: Any, case: str
) -> None:
    extra, content_type = CROSS_SITE[case]
    headers = {"Accept": "application/json, text/event-stream", **extra}
    if content_type:
        headers["Content-Type"] = content_type
    body = json.dumps(BODIES.get(route.operation, {"value": 1}))
    answer = send(server, route.method, _path(route.path), body, headers)
    assert 400 <= answer.status < 500, (route.route_key, case, answer.status, answer.text[:300])
    assert world.store.list_namespaces() == []
    assert not world.access.keys_exist()
    assert world.retention.policy(NS).policy is None


def test_the_same_requests_from_the_servers_own_origin_pass(server: LocalServer) -> None:
    origin = f"http://127.0.0.1:{server.port}"
    answer = send(server, "POST", f"/v1/namespaces/{NS}/memories", json.dumps(BODIES["write_memory"]),
                  json_headers(Origin=origin))  # fmt: skip
    assert answer.status == 201, answer.text
    assert "access-control-allow-origin" not in answer.headers


def test_an_allowed_origin_gets_cors_and_its_preflight_answered(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "d", embedder="hashing", server=ServerSettings(allowed_origins=["https://app.example"])
    )
    services = build(settings)
    with LocalServer(settings, services, host="127.0.0.1", port=0) as running:
        preflight = send(running, "OPTIONS", f"/v1/namespaces/{NS}/recall", None,
                         {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"})  # fmt: skip
        other = send(running, "OPTIONS", f"/v1/namespaces/{NS}/recall", None,
                     {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})  # fmt: skip
        recall = send(running, "POST", f"/v1/namespaces/{NS}/recall", json.dumps({"query": "x"}),
                      json_headers(Origin="https://app.example"))  # fmt: skip
    services.close()
    assert preflight.status == 204
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "Authorization" in preflight.headers["access-control-allow-headers"]
    assert other.status == 403 and "access-control-allow-origin" not in other.headers
    assert recall.status == 200 and recall.headers["access-control-allow-origin"] == "https://app.example"


@pytest.mark.parametrize("origin", ["*", "null", "app.example"])
def test_cors_is_never_a_wildcard(origin: str) -> None:
    with pytest.raises(ConfigurationError, match="allowed_origins"):
        ServerSettings(allowed_origins=[origin])


def test_an_extra_host_name_is_served_once_allowed(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d", embedder="hashing", server=ServerSettings(allowed_hosts=["mem.lan"]))
    services = build(settings)
    with LocalServer(settings, services, host="127.0.0.1", port=0) as running:
        allowed = send(running, "GET", "/v1/health", None, {"Host": "mem.lan:8765"})
        foreign = send(running, "GET", "/v1/health", None, {"Host": "other.lan"})
    services.close()
    assert allowed.status == 200 and foreign.status == 421


def test_the_first_key_comes_from_the_cli_or_the_admin_token(tmp_path: Path, server: LocalServer) -> None:
    body = json.dumps(BODIES["create_key"])
    assert send(server, "POST", "/v1/keys", body, json_headers()).status == 403
    settings = Settings(data_dir=tmp_path / "tok", embedder="hashing", api_token="admin-token-for-tests")
    services = build(settings)
    with LocalServer(settings, services, host="127.0.0.1", port=0) as running:
        created = send(running, "POST", "/v1/keys", body, json_headers(Authorization="Bearer admin-token-for-tests"))
    services.close()
    assert created.status == 201


# --- connections --------------------------------------------------------------------------------------------------


def _limited_server(tmp_path: Path, **limits: Any) -> tuple[Services, LocalServer]:
    settings = Settings(data_dir=tmp_path / "d", embedder="hashing", server=ServerSettings(**limits))
    services = build(settings)
    return services, LocalServer(settings, services, host="127.0.0.1", port=0).start()


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


def test_a_slow_sender_is_cut_off_at_the_header_deadline(tmp_path: Path) -> None:
    services, running = _limited_server(tmp_path, header_timeout_seconds=0.5, idle_timeout_seconds=5)
    try:
        idle = socket.create_connection(("127.0.0.1", running.port))
        drip = socket.create_connection(("127.0.0.1", running.port))
        drip.sendall(b"GET /v1/health HTTP/1.1\r\n")
        started = time.monotonic()
        for _ in range(3):
            time.sleep(0.2)
            drip.sendall(b"X-Slow: 1\r\n")  # each read comes well within the socket timeout; the whole does not
        assert _closed_within(drip, 3) and _closed_within(idle, 3)
        assert time.monotonic() - started < 3
        assert send(running, "GET", "/v1/health").status == 200
    finally:
        running.shutdown()
        services.close()


def test_a_full_server_answers_503_with_retry_after(tmp_path: Path) -> None:
    services, running = _limited_server(tmp_path, max_connections=2, header_timeout_seconds=3, retry_after_seconds=7)
    try:
        holders = [socket.create_connection(("127.0.0.1", running.port)) for _ in range(2)]
        time.sleep(0.3)
        busy = send(running, "GET", "/v1/health")
        assert busy.status == 503 and busy.headers["retry-after"] == "7"
        assert busy.json()["error"] == "unavailable"
        for holder in holders:
            holder.close()
        deadline = time.monotonic() + 5
        while (status := send(running, "GET", "/v1/health").status) == 503 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status == 200
    finally:
        running.shutdown()
        services.close()


def test_a_100_mb_body_gets_413_without_being_read_into_memory(server: LocalServer) -> None:
    size = 100 * 1024 * 1024
    chunk = b"x" * (1024 * 1024)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.putrequest("POST", f"/v1/namespaces/{NS}/memories")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(size))
    connection.endheaders()
    try:
        for _ in range(100):
            connection.send(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server stopped reading once its linger ended: the answer is already there
    response = connection.getresponse()
    assert response.status == 413
    assert json.loads(response.read())["field"] == "body"


def test_the_database_and_its_directory_are_owner_only(server: LocalServer, world: Services) -> None:
    data_dir = world.settings.data_dir
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    for name in os.listdir(data_dir):
        assert stat.S_IMODE((data_dir / name).stat().st_mode) == 0o600, name


# --- hostile input, one regression test per item of the issue -----------------------------------------------------

HOSTILE = [
    ("recall", '{"query": "what happened on 9999-12-31?"}', 200, None),
    ("recall", '{"query": "what happened yesterday?", "as_of": "0001-01-01T00:00:00Z"}', 422, "as_of"),
    ("recall", '{"query": "x", "since": "9999-12-31T23:59:59-14:00"}', 422, "since"),
    ("write_memory", '{"content": "Booked \\ud800 the Lisbon flight"}', 422, "content"),
    ("write_memory", '{"content": "Booked the Lisbon flight", "tags": ["\\udfff"]}', 422, "tags.0"),
    (
        "write_memory",
        '{"content": "Booked the Lisbon flight", "occurred_at": "0001-01-01T00:00:00Z"}',
        422,
        "occurred_at",
    ),  # fmt: skip
    ("put_working", '{"value": "\\ud800"}', 422, "value"),
    ("put_working", '{"value": NaN}', 422, "value"),
    ("put_working", '{"value": [1, Infinity]}', 422, "value.1"),
    ("recall", '{"query": "x", "top_k": 1e999}', 422, "top_k"),
    ("recall", '{"query": "x", "top_k": ' + "9" * 4400 + "}", 422, "top_k"),
    ("put_working", '{"value": ' + "[" * 1000 + "]" * 1000 + "}", 422, "body"),
    ("recall", '{"query": "x", "since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"}', 422, "since"),
]


@pytest.mark.parametrize(("operation", "body", "status", "field"), HOSTILE)
def test_hostile_input_is_a_4xx_naming_the_field(
    server: LocalServer, operation: str, body: str, status: int, field: str | None
) -> None:
    route = next(r for r in API_ROUTES if r.operation == operation)
    answer = send(server, route.method, _path(route.path), body, json_headers())
    assert answer.status == status, answer.text
    if field is not None:
        assert answer.json()["field"] == field
        assert answer.json()["message"].startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("query", "field"),
    [("since=9999-12-31T23:59:59-14:00", "since"), ("until=0001-01-01T00:00:00%2B14:00", "until")],
)
def test_listing_refuses_a_time_outside_the_calendar_naming_it(server: LocalServer, query: str, field: str) -> None:
    # Converted to UTC, these times leave the calendar (years 1-9999): a 422 naming the field, not a 500.
    answer = send(server, "GET", f"/v1/namespaces/{NS}/memories?{query}", None, json_headers())
    assert answer.status == 422, answer.text
    assert answer.json()["field"] == field and answer.json()["message"].startswith(f"{field}: ")


def test_a_body_without_a_json_content_type_is_415(server: LocalServer) -> None:
    answer = send(server, "POST", f"/v1/namespaces/{NS}/memories", json.dumps(BODIES["write_memory"]),
                  {"Content-Type": "text/plain"})  # fmt: skip
    assert answer.status == 415 and answer.json()["field"] == "content-type"


def test_a_batch_reusing_an_id_with_other_text_is_a_conflict(server: LocalServer, world: Services) -> None:
    first = {"items": [{"id": "a1", "content": "Booked the Lisbon flight for March"}]}
    again = {"items": [{"id": "a1", "content": "Booked the Lisbon flight for March"}]}
    other = {"items": [{"id": "b1", "content": "Paid the hotel deposit"}, {"id": "a1", "content": "Ordered pizza"}]}
    path = f"/v1/namespaces/{NS}/memories/batch"
    assert send(server, "POST", path, json.dumps(first), json_headers()).status == 200
    repeated = send(server, "POST", path, json.dumps(again), json_headers())
    assert repeated.json()["results"][0]["reason"] == "duplicate_id"
    conflict = send(server, "POST", path, json.dumps(other), json_headers())
    assert conflict.status == 409 and conflict.json()["field"] == "items.1.id"
    assert world.store.get(NS, "b1") is None  # all or nothing
    stored = world.store.get(NS, "a1")
    assert stored is not None and stored.content == "Booked the Lisbon flight for March"


def _mcp(server: LocalServer, tool: str, arguments: str) -> Any:
    body = '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "' + tool + '", "arguments": '
    body += arguments + "}}"
    answer = send(server, "POST", "/mcp", body, json_headers(**{"Mcp-Protocol-Version": HANDSHAKE_VERSION}))
    assert answer.status < 500, answer.text
    return answer.status, answer.json()


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("remember", '{"content": "Booked \\ud800 the flight"}', "content: contains a lone surrogate"),
        ("working_memory_set", '{"session_id": "s", "key": "k", "value": NaN}', "value: must be a finite number"),
        ("recall", '{"query": "x", "top_k": ' + "9" * 4400 + "}", "top_k: must be an integer of at most 40 digits"),
        ("recall", '{"query": "yesterday", "as_of": "0001-01-01T00:00:00Z"}', "as_of: must lie between"),
        ("recall", '{"query": "x", "bogus": 1}', "bogus: Extra inputs are not permitted"),
        ("list_memories", '{"since": "9999-12-31T23:59:59-14:00"}', "since: must lie between"),
        ("list_memories", '{"until": "0001-01-01T00:00:00+14:00"}', "until: must lie between"),
        (
            "recall",
            '{"query": "x", "since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"}',
            "since: must be before until",
        ),  # fmt: skip
    ],
)
def test_mcp_refuses_the_same_input_with_the_same_words(
    server: LocalServer, tool: str, arguments: str, expected: str
) -> None:
    status, answer = _mcp(server, tool, arguments)
    if "error" in answer:
        message = answer["error"]["message"]
    else:
        assert answer["result"]["isError"] is True
        message = answer["result"]["content"][0]["text"]
    assert expected in message, message


def test_the_sdk_client_sees_unknown_arguments_refused(server: LocalServer) -> None:
    async def call() -> Any:
        http = create_mcp_http_client()
        async with http, Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
            return await client.call_tool("memory_stats", {"verbose": True})

    result = run(call())
    assert result.is_error and "verbose: Extra inputs are not permitted" in result.content[0].text


# --- redaction everywhere, and retention ----------------------------------------------------------------------------

LEAKS = {
    "card": "4111 1111 1111 1111",
    "ssn": "536-90-4399",
    "nino": "AB123456C",
    "cn_id": "11010519491231002X",
    "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "npm": "npm_Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789",
    "twilio": "SK0123456789abcdef0123456789abcdef",
    "azure": "AccountKey=q7Hc2mZ9vLwR4tXb8NfK1sYd6gPj3uEa0oVi5nTr2cWx9zQm7lBk4hUy1eGs8dFo3pAj6vNt0rLw5iKz2xCb9mRq==",
    "words": "my password is Tr0ub4dor&3",
    "bearer": "Bearer abcdefghijklmnopqrstuvwxyzabcdef",
    "cloud": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "zero_width": "AKIA\u200bIOSFODNN7\u200dEXAMPLE",
    "full_width": "ｓｋ＿ｌｉｖｅ＿４ｅＣ３９ＨｑＬｙｊＷＤａｒｊｔＴ１ｚｄｐ７ｄｃ",
    "url_at": "postgres://app:p@ss@w0rd@db.internal:5432/main",
}
SECRET_PARTS = {
    "card": "4111 1111",
    "ssn": "536-90-4399",
    "nino": "AB123456C",
    "cn_id": "11010519491231002X",
    "stripe": "4eC39HqLyjWDarjtT1zdp7dc",
    "npm": "Ab3dEfGhIjKlMnOp",
    "twilio": "0123456789abcdef0123",
    "azure": "q7Hc2mZ9vLwR",
    "words": "Tr0ub4dor",
    "bearer": "abcdefghijklmnopqrstuvwxyzabcdef",
    "cloud": "wJalrXUtnFEMI",
    "zero_width": "IOSFODNN7",
    "full_width": "４ｅＣ３９",
    "url_at": "p@ss@w0rd",
}


@pytest.mark.parametrize("leak", list(LEAKS))
def test_no_field_brings_a_secret_back(server: LocalServer, world: Services, leak: str) -> None:
    value, part = LEAKS[leak], SECRET_PARTS[leak]
    label = value if len(value) <= 64 else None  # tags and event types are short: a long secret goes elsewhere
    memory = {
        "content": f"Deployment notes: {value}",
        "outcome": f"worked with {value}",
        "event_type": label,
        "tags": [label] if label else [],
        "entities": [value],
    }
    assert send(server, "POST", f"/v1/namespaces/{NS}/memories", json.dumps(memory), json_headers()).status == 201
    working = send(server, "PUT", f"/v1/namespaces/{NS}/sessions/s-1/working/creds",
                   json.dumps({"value": {"note": value, value: [value]}}), json_headers())  # fmt: skip
    assert working.status == 200
    recalled = send(server, "POST", f"/v1/namespaces/{NS}/recall",
                    json.dumps({"query": "deployment notes", "session_id": "s-1"}), json_headers())  # fmt: skip
    assert recalled.status == 200 and recalled.json()["results"]
    assert part not in recalled.text and part not in working.text, recalled.text
    stored = [m.model_dump(mode="json") for m in world.store.list_memories(NS, MemoryFilter())]
    text = json.dumps(stored, ensure_ascii=False)
    assert part not in text and "[REDACTED:" in text


def test_expired_working_memory_leaves_the_disk(world: Services, clock: ManualClock) -> None:
    world.working.put(NS, "s-1", "plan", WorkingWrite(value="draft", ttl_seconds=60))
    clock.advance(minutes=2)
    assert world.retention.purge_working() == 1
    with sqlite3.connect(world.settings.data_dir / "rearview.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM working").fetchone()[0] == 0
