"""The MCP tools: thin typed wrappers over the services, served by the mcp SDK 2.x `MCPServer`.

`create_mcp_server(services, principal_provider)` builds one server; the transports are elsewhere (stdio in
`rearview.cli.mcp`, Streamable HTTP for the local server and Lambda in `rearview.api.mcp_http`). The services and
the principal provider reach the tools through the server's lifespan (`ctx.request_context.lifespan_context`),
never through module globals.

Every tool acts in one namespace: the caller's own (its key's scope, or `Settings.default_namespace` for the open
local mode and the bootstrap admin token), or a narrower one given per call with `namespace`, which must lie within
the scope. A namespace outside it is refused with the same message whether or not it holds anything. Each tool is
declared once with the permission it needs, the one its HTTP route needs (read, write, forget, consolidate), and
takes the request model its HTTP route takes, as flat arguments (`rearview.api.mcp_toolset`).

Results are pydantic models: the SDK sends them as structured content (with the output schema in tools/list)
and, for clients that only read text, as the same JSON in a text block. Failures the caller can fix (bad
arguments, another namespace, a missing permission) come back as tool errors (`isError`) whose text names the
field, the way the HTTP API's error bodies do.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel, Field, TypeAdapter

from rearview import __version__
from rearview.api.mcp_toolset import McpState, PrincipalProvider, ToolCall, ToolSet
from rearview.bootstrap import Services
from rearview.domain.access import Principal
from rearview.domain.brief import BriefRequest, BriefResponse, FeedbackRequest, FeedbackResult
from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.edit import MemoryEdit
from rearview.domain.forget import ForgetReceipt, ForgetRequest
from rearview.domain.history import MemoryHistory, StoredMemory
from rearview.domain.limits import MAX_WORKING_KEY_CHARS, MemoryId, SessionId
from rearview.domain.listing import ListQuery, MemoryPage
from rearview.domain.permissions import Permission
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.stats import Stats
from rearview.domain.transfer import ExportedMemory
from rearview.domain.working import SessionEnded, WorkingEntry, WorkingView, WorkingWrite
from rearview.domain.write import MemoryWrite, WriteResult
from rearview.errors import Unauthorized

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


class WorkingCleared(BaseModel):
    """What working_memory_clear removed."""

    namespace: str
    session_id: str
    cleared: int = Field(description="How many working-memory keys were removed")


# Working memory's session and key are path parameters in HTTP, so no request model carries them.
SessionArg = Annotated[
    SessionId,
    Field(description="The session (conversation or task) id, 1 to 128 characters of letters, digits and _ . : @ -"),
]
WorkingKeyArg = Annotated[
    str,
    Field(
        description=f"The key, e.g. 'current_goal' or 'open_questions' (1 to {MAX_WORKING_KEY_CHARS} characters, "
        "no '/' or control characters)",
    ),
]

_READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)

TOOLS = ToolSet()
tool = TOOLS.tool

# --- memories -------------------------------------------------------------------------------------------------


@tool(
    Permission.WRITE,
    title="Remember",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
)
def remember(call: ToolCall, item: MemoryWrite) -> WriteResult:
    """Store one memory (an event or a fact) for later recall. Near-duplicates are merged, trivial chatter is
    skipped, and a fact that contradicts an earlier one supersedes it. Returns the memory's id and status
    (stored, merged, skipped, or accepted when writes are queued)."""
    return call.services.writer.submit(call.namespace, [item], field_prefix="")[0]


@tool(Permission.READ, title="Recall", annotations=_READS)
def recall(call: ToolCall, query: RecallQuery) -> RecallResponse:
    """Search long-term memory (keyword and meaning, recent and important first) and return the best
    memories within a token budget. `no_relevant_memory` true means nothing relevant is stored: say so
    instead of guessing. `truncated` true means more matched than the budget holds. Ask "what happened last
    time ..." to get the most recent match first, and say "other than X" (or pass `exclude`) to leave X out;
    `query_form` says what was understood. `timed_out` true means `timeout_ms` ran out and the results are
    less refined."""
    return call.services.recaller.recall(call.namespace, query)


@tool(Permission.READ, title="Explain recall", annotations=_READS, forced={"explain": True})
def explain_recall(call: ToolCall, query: RecallQuery) -> RecallResponse:
    """The same search as `recall`, with a per-stage trace (time parsing, keyword and vector candidates,
    fusion, ranking, re-ranking where a rerank model is deployed, collapsing, budget) in `trace`, so you can
    say why a memory came back or why one did not."""
    return recall(call, query)


# --- hindsight: before a task and after it --------------------------------------------------------------------


@tool(Permission.READ, title="Brief before a task", annotations=_READS)
def brief(call: ToolCall, request: BriefRequest) -> BriefResponse:
    """Call this before starting a task: say what you are about to do (and the tool you will use, and who or
    what it involves), and get the preferences and lessons that apply, best first, each with `why` it applies
    and its confidence. Follow them unless the user says otherwise. A lesson is what went wrong before and what
    worked; `no_relevant_memory` true means nothing applies. Each memory's `id` is what `feedback` takes."""
    return call.services.briefer.brief(call.namespace, request)


