"""Issue 40 over real HTTP (the local server on SQLite, raw sockets and http.client): one test per finding of the
red-team pass that is not redaction's (tests/integration/test_redaction_everywhere.py) nor the full disk's
(tests/e2e/test_serve_process.py). Each waits on conditions, never on time."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteMemoryStore
from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode
from rearview.domain.write import MemoryWrite
from rearview.settings import ServerSettings, Settings
from support.mcp_calls import HANDSHAKE_VERSION

pytestmark = pytest.mark.integration

NS = "acme:u-42"
TOKEN = "admin-token-for-hardening-ii"
SECRET_QUERY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


def send(
    server: LocalServer, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    sent = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
    payload = None
    if body is not None:
        sent.setdefault("Content-Type", "application/json")
        payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    connection.request(method, path, body=payload, headers=sent)
    response = connection.getresponse()
    answer = response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    connection.close()
    return answer


def raw_exchange(server: LocalServer, request: bytes) -> bytes:
    """Send `request` as bytes on a fresh connection; everything the server answers before closing."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Services, ManualClock]]:
    clock = ManualClock()
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing", api_token=TOKEN), clock=clock)
    yield services, clock
    services.close()


@pytest.fixture
def server(world: tuple[Services, ManualClock]) -> Iterator[LocalServer]:
    services, _ = world
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as running:
        yield running


# --- import trusts nothing it restores ----------------------------------------------------------------------------

_LINE = {
    "id": "m-1",
    "namespace": "elsewhere",
    "layer": "episodic",
    "content": "Booked the Lisbon flight for March",
    "created_at": "2026-01-02T03:04:05Z",
    "occurred_at": "2026-01-02T03:04:05Z",
}
_FACT = {
    "id": "f-1",
    "namespace": "elsewhere",
    "layer": "semantic",
    "content": "The user flies out of Lisbon",
    "created_at": "2026-01-02T03:04:05Z",
    "last_confirmed_at": "2026-01-02T03:04:05Z",
}


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({**_LINE, "access_count": -5}, "items.0.access_count"),
        ({**_LINE, "access_count": True}, "items.0.access_count"),
        ({**_LINE, "version": 1e30}, "items.0.version"),
        ({**_LINE, "version": 10**30}, "items.0.version"),
        ({**_LINE, "version": 0}, "items.0.version"),
        ({**_LINE, "importance": 3.5}, "items.0.importance"),
        ({**_LINE, "confirmations": -1}, "items.0.confirmations"),
        ({**_LINE, "created_at": "0001-01-01T00:00:00Z"}, "items.0.created_at"),
        ({**_LINE, "tags": ["x"] * 33}, "items.0.tags"),
        ({**_LINE, "session_id": "s-1\n"}, "items.0.session_id"),
        ({**_LINE, "id": "m 1"}, "items.0.id"),
        ({**_FACT, "confidence": 1000}, "items.0.confidence"),
        ({**_FACT, "evidence": {"episodes": -3}}, "items.0.evidence.episodes"),
        (
            {
                **_LINE,
                "version": 2,
                "history": [
                    {
                        "memory": {**_LINE, "access_count": -1},
                        "replaced_by": "edit",
                        "replaced_at": "2026-01-03T00:00:00Z",
                    }
                ],
            },
            "items.0.history.0.memory.access_count",
        ),  # fmt: skip
    ],
)
def test_import_refuses_what_no_write_could_have_stored_naming_the_field(
    server: LocalServer, world: tuple[Services, ManualClock], line: dict[str, Any], field: str
) -> None:
    status, _, text = send(server, "POST", f"/v1/namespaces/{NS}/import", {"items": [line]})
    assert status == 422, text
    assert json.loads(text)["field"] == field, text
    assert world[0].store.list_namespaces() == []  # nothing restored


