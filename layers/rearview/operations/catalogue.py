"""Every operation, declared once: its service call (the function), the permission it needs, and how HTTP, MCP, the
command line and the Python client offer it. The edges read this module and derive their routes, tools, commands
and client calls from it; a new operation is one row here.

A row's function takes the services first, then `namespace` (the `{ns}` of its path: a Namespace, checked once, at
the edge),
then its own parameters: a pydantic model is the request (HTTP's body, or its query string for a GET; MCP's flat
arguments; the command's options), a parameter named in the path is a path parameter, any other a query parameter
(an MCP argument, a command option). `caller` is the authenticated principal. The return type is the response.

The types are imported for type checking only, and a function builds a model by importing it where it runs: the
CDK app reads the routes with the standard library alone, and the edges resolve the annotations against the domain
(`rearview.operations.signature`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rearview import __version__
from rearview.domain.permissions import Permission
from rearview.operations import mem0
from rearview.operations.mem0 import MEM0_OPERATIONS
from rearview.operations.offers import READS, Catalogue, Command, Http, Tool, changes

if TYPE_CHECKING:
    from rearview.bootstrap import Services
    from rearview.domain.access import Principal
    from rearview.domain.brief import BriefRequest, BriefResponse, FeedbackRequest, FeedbackResult
    from rearview.domain.bulk_load import LoadRequest, LoadResult
    from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
    from rearview.domain.edit import MemoryEdit
    from rearview.domain.erase import EraseReceipt, NamespaceList
    from rearview.domain.forget import ForgetReceipt, ForgetRequest
    from rearview.domain.history import MemoryHistory, StoredMemory
    from rearview.domain.http_bodies import Cleared, Health, KeyCreate, KeyCreated, KeyInfo, KeyLimit, KeyList
    from rearview.domain.listing import ListQuery, MemoryPage
    from rearview.domain.namespaces import Namespace
    from rearview.domain.parameters import (
        CascadeParameter,
        CursorParameter,
        KeyIdParameter,
        MemoryIdParameter,
        PrefixParameter,
        RecentRunsParameter,
        SessionParameter,
        SubtreeParameter,
        VersionParameter,
        WorkingKeyParameter,
    )
    from rearview.domain.provenance import MemorySources
    from rearview.domain.recall import RecallQuery, RecallResponse
    from rearview.domain.retention import NamespaceRetention, RetentionPolicy
    from rearview.domain.stats import Stats
    from rearview.domain.transfer import ExportPage, ImportRequest, ImportResult
    from rearview.domain.working import SessionEnded, WorkingEntry, WorkingView, WorkingWrite
    from rearview.domain.write import BatchResult, BatchWrite, MemoryWrite, WriteResult

OPERATIONS = Catalogue()
operation = OPERATIONS.operation

# The OpenAPI tags the rows use, each with what it groups: a generated SDK makes a class or module of each.
TAGS: dict[str, str] = {
    "service": "The service itself: liveness and version",
    "memories": "Write memories, one or a batch; read or forget one by id; where a memory comes from",
    "operations": "Recall, forget by filter, consolidate now, statistics",
    "hindsight": "Before a task (brief) and after using a memory (feedback); the end of a session",
    "working memory": "A session's scratch state: JSON values by key, with a time to live",
    "manage": "Memory by hand: list, edit, history, export and import, the namespaces, erase",
    "retention": "How long a namespace keeps its episodes",
    "keys": "API keys and their request limits (admin)",
    mem0.TAG: "The mem0 platform API's routes over Rearview (`mem0ai`'s MemoryClient with `host=`): entities are "
    "namespaces, run_id a session",
}

NS = "/v1/namespaces/{ns}"
MEMORY = f"{NS}/memories/{{id}}"
WORKING = f"{NS}/sessions/{{sid}}/working"
READ, WRITE, FORGET = Permission.READ, Permission.WRITE, Permission.FORGET

# --- the service -------------------------------------------------------------------------------------------------


@operation(None, Http("GET", "/v1/health", "recall", "service", gateway_authorizer=False), client="health")
def health(s: Services) -> Health:
    """Liveness, version and the embedder in use"""
    from rearview.domain.http_bodies import Health

    return Health(version=__version__, embedder=s.embedder.name, dim=s.embedder.dim)


# --- working memory ----------------------------------------------------------------------------------------------


@operation(
    WRITE,
    Http("PUT", f"{WORKING}/{{key}}", "write", "working memory"),
    tools=(
        Tool(
            "Set working memory",
            changes(destructive=False, idempotent=True),
            name="working_memory_set",
            description="Set one key of a session's scratch state (the current task's goal, plan, open questions). "
            "Working memory expires on its own and is never searched by recall; use remember for what should last.",
        ),
    ),
    client="put_working",
)
def put_working(
    s: Services, namespace: Namespace, session_id: SessionParameter, key: WorkingKeyParameter, write: WorkingWrite
) -> WorkingEntry:
    """Set one working-memory key of a session (the TTL restarts)"""
    return s.working.put(namespace, session_id, key, write)


@operation(
    READ,
    Http("GET", WORKING, "write", "working memory"),
    tools=(
        Tool(
            "Read working memory",
            READS,
            name="working_memory_get",
            description="The unexpired scratch state of a session: every key with its JSON value and expiry.",
        ),
    ),
    client="get_working",
)
def get_working(s: Services, namespace: Namespace, session_id: SessionParameter) -> WorkingView:
    """A session's unexpired working memory"""
    return s.working.get(namespace, session_id)


