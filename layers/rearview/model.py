"""The domain: namespaces, the three memory layers, and the requests and results of the four operations.

Pydantic v2 models; the same models are the HTTP bodies, the MCP tool results and the CLI's JSON output.
All datetimes are timezone-aware UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from rearview.errors import InvalidInput

# --- namespaces ---------------------------------------------------------------------------------------------------

NAMESPACE_SEGMENT = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
MAX_NAMESPACE_SEGMENTS = 4


def validate_namespace(value: str) -> str:
    """Return `value` if it is a namespace (1 to 4 `:`-separated segments of `[A-Za-z0-9_.@-]{1,64}`)."""
    if not isinstance(value, str) or not value:
        raise InvalidInput("namespace: must be 1 to 4 segments separated by ':'", field="namespace")
    segments = value.split(":")
    if len(segments) > MAX_NAMESPACE_SEGMENTS:
        raise InvalidInput(
            f"namespace: at most {MAX_NAMESPACE_SEGMENTS} segments separated by ':' (got {len(segments)})",
            field="namespace",
        )
    for segment in segments:
        if not NAMESPACE_SEGMENT.match(segment):
            raise InvalidInput(
                f"namespace: each segment must be 1 to 64 characters of A-Z a-z 0-9 _ . @ - (got {segment[:80]!r})",
                field="namespace",
            )
    return value


def namespace_within(namespace: str, scope: str) -> bool:
    """True if `namespace` is `scope` itself or lies under it (`acme` holds `acme:u-42`, not `acme2`)."""
    return namespace == scope or namespace.startswith(scope + ":")


Namespace = Annotated[str, AfterValidator(validate_namespace)]


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(as_utc)]


class Layer(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


StoredLayer = Literal["episodic", "semantic"]


# --- stored memories ----------------------------------------------------------------------------------------------


class _Stored(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    namespace: str
    content: str
    tags: list[str] = Field(default_factory=list)
    importance: float = 0.5
    access_count: int = 0
    last_accessed_at: UtcDatetime | None = None
    created_at: UtcDatetime
    # How many writes confirmed this memory (1 + merged near-duplicates).
    confirmations: int = 1
    redacted: bool = False
    # Optimistic-locking version: 1 on insert, +1 on every update through the write path.
    version: int = 1


class Episode(_Stored):
    """Something that happened: timestamped, with entities, type and outcome."""

    layer: Literal["episodic"] = "episodic"
    occurred_at: UtcDatetime
    event_type: str | None = None
    entities: list[str] = Field(default_factory=list)
    outcome: str | None = None
    session_id: str | None = None
    consolidated: bool = False
    # The text of the turn(s) just before this one in its session, set by the write path (write.context_turns):
    # keyword search matches it at a lower weight (recall.context_weight), so a reply is found by its question.
    context: str = ""


class Fact(_Stored):
    """A fact or preference held about the namespace's subject, induced from episodes or written directly."""

    layer: Literal["semantic"] = "semantic"
    dimension: str | None = None
    confidence: float = 0.8
    provenance: list[str] = Field(default_factory=list)
    last_confirmed_at: UtcDatetime
    status: Literal["active", "superseded"] = "active"
    superseded_by: str | None = None
    superseded_at: UtcDatetime | None = None

    @property
    def occurred_at(self) -> datetime:
        """Facts are dated by their last confirmation when ranked or filtered by time."""
        return self.last_confirmed_at


Memory = Episode | Fact


class WorkingEntry(BaseModel):
    namespace: str
    session_id: str
    key: str
    value: Any
    updated_at: UtcDatetime
    expires_at: UtcDatetime


# --- limits -------------------------------------------------------------------------------------------------------

MAX_EPISODE_CHARS = 2000
MAX_FACT_CHARS = 500
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_ENTITIES = 32
MAX_ENTITY_CHARS = 128
MAX_ID_CHARS = 128
MAX_BATCH = 100
MAX_QUERY_CHARS = 2000
MAX_TOP_K = 100
MAX_TOKEN_BUDGET = 32000
MAX_WORKING_KEY_CHARS = 256
MAX_WORKING_VALUE_BYTES = 64 * 1024
MAX_TTL_SECONDS = 30 * 24 * 3600
ID_PATTERN = r"^[A-Za-z0-9_.:@#-]{1,128}$"
SESSION_PATTERN = r"^[A-Za-z0-9_.:@-]{1,128}$"
LABEL_PATTERN = r"^[^\x00-\x1f\x7f]{1,128}$"


# --- requests -----------------------------------------------------------------------------------------------------