def test_a_bad_stored_row_is_skipped_by_recall_not_the_namespace(
    server: LocalServer, world: tuple[Services, ManualClock], caplog: pytest.LogCaptureFixture
) -> None:
    """A row no write could make (here written to the store directly, as an older import could have): recall answers
    with the others and logs the one it skipped."""
    services, _ = world
    bad = services.writer.write(NS, MemoryWrite(content="Booked the Lisbon flight for March")).id
    good = services.writer.write(NS, MemoryWrite(content="The Lisbon flight leaves at 9:40 from gate 12")).id
    store = services.store
    assert isinstance(store, SqliteMemoryStore)  # a write never lowers the access count: the row is set directly
    store.db.connection().execute("UPDATE episodes SET access_count = -5 WHERE namespace = ? AND id = ?", (NS, bad))
    for _ in range(2):
        status, _, text = send(server, "POST", f"/v1/namespaces/{NS}/recall", {"query": "Lisbon flight"})
        assert status == 200, text
        assert [hit["id"] for hit in json.loads(text)["results"]] == [good]
    assert f"memory {bad} of {NS} skipped" in caplog.text


# --- identifiers are whole, types are as sent ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/v1/namespaces/acme:u1%0A/memories", {"content": "Booked the Lisbon flight"}, "namespace"),
        ("PUT", f"/v1/namespaces/{NS}/sessions/s-1%0A/working/plan", {"value": 1}, "session_id"),
        ("PUT", f"/v1/namespaces/{NS}/sessions/s-1/working/plan%0A", {"value": 1}, "key"),
        ("POST", "/v1/keys", {"namespace": "acme:u1\n", "permissions": ["read"]}, "namespace"),
    ],
)
def test_a_trailing_newline_is_no_identifier(
    server: LocalServer, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    status, _, text = send(server, method, path, body)
    assert status == 422 and json.loads(text)["field"] == field, text


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/v1/keys", {"namespace": "acme", "permissions": ["read"], "requests_per_minute": True}, None),
        ("POST", f"/v1/namespaces/{NS}/recall", {"query": "Lisbon", "top_k": True}, "top_k"),
        ("POST", f"/v1/namespaces/{NS}/recall", {"query": "Lisbon", "top_k": "5"}, "top_k"),
        ("POST", f"/v1/namespaces/{NS}/recall", {"query": "Lisbon", "explain": 1}, "explain"),
        ("PUT", f"/v1/namespaces/{NS}/sessions/s-1/working/plan", {"value": 1, "ttl_seconds": 60.5}, "ttl_seconds"),
        ("POST", f"/v1/namespaces/{NS}/memories", {"content": "Booked the Lisbon flight", "importance": True}, None),
    ],
)
def test_values_are_taken_as_the_type_they_were_sent_as(
    server: LocalServer, method: str, path: str, body: dict[str, Any], field: str | None
) -> None:
    status, _, text = send(server, method, path, body)
    assert status == 422, text
    expected = field or next(name for name, value in body.items() if value is True)
    assert json.loads(text)["field"] == expected, text


@pytest.mark.parametrize(
    "extra",
    [
        b"Content-Length: 2\r\nContent-Length: 3\r\n",
        b"Host: 127.0.0.1\r\nHost: evil.example\r\n",
        b"Origin: http://127.0.0.1\r\nOrigin: https://evil.example\r\n",
        b"Content-Type: application/json\r\nContent-Type: text/plain\r\n",
    ],
    ids=["content-length", "host", "origin", "content-type"],
)
def test_a_framing_header_sent_twice_is_refused(
    server: LocalServer, world: tuple[Services, ManualClock], extra: bytes
) -> None:
    head = f"POST /v1/namespaces/{NS}/memories HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n".encode()
    if b"Host:" not in extra:
        head += b"Host: 127.0.0.1\r\n"
    if b"Content-Type" not in extra:
        head += b"Content-Type: application/json\r\n"
    body = b'{"content": "Booked the Lisbon flight"}'
    if b"Content-Length" not in extra:
        head += f"Content-Length: {len(body)}\r\n".encode()
    answer = raw_exchange(server, head + extra + b"Connection: close\r\n\r\n" + body)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert world[0].store.list_namespaces() == []