@operation(FORGET, Http("DELETE", WORKING, "write", "working memory"), client="clear_working")
def clear_working(s: Services, namespace: Namespace, session_id: SessionParameter) -> Cleared:
    """Clear a session's working memory"""
    from rearview.domain.http_bodies import Cleared

    return Cleared(cleared=s.working.end_session(namespace, session_id).cleared)


# --- memories ----------------------------------------------------------------------------------------------------


@operation(
    WRITE,
    Http(
        "POST",
        f"{NS}/memories",
        "write",
        "memories",
        success=(
            (201, "Stored"),
            (200, "Merged into a near-duplicate, skipped, or already written (same id)"),
            (202, "Accepted for asynchronous writing"),
        ),
    ),
    tools=(
        Tool(
            "Remember",
            changes(destructive=False, idempotent=False),
            name="remember",
            description="Store one memory (an event or a fact) for later recall. Near-duplicates are merged, trivial "
            "chatter is skipped, and a fact that contradicts an earlier one supersedes it. Returns the memory's id and "
            "status (stored, merged, skipped, or accepted when writes are queued).",
        ),
    ),
    command=Command("remember"),
    client="write",
)
def write_memory(s: Services, namespace: Namespace, item: MemoryWrite) -> WriteResult:
    """Write one memory: 201 when stored, 200 when merged, skipped or already written"""
    return s.writer.submit(namespace, [item], field_prefix="")[0]


@operation(WRITE, Http("POST", f"{NS}/memories/batch", "write", "memories"), client="write_batch")
def write_batch(s: Services, namespace: Namespace, batch: BatchWrite) -> BatchResult:
    """Write up to 100 memories in one transaction (all or nothing)"""
    from rearview.domain.write import BatchResult

    return BatchResult(results=s.writer.submit(namespace, batch.items))


@operation(READ, Http("GET", MEMORY, "recall", "memories"), client="get")
def get_memory(s: Services, namespace: Namespace, memory_id: MemoryIdParameter) -> StoredMemory:
    """One memory (episode or fact) by id"""
    return s.listing.memory(namespace, memory_id)


@operation(FORGET, Http("DELETE", MEMORY, "forget", "memories"), client="delete")
def delete_memory(
    s: Services, namespace: Namespace, memory_id: MemoryIdParameter, cascade: CascadeParameter = True
) -> ForgetReceipt:
    """Forget one memory by id; with cascade, facts induced from it lose it (or go)"""
    return s.forgetter.forget_one(namespace, memory_id, cascade)