class MemoryWrite(BaseModel):
    """One memory to write. Content rules beyond length (control characters, dumps, secrets) run in the service."""

    model_config = ConfigDict(extra="forbid")

    layer: StoredLayer = Field("episodic", description="episodic (an event) or semantic (a fact or preference)")
    content: str = Field(description=f"The memory, at most {MAX_EPISODE_CHARS} characters ({MAX_FACT_CHARS} for facts)")
    occurred_at: UtcDatetime | None = Field(None, description="When it happened (UTC); default now")
    id: str | None = Field(None, pattern=ID_PATTERN, description="Caller's idempotency id; written twice, stored once")
    event_type: str | None = Field(None, pattern=LABEL_PATTERN, max_length=64)
    entities: list[Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_ENTITY_CHARS)]] = Field(
        default_factory=list, max_length=MAX_ENTITIES
    )
    tags: list[Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_TAG_CHARS)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )
    outcome: str | None = Field(None, max_length=500)
    session_id: str | None = Field(None, pattern=SESSION_PATTERN)
    dimension: str | None = Field(
        None, pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="Semantic key such as diet or language"
    )
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    importance: float | None = Field(None, ge=0.0, le=1.0, description="Override the computed importance")

    @field_validator("content")
    @classmethod
    def _content_not_empty(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("must not be empty")
        if len(value) > MAX_EPISODE_CHARS:
            raise ValueError(f"must be at most {MAX_EPISODE_CHARS} characters (got {len(value)})")
        return value


class BatchWrite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[MemoryWrite] = Field(min_length=1, max_length=MAX_BATCH)


WriteStatus = Literal["stored", "accepted", "merged", "skipped"]


class WriteResult(BaseModel):
    id: str
    status: WriteStatus
    reason: str | None = None
    redacted: bool = False
    importance: float | None = None
    merged_into: str | None = None
    superseded: list[str] = Field(default_factory=list)


class BatchResult(BaseModel):
    results: list[WriteResult]


class WorkingWrite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: Any = Field(description="Any JSON value")
    ttl_seconds: int | None = Field(None, ge=1, le=MAX_TTL_SECONDS)


class WorkingView(BaseModel):
    namespace: str
    session_id: str
    entries: dict[str, Any]
    expires_at: dict[str, datetime]


def _both_layers() -> list[StoredLayer]:
    return ["episodic", "semantic"]


class RecallQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    top_k: int = Field(10, ge=1, le=MAX_TOP_K)
    layers: list[StoredLayer] = Field(default_factory=_both_layers, min_length=1)
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    as_of: UtcDatetime | None = Field(None, description="The 'now' that relative times resolve against")
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    event_types: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    token_budget: int | None = Field(None, ge=1, le=MAX_TOKEN_BUDGET)
    explain: bool = False
    include_superseded: bool = False
    session_id: str | None = Field(None, pattern=SESSION_PATTERN)
    parse_time: bool = Field(True, description="Parse time expressions (yesterday, 上周 ...) into a time filter")
    rerank: bool = Field(
        True,
        description="Re-order the best candidates with the deployment's rerank model, if it has one (a model call: "
        "false skips it where latency matters more)",
    )

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class RecallHit(BaseModel):
    id: str
    layer: StoredLayer
    content: str
    score: float
    occurred_at: datetime
    tags: list[str] = Field(default_factory=list)
    provenance: list[str] = Field(default_factory=list)
    event_type: str | None = None
    entities: list[str] = Field(default_factory=list)
    session_id: str | None = None
    dimension: str | None = None
    confidence: float | None = None
    status: str | None = None
    collapsed: list[str] = Field(default_factory=list, description="Ids of near-duplicates folded into this hit")


class StageTrace(BaseModel):
    stage: str
    millis: float
    detail: dict[str, Any] = Field(default_factory=dict)
    candidates: list[dict[str, Any]] = Field(default_factory=list)


class RecallTrace(BaseModel):
    query: str
    as_of: datetime
    stages: list[StageTrace]
    total_millis: float


class RecallResponse(BaseModel):
    results: list[RecallHit]
    working: dict[str, Any] | None = None
    no_relevant_memory: bool
    truncated: bool
    time_range: dict[str, Any] | None = None
    trace: RecallTrace | None = None


class ForgetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: list[Annotated[str, Field(pattern=ID_PATTERN)]] | None = Field(None, max_length=1000)
    layer: Literal["working", "episodic", "semantic"] | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    tags: list[str] | None = Field(None, max_length=MAX_TAGS)
    session_id: str | None = Field(None, pattern=SESSION_PATTERN)
    cascade: bool = True


class ForgetReceipt(BaseModel):
    namespace: str
    deleted: dict[str, int] = Field(default_factory=lambda: {"working": 0, "episodic": 0, "semantic": 0})
    ids: list[str] = Field(default_factory=list)
    facts_updated: list[str] = Field(default_factory=list, description="Facts whose provenance lost deleted ids")


class ConsolidateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    since: UtcDatetime | None = None
    max_clusters: int = Field(50, ge=1, le=1000)


class ConsolidateResult(BaseModel):
    namespace: str
    episodes_considered: int
    clusters: int
    facts_created: int
    facts_confirmed: int
    episodes_consolidated: int
    fact_ids: list[str] = Field(default_factory=list)


class Stats(BaseModel):
    namespace: str
    counts: dict[str, int]
    last_write_at: datetime | None
    recall_count: int
    recall_hits: int
    hit_rate: float | None


def utc_from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
