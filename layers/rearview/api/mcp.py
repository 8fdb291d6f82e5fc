"""The MCP tools: thin typed wrappers over the services, served by the mcp SDK 2.x `MCPServer`.

`create_mcp_server(services, principal_provider)` builds one server; the transports are elsewhere (stdio in
`rearview.cli.mcp`, Streamable HTTP for the local server and Lambda in `rearview.api.mcp_http`). The services and
the principal provider reach the tools through the server's lifespan (`ctx.request_context.lifespan_context`),
never through module globals.

Every tool acts in one namespace: the caller's own (its key's scope, or `Settings.default_namespace` for the open
local mode and the bootstrap admin token), or a narrower one given per call with `namespace`, which must lie within
the scope. A namespace outside it is refused with the same message whether or not it holds anything. Each tool
needs the permission its HTTP route needs (read, write, forget, consolidate).

Results are pydantic models: the SDK sends them as structured content (with the output schema in tools/list)
and, for clients that only read text, as the same JSON in a text block. Failures the caller can fix (bad
arguments, another namespace, a missing permission) come back as tool errors (`isError`) whose text names the
field, the way the HTTP API's error bodies do.
"""

# No `from __future__ import annotations`: the SDK reads the tools' signatures with eval_str against this
# module's globals, so every annotation below must be a real object here.

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from rearview import __version__
from rearview.bootstrap import Services
from rearview.domain.access import ALL_NAMESPACES, Principal
from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.forget import ForgetReceipt, ForgetRequest
from rearview.domain.limits import (
    ID_PATTERN,
    LABEL_PATTERN,
    MAX_ENTITIES,
    MAX_EPISODE_CHARS,
    MAX_FACT_CHARS,
    MAX_QUERY_CHARS,
    MAX_TAGS,
    MAX_TOKEN_BUDGET,
    MAX_TOP_K,
    MAX_TTL_SECONDS,
    MAX_WORKING_KEY_CHARS,
    SESSION_PATTERN,
)
from rearview.domain.namespaces import validate_namespace
from rearview.domain.permissions import Permission
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.stats import Stats
from rearview.domain.timestamps import UtcDatetime
from rearview.domain.working import WorkingEntry, WorkingView, WorkingWrite
from rearview.domain.write import MemoryWrite, WriteResult
from rearview.errors import RearviewError, Unauthorized

logger = logging.getLogger(__name__)

SERVER_NAME = "rearview"
TOOL_NAMES: tuple[str, ...] = (
    "remember",
    "recall",
    "explain_recall",
    "forget",
    "working_memory_get",
    "working_memory_set",
    "working_memory_clear",
    "consolidate",
    "memory_stats",
)
# The permission each tool needs: the same as its HTTP route's (rearview.api.http.ROUTE_PERMISSIONS).
TOOL_PERMISSIONS: dict[str, Permission] = {
    "remember": Permission.WRITE,
    "recall": Permission.READ,
    "explain_recall": Permission.READ,
    "forget": Permission.FORGET,
    "working_memory_get": Permission.READ,
    "working_memory_set": Permission.WRITE,
    "working_memory_clear": Permission.FORGET,
    "consolidate": Permission.CONSOLIDATE,
    "memory_stats": Permission.READ,
}

# Where the HTTP transport puts the request's authenticated principal in the ASGI scope's `state`.
PRINCIPAL_STATE_KEY = "rearview_principal"

INSTRUCTIONS = (
    "Rearview is your long-term memory. Call `recall` before answering anything that may depend on what the user "
    "said or did before (preferences, plans, past events); if it returns no_relevant_memory, say you do not know "
    "rather than guess. Call `remember` for facts, preferences and events worth keeping (one memory per call, in "
    "plain sentences). Use `working_memory_*` for scratch state of the current task. Every tool acts in your own "
    "namespace unless you pass `namespace`, which may only narrow it (e.g. 'acme:u-42' under 'acme')."
)

# A principal provider answers "who is calling?" for one tool call. It receives the HTTP request's ASGI scope,
# or None when the transport has no request (stdio, in-process clients).
PrincipalProvider = Callable[[Mapping[str, Any] | None], Principal]


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