# --- memory by hand: list, edit, history, export and import, erase -----------------------------------------------


@operation(
    READ,
    Http("GET", f"{NS}/memories", "recall", "manage"),
    tools=(
        Tool(
            "List memories",
            READS,
            description="List stored memories newest first, a page at a time, optionally only one layer, tag, event "
            "type, kind of fact, entity, metadata or a time range: to see what is remembered, not to search it (use "
            "`recall` to search). Pass the `next_cursor` you got as `cursor` for the next page.",
        ),
    ),
    command=Command("ls"),
    client="list_memories",
)
def list_memories(s: Services, namespace: Namespace, query: ListQuery) -> MemoryPage:
    """Memories newest first, a page at a time (an opaque cursor that stays valid while writes happen)"""
    return s.listing.page(namespace, query)


@operation(
    WRITE,
    Http("PATCH", MEMORY, "write", "manage"),
    tools=(
        Tool(
            "Edit a memory",
            changes(destructive=False, idempotent=False),
            description="Correct a stored memory: its text, tags, entities, importance, metadata, source or expiry, "
            "or a fact's confidence or dimension. The earlier version is kept in its history; recall finds the new "
            "text from now on. Use it when the user corrects something remembered; use `feedback` with a correction "
            "to replace a wrong fact by a new one instead.",
        ),
    ),
    command=Command("edit"),
)
def edit_memory(
    s: Services,
    namespace: Namespace,
    memory_id: MemoryIdParameter,
    edit: MemoryEdit,
    caller: Principal,
    expected_version: VersionParameter = None,
) -> StoredMemory:
    """Edit a memory (content, tags, entities, importance, confidence, dimension, metadata, source, expiry):
    version + 1, re-embedded; `If-Match: <version>` answers 412 when it changed since"""
    return s.editor.edit(namespace, memory_id, edit, expected_version=expected_version, actor=caller.key_id)


@operation(
    READ,
    Http("GET", f"{MEMORY}/history", "recall", "manage"),
    tools=(
        Tool(
            "Memory history",
            READS,
            description="How a memory came to be: the facts it replaced, its earlier versions and what changed each "
            "(a write, an edit, consolidation, feedback), oldest first.",
        ),
    ),
    command=Command("history"),
    client="history",
)
def memory_history(s: Services, namespace: Namespace, memory_id: MemoryIdParameter) -> MemoryHistory:
    """A memory's earlier versions and the facts it superseded, oldest first, each with what changed it"""
    return s.history.history(namespace, memory_id)


@operation(
    READ,
    Http("GET", f"{MEMORY}/sources", "recall", "memories"),
    tools=(
        Tool(
            "Memory sources",
            READS,
            description="Where a memory comes from: for a preference, fact or lesson, the episodes it was learnt from "
            "(what each said, when, and how it went); for an episode, the preferences, facts and lessons it fed. Use "
            "it to say why something is remembered.",
        ),
    ),
    command=Command("sources"),
    client="sources",
)
def memory_sources(s: Services, namespace: Namespace, memory_id: MemoryIdParameter) -> MemorySources:
    """A memory's provenance: for a semantic memory, its source episodes with their text, id, time and outcome;
    for an episode, the semantic memories it fed"""
    return s.history.sources(namespace, memory_id)


@operation(READ, Http("GET", f"{NS}/export", "recall", "manage"), command=Command("export"))
def export_memories(s: Services, namespace: Namespace, cursor: CursorParameter = None) -> ExportPage:
    """Every memory of the namespace as ndjson, newest first, with its history (a page per response on AWS: follow
    `X-Next-Cursor`; the local server streams them all)"""
    return s.transfer.export_page(namespace, cursor)


