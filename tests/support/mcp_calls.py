"""What the MCP tests share: one valid call per tool, JSON-RPC bodies, and a way to run the SDK's async client
from a plain test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any, TypeVar

from rearview.api.mcp import TOOL_NAMES, TOOL_PERMISSIONS
from rearview.bootstrap import Services
from rearview.domain.permissions import Permission
from rearview.domain.write import MemoryWrite

T = TypeVar("T")

# The protocol revision of the initialize handshake that the sample events speak.
HANDSHAKE_VERSION = "2025-11-25"

# The id `remember` below gives its memory, which `feedback` below is about (a test that calls feedback alone
# writes it first: see `seed_feedback_memory`).
REMEMBERED_ID = "mem-offsite-venue"
REMEMBERED = "Booked the Lisbon venue for the March offsite, contact Dana"

# One valid call per tool (the namespace is added by the test), in the order the tools are declared: feedback
# comes after remember and before forget.
TOOL_ARGS: dict[str, dict[str, Any]] = {
    "remember": {"content": REMEMBERED, "tags": ["offsite"], "id": REMEMBERED_ID},
    "recall": {"query": "Lisbon venue offsite"},
    "explain_recall": {"query": "Lisbon venue offsite"},
    "brief": {"task": "Plan the catering for the Lisbon offsite", "entities": ["Dana"]},
    "feedback": {"memory_id": REMEMBERED_ID, "verdict": "useful"},
    "list_memories": {"limit": 10},
    "edit_memory": {"memory_id": REMEMBERED_ID, "content": REMEMBERED + " Silva", "tags": ["offsite", "venue"]},
    "memory_history": {"memory_id": REMEMBERED_ID},
    "memory_sources": {"memory_id": REMEMBERED_ID},
    "export": {},
    "forget": {"tags": ["offsite"]},
    "working_memory_get": {"session_id": "s-1"},
    "working_memory_set": {"session_id": "s-1", "key": "goal", "value": {"plan": "offsite"}},
    "working_memory_clear": {"session_id": "s-1"},
    "end_session": {"session_id": "s-1"},
    "consolidate": {},
    "memory_stats": {},
}
assert sorted(TOOL_ARGS) == sorted(TOOL_NAMES), "one call per tool"


def seed_feedback_memory(services: Services, namespace: str) -> None:
    """Write the memory the `feedback` call of TOOL_ARGS is about, for a test that does not call remember first."""
    services.writer.write(namespace, MemoryWrite(content=REMEMBERED, tags=["offsite"], id=REMEMBERED_ID))


def permissions_without(permission: Permission) -> list[Permission]:
    """Every permission but `permission` (admin included: admin alone must not stand in for the others)."""
    return [p for p in Permission if p is not permission]


def tool_permission(tool: str) -> Permission:
    return TOOL_PERMISSIONS[tool]


def run(awaitable: Awaitable[T]) -> T:
    """Run the SDK's async client from a synchronous test."""

    async def wrapper() -> T:
        return await awaitable

    return asyncio.run(wrapper())


def call_body(tool: str, arguments: dict[str, Any], request_id: int = 1) -> str:
    """A JSON-RPC tools/call request."""
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    )


def tool_result(body: str | bytes) -> dict[str, Any]:
    """The `result` of a JSON-RPC response body (fails the test on a JSON-RPC error)."""
    message = json.loads(body)
    assert "error" not in message, message
    return dict(message["result"])


def error_text(result: dict[str, Any]) -> str:
    """The text of a tool error result."""
    assert result.get("isError") is True, result
    return " ".join(block.get("text", "") for block in result["content"])