@dataclass(frozen=True)
class McpState:
    """What the server's lifespan yields: the services and the way to learn who calls."""

    services: Services
    principal_provider: PrincipalProvider

    def default_namespace(self, principal: Principal) -> str:
        """The namespace a call acts in when it names none: the key's scope, else the configured default."""
        if principal.scope == ALL_NAMESPACES:
            return self.services.settings.default_namespace
        return principal.scope

    def authorized_namespace(self, ctx: Context, requested: str | None, permission: Permission) -> str:
        """The namespace of this call, checked against the caller's scope and permissions."""
        request = ctx.request_context.request
        principal = self.principal_provider(getattr(request, "scope", None))
        namespace = validate_namespace(requested) if requested is not None else self.default_namespace(principal)
        self.services.access.authorize(principal, namespace, permission)
        return namespace


class WorkingCleared(BaseModel):
    """What working_memory_clear removed."""

    namespace: str
    session_id: str
    cleared: int = Field(description="How many working-memory keys were removed")


# --- parameter types: each described for the model -----------------------------------------------------------

NamespaceArg = Annotated[
    str | None,
    Field(
        description="Optional. Omit it to use your own namespace. To act in a narrower one, give its full name; it "
        "must be your namespace or lie under it (e.g. 'acme:u-42' under 'acme'). 1 to 4 ':'-separated segments of "
        "letters, digits and _ . @ -",
        max_length=300,
    ),
]
SessionArg = Annotated[
    str,
    Field(
        description="The session (conversation or task) id, 1 to 128 characters of letters, digits and _ . : @ -",
        pattern=SESSION_PATTERN,
    ),
]
LabelList = list[Annotated[str, Field(pattern=LABEL_PATTERN, max_length=128)]]
StoredLayerArg = Literal["episodic", "semantic"]


QueryArg = Annotated[
    str,
    Field(
        description="What to remember, in natural language; may include a time expression such as 'last week' "
        f"or 'yesterday', which becomes a time filter (at most {MAX_QUERY_CHARS} characters)",
    ),
]
TopKArg = Annotated[int, Field(description=f"How many memories at most (1 to {MAX_TOP_K})", ge=1, le=MAX_TOP_K)]
LayersArg = Annotated[
    list[StoredLayerArg] | None,
    Field(description="Which layers to search: 'episodic' (events), 'semantic' (facts); default both"),
]
SinceArg = Annotated[UtcDatetime | None, Field(description="Only memories from this time on, ISO 8601 (inclusive)")]
UntilArg = Annotated[UtcDatetime | None, Field(description="Only memories before this time, ISO 8601 (exclusive)")]
TagsFilterArg = Annotated[
    list[str] | None, Field(description="Only memories carrying any of these tags", max_length=MAX_TAGS)
]
EventTypesArg = Annotated[
    list[str] | None,
    Field(description="Only episodes of any of these event types (facts never match)", max_length=MAX_TAGS),
]
BudgetArg = Annotated[
    int | None,
    Field(
        description="Token budget for the returned memories (default 2000); results beyond it are cut and "
        "`truncated` is set",
        ge=1,
        le=MAX_TOKEN_BUDGET,
    ),
]
SessionFilterArg = Annotated[
    str | None,
    Field(description="Only episodes of this session; its working memory is returned too"),
]
SupersededArg = Annotated[
    bool, Field(description="Also return facts that a newer fact replaced (for history questions)")
]
AsOfArg = Annotated[
    UtcDatetime | None,
    Field(description="The 'now' that relative times such as 'yesterday' resolve against; default now"),
]


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """Turn what the caller can fix into a tool error naming the field; anything else stays a crash (logged,
    never shown)."""
    try:
        yield
    except RearviewError as exc:
        raise ToolError(exc.message) from exc
    except ValidationError as exc:
        raise ToolError(describe_validation_error(exc)) from exc