# --- erasing needs admin to revoke keys -----------------------------------------------------------------------------


def test_a_forget_key_erasing_a_namespace_revokes_no_key(
    server: LocalServer, world: tuple[Services, ManualClock]
) -> None:
    services, _ = world
    _, admin = services.access.create_key("acme:u1", ["admin", "read", "write", "forget"])
    _, forgetter = services.access.create_key("acme", ["forget"])
    status, _, text = send(server, "DELETE", "/v1/namespaces/acme:u1", headers={"Authorization": f"Bearer {forgetter}"})
    assert status == 200, text
    receipt = json.loads(text)
    assert receipt["keys_revoked"] == [] and receipt["keys_left_active"] == 1
    status, _, text = send(server, "GET", "/v1/namespaces/acme:u1/stats", headers={"Authorization": f"Bearer {admin}"})
    assert status == 200, text  # the admin key still works
    # A caller that holds admin revokes, as before.
    status, _, text = send(server, "DELETE", "/v1/namespaces/acme:u1", headers={"Authorization": f"Bearer {admin}"})
    assert status == 200 and json.loads(text)["keys_revoked"] != [], text


# --- a throttled export is whole or visibly cut -------------------------------------------------------------------


def test_an_export_of_many_pages_is_counted_once_and_comes_whole(
    server: LocalServer, world: tuple[Services, ManualClock]
) -> None:
    """A key allowed one request a minute exports a namespace of more than one page: the export is one request."""
    services, _ = world
    memories = [
        Episode(id=f"m-{i:05d}", namespace=NS, content=f"Harbour survey note number {i}",
                created_at=services.clock.now(), occurred_at=services.clock.now())
        for i in range(2100)
    ]  # fmt: skip
    vectors = services.embedder.embed([m.content for m in memories])
    services.store.apply(NS, ChangeSet(upserts=list(zip(memories, vectors, strict=True))))
    _, key = services.access.create_key(NS, ["read"], requests_per_minute=1)
    status, headers, text = send(
        server, "GET", f"/v1/namespaces/{NS}/export", headers={"Authorization": f"Bearer {key}"}
    )
    assert status == 200
    assert len([line for line in text.splitlines() if line.strip()]) == 2100
    assert send(server, "GET", f"/v1/namespaces/{NS}/stats", headers={"Authorization": f"Bearer {key}"})[0] == 429


# --- no request stalls the others --------------------------------------------------------------------------------


class _GatedEmbedder(HashingEmbedder):
    """The hashing embedder, but a batch of more than `held_over` texts waits until `release` is set: an import
    caught in the middle of its heavy work, for as long as the test needs."""

    def __init__(self, held_over: int) -> None:
        super().__init__()
        self.held_over = held_over
        self.holding = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) > self.held_over:
            self.holding.set()
            assert self.release.wait(timeout=120)
        return super().embed(texts)


def test_an_import_in_progress_holds_no_other_tenant(tmp_path: Path) -> None:
    """While a 1,000-memory import is inside its embedding, another tenant's recall and writes and the health check
    are answered (the old server resolved one request at a time, so they waited for the import)."""
    embedder = _GatedEmbedder(held_over=500)
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", api_token=TOKEN)
    services = build(settings, clock=ManualClock(), embedder=embedder)
    try:
        services.writer.write("other:tenant", MemoryWrite(content="The quarterly report is due on Friday"))
        lines = [{**_LINE, "id": f"i-{i}", "content": f"Imported note {i} about the harbour"} for i in range(1000)]
        with LocalServer(settings, services, host="127.0.0.1", port=0) as server, ThreadPoolExecutor(1) as pool:
            importing = pool.submit(send, server, "POST", f"/v1/namespaces/{NS}/import", {"items": lines})
            assert embedder.holding.wait(timeout=60)
            recall = send(server, "POST", "/v1/namespaces/other:tenant/recall", {"query": "quarterly report"})
            write = send(server, "POST", "/v1/namespaces/other:tenant/memories", {"content": "Report sent to Dana"})
            health = send(server, "GET", "/v1/health")
            assert not importing.done()
            embedder.release.set()
            assert importing.result(timeout=120)[0] == 200
        assert recall[0] == 200 and json.loads(recall[2])["results"], recall
        assert write[0] == 201 and health[0] == 200
    finally:
        embedder.release.set()
        services.close()