@operation(WRITE, Http("POST", f"{NS}/import", "write", "manage"))
def import_memories(s: Services, namespace: Namespace, request: ImportRequest) -> ImportResult:
    """Restore exported memories (JSON `{items}` of up to 1,000, or ndjson lines): ids, times, provenance, versions
    and history kept; ids already stored are skipped"""
    return s.transfer.restore(namespace, request)


@operation(WRITE, Http("POST", f"{NS}/load", "write", "memories"), client="load")
def load_episodes(s: Services, namespace: Namespace, request: LoadRequest) -> LoadResult:
    """Load a history of episodes (up to 1,000 a request) through the store's bulk path, each with the vector you
    bring (this deployment's embedder's) or embedded here in one batch: checked and redacted as a write is, each line
    one episode (no near-duplicate merging, no chunking); ids already stored are skipped, so a load repeats safely"""
    return s.bulk_load.load(namespace, request)


@operation(READ, Http("GET", "/v1/namespaces", "recall", "manage"), client="list_namespaces")
def list_namespaces(s: Services, caller: Principal, prefix: PrefixParameter = None) -> NamespaceList:
    """The namespaces holding memory that the caller may see (optionally under a `prefix`), with counts"""
    return s.listing.namespaces_of(caller, prefix)


@operation(FORGET, Http("DELETE", NS, "erase", "manage"), command=Command("erase"), client="erase")
def erase_namespace(
    s: Services, namespace: Namespace, caller: Principal, subtree: SubtreeParameter = False
) -> EraseReceipt:
    """Erase a namespace (with `subtree=true`, every namespace under it): every layer, history, the index,
    consolidation's ledger, and the keys whose whole scope is gone (revoked only for a caller with `admin`); a
    receipt per namespace"""
    return s.eraser.erase(namespace, subtree, caller=caller)


# --- the operations ----------------------------------------------------------------------------------------------

_RECALL_TOOL = (
    "Search long-term memory (keyword and meaning, recent and important first) and return the best memories within a "
    'token budget, one line each: its text, when, kind, confidence and id (`format: "json"` gives every field). '
    "'No relevant memory' (`no_relevant_memory` in JSON) means nothing relevant is stored: say so instead of "
    "guessing; the answer also says when more matched than the budget holds, and when `timeout_ms` ran out. Ask "
    '"what happened last time ..." to get the most recent match first, and say "other than X" (or pass `exclude`) to '
    "leave X out. Filter by `metadata`, `entities`, `tags` or a time; add 'working' to `layers` (with `session_id`) "
    "to search the session's scratch state too."
)
_EXPLAIN_TOOL = (
    "The same search as `recall`, with a per-stage trace (time parsing, keyword and vector candidates, fusion, "
    "ranking, re-ranking where a rerank model is deployed, collapsing, budget) in `trace`, so you can say why a "
    "memory came back or why one did not."
)


@operation(
    READ,
    Http("POST", f"{NS}/recall", "recall", "operations"),
    tools=(
        Tool("Recall", READS, description=_RECALL_TOOL, text=True),
        Tool("Explain recall", READS, name="explain_recall", description=_EXPLAIN_TOOL, forced={"explain": True}),
    ),
    command=Command("recall"),
    client="recall",
)
def recall(s: Services, namespace: Namespace, query: RecallQuery) -> RecallResponse:
    """Hybrid recall (keyword + vector, fused, decayed, collapsed, cut to a token budget)"""
    return s.recaller.recall(namespace, query)


@operation(
    FORGET,
    Http("POST", f"{NS}/forget", "forget", "operations"),
    tools=(
        Tool(
            "Forget",
            changes(destructive=True, idempotent=True),
            description="Delete memories for good: by ids, by session, or by a filter (layer, time range, tags); at "
            "least one is required, since an empty request would wipe everything. Returns a receipt with the counts "
            "per layer and the deleted ids. Use it when the user asks you to forget something.",
        ),
    ),
    command=Command("forget"),
    client="forget",
)
def forget(s: Services, namespace: Namespace, request: ForgetRequest) -> ForgetReceipt:
    """Forget by ids or by filter, with a receipt per layer"""
    return s.forgetter.forget(namespace, request)


