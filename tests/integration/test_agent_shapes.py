"""The shapes agents send (issue 37): `metadata` (stored, returned, edited, exported, filtered in recall and listing),
`ttl_seconds` / `expires_at`, `source`, an `entities` filter, `layers: ["working"]` in recall, and a long text
stored as linked chunks; over HTTP (a real local server), both Python clients, MCP (the SDK's client) and the
command line, locally and over --url; and no namespace sees another's through any of them."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from rearview.api.local_server import LocalServer
from rearview.api.mcp import create_mcp_server, fixed_principal
from rearview.bootstrap import Services
from rearview.cli import app
from rearview.client import AsyncRearviewClient, RearviewClient
from rearview.clock import ManualClock
from rearview.domain.access import Principal
from rearview.domain.listing import ListQuery
from rearview.domain.memory import Episode
from rearview.domain.metadata import MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_METADATA_KEYS
from rearview.domain.recall import RecallQuery
from rearview.domain.working import WorkingWrite
from rearview.domain.write import MemoryWrite
from rearview.errors import InvalidInput, NotFound
from support.mcp_calls import run

pytestmark = pytest.mark.integration

NS, OTHER = "acme:u-42", "acme:u-7"
LONG_TEXT = "\n\n".join(
    f"Section {n}. "
    + " ".join(f"The quarterly report item {n}.{i} covers shipping costs in region {i}." for i in range(30))
    for n in range(8)
)


def _post(server: LocalServer, path: str, body: Any) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/namespaces/{NS}{path}", json=body, timeout=60)


def _get(server: LocalServer, path: str, **params: str) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/namespaces/{NS}{path}", params=params, timeout=60)


# --- HTTP ---------------------------------------------------------------------------------------------------------


def test_metadata_and_source_are_stored_returned_filtered_and_edited(server: LocalServer) -> None:
    apollo = _post(server, "/memories", {
        "content": "Shipped the Apollo billing page", "metadata": {"project": "apollo", "priority": 2},
        "source": "https://tracker.example/APL-7", "entities": ["Dana"],
    }).json()  # fmt: skip
    gemini = _post(server, "/memories", {
        "content": "Shipped the Gemini billing page", "metadata": {"project": "gemini", "priority": 1},
    }).json()  # fmt: skip
    fact = _post(server, "/memories", {
        "content": "Dana owns the billing pages", "layer": "semantic", "source": "user said",
        "metadata": {"project": "apollo"}, "entities": ["Dana"],
    }).json()  # fmt: skip

    got = _get(server, f"/memories/{apollo['id']}").json()
    assert got["metadata"] == {"project": "apollo", "priority": 2} and got["source"] == "https://tracker.example/APL-7"
    assert _get(server, f"/memories/{fact['id']}").json()["entities"] == ["Dana"]

    def recalled(**body: Any) -> list[str]:
        return [h["id"] for h in _post(server, "/recall", {"query": "billing page", **body}).json()["results"]]

    assert set(recalled(metadata={"project": "apollo"})) == {apollo["id"], fact["id"]}
    assert recalled(metadata={"project": "apollo", "priority": {"in": [2, 3]}}) == [apollo["id"]]
    assert set(recalled(metadata={"priority": {"in": [1, 2]}})) == {apollo["id"], gemini["id"]}
    assert set(recalled(entities=["Dana"])) == {apollo["id"], fact["id"]}
    hits = _post(server, "/recall", {"query": "billing page", "metadata": {"project": "apollo"}}).json()["results"]
    assert {h["source"] for h in hits} == {"https://tracker.example/APL-7", "user said"}

    listed = _get(server, "/memories", metadata=json.dumps({"project": "gemini"})).json()["items"]
    assert [m["id"] for m in listed] == [gemini["id"]]
    assert {m["id"] for m in _get(server, "/memories", entity="Dana").json()["items"]} == {apollo["id"], fact["id"]}

    edited = httpx.patch(f"{server.url}/v1/namespaces/{NS}/memories/{gemini['id']}",
                         json={"metadata": {"project": "apollo"}}, timeout=60).json()  # fmt: skip
    assert edited["metadata"] == {"project": "apollo"} and edited["version"] == 2
    assert set(recalled(metadata={"project": "apollo"})) == {apollo["id"], gemini["id"], fact["id"]}
    assert recalled(metadata={"project": "gemini"}) == []


@pytest.mark.parametrize(
    ("metadata", "limit"),
    [
        ({f"k{i}": i for i in range(MAX_METADATA_KEYS + 1)}, f"at most {MAX_METADATA_KEYS} keys"),
        ({"a": {"b": {"c": {"d": {"e": 1}}}}}, f"nested at most {MAX_METADATA_DEPTH} levels"),
        ({"notes": "x" * MAX_METADATA_BYTES}, f"at most {MAX_METADATA_BYTES} bytes"),
        ({"x" * 65: 1}, "must be 1 to 64 characters"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_metadata_past_a_limit_is_a_422_naming_the_field_and_the_limit(
    server: LocalServer, metadata: Any, limit: str
) -> None:
    answer = _post(server, "/memories", {"content": "Shipped the Apollo billing page", "metadata": metadata})

    assert answer.status_code == 422
    assert answer.json()["field"] == "metadata" and limit in answer.json()["message"], answer.json()


@pytest.mark.parametrize(
    ("body", "field", "said"),
    [
        ({"ttl_seconds": 60, "expires_at": "2030-01-01T00:00:00Z"}, "ttl_seconds", "not both"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at", "a time to come"),
        ({"ttl_seconds": 0}, "ttl_seconds", "greater than or equal to 1"),
        ({"source": "line one\nline two"}, "source", "pattern"),
    ],
)
def test_bad_expiry_or_source_is_a_422_naming_the_field(
    server: LocalServer, body: dict[str, Any], field: str, said: str
) -> None:
    answer = _post(server, "/memories", {"content": "Renewed the Apollo domain", **body})

    assert answer.status_code == 422 and answer.json()["field"] == field and said in answer.json()["message"]


def test_a_metadata_filter_past_its_limits_is_a_422(server: LocalServer) -> None:
    for metadata, said in (
        ({"a": None}, 'or {"in": [values]}'),
        ({"a": {"eq": 1}}, 'or {"in": [values]}'),
        ({"a": {"in": list(range(33))}}, "at most 32"),
        ({f"k{i}": 1 for i in range(17)}, "at most 16 keys"),
    ):
        answer = _post(server, "/recall", {"query": "billing", "metadata": metadata})
        assert answer.status_code == 422 and answer.json()["field"].startswith("metadata"), answer.json()
        assert said in answer.json()["message"], answer.json()
    listed = _get(server, "/memories", metadata="{not json")
    assert listed.status_code == 422 and listed.json()["field"] == "metadata"


def test_an_expired_memory_is_never_returned_and_the_purge_forgets_it(
    server: LocalServer, world: Services, clock: ManualClock
) -> None:
    brief = _post(server, "/memories", {"content": "The Apollo door code is posted at the desk", "ttl_seconds": 60,
                                        "metadata": {"project": "apollo"}}).json()  # fmt: skip
    lasting = _post(server, "/memories", {"content": "The Apollo office opens at nine"}).json()
    stored = _get(server, f"/memories/{brief['id']}").json()
    assert stored["expires_at"].startswith((clock.now() + timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%S"))
    assert brief["id"] in [h["id"] for h in _post(server, "/recall", {"query": "Apollo door code"}).json()["results"]]

    clock.advance(seconds=61)

    assert _get(server, f"/memories/{brief['id']}").status_code == 404
    assert _get(server, f"/memories/{brief['id']}/history").status_code == 404
    recalled = _post(server, "/recall", {"query": "Apollo door code"}).json()["results"]
    assert brief["id"] not in [h["id"] for h in recalled]
    assert [m["id"] for m in _get(server, "/memories").json()["items"]] == [lasting["id"]]
    exported = httpx.get(f"{server.url}/v1/namespaces/{NS}/export", timeout=60).text
    assert brief["id"] not in exported and lasting["id"] in exported
    assert world.store.get(NS, brief["id"]) is not None  # still on disk: the purge deletes it

    assert world.retention.purge() == 1
    assert world.store.get(NS, brief["id"]) is None and world.store.get(NS, lasting["id"]) is not None


def test_a_long_text_is_stored_as_linked_chunks_and_forgotten_whole(server: LocalServer, world: Services) -> None:
    answer = _post(server, "/memories", {"content": LONG_TEXT, "session_id": "s-1", "metadata": {"doc": "q3"}})

    assert answer.status_code == 201, answer.text
    written = answer.json()
    parent, chunks = written["id"], written["chunks"]
    assert chunks[0] == parent and len(chunks) == len(set(chunks)) >= 8
    stored = [world.store.get(NS, chunk) for chunk in chunks]
    assert all(isinstance(m, Episode) and len(m.content) <= 2000 for m in stored)
    assert [(m.parent_id, m.chunk_index, m.chunk_count) for m in stored if isinstance(m, Episode)] == [
        (parent, i, len(chunks)) for i in range(len(chunks))
    ]
    assert all(m is not None and m.metadata == {"doc": "q3"} for m in stored)
    # Each chunk is found on its own, with its parent's id.
    hit = _post(server, "/recall", {"query": "quarterly report item 5.17 shipping region 17"}).json()["results"][0]
    assert hit["id"] in chunks and hit["parent_id"] == parent and "5.17" in hit["content"]
    # Written again (the same id: a retry), nothing is stored twice.
    again = _post(server, "/memories", {"content": LONG_TEXT, "id": parent, "session_id": "s-1",
                                        "metadata": {"doc": "q3"}})  # fmt: skip
    assert again.status_code == 200 and again.json()["chunks"] == chunks and again.json()["reason"] == "duplicate_id"

    gone = httpx.delete(f"{server.url}/v1/namespaces/{NS}/memories/{parent}", timeout=60).json()

    assert sorted(gone["ids"]) == sorted(chunks)
    assert all(world.store.get(NS, chunk) is None for chunk in chunks)


def test_past_the_hard_limit_a_write_is_refused_naming_it(server: LocalServer) -> None:
    answer = _post(server, "/memories", {"content": "word " * 10_001})

    assert answer.status_code == 422
    assert answer.json()["field"] == "content" and "at most 50000 characters" in answer.json()["message"]
    semantic = _post(server, "/memories", {"content": "x " * 300, "layer": "semantic"})
    assert semantic.status_code == 422 and "at most 500 characters" in semantic.json()["message"]


def test_recall_searches_the_sessions_working_memory_when_asked(server: LocalServer, world: Services) -> None:
    world.working.put(NS, "s-1", "current_goal", WorkingWrite(value="Book the Lisbon venue for the offsite"))
    world.working.put(NS, "s-1", "budget", WorkingWrite(value={"limit_eur": 4000}))
    world.working.put(OTHER, "s-1", "current_goal", WorkingWrite(value="Book the Lisbon venue for a wedding"))
    lasting = _post(server, "/memories", {"content": "The Lisbon venue needs a deposit in March"}).json()

    only = _post(server, "/recall", {"query": "Lisbon venue", "layers": ["working"], "session_id": "s-1"}).json()
    both = _post(server, "/recall", {"query": "Lisbon venue", "layers": ["working", "episodic"],
                                     "session_id": "s-1"}).json()  # fmt: skip
    nameless = _post(server, "/recall", {"query": "Lisbon venue", "layers": ["working"]})

    assert [(h["layer"], h["id"]) for h in only["results"]] == [("working", "current_goal")]
    assert only["results"][0]["content"] == "current_goal: Book the Lisbon venue for the offsite"
    assert {(h["layer"], h["id"]) for h in both["results"]} == {
        ("working", "current_goal"),
        ("episodic", lasting["id"]),
    }
    assert nameless.status_code == 422 and nameless.json()["field"] == "session_id"


def test_export_and_import_carry_the_new_fields(server: LocalServer, world: Services) -> None:
    written = _post(
        server,
        "/memories",
        {
            "content": "Renewed the Apollo domain for two years",
            "source": "invoice 88",
            "metadata": {"project": "apollo", "cost": 12.5},
            "ttl_seconds": 86_400,
        },
    )
    exported = httpx.get(f"{server.url}/v1/namespaces/{NS}/export", timeout=60).text  # fmt: skip
    restored = httpx.post(f"{server.url}/v1/namespaces/{OTHER}/import", content=exported.encode(),
                          headers={"Content-Type": "application/x-ndjson"}, timeout=60)  # fmt: skip

    assert restored.status_code == 200, restored.text
    copy = world.store.get(OTHER, written.json()["id"])
    assert copy is not None and copy.metadata == {"project": "apollo", "cost": 12.5} and copy.source == "invoice 88"
    assert copy.expires_at is not None
    line = json.loads(exported.splitlines()[0])
    line["metadata"] = {f"k{i}": i for i in range(40)}
    refused = httpx.post(f"{server.url}/v1/namespaces/{OTHER}/import", json={"items": [line]}, timeout=60)
    assert refused.status_code == 422 and refused.json()["field"] == "items.0.metadata"


# --- isolation: every new read path stays in its namespace --------------------------------------------------------


def test_no_namespace_sees_anothers_metadata_entities_chunks_or_working_memory(
    server: LocalServer, world: Services
) -> None:
    mine = world.writer.write(NS, MemoryWrite(content="Shipped the Apollo billing page", metadata={"project": "apollo"},
                                              entities=["Dana"]))  # fmt: skip
    theirs = world.writer.write(OTHER, MemoryWrite(content="Shipped the Apollo billing page twice",
                                                   metadata={"project": "apollo"}, entities=["Dana"]))  # fmt: skip
    long = world.writer.write(OTHER, MemoryWrite(content=LONG_TEXT))
    world.working.put(OTHER, "s-1", "goal", WorkingWrite(value="Ship the Apollo billing page"))
    with RearviewClient(server.url) as rv:
        by_metadata = rv.recall(NS, RecallQuery(query="Apollo billing", metadata={"project": "apollo"}))
        by_entity = rv.recall(NS, RecallQuery(query="Apollo billing", entities=["Dana"]))
        working = rv.recall(NS, RecallQuery(query="Apollo billing", layers=["working"], session_id="s-1"))
        listed = rv.list_memories(NS, ListQuery(metadata={"project": "apollo"}, entity="Dana"))
        with pytest.raises(NotFound):
            rv.get(NS, long.id)
        with pytest.raises(NotFound):
            rv.delete(NS, long.id)

    assert [h.id for h in by_metadata.results] == [h.id for h in by_entity.results] == [mine.id]
    assert working.results == [] and working.no_relevant_memory
    assert [m.id for m in listed.items] == [mine.id]
    assert world.store.get(OTHER, theirs.id) is not None and world.store.get(OTHER, long.chunks[-1]) is not None


# --- the clients, MCP and the command line ------------------------------------------------------------------------


def test_both_python_clients_send_and_filter_every_shape(server: LocalServer) -> None:
    with RearviewClient(server.url) as rv:
        written = rv.write(NS, MemoryWrite(content="Shipped the Apollo billing page", metadata={"project": "apollo"},
                                           source="release notes", ttl_seconds=3600))  # fmt: skip
        page = rv.list_memories(NS, ListQuery(metadata={"project": {"in": ["apollo", "gemini"]}}))
        long = rv.write(NS, MemoryWrite(content=LONG_TEXT))

    async def asynchronously() -> tuple[Any, Any]:
        async with AsyncRearviewClient(server.url) as rv:
            recalled = await rv.recall(NS, RecallQuery(query="Apollo billing", metadata={"project": "apollo"}))
            listed = await rv.list_memories(NS, ListQuery(metadata={"project": "apollo"}))
            return recalled, listed

    recalled, listed = asyncio.run(asynchronously())
    assert [m.id for m in page.items] == [m.id for m in listed.items] == [written.id]
    assert recalled.results[0].id == written.id and recalled.results[0].source == "release notes"
    assert recalled.results[0].expires_at is not None
    assert long.chunks[0] == long.id and len(long.chunks) >= 8
    with RearviewClient(server.url) as rv, pytest.raises(InvalidInput) as refused:
        rv.write(NS, MemoryWrite(content="x", expires_at="2001-01-01T00:00:00Z"))
    assert refused.value.field == "expires_at"


def test_the_mcp_tools_take_every_shape(world: Services) -> None:
    async def calls() -> list[Any]:
        async with Client(create_mcp_server(world, fixed_principal(Principal.open_local()))) as client:
            remembered = await client.call_tool("remember", {
                "namespace": NS, "content": "Shipped the Apollo billing page", "metadata": {"project": "apollo"},
                "source": "release notes", "ttl_seconds": 3600,
            })  # fmt: skip
            await client.call_tool("working_memory_set", {"namespace": NS, "session_id": "s-1", "key": "goal",
                                                          "value": "Ship the Apollo billing page"})  # fmt: skip
            text = await client.call_tool("recall", {"namespace": NS, "query": "Apollo billing",
                                                     "metadata": {"project": "apollo"}})  # fmt: skip
            as_json = await client.call_tool(
                "recall",
                {
                    "namespace": NS,
                    "query": "Apollo billing",
                    "format": "json",
                    "layers": ["working", "episodic"],
                    "session_id": "s-1",
                },
            )
            listed = await client.call_tool("list_memories", {"namespace": NS, "metadata": {"project": "gemini"}})
            edited = await client.call_tool(
                "edit_memory", {"namespace": NS, "memory_id": remembered.structured_content["id"], "ttl_seconds": 60}
            )
            long = await client.call_tool("remember", {"namespace": NS, "content": LONG_TEXT})
            return [remembered, text, as_json, listed, edited, long]

    remembered, text, as_json, listed, edited, long = run(calls())

    memory_id = remembered.structured_content["id"]
    assert text.content[0].text.endswith(f"id {memory_id})") and text.structured_content is None
    assert {(h["layer"], h["id"]) for h in as_json.structured_content["results"]} == {
        ("working", "goal"), ("episodic", memory_id)
    }  # fmt: skip
    assert listed.structured_content["items"] == []
    assert not edited.is_error and json.loads(edited.content[0].text)["expires_at"].startswith("2026-03-10T12:01")
    assert len(long.structured_content["chunks"]) >= 8


def test_the_command_line_locally_and_over_url(server: LocalServer, tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"REARVIEW_DATA_DIR": str(tmp_path / "local"), "REARVIEW_EMBEDDER": "hashing"}
    for target in (["--url", server.url], []):
        wrote = runner.invoke(app, [*target, "remember", NS, "Shipped the Apollo billing page", "--metadata",
                                    '{"project": "apollo"}', "--source", "release notes", "--ttl-seconds", "3600",
                                    "--json"], env=env)  # fmt: skip
        assert wrote.exit_code == 0, wrote.output
        memory_id = json.loads(wrote.stdout)["id"]
        recalled = runner.invoke(app, [*target, "recall", NS, "Apollo billing", "--metadata", '{"project": "apollo"}',
                                       "--entity", "nobody", "--json"], env=env)  # fmt: skip
        assert recalled.exit_code == 0 and json.loads(recalled.stdout)["results"] == [], recalled.output
        listed = runner.invoke(app, [*target, "ls", NS, "--metadata", '{"project": "apollo"}', "--json"], env=env)
        assert [m["id"] for m in json.loads(listed.stdout)["items"]] == [memory_id], listed.output
        bad = runner.invoke(app, [*target, "remember", NS, "x", "--metadata", "[1]"], env=env)
        assert bad.exit_code == 2 and "metadata" in bad.stderr