@tool(
    Permission.WRITE,
    title="Feedback on a memory",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
)
def feedback(call: ToolCall, request: FeedbackRequest) -> FeedbackResult:
    """Call this after using a memory that `brief` or `recall` gave you: 'useful' if it helped (it is confirmed
    and ranks higher), 'not_useful' if it did not apply to this task, 'wrong' if it is not true (give the
    right statement in `correction`: it replaces the memory). Returns its confidence before and after."""
    return call.services.feedback.feedback(call.namespace, request)


# --- memory by hand: look, correct, take away --------------------------------------------------------------

MemoryIdArg = Annotated[MemoryId, Field(description="The memory's id, as `recall`, `brief` or `list_memories` gave it")]
VersionArg = Annotated[
    int | None,
    Field(None, ge=1, description="Optional: the version you read; the edit is refused if the memory changed since"),
]
CursorArg = Annotated[
    str | None, Field(None, max_length=1024, description="Omit for the first part; then the next_cursor you got")
]
# Memories one `export` call returns: a tool result stays small enough for a model's context.
MCP_EXPORT_ITEMS = 100


class ExportChunk(BaseModel):
    """Part of a namespace's export, newest first."""

    items: list[ExportedMemory]
    next_cursor: str | None = Field(None, description="Pass it as `cursor` for the next part; null at the end")


@tool(Permission.READ, title="List memories", annotations=_READS)
def list_memories(call: ToolCall, query: ListQuery) -> MemoryPage:
    """List stored memories newest first, a page at a time, optionally only one layer, tag, event type or kind of
    fact, or a time range: to see what is remembered, not to search it (use `recall` to search). Pass the
    `next_cursor` you got as `cursor` for the next page."""
    return call.services.listing.page(call.namespace, query)


@tool(
    Permission.WRITE,
    title="Edit a memory",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
)
def edit_memory(
    call: ToolCall, memory_id: MemoryIdArg, edit: MemoryEdit, expected_version: VersionArg = None
) -> StoredMemory:
    """Correct a stored memory: its text, tags, entities, importance, or a fact's confidence or dimension. The
    earlier version is kept in its history; recall finds the new text from now on. Use it when the user corrects
    something remembered; use `feedback` with a correction to replace a wrong fact by a new one instead."""
    editor = call.services.editor
    return editor.edit(call.namespace, memory_id, edit, expected_version=expected_version, actor=call.actor)


@tool(Permission.READ, title="Memory history", annotations=_READS)
def memory_history(call: ToolCall, memory_id: MemoryIdArg) -> MemoryHistory:
    """How a memory came to be: the facts it replaced, its earlier versions and what changed each (a write, an
    edit, consolidation, feedback), oldest first."""
    return call.services.history.history(call.namespace, memory_id)


