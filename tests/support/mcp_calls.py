"""What the MCP tests share: one valid call per tool, JSON-RPC bodies, and a way to run the SDK's async client
from a plain test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any, TypeVar

from rearview.api.mcp import TOOL_NAMES, TOOL_PERMISSIONS
from rearview.domain.permissions import Permission

T = TypeVar("T")

# The protocol revision of the initialize handshake that the sample events speak.
HANDSHAKE_VERSION = "2025-11-25"

# One valid call per tool (the namespace is added by the test).
TOOL_ARGS: dict[str, dict[str, Any]] = {
    "remember": {"content": "Booked the Lisbon venue for the March offsite, contact Dana", "tags": ["offsite"]},
    "recall": {"query": "Lisbon venue offsite"},
    "explain_recall": {"query": "Lisbon venue offsite"},
    "forget": {"tags": ["offsite"]},
    "working_memory_get": {"session_id": "s-1"},
    "working_memory_set": {"session_id": "s-1", "key": "goal", "value": {"plan": "offsite"}},
    "working_memory_clear": {"session_id": "s-1"},
    "consolidate": {},
    "memory_stats": {},
}
assert set(TOOL_ARGS) == set(TOOL_NAMES)


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