def describe_validation_error(exc: ValidationError) -> str:
    """`field: reason` for each broken field, `;`-joined, the way the HTTP API's 422 messages read."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err.get("loc") or ()) or "arguments"
        msg = str(err.get("msg") or "invalid")
        for prefix in ("Value error, ", "Assertion failed, "):
            msg = msg.removeprefix(prefix)
        parts.append(f"{field}: {msg}")
    return "; ".join(parts) or "arguments: invalid"


def _state(ctx: Context) -> McpState:
    state = ctx.request_context.lifespan_context
    if not isinstance(state, McpState):
        raise RuntimeError("the MCP server was started without its lifespan")
    return state


def create_mcp_server(services: Services, principal_provider: PrincipalProvider) -> MCPServer:
    """The MCP server over `services`; `principal_provider` says who calls (see PrincipalProvider)."""

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[McpState]:
        # The services belong to whoever built them (CLI, local server, Lambda runtime), which closes them.
        yield McpState(services, principal_provider)

    level = services.settings.log_level.upper()
    server = MCPServer(
        SERVER_NAME,
        title="Rearview memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level=level if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "INFO",  # type: ignore[arg-type]
    )

    def scoped(ctx: Context, namespace: str | None, tool: str) -> tuple[Services, str]:
        state = _state(ctx)
        return state.services, state.authorized_namespace(ctx, namespace, TOOL_PERMISSIONS[tool])

    # --- memories ---------------------------------------------------------------------------------------------

    @server.tool(
        title="Remember",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    def remember(
        ctx: Context,
        content: Annotated[
            str,
            Field(
                description="The memory, as a self-contained sentence or short paragraph a later reader understands "
                f"without this conversation (at most {MAX_EPISODE_CHARS} characters; {MAX_FACT_CHARS} for "
                "semantic). Never include secrets such as passwords or API keys."
            ),
        ],
        layer: Annotated[
            StoredLayerArg,
            Field(
                description="'episodic' for something that happened (an event, a decision, a conversation turn), "
                "'semantic' for a lasting fact or preference about the user or the world"
            ),
        ] = "episodic",
        tags: Annotated[
            LabelList | None,
            Field(description=f"Optional labels to filter by later, e.g. ['travel', 'work'] (at most {MAX_TAGS})"),
        ] = None,
        event_type: Annotated[
            str | None,
            Field(description="Episodic only: a short kind of event, e.g. 'booking', 'meeting', 'purchase'"),
        ] = None,
        entities: Annotated[
            LabelList | None,
            Field(
                description=f"Optional names of the people, places, products the memory is about (at most "
                f"{MAX_ENTITIES})"
            ),
        ] = None,
        session_id: Annotated[
            str | None,
            Field(description="Optional id of the conversation or task this happened in, to filter or forget by later"),
        ] = None,
        dimension: Annotated[
            str | None,
            Field(
                description="Semantic only: the attribute the fact sets, e.g. 'diet', 'home_city', 'language'. A new "
                "fact with the same dimension supersedes the old one"
            ),
        ] = None,
        occurred_at: Annotated[
            UtcDatetime | None,
            Field(description="When it happened, ISO 8601 (UTC if no offset is given); default now"),
        ] = None,
        outcome: Annotated[
            str | None, Field(description="Episodic only: how it turned out, e.g. 'confirmed', 'cancelled'")
        ] = None,
        importance: Annotated[
            float | None,
            Field(description="Optional override of the computed importance, 0 (trivial) to 1 (critical)"),
        ] = None,
        confidence: Annotated[
            float | None, Field(description="Semantic only: how sure the fact is, 0 to 1 (default 0.8)")
        ] = None,
        id: Annotated[
            str | None,
            Field(description="Optional idempotency id of your choosing: the same id written twice is stored once"),
        ] = None,
        namespace: NamespaceArg = None,
    ) -> WriteResult:
        """Store one memory (an event or a fact) for later recall. Near-duplicates are merged, trivial chatter is
        skipped, and a fact that contradicts an earlier one supersedes it. Returns the memory's id and status
        (stored, merged, skipped, or accepted when writes are queued)."""
        with _tool_errors():
            svc, ns = scoped(ctx, namespace, "remember")
            item = MemoryWrite(
                layer=layer,
                content=content,
                tags=tags or [],
                event_type=event_type,
                entities=entities or [],
                session_id=session_id,
                dimension=dimension,
                occurred_at=occurred_at,
                outcome=outcome,
                importance=importance,
                confidence=confidence,
                id=id,
            )
            return svc.submit(ns, [item], field_prefix="")[0]

    def recall_query(
        query: str,
        top_k: int,
        layers: list[StoredLayerArg] | None,
        since: Any,
        until: Any,
        tags: list[str] | None,
        event_types: list[str] | None,
        token_budget: int | None,
        session_id: str | None,
        include_superseded: bool,
        as_of: Any,
        explain: bool,
    ) -> RecallQuery:
        return RecallQuery(
            query=query,
            top_k=top_k,
            layers=layers or ["episodic", "semantic"],
            since=since,
            until=until,
            tags=tags or [],
            event_types=event_types or [],
            token_budget=token_budget,
            session_id=session_id,
            include_superseded=include_superseded,
            as_of=as_of,
            explain=explain,
        )

    @server.tool(title="Recall", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def recall(
        ctx: Context,
        query: QueryArg,
        top_k: TopKArg = 10,
        layers: LayersArg = None,
        since: SinceArg = None,
        until: UntilArg = None,
        tags: TagsFilterArg = None,
        event_types: EventTypesArg = None,
        token_budget: BudgetArg = None,
        session_id: SessionFilterArg = None,
        include_superseded: SupersededArg = False,
        as_of: AsOfArg = None,
        namespace: NamespaceArg = None,
    ) -> RecallResponse:
        """Search long-term memory (keyword and meaning, recent and important first) and return the best
        memories within a token budget. `no_relevant_memory` true means nothing relevant is stored: say so
        instead of guessing. `truncated` true means more matched than the budget holds."""
        with _tool_errors():
            svc, ns = scoped(ctx, namespace, "recall")
            q = recall_query(
                query, top_k, layers, since, until, tags, event_types, token_budget, session_id,
                include_superseded, as_of, explain=False,
            )  # fmt: skip
            return svc.recaller.recall(ns, q)

    @server.tool(title="Explain recall", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def explain_recall(
        ctx: Context,
        query: QueryArg,
        top_k: TopKArg = 10,
        layers: LayersArg = None,
        since: SinceArg = None,
        until: UntilArg = None,
        tags: TagsFilterArg = None,
        event_types: EventTypesArg = None,
        token_budget: BudgetArg = None,
        session_id: SessionFilterArg = None,
        include_superseded: SupersededArg = False,
        as_of: AsOfArg = None,
        namespace: NamespaceArg = None,
    ) -> RecallResponse:
        """The same search as `recall`, with a per-stage trace (time parsing, keyword and vector candidates,
        fusion, ranking, re-ranking where a rerank model is deployed, collapsing, budget) in `trace`, so you can
        say why a memory came back or why one did not."""
        with _tool_errors():
            svc, ns = scoped(ctx, namespace, "explain_recall")
            q = recall_query(
                query, top_k, layers, since, until, tags, event_types, token_budget, session_id,
                include_superseded, as_of, explain=True,
            )  # fmt: skip
            return svc.recaller.recall(ns, q)

    @server.tool(
        title="Forget",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    def forget(
        ctx: Context,
        ids: Annotated[
            list[Annotated[str, Field(pattern=ID_PATTERN)]] | None,
            Field(description="Ids of the memories to delete (as returned by remember or recall)", max_length=1000),
        ] = None,
        session_id: Annotated[
            str | None,
            Field(description="Forget a session: alone, its working memory; with layer 'episodic', its episodes too"),
        ] = None,
        layer: Annotated[
            Literal["working", "episodic", "semantic"] | None,
            Field(description="Only this layer ('working' clears working memory of every session)"),
        ] = None,
        since: Annotated[UtcDatetime | None, Field(description="Only memories from this time on, ISO 8601")] = None,
        until: Annotated[UtcDatetime | None, Field(description="Only memories before this time, ISO 8601")] = None,
        tags: Annotated[
            list[str] | None, Field(description="Only memories carrying any of these tags", max_length=MAX_TAGS)
        ] = None,
        cascade: Annotated[
            bool,
            Field(
                description="Also update facts induced from the deleted episodes (they lose those sources, and go "
                "when none is left); default true"
            ),
        ] = True,
        namespace: NamespaceArg = None,
    ) -> ForgetReceipt:
        """Delete memories for good: by ids, by session, or by a filter (layer, time range, tags); at least one
        is required, since an empty request would wipe everything. Returns a receipt with the counts per layer
        and the deleted ids. Use it when the user asks you to forget something."""
        with _tool_errors():
            svc, ns = scoped(ctx, namespace, "forget")
            request = ForgetRequest(
                ids=ids, layer=layer, since=since, until=until, tags=tags, session_id=session_id, cascade=cascade
            )
            return svc.forgetter.forget(ns, request)

    # --- working memory -------------------------------------------------------------------------------------

    @server.tool(
        title="Read working memory",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    def working_memory_get(ctx: Context, session_id: SessionArg, namespace: NamespaceArg = None) -> WorkingView:
        """The unexpired scratch state of a session: every key with its JSON value and expiry."""
        with _tool_errors():
            svc, ns = scoped(ctx, namespace, "working_memory_get")
            return svc.working.get(ns, session_id)

    @server.tool(
        title="Set working memory",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    def working_memory_set(
        ctx: Context,
        session_id: SessionArg,
        key: Annotated[
            str,
            Field(
                description=f"The key, e.g. 'current_goal' or 'open_questions' (1 to {MAX_WORKING_KEY_CHARS} "
                "characters, no '/' or control characters)",
            ),
        ],
        value: Annotated[
            Any, Field(description="Any JSON value: a string, number, list or object (at most 64 KiB as JSON)")
        ],
        ttl_seconds: Annotated[
            int | None,
            Field(
                description="Seconds until the key expires (default 7200); every write restarts it",
                ge=1,
                le=MAX_TTL_SECONDS,
            ),
        ] = None,
        namespace: NamespaceArg = None,
    ) -> WorkingEntry:
        """Set one key of a session's scratch state (the current task's goal, plan, open questions). Working
        memory expires on its own and is never searched by recall; use remember for what should last."""
        with _tool_errors():
            svc, ns = scoped(ctx, namespace, "working_memory_set")
            return svc.working.put(ns, session_id, key, WorkingWrite(value=value, ttl_seconds=ttl_seconds))

    @server.tool(
        title="Clear working memory",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    def working_memory_clear(ctx: Context, session_id: SessionArg, namespace: NamespaceArg = None) -> WorkingCleared:
        """Remove every key of a session's scratch state (when the task ends or starts over)."""
        with _tool_errors():
            svc, ns = scoped(ctx, namespace, "working_memory_clear")
            return WorkingCleared(namespace=ns, session_id=session_id, cleared=svc.working.clear(ns, session_id))

    # --- maintenance ----------------------------------------------------------------------------------------

    @server.tool(
        title="Consolidate",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    def consolidate(
        ctx: Context,
        since: Annotated[
            UtcDatetime | None,
            Field(description="Only consider episodes from this time on, ISO 8601; default all unconsolidated"),
        ] = None,
        max_clusters: Annotated[
            int, Field(description="At most this many new facts per run (1 to 1000)", ge=1, le=1000)
        ] = 50,
        namespace: NamespaceArg = None,
    ) -> ConsolidateResult:
        """Turn recurring episodes into lasting facts (clusters of similar events become one semantic memory
        citing them). Runs on a schedule anyway; call it after a burst of related memories."""
        with _tool_errors():
            svc, ns = scoped(ctx, namespace, "consolidate")
            return svc.consolidator.consolidate(ns, ConsolidateRequest(since=since, max_clusters=max_clusters))

    @server.tool(title="Memory statistics", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def memory_stats(ctx: Context, namespace: NamespaceArg = None) -> Stats:
        """How much is stored per layer, when the last write was, and how often recall found something."""
        with _tool_errors():
            svc, ns = scoped(ctx, namespace, "memory_stats")
            return svc.stats(ns)

    return server


__all__ = [
    "PRINCIPAL_STATE_KEY",
    "TOOL_NAMES",
    "TOOL_PERMISSIONS",
    "McpState",
    "PrincipalProvider",
    "WorkingCleared",
    "create_mcp_server",
    "fixed_principal",
    "principal_from_scope",
]