@tool(Permission.READ, title="Export memories", annotations=_READS)
def export(call: ToolCall, cursor: CursorArg = None) -> ExportChunk:
    """Every stored memory with its history, newest first, 100 at a time (pass `next_cursor` back for more): to
    back up or move a namespace. HTTP's GET .../export gives the same as one ndjson stream."""
    page = call.services.transfer.export_page(call.namespace, cursor, max_items=MCP_EXPORT_ITEMS)
    return ExportChunk(items=[_EXPORT_LINE.validate_json(line) for line in page.lines], next_cursor=page.next_cursor)


_EXPORT_LINE: TypeAdapter[ExportedMemory] = TypeAdapter(ExportedMemory)


# --- forgetting ----------------------------------------------------------------------------------------------


@tool(
    Permission.FORGET,
    title="Forget",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
)
def forget(call: ToolCall, request: ForgetRequest) -> ForgetReceipt:
    """Delete memories for good: by ids, by session, or by a filter (layer, time range, tags); at least one
    is required, since an empty request would wipe everything. Returns a receipt with the counts per layer
    and the deleted ids. Use it when the user asks you to forget something."""
    return call.services.forgetter.forget(call.namespace, request)


# --- working memory -----------------------------------------------------------------------------------------


@tool(Permission.READ, title="Read working memory", annotations=_READS)
def working_memory_get(call: ToolCall, session_id: SessionArg) -> WorkingView:
    """The unexpired scratch state of a session: every key with its JSON value and expiry."""
    return call.services.working.get(call.namespace, session_id)


@tool(
    Permission.WRITE,
    title="Set working memory",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
)
def working_memory_set(call: ToolCall, session_id: SessionArg, key: WorkingKeyArg, write: WorkingWrite) -> WorkingEntry:
    """Set one key of a session's scratch state (the current task's goal, plan, open questions). Working
    memory expires on its own and is never searched by recall; use remember for what should last."""
    return call.services.working.put(call.namespace, session_id, key, write)


@tool(
    Permission.FORGET,
    title="Clear working memory",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
)
def working_memory_clear(call: ToolCall, session_id: SessionArg) -> WorkingCleared:
    """Remove every key of a session's scratch state (when the task ends or starts over)."""
    ended = call.services.working.end_session(call.namespace, session_id)
    return WorkingCleared(namespace=call.namespace, session_id=session_id, cleared=ended.cleared)


@tool(
    Permission.WRITE,
    title="End session",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
)
def end_session(call: ToolCall, session_id: SessionArg) -> SessionEnded:
    """Call this when a conversation or task is over: its scratch state (working memory) is cleared, and what
    happened in it is consolidated into lasting preferences, facts and lessons in the background."""
    return call.services.working.end_session(call.namespace, session_id)


# --- maintenance ----------------------------------------------------------------------------------------------


@tool(
    Permission.CONSOLIDATE,
    title="Consolidate",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
)
def consolidate(call: ToolCall, request: ConsolidateRequest) -> ConsolidateResult:
    """Turn recurring episodes into lasting preferences, facts and lessons now (clusters of similar events
    become one semantic memory citing them). It also runs by itself (after a streak of failures, many new
    memories, or a session's end, and on a schedule where a server runs); call it after a burst of related
    memories. An error saying a run is in progress means one is doing the work already."""
    return call.services.consolidation.consolidate(call.namespace, request)


@tool(Permission.READ, title="Memory statistics", annotations=_READS)
def memory_stats(call: ToolCall) -> Stats:
    """How much is stored per layer, when the last write was, how often recall found something, and what
    consolidation did: its runs, what they induced, the next trigger, and feedback per kind of memory."""
    return call.services.stats.of(call.namespace)


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