class _MeetingEmbedder(HashingEmbedder):
    """Two writes' embeddings meet before either goes on: both requests are inside the resolver at once."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier = threading.Barrier(2, timeout=60)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any("meeting" in text for text in texts):
            self.barrier.wait()
        return super().embed(texts)


def test_requests_resolved_at_once_keep_their_own_namespace_and_body(tmp_path: Path) -> None:
    embedder = _MeetingEmbedder()
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", api_token=TOKEN)
    services = build(settings, clock=ManualClock(), embedder=embedder)
    try:
        with LocalServer(settings, services, host="127.0.0.1", port=0) as server, ThreadPoolExecutor(2) as pool:
            bodies = {"acme:a": "Alpha meeting notes", "acme:b": "Bravo meeting notes"}
            # The first call of an operation resolves alone (Powertools builds its middleware): warm it up first.
            assert send(server, "POST", "/v1/namespaces/acme:c/memories", {"content": "Charlie warm-up"})[0] == 201
            futures = {ns: pool.submit(send, server, "POST", f"/v1/namespaces/{ns}/memories", {"content": text})
                       for ns, text in bodies.items()}  # fmt: skip
            answers = {ns: future.result(timeout=120) for ns, future in futures.items()}
        for ns, text in bodies.items():
            assert answers[ns][0] == 201, answers[ns]
            stored = services.store.get(ns, json.loads(answers[ns][2])["id"])
            assert stored is not None and stored.content == text and stored.namespace == ns
    finally:
        services.close()


def test_a_burst_of_connections_gets_answers_never_resets(tmp_path: Path) -> None:
    """More connections at once than the server serves: each is answered, 200 or 503 with Retry-After."""
    settings = Settings(
        data_dir=tmp_path / "data", embedder="hashing", api_token=TOKEN, server=ServerSettings(max_connections=4)
    )
    services = build(settings)
    try:
        with LocalServer(settings, services, host="127.0.0.1", port=0) as server:
            request = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            sockets = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(40)]
            for sock in sockets:
                sock.sendall(request)
            answers = []
            for sock in sockets:
                with sock:
                    data = b""
                    while chunk := sock.recv(65536):
                        data += chunk
                    answers.append(data)
        statuses = [answer.split(b" ", 2)[1] for answer in answers]
        assert set(statuses) <= {b"200", b"503"} and b"200" in statuses, statuses
        assert all(b"Retry-After: " in a for a in answers if a.split(b" ", 2)[1] == b"503")
    finally:
        services.close()


# --- the log holds no request content ------------------------------------------------------------------------------


def test_the_log_names_routes_never_what_a_request_carried(
    server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    send(server, "PUT", f"/v1/namespaces/{NS}/sessions/s-1/working/{SECRET_QUERY}", {"value": 1})
    send(server, "GET", f"/v1/namespaces/{NS}/memories?tag={SECRET_QUERY}&cursor={SECRET_QUERY}")
    send(server, "GET", f"/v1/namespaces/{NS}/export?cursor={SECRET_QUERY}", headers={"Authorization": "Bearer rv_x"})
    call = {"name": "recall", "arguments": {"query": SECRET_QUERY}}
    mcp_headers = {"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": HANDSHAKE_VERSION}
    send(server, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, mcp_headers)
    assert "4eC39HqLyjWDarjt" not in caplog.text and TOKEN not in caplog.text
    assert "PUT /v1/namespaces/{ns}/sessions/{sid}/working/{key} 200" in caplog.text
