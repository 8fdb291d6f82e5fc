"""The memory-by-hand MCP tools (list_memories, edit_memory, memory_history, export) through the SDK's own client,
in-process, over the real services on a temporary SQLite file: what they return, that an edit changes what
recall finds and is recorded with the caller's key, and that every tool refuses a namespace outside the key (a
look-alike sibling, another tenant, the parent)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult

from rearview.adapters.sqlite import SqliteMemoryStore
from rearview.api.mcp import create_mcp_server, fixed_principal
from rearview.bootstrap import Services
from rearview.domain.access import Principal
from rearview.domain.recall import RecallQuery
from rearview.domain.write import MemoryWrite
from support.mcp_calls import run

pytestmark = pytest.mark.integration

NS = "acme:u-42"


async def _calls(services: Services, principal: Principal, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with Client(create_mcp_server(services, fixed_principal(principal))) as client:
        return [await client.call_tool(name, {**args, "namespace": NS}) for name, args in calls]


def call(services: Services, principal: Principal, name: str, **args: Any) -> CallToolResult:
    result: CallToolResult = run(_calls(services, principal, [(name, args)]))[0]
    return result


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


@pytest.fixture
def principal(services: Services) -> Principal:
    key, _ = services.access.create_key("acme", ["read", "write"])
    return Principal.of_key(key)


def _write(services: Services, *contents: str) -> list[str]:
    return [services.writer.write(NS, MemoryWrite(content=c, id=f"m-{i}")).id for i, c in enumerate(contents)]


def test_list_memories_pages_newest_first(services: Services, principal: Principal) -> None:
    _write(services, "Flew to Lisbon for the offsite", "Booked a table at the Porto restaurant", "Renewed the visa")
    first = structured(call(services, principal, "list_memories", limit=2))
    assert [m["id"] for m in first["items"]] == ["m-2", "m-1"] and first["next_cursor"]
    rest = structured(call(services, principal, "list_memories", limit=2, cursor=first["next_cursor"]))
    assert [m["id"] for m in rest["items"]] == ["m-0"] and rest["next_cursor"] is None
    bad = call(services, principal, "list_memories", limit=501)
    assert bad.is_error and "limit" in bad.content[0].text  # type: ignore[union-attr]


def test_edit_memory_changes_recall_and_history_names_the_key(services: Services, principal: Principal) -> None:
    _write(services, "The team offsite venue is the Lisbon riverside hotel")
    edited = structured(
        call(
            services,
            principal,
            "edit_memory",
            memory_id="m-0",
            content="The team offsite venue is the Porto wine cellar",
        )
    )
    # A union (episode or fact) comes back wrapped, as the SDK wraps a result that is not one object type.
    assert edited["result"]["version"] == 2
    hits = services.recaller.recall(NS, RecallQuery(query="offsite venue")).results
    assert [h.content for h in hits] == ["The team offsite venue is the Porto wine cellar"]

    history = structured(call(services, principal, "memory_history", memory_id="m-0"))
    assert [(v["version"], v["changed_by"]) for v in history["versions"]] == [(1, "write"), (2, "edit")]
    assert history["versions"][1]["actor"] == principal.key_id

    stale = call(services, principal, "edit_memory", memory_id="m-0", importance=0.9, expected_version=1)
    assert stale.is_error and "version 2" in stale.content[0].text  # type: ignore[union-attr]
    wrong_layer = call(services, principal, "edit_memory", memory_id="m-0", confidence=0.3)
    assert wrong_layer.is_error and "confidence" in wrong_layer.content[0].text  # type: ignore[union-attr]


def test_export_returns_every_memory_with_its_history(services: Services, principal: Principal) -> None:
    _write(services, *(f"Visited client number {i} in the Lisbon office about contract {i * 977}" for i in range(3)))
    call(services, principal, "edit_memory", memory_id="m-1", tags=["client"])
    chunk = structured(call(services, principal, "export"))
    assert sorted(item["id"] for item in chunk["items"]) == ["m-0", "m-1", "m-2"]
    assert chunk["next_cursor"] is None
    assert [len(item["history"]) for item in chunk["items"] if item["id"] == "m-1"] == [1]


def test_an_export_holds_the_accesses_recalls_counted_just_before(services: Services, principal: Principal) -> None:
    """The embedded store folds the accesses recalls log in batches: an export settles them first."""
    _write(services, "Flew to Lisbon for the offsite", "Renewed the visa")
    for _ in range(2):
        services.recaller.recall(NS, RecallQuery(query="Lisbon offsite flight", top_k=1))
    counts = {item["id"]: item["access_count"] for item in structured(call(services, principal, "export"))["items"]}
    assert counts == {"m-0": 2, "m-1": 0}


def test_an_export_from_a_store_that_cannot_write_still_comes(services: Services, principal: Principal) -> None:
    """Settling the access counts is a write: a database that cannot be written (a full disk) still exports."""
    _write(services, "Flew to Lisbon for the offsite")
    services.recaller.recall(NS, RecallQuery(query="Lisbon offsite flight", top_k=1))
    store = services.store
    assert isinstance(store, SqliteMemoryStore)
    store.db.connection().execute("PRAGMA query_only = ON")  # every write on this thread's connection refused
    try:
        page = services.transfer.export_page(NS)  # on this thread (the MCP tool runs on a worker's)
    finally:
        store.db.connection().execute("PRAGMA query_only = OFF")
    assert [json.loads(line)["id"] for line in page.lines] == ["m-0"]


TOOL_ARGS: dict[str, dict[str, Any]] = {
    "list_memories": {},
    "edit_memory": {"memory_id": "m-0", "content": "Overwritten from outside"},
    "memory_history": {"memory_id": "m-0"},
    "export": {},
}


@pytest.mark.parametrize("tool", list(TOOL_ARGS))
@pytest.mark.parametrize(("scope", "outside"), [("acme", "acme2"), ("acme", "globex"), ("acme:u-42", "acme")])
def test_another_namespace_is_refused(services: Services, tool: str, scope: str, outside: str) -> None:
    services.writer.write(outside, MemoryWrite(content="The other tenant's Lisbon flight", id="m-0"))
    key, _ = services.access.create_key(scope, ["read", "write"])

    async def from_outside() -> Any:
        async with Client(create_mcp_server(services, fixed_principal(Principal.of_key(key)))) as client:
            return await client.call_tool(tool, {**TOOL_ARGS[tool], "namespace": outside})

    result = run(from_outside())
    assert result.is_error and f"scope does not include '{outside}'" in result.content[0].text
    assert "Lisbon" not in result.content[0].text
    assert services.store.get(outside, "m-0").content == "The other tenant's Lisbon flight"  # type: ignore[union-attr]
