"""The MCP tools: thin typed wrappers over the services, served by the mcp SDK 2.x `MCPServer`.

`create_mcp_server(services, principal_provider)` builds one server; the transports are elsewhere (stdio in
`rearview.cli.mcp`, Streamable HTTP for the local server and Lambda in `rearview.api.mcp_http`). The services and
the principal provider reach the tools through the server's lifespan (`ctx.request_context.lifespan_context`),
never through module globals.

Every tool acts in one namespace: the caller's own (its key's scope, or `Settings.default_namespace` for the open
local mode and the bootstrap admin token), or a narrower one given per call with `namespace`, which must lie within
the scope. A namespace outside it is refused with the same message whether or not it holds anything. Each tool is
an operation of the catalogue (`rearview.operations.catalogue`), offered with the permission its HTTP route needs
and the request model its HTTP route takes, as flat arguments (`rearview.api.mcp_toolset`); two tools shape their
answers for a model themselves (export in parts, working memory's clear).

Results are pydantic models: the SDK sends them as structured content (with the output schema in tools/list)
and, for clients that only read text, as the same JSON in a text block. Failures the caller can fix (bad
arguments, another namespace, a missing permission) come back as tool errors (`isError`) whose text names the
field, the way the HTTP API's error bodies do.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel, Field, TypeAdapter

from rearview import __version__
from rearview.api.mcp_toolset import McpState, PrincipalProvider, ToolCall, ToolSet
from rearview.bootstrap import Services
from rearview.domain.access import Principal
from rearview.domain.parameters import CursorParameter, SessionParameter
from rearview.domain.permissions import Permission
from rearview.domain.transfer import ExportedMemory
from rearview.errors import Unauthorized
from rearview.operations.catalogue import OPERATIONS
from rearview.operations.offers import READS, changes

logger = logging.getLogger(__name__)

SERVER_NAME = "rearview"

# Where the HTTP transport puts the request's authenticated principal in the ASGI scope's `state`.
PRINCIPAL_STATE_KEY = "rearview_principal"

INSTRUCTIONS = (
    "Rearview is your long-term memory. Call `recall` before answering anything that may depend on what the user "
    "said or did before (preferences, plans, past events); if it returns no_relevant_memory, say you do not know "
    "rather than guess. Call `remember` for facts, preferences and events worth keeping (one memory per call, in "
    "plain sentences); when a tool call fails or succeeds, say so in `outcome` (lessons are learnt from them). "
    "When the user asks what you remember or corrects it, use `list_memories`, `memory_history` and "
    "`edit_memory`. Call `brief` before starting a task, to be told the preferences and lessons that apply; "
    "after using a memory, "
    "call `feedback` to say whether it helped. Use `working_memory_*` for scratch state of the current task, and "
    "`end_session` when the conversation or task is over. Every tool acts in your own namespace unless you pass "
    "`namespace`, which may only narrow it (e.g. 'acme:u-42' under 'acme')."
)


def fixed_principal(principal: Principal) -> PrincipalProvider:
    """A provider that always answers `principal` (stdio and in-process: the channel has one caller)."""

    def provide(scope: Mapping[str, Any] | None) -> Principal:
        return principal

    return provide


def principal_from_scope(scope: Mapping[str, Any] | None) -> Principal:
    """The principal the HTTP transport authenticated and stored in the request's scope; fails closed."""
    state = (scope or {}).get("state") or {}
    principal = state.get(PRINCIPAL_STATE_KEY) if isinstance(state, Mapping) else None
    if not isinstance(principal, Principal):
        raise Unauthorized("authorization: no authenticated principal for this request")
    return principal


TOOLS = ToolSet()
tool = TOOLS.tool

# Every operation of the catalogue offered as a tool, with the permission its HTTP route needs and the request model
# it takes, as flat arguments.
for _operation in OPERATIONS:
    for _offer in _operation.tools:
        TOOLS.offer(_operation, _offer)

# --- the tools MCP shapes itself -------------------------------------------------------------------------------

# Memories one `export` call returns: a tool result stays small enough for a model's context.
MCP_EXPORT_ITEMS = 100


class ExportChunk(BaseModel):
    """Part of a namespace's export, newest first."""

    items: list[ExportedMemory]
    next_cursor: str | None = Field(None, description="Pass it as `cursor` for the next part; null at the end")


_EXPORT_LINE: TypeAdapter[ExportedMemory] = TypeAdapter(ExportedMemory)


@tool(Permission.READ, title="Export memories", annotations=ToolAnnotations(**READS))
def export(call: ToolCall, cursor: CursorParameter = None) -> ExportChunk:
    """Every stored memory with its history, newest first, 100 at a time (pass `next_cursor` back for more): to
    back up or move a namespace. HTTP's GET .../export gives the same as one ndjson stream."""
    page = call.services.transfer.export_page(call.namespace, cursor, max_items=MCP_EXPORT_ITEMS)
    return ExportChunk(items=[_EXPORT_LINE.validate_json(line) for line in page.lines], next_cursor=page.next_cursor)


class WorkingCleared(BaseModel):
    """What working_memory_clear removed."""

    namespace: str
    session_id: str
    cleared: int = Field(description="How many working-memory keys were removed")


@tool(
    Permission.FORGET,
    title="Clear working memory",
    annotations=ToolAnnotations(**changes(destructive=True, idempotent=True)),
)
def working_memory_clear(call: ToolCall, session_id: SessionParameter) -> WorkingCleared:
    """Remove every key of a session's scratch state (when the task ends or starts over)."""
    ended = call.services.working.end_session(call.namespace, session_id)
    return WorkingCleared(namespace=call.namespace, session_id=session_id, cleared=ended.cleared)


# Derived from the declarations above, for the transports and the tests.
TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOLS.specs)
TOOL_PERMISSIONS: dict[str, Permission] = {spec.name: spec.permission for spec in TOOLS.specs}


class RearviewMCPServer(MCPServer):
    """The SDK's server, refusing unknown arguments and values no field can take before a tool runs, as HTTP
    refuses them before a route runs (`ToolSet.check_arguments`)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        TOOLS.check_arguments(name, arguments)
        return await super().call_tool(name, arguments, context)


def create_mcp_server(services: Services, principal_provider: PrincipalProvider) -> MCPServer:
    """The MCP server over `services`; `principal_provider` says who calls (see PrincipalProvider)."""

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[McpState]:
        # The services belong to whoever built them (CLI, local server, Lambda runtime), which closes them.
        yield McpState(services, principal_provider)

    level = services.settings.log_level.upper()
    server = RearviewMCPServer(
        SERVER_NAME,
        title="Rearview memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level=level if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "INFO",  # type: ignore[arg-type]
    )
    TOOLS.register(server)
    return server


__all__ = [
    "PRINCIPAL_STATE_KEY",
    "TOOLS",
    "TOOL_NAMES",
    "TOOL_PERMISSIONS",
    "McpState",
    "PrincipalProvider",
    "WorkingCleared",
    "create_mcp_server",
    "fixed_principal",
    "principal_from_scope",
]
