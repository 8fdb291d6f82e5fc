"""The bulk door as a user meets it: `POST /v1/namespaces/{ns}/load` over real HTTP on the local server, the
Python client's `load` (sync and async), and `rearview load FILE`, locally and to the server at --url."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, build
from rearview.cli import app
from rearview.client import AsyncRearviewClient, RearviewClient
from rearview.domain.memory import Episode
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.errors import InvalidInput, NamespaceForbidden
from rearview.settings import Settings

pytestmark = pytest.mark.integration

NS = "acme:u-42"
TURNS = [
    {"speaker": "Ana", "dia_id": "D1:1", "text": "Where should we stay in Lisbon in May?", "ts": "2026-02-11T18:02:00Z",
     "session_id": "chat-1"},
    {"speaker": "Ben", "dia_id": "D1:2", "text": "The flat near Alfama with the terrace, we loved it twice already",
     "ts": "2026-02-11T18:04:00Z", "session_id": "chat-1"},
    {"speaker": "Ana", "dia_id": "D1:3", "text": "Then book it for the first week, I'll sort out the train to Sintra",
     "ts": "2026-02-11T18:05:00Z", "session_id": "chat-1"},
]  # fmt: skip


def _post(url: str, token: str, body: Any) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_load_over_http_is_stored_recalled_and_refused_naming_the_field(
    live: tuple[LocalServer, Services],
) -> None:
    running, services = live
    key = services.access.create_key("acme", ["read", "write"])[1]
    url = f"{running.url}/v1/namespaces/{NS}/load"
    dim = services.embedder.dim
    vector = np.random.default_rng(3).normal(size=dim).tolist()
    items = [
        {"id": "t1", "content": "Ana: Where should we stay in Lisbon in May?", "entities": ["Ana"]},
        {"id": "t2", "content": "Ben: The flat near Alfama with the terrace", "vector": vector, "entities": ["Ben"]},
    ]

    status, body = _post(url, key, {"items": items})
    assert status == 200, body
    assert (body["loaded"], body["embedded"], body["ids"]) == (2, 1, ["t1", "t2"])
    assert "t2" in [hit.id for hit in services.recaller.recall(NS, RecallQuery(query="Alfama flat terrace")).results]

    for bad, field, limit in [
        ({**items[1], "id": "t3", "vector": vector[:-1]}, "items.0.vector", str(dim)),
        ({"id": "t4", "content": "x" * 2001}, "items.0.content", "2000"),
        ({"id": "t5", "content": "fine", "vector": ["0.1"] * dim}, "items.0.vector", ""),
        ({"id": "t6", "content": "fine", "colour": "red"}, "items.0.colour", ""),
    ]:
        status, body = _post(url, key, {"items": [bad]})
        assert 400 <= status < 500 and body["field"].startswith(field), (bad.keys(), body)
        assert limit in body["message"], body
    status, body = _post(url, key, {"items": [{"content": f"line {i}"} for i in range(1001)]})
    assert status == 422 and body["field"] == "items" and "1000" in body["message"], body
    listed = services.store.list_memories(NS, MemoryFilter(include_superseded=True))
    assert sorted(m.id for m in listed) == ["t1", "t2"], "a refused load stores nothing"

    other = services.access.create_key("other", ["read", "write"])[1]
    status, body = _post(url, other, {"items": [{"content": "Not my namespace"}]})
    assert status == 403, body


def test_the_python_client_loads_sync_and_async(live: tuple[LocalServer, Services]) -> None:
    running, services = live
    key = services.access.create_key("acme", ["read", "write"])[1]
    with RearviewClient(running.url, token=key) as rv:
        loaded = rv.load(NS, [{"id": "c1", "content": "Booked the night train to Vienna"}])
        assert (loaded.loaded, loaded.ids) == (1, ["c1"])
        assert rv.load(NS, [{"id": "c1", "content": "Booked the night train to Vienna"}]).skipped == 1
        with pytest.raises(InvalidInput) as bad:
            rv.load(NS, [{"content": "A fact", "layer": "semantic"}])
        assert bad.value.field == "items.0.layer"
        with pytest.raises(NamespaceForbidden):
            rv.load("other:u-1", [{"content": "Somewhere else"}])

    async def run() -> int:
        async with AsyncRearviewClient(running.url, token=key) as rv:
            return (await rv.load(NS, [{"id": "c2", "content": "Paid the Vienna hotel deposit"}])).loaded

    assert asyncio.run(run()) == 1


def _jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((json.dumps(line) if not isinstance(line, str) else line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("remote", [False, True], ids=["local", "url"])
def test_rearview_load_reads_a_conversation_dump_and_reports_bad_lines(
    live: tuple[LocalServer, Services], tmp_path: Path, remote: bool
) -> None:
    running, services = live
    dim = services.embedder.dim
    file = _jsonl(
        tmp_path / "history.jsonl",
        [
            *TURNS,
            '{"text": "broken',
            {"text": "A vector of the wrong size", "vector": [0.5] * (dim - 1)},
            {"text": "Brought with its vector", "vector": [1.0] + [0.0] * (dim - 1), "dia_id": "D1:9"},
        ],
    )
    if remote:
        key = services.access.create_key("acme", ["read", "write"])[1]
        args, env = ["--url", running.url, "--token", key], {}
    else:
        args, env = [], {"REARVIEW_DATA_DIR": str(tmp_path / "cli-data"), "REARVIEW_EMBEDDER": "hashing"}

    result = CliRunner().invoke(app, [*args, "load", NS, str(file), "--batch-size", "2"], env=env)
    if not remote:
        services = build(Settings(data_dir=tmp_path / "cli-data", embedder="hashing"))

    assert result.exit_code == 1, result.output
    assert "line 4: line: not valid JSON" in result.stderr
    assert f"line 5: vector: {dim} values" in result.stderr
    assert "loaded 4 (3 embedded here), already stored 0" in result.stdout and "invalid 2" in result.stdout
    stored = services.store.get_many(NS, ["D1:1", "D1:2", "D1:3", "D1:9"])
    reply = stored["D1:2"]
    assert len(stored) == 4 and isinstance(reply, Episode)
    assert reply.entities == ["Ben"] and reply.context == TURNS[0]["text"]
    if not remote:
        services.close()
    again = CliRunner().invoke(app, [*args, "load", NS, str(file)], env=env)
    assert "loaded 0 (0 embedded here), already stored 4" in again.stdout, again.output


def test_rearview_load_sends_a_large_history_in_requests_under_the_body_limit(
    live: tuple[LocalServer, Services], tmp_path: Path
) -> None:
    running, services = live
    key = services.access.create_key("acme", ["read", "write"])[1]
    vectors = np.random.default_rng(5).normal(size=(300, services.embedder.dim))
    file = _jsonl(
        tmp_path / "large.jsonl",
        [{"id": f"L{i}", "text": f"Line {i} of a long chat log", "vector": vectors[i].tolist()} for i in range(300)],
    )
    assert file.stat().st_size > 2 * 1024 * 1024, "more than one request's body"

    result = CliRunner().invoke(app, ["--url", running.url, "--token", key, "load", NS, str(file)])

    assert result.exit_code == 0, result.output
    assert "loaded 300 (0 embedded here)" in result.stdout
    assert services.stats.of(NS).counts["episodic"] == 300
