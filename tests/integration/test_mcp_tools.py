"""The MCP tools through the SDK's own client, connected in-process to `create_mcp_server` over the real services
on a temporary SQLite file: the tool list and its descriptions, every tool, and the error cases (bad arguments
name the field; another namespace and a missing permission are refused)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult

from rearview.api.mcp import TOOL_NAMES, create_mcp_server, fixed_principal
from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.access import Principal
from rearview.domain.memory import Episode
from rearview.domain.permissions import Permission
from rearview.domain.write import MemoryWrite
from support.mcp_calls import TOOL_ARGS, permissions_without, run
from support.stats import usage_stats

pytestmark = pytest.mark.integration

NS = "acme:u-42"


def key_principal(services: Services, scope: str, permissions: Any) -> Principal:
    key, _ = services.access.create_key(scope, permissions)
    return Principal.of_key(key)


async def _calls(
    services: Services, principal: Principal, calls: list[tuple[str, dict[str, Any]]]
) -> list[CallToolResult]:
    async with Client(create_mcp_server(services, fixed_principal(principal))) as client:
        return [await client.call_tool(name, args) for name, args in calls]


def call(services: Services, principal: Principal, name: str, args: dict[str, Any]) -> CallToolResult:
    return run(_calls(services, principal, [(name, args)]))[0]


def text_of(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def open_principal() -> Principal:
    return Principal.open_local()


# --- the tool list ----------------------------------------------------------------------------------------------


def test_the_nine_tools_are_listed_with_every_parameter_described(services: Services) -> None:
    async def list_tools() -> Any:
        async with Client(create_mcp_server(services, fixed_principal(Principal.open_local()))) as client:
            return (await client.list_tools()).tools

    tools = run(list_tools())

    assert sorted(t.name for t in tools) == sorted(TOOL_NAMES)
    for tool in tools:
        assert tool.description and len(tool.description) > 40, tool.name
        properties = tool.input_schema["properties"]
        assert "namespace" in properties, tool.name
        for name, schema in properties.items():
            assert len(schema.get("description", "")) > 15, (tool.name, name)
        # Structured output: every result is a pydantic model with a published schema; but recall and brief answer
        # compact text unless asked for JSON (`format`), which no output schema describes.
        if tool.name in ("recall", "brief"):
            assert tool.output_schema is None and properties["format"]["enum"] == ["text", "json"], tool.name
        else:
            assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
    by_name = {t.name: t for t in tools}
    assert by_name["remember"].input_schema["required"] == ["content"]
    assert by_name["recall"].input_schema["required"] == ["query"]
    assert by_name["recall"].annotations.read_only_hint is True
    assert by_name["forget"].annotations.destructive_hint is True


# --- every tool -------------------------------------------------------------------------------------------------


def test_remember_then_recall_returns_it_as_structured_and_text(services: Services, open_principal: Principal) -> None:
    remembered, recalled, nothing = run(
        _calls(
            services,
            open_principal,
            [
                (
                    "remember",
                    {
                        "content": "Dana prefers aisle seats on flights to Lisbon",
                        "namespace": NS,
                        "tags": ["travel"],
                        "entities": ["Dana"],
                        "session_id": "s-1",
                    },
                ),  # fmt: skip
                ("recall", {"query": "aisle seats Lisbon", "namespace": NS, "format": "json"}),
                ("recall", {"query": "quarterly tax filing deadline", "namespace": NS, "format": "json"}),
            ],
        )
    )

    assert not remembered.is_error
    assert remembered.structured_content["status"] == "stored"
    memory_id = remembered.structured_content["id"]
    assert memory_id in text_of(remembered)  # readable as text too
    stored = services.store.get(NS, memory_id)
    assert isinstance(stored, Episode) and stored.tags == ["travel"] and stored.entities == ["Dana"]

    assert not recalled.is_error
    hits = recalled.structured_content["results"]
    assert [h["id"] for h in hits][:1] == [memory_id]
    assert recalled.structured_content["no_relevant_memory"] is False
    assert recalled.structured_content["trace"] is None
    assert "aisle seats" in text_of(recalled)

    assert nothing.structured_content["no_relevant_memory"] is True
    assert nothing.structured_content["results"] == []


def test_remember_a_fact_with_a_dimension(services: Services, open_principal: Principal) -> None:
    result = call(
        services,
        open_principal,
        "remember",
        {"content": "Dana is vegetarian", "layer": "semantic", "dimension": "diet", "namespace": NS},
    )

    assert not result.is_error and result.structured_content["status"] == "stored"
    fact = services.store.active_fact_for_dimension(NS, "diet")
    assert fact is not None and fact.content == "Dana is vegetarian"


def test_recall_takes_exclude_and_a_time_budget_and_says_what_it_understood(
    services: Services, open_principal: Principal
) -> None:
    for content in ("Retried the flaky upload three times", "Fixed the flaky upload with a bigger chunk size"):
        services.writer.write(NS, MemoryWrite(content=content))

    result = call(
        services,
        open_principal,
        "recall",
        {
            "query": "how did we last time fix the flaky upload",
            "exclude": ["retries"],
            "timeout_ms": 30_000,
            "namespace": NS,
            "format": "json",
        },
    )

    assert not result.is_error
    body = result.structured_content
    assert [h["content"] for h in body["results"]] == ["Fixed the flaky upload with a bigger chunk size"]
    assert body["query_form"]["last_time"] == "last time"
    assert body["query_form"]["exclusions"][0]["phrase"] == "retries"
    assert len(body["query_form"]["exclusions"][0]["left_out"]) == 1
    assert body["timed_out"] is False


def test_explain_recall_returns_the_per_stage_trace(services: Services, open_principal: Principal) -> None:
    services.writer.write(NS, MemoryWrite(content="Dana booked the TAP flight to Lisbon for March 14"))

    result = call(services, open_principal, "explain_recall", {"query": "Lisbon flight", "namespace": NS})

    assert not result.is_error
    trace = result.structured_content["trace"]
    assert trace["query"] == "Lisbon flight"
    stages = [s["stage"] for s in trace["stages"]]
    assert stages[0] == "parse" and len(stages) >= 3
    assert result.structured_content["results"]


def test_forget_by_id_and_by_filter_returns_the_receipt(services: Services, open_principal: Principal) -> None:
    kept = services.writer.write(NS, MemoryWrite(content="Dana's passport expires in 2031", tags=["docs"]))
    gone = services.writer.write(NS, MemoryWrite(content="Booked the Lisbon venue for the offsite", tags=["offsite"]))
    other = services.writer.write(NS, MemoryWrite(content="Catering for the offsite is vegetarian", tags=["offsite"]))

    by_id, by_tag, empty = run(
        _calls(
            services,
            open_principal,
            [
                ("forget", {"ids": [gone.id], "namespace": NS}),
                ("forget", {"tags": ["offsite"], "namespace": NS}),
                ("forget", {"namespace": NS}),
            ],
        )
    )

    assert by_id.structured_content["ids"] == [gone.id]
    assert by_id.structured_content["deleted"]["episodic"] == 1
    assert by_tag.structured_content["ids"] == [other.id]
    assert services.store.get(NS, kept.id) is not None
    assert services.store.get(NS, gone.id) is None and services.store.get(NS, other.id) is None
    # An empty forget would wipe the namespace: refused, naming the field.
    assert empty.is_error and "ids:" in text_of(empty)


def test_working_memory_set_get_expire_and_clear(
    services: Services, clock: ManualClock, open_principal: Principal
) -> None:
    set_result, view = run(
        _calls(
            services,
            open_principal,
            [
                (
                    "working_memory_set",
                    {
                        "session_id": "s-1",
                        "key": "goal",
                        "value": {"plan": "offsite"},
                        "ttl_seconds": 60,
                        "namespace": NS,
                    },
                ),  # fmt: skip
                ("working_memory_get", {"session_id": "s-1", "namespace": NS}),
            ],
        )
    )
    assert set_result.structured_content["value"] == {"plan": "offsite"}
    assert view.structured_content["entries"] == {"goal": {"plan": "offsite"}}

    clock.advance(seconds=61)
    assert (
        call(services, open_principal, "working_memory_get", {"session_id": "s-1", "namespace": NS}).structured_content[
            "entries"
        ]
        == {}
    )

    call(services, open_principal, "working_memory_set", {"session_id": "s-1", "key": "k", "value": 1, "namespace": NS})
    cleared = call(services, open_principal, "working_memory_clear", {"session_id": "s-1", "namespace": NS})
    assert cleared.structured_content == {"namespace": NS, "session_id": "s-1", "cleared": 1}


def test_consolidate_and_memory_stats(services: Services, clock: ManualClock, open_principal: Principal) -> None:
    for n, text in enumerate(
        [
            "Dana ordered a vegetarian meal on the Lisbon flight",
            "Dana asked for the vegetarian menu at the Lisbon dinner",
            "Dana chose the vegetarian option at the offsite lunch",
        ]
    ):
        clock.advance(days=1)
        services.writer.write(NS, MemoryWrite(content=text, id=f"veg-{n}"))

    consolidated, stats = run(
        _calls(services, open_principal, [("consolidate", {"namespace": NS}), ("memory_stats", {"namespace": NS})])
    )

    assert not consolidated.is_error
    result = consolidated.structured_content
    assert result["namespace"] == NS and result["episodes_considered"] == 3
    assert result["facts_created"] == len(result["fact_ids"])
    assert stats.structured_content["namespace"] == NS
    assert stats.structured_content["counts"]["episodic"] == 3
    assert stats.structured_content["counts"]["semantic"] == result["facts_created"]


# --- namespaces -------------------------------------------------------------------------------------------------


def test_the_namespace_defaults_to_the_keys_scope_and_may_be_narrowed(services: Services) -> None:
    principal = key_principal(services, "acme", ["read", "write"])

    default, narrowed = run(
        _calls(
            services,
            principal,
            [
                ("remember", {"content": "Acme's fiscal year starts in April"}),
                ("remember", {"content": "Dana's desk is on the third floor", "namespace": NS}),
            ],
        )
    )

    assert services.store.get("acme", default.structured_content["id"]) is not None
    assert services.store.get(NS, narrowed.structured_content["id"]) is not None
    assert services.store.get("acme", narrowed.structured_content["id"]) is None


def test_open_mode_uses_the_configured_default_namespace(services: Services, open_principal: Principal) -> None:
    result = call(services, open_principal, "memory_stats", {})

    assert result.structured_content["namespace"] == services.settings.default_namespace == "default"


@pytest.mark.parametrize("other", ["acme2", "globex", "acme2:u-42"])
def test_another_namespace_is_refused_without_saying_whether_it_exists(services: Services, other: str) -> None:
    principal = key_principal(services, "acme", ["read", "write"])
    services.writer.write("acme2", MemoryWrite(content="Acme2 keeps its secrets in the vault", id="secret"))

    results = run(
        _calls(
            services,
            principal,
            [
                ("recall", {"query": "secrets vault", "namespace": other}),
                ("remember", {"content": "Planting a memory in another tenant", "namespace": other}),
            ],
        )
    )

    for result in results:
        assert result.is_error
        assert f"namespace: this API key's scope does not include '{other}'" in text_of(result)
        assert "vault" not in text_of(result) and "secret" not in text_of(result)
        assert result.structured_content is None
    assert usage_stats(services.store, other, services.clock.now()).counts["episodic"] == (1 if other == "acme2" else 0)


def test_a_narrow_key_cannot_widen_to_its_parent(services: Services) -> None:
    principal = key_principal(services, NS, ["read"])

    result = call(services, principal, "memory_stats", {"namespace": "acme"})

    assert result.is_error and "scope does not include 'acme'" in text_of(result)


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_a_missing_permission_is_refused(services: Services, tool: str) -> None:
    from rearview.api.mcp import TOOL_PERMISSIONS

    needed = TOOL_PERMISSIONS[tool]
    principal = key_principal(services, "acme", permissions_without(needed))

    result = call(services, principal, tool, {**TOOL_ARGS[tool], "namespace": NS})

    assert result.is_error
    assert f"permission: this API key lacks the '{needed.value}' permission" in text_of(result)


# --- bad arguments ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("remember", {}, "content"),
        ("remember", {"content": "   "}, "content"),
        ("remember", {"content": "x" * 50_001}, "content"),
        ("remember", {"content": "fine", "layer": "procedural"}, "layer"),
        ("remember", {"content": "fine", "importance": 7}, "importance"),
        ("remember", {"content": "fine", "session_id": "has spaces"}, "session_id"),
        ("remember", {"content": "fine", "namespace": "a::b"}, "namespace"),
        ("recall", {"query": "x", "top_k": 500}, "top_k"),
        ("recall", {"query": "x", "top_k": "many"}, "top_k"),
        ("recall", {"query": "x", "since": "last tuesday-ish"}, "since"),
        ("recall", {"query": ""}, "query"),
        ("recall", {"query": "x", "timeout_ms": 0}, "timeout_ms"),
        ("recall", {"query": "x", "exclude": ["x" * 200]}, "exclude"),
        ("working_memory_set", {"session_id": "s-1", "key": "a/b", "value": 1}, "key"),
        ("working_memory_get", {"session_id": ""}, "session_id"),
        ("consolidate", {"max_clusters": 0}, "max_clusters"),
        ("forget", {"ids": ["has space"]}, "ids"),
    ],
)
def test_bad_arguments_are_a_tool_error_naming_the_field(
    services: Services, tool: str, args: dict[str, Any], field: str
) -> None:
    result = call(services, Principal.open_local(), tool, args)

    assert result.is_error
    text = text_of(result)
    assert field in text, text
    assert text.startswith(f"Error executing tool {tool}")


def test_an_unknown_tool_is_an_error(services: Services) -> None:
    result = call(services, Principal.open_local(), "drop_everything", {})

    assert result.is_error and "drop_everything" in text_of(result)


def test_a_revoked_key_stops_working_at_the_next_call(services: Services) -> None:
    key, plaintext = services.access.create_key("acme", ["read"])

    def provide(scope: Any) -> Principal:
        return services.access.authenticate(f"Bearer {plaintext}")

    async def calls() -> list[CallToolResult]:
        async with Client(create_mcp_server(services, provide)) as client:
            before = await client.call_tool("memory_stats", {})
            services.access.revoke(key.key_id)
            after = await client.call_tool("memory_stats", {})
            return [before, after]

    before, after = run(calls())

    assert not before.is_error and before.structured_content["namespace"] == "acme"
    assert after.is_error and "revoked" in text_of(after)


def test_every_tool_needs_one_of_the_four_data_permissions() -> None:
    from rearview.api.mcp import TOOL_PERMISSIONS

    assert set(TOOL_PERMISSIONS) == set(TOOL_NAMES)
    assert set(TOOL_PERMISSIONS.values()) == {
        Permission.READ,
        Permission.WRITE,
        Permission.FORGET,
        Permission.CONSOLIDATE,
    }