@operation(
    Permission.CONSOLIDATE,
    Http("POST", f"{NS}/consolidate", "consolidate", "operations"),
    tools=(
        Tool(
            "Consolidate",
            changes(destructive=False, idempotent=True),
            description="Turn recurring episodes into lasting preferences, facts and lessons now (clusters of similar "
            "events become one semantic memory citing them). It also runs by itself (after a streak of failures, many "
            "new memories, or a session's end, and on a schedule where a server runs); call it after a burst of "
            "related memories. An error saying a run is in progress means one is doing the work already.",
        ),
    ),
    command=Command("consolidate"),
    client="consolidate",
)
def consolidate(s: Services, namespace: Namespace, request: ConsolidateRequest | None = None) -> ConsolidateResult:
    """Run consolidation now: unconsolidated episodes become preferences, facts and lessons, under the namespace's
    lease (409 consolidation_running while another run holds it) and the run and daily caps; the run is recorded in
    stats (the body is optional)"""
    return s.consolidation.consolidate(namespace, request)


@operation(
    READ,
    Http("GET", f"{NS}/stats", "recall", "operations"),
    tools=(
        Tool(
            "Memory statistics",
            READS,
            name="memory_stats",
            description="How much is stored per layer, when the last write was, how often recall found something (in "
            "total and per day), and what consolidation did: its latest runs, what they induced, the next trigger, "
            "and feedback per kind of memory.",
        ),
    ),
    command=Command("stats"),
    client="stats",
)
def stats(s: Services, namespace: Namespace, runs: RecentRunsParameter = 5) -> Stats:
    """Counts per layer, last write, recall hit rate (in total and per day of the last month), and consolidation's
    latest runs, next trigger and feedback"""
    return s.stats.of(namespace, runs)


# --- hindsight: before a task and after it -----------------------------------------------------------------------


@operation(
    READ,
    Http("POST", f"{NS}/brief", "recall", "hindsight"),
    tools=(
        Tool(
            "Brief before a task",
            READS,
            description="Call this before starting a task: say what you are about to do (and the tool you will use, "
            "and who or what it involves), and get the preferences and lessons that apply, best first, each with "
            "`why` it applies and its confidence. Follow them unless the user says otherwise. A lesson is what went "
            "wrong before and what worked; `no_relevant_memory` true means nothing applies. Each memory's `id` is "
            "what `feedback` takes.",
            text=True,
        ),
    ),
    command=Command("brief"),
    client="brief",
)
def brief(s: Services, namespace: Namespace, request: BriefRequest) -> BriefResponse:
    """The preferences and lessons that apply to a task about to start, best first, each with why"""
    return s.briefer.brief(namespace, request)


@operation(
    WRITE,
    Http("POST", f"{NS}/feedback", "write", "hindsight"),
    tools=(
        Tool(
            "Feedback on a memory",
            changes(destructive=False, idempotent=False),
            description="Call this after using a memory that `brief` or `recall` gave you: 'useful' if it helped (it "
            "is confirmed and ranks higher), 'not_useful' if it did not apply to this task, 'wrong' if it is not true "
            "(give the right statement in `correction`: it replaces the memory). Returns its confidence before and "
            "after.",
        ),
    ),
    command=Command("feedback"),
    client="feedback",
)
def feedback(s: Services, namespace: Namespace, request: FeedbackRequest) -> FeedbackResult:
    """Say what a memory was worth: useful confirms it, wrong lowers its confidence (a correction supersedes it),
    not_useful is counted"""
    return s.feedback.feedback(namespace, request)


@operation(
    WRITE,
    Http("POST", f"{NS}/sessions/{{sid}}/end", "write", "hindsight"),
    tools=(
        Tool(
            "End session",
            changes(destructive=True, idempotent=True),
            description="Call this when a conversation or task is over: its scratch state (working memory) is "
            "cleared, and what happened in it is consolidated into lasting preferences, facts and lessons in the "
            "background.",
        ),
    ),
    command=Command("end", group="session"),
    client="end_session",
)
def end_session(s: Services, namespace: Namespace, session_id: SessionParameter) -> SessionEnded:
    """End a session: clear its working memory and fire the session-end consolidation trigger"""
    return s.working.end_session(namespace, session_id)


# --- retention ---------------------------------------------------------------------------------------------------


@operation(READ, Http("GET", f"{NS}/retention", "recall", "retention"), client="get_retention")
def get_retention(s: Services, namespace: Namespace) -> NamespaceRetention:
    """The retention policy that governs the namespace: its own, or the nearest above it"""
    return s.retention.policy(namespace)


@operation(FORGET, Http("PUT", f"{NS}/retention", "forget", "retention"), client="put_retention")
def put_retention(s: Services, namespace: Namespace, policy: RetentionPolicy) -> NamespaceRetention:
    """Set the namespace's retention policy (episode max age, archive age, keep often-recalled); it governs the
    namespaces under it that have none, and is enforced by a sweep (hourly by default)"""
    return s.retention.set_policy(namespace, policy)


@operation(FORGET, Http("DELETE", f"{NS}/retention", "forget", "retention"), client="delete_retention")
def delete_retention(s: Services, namespace: Namespace) -> NamespaceRetention:
    """Remove the namespace's own retention policy (a policy above it, if any, governs it then)"""
    return s.retention.clear_policy(namespace)


# --- API keys (admin) --------------------------------------------------------------------------------------------


@operation(
    Permission.ADMIN,
    Http(
        "POST",
        "/v1/keys",
        "write",
        "keys",
        success=((201, "Created: the response holds the key, which is never shown again"),),
    ),
)
def create_key(s: Services, caller: Principal, request: KeyCreate) -> KeyCreated:
    """Create an API key (within the caller's scope, with at most its permissions); shown once"""
    from rearview.domain.http_bodies import KeyCreated, KeyInfo

    key, plaintext = s.access.create_key_as(
        caller,
        request.namespace,
        request.permissions,
        request.expires_at,
        request.description,
        request.requests_per_minute,
    )
    return KeyCreated(**KeyInfo.of(key, s.clock.now()).model_dump(), key=plaintext)


@operation(Permission.ADMIN, Http("GET", "/v1/keys", "write", "keys"), client="list_keys")
def list_keys(s: Services, caller: Principal) -> KeyList:
    """The keys within the caller's scope (never secrets or their hashes)"""
    from rearview.domain.http_bodies import KeyInfo, KeyList

    now = s.clock.now()
    return KeyList(keys=[KeyInfo.of(key, now) for key in s.access.list_keys(caller.scope)])


@operation(Permission.ADMIN, Http("DELETE", "/v1/keys/{key_id}", "write", "keys"), client="revoke_key")
def revoke_key(s: Services, caller: Principal, key_id: KeyIdParameter) -> KeyInfo:
    """Revoke an API key, at once and for good"""
    from rearview.domain.http_bodies import KeyInfo

    return KeyInfo.of(s.access.revoke_as(caller, key_id), s.clock.now())


@operation(Permission.ADMIN, Http("PATCH", "/v1/keys/{key_id}", "write", "keys"))
def set_key_limit(s: Services, caller: Principal, key_id: KeyIdParameter, limit: KeyLimit) -> KeyInfo:
    """Set an API key's request limit per minute (null: the default; 0: unlimited); at most the caller's own"""
    from rearview.domain.http_bodies import KeyInfo

    key = s.access.set_requests_per_minute_as(caller, key_id, limit.requests_per_minute)
    return KeyInfo.of(key, s.clock.now())


# --- the mem0-compatible API (rearview.operations.mem0) ------------------------------------------------------------

OPERATIONS.include(MEM0_OPERATIONS)
