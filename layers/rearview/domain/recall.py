"""Recall: the query a caller asks, the hits it gets, and the per-stage trace that explains them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rearview.domain.limits import (
    LABEL_PATTERN,
    MAX_ENTITIES,
    MAX_ENTITY_CHARS,
    MAX_EXCLUSION_CHARS,
    MAX_EXCLUSIONS,
    MAX_QUERY_CHARS,
    MAX_TAGS,
    MAX_TIMEOUT_MS,
    MAX_TOKEN_BUDGET,
    MAX_TOP_K,
    SessionId,
)
from rearview.domain.memory import Evidence, Kind, Occurrences, OutcomeStatus
from rearview.domain.metadata import METADATA_FILTER_DESCRIPTION, MetadataFilter
from rearview.domain.request_model import RequestModel
from rearview.domain.timestamps import RequestDatetime

# What recall searches: the stored layers, and a session's working memory.
RecallLayer = Literal["working", "episodic", "semantic"]


def _both_layers() -> list[RecallLayer]:
    return ["episodic", "semantic"]


# A phrase whose memories a recall leaves out: one line of text, as a tag is.
ExcludedPhrase = Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_EXCLUSION_CHARS)]


class RecallQuery(RequestModel):
    """What a recall asks. The descriptions are written for the model that calls the MCP tool; HTTP's OpenAPI and
    the CLI's help read the same words."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="What to recall, in natural language; may include a time expression such as 'last week' or "
        "'yesterday', which becomes a time filter; 'last time' / '上次' ('what happened last time I deployed?') "
        "ranks the most recent matching episode first; 'other than X', 'except X', 'besides X', 'apart from X', "
        "'anything but X', '除了X' leave out the memories about X, as `exclude` does "
        f"(at most {MAX_QUERY_CHARS} characters)",
    )
    top_k: int = Field(10, ge=1, le=MAX_TOP_K, description=f"How many memories at most (1 to {MAX_TOP_K})")
    layers: list[RecallLayer] = Field(
        default_factory=_both_layers,
        min_length=1,
        description="Which layers to search: 'episodic' (events), 'semantic' (facts), 'working' (the scratch state "
        "of the session `session_id` names, its keys and values read as text); default episodic and semantic",
    )
    since: RequestDatetime | None = Field(None, description="Only memories from this time on, ISO 8601 (inclusive)")
    until: RequestDatetime | None = Field(None, description="Only memories before this time, ISO 8601 (exclusive)")
    as_of: RequestDatetime | None = Field(
        None, description="The 'now' that relative times such as 'yesterday' resolve against; default now"
    )
    tags: list[str] = Field(
        default_factory=list, max_length=MAX_TAGS, description="Only memories carrying any of these tags"
    )
    event_types: list[str] = Field(
        default_factory=list,
        max_length=MAX_TAGS,
        description="Only episodes of any of these event types (facts never match)",
    )
    outcomes: list[OutcomeStatus] = Field(
        default_factory=list,
        max_length=4,
        description="Only episodes that turned out so: any of success, failure, partial, unknown (facts never "
        "match), e.g. ['failure'] for what went wrong before",
    )
    kinds: list[Kind] = Field(
        default_factory=list,
        max_length=3,
        description="Only semantic memories of these kinds: preference, fact, lesson (episodes never match)",
    )
    entities: list[Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_ENTITY_CHARS)]] = Field(
        default_factory=list,
        max_length=MAX_ENTITIES,
        description="Only memories about any of these people, places or products (their `entities`)",
    )
    metadata: MetadataFilter | None = Field(None, description=METADATA_FILTER_DESCRIPTION)
    session_id: SessionId | None = Field(
        None,
        description="The session (conversation or task) you are in: its working memory is returned too, and "
        "searched with layers ['working']",
    )
    token_budget: int | None = Field(
        None,
        ge=1,
        le=MAX_TOKEN_BUDGET,
        description="Token budget for the returned memories (default 2000); results beyond it are cut and "
        "`truncated` is set",
    )
    explain: bool = Field(
        False,
        description="Also return a per-stage trace (time parsing, keyword and vector candidates, fusion, ranking, "
        "re-ranking, collapsing, budget) in `trace`, to say why a memory came back or why one did not",
    )
    include_superseded: bool = Field(
        False, description="Also return facts that a newer fact replaced (for history questions)"
    )
    parse_time: bool = Field(
        True,
        description="Turn a time expression in the query (yesterday, last week, 上周 ...) into a time filter when "
        "neither since nor until is given; false searches the query as it is",
    )
    rerank: bool = Field(
        True,
        description="Re-order the best candidates with the deployment's rerank model, if it has one (a model call: "
        "false skips it where latency matters more)",
    )
    exclude: list[ExcludedPhrase] = Field(
        default_factory=list,
        max_length=MAX_EXCLUSIONS,
        description="Leave out the memories about these things, e.g. ['the retry approach'] when asking for "
        "another way: a memory whose text holds a phrase's content words is left out (unless it only sets them "
        "against something else, as in 'besides X'). A phrase that points back without naming anything ('the "
        "previous approach', '之前那个方法') leaves out the most recent episode or lesson that matches the query. "
        "Phrases the query itself excludes ('other than X', '除了X') are added to these "
        f"(at most {MAX_EXCLUSIONS} phrases of {MAX_EXCLUSION_CHARS} characters)",
    )
    timeout_ms: int | None = Field(
        None,
        ge=1,
        le=MAX_TIMEOUT_MS,
        description="A time budget in milliseconds: once it is spent, recall skips its optional refinements "
        "(second vector pass, session neighbours, boosts, re-ranking) and returns what it has ranked so far with "
        f"`timed_out` true; it never fails for it (1 to {MAX_TIMEOUT_MS}; default no budget)",
    )

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class RecallHit(BaseModel):
    id: str = Field(description="The memory's id (a working-memory key's name, for layer 'working')")
    layer: RecallLayer
    content: str
    score: float
    occurred_at: datetime
    tags: list[str] = Field(default_factory=list)
    provenance: list[str] = Field(default_factory=list)
    event_type: str | None = None
    entities: list[str] = Field(default_factory=list)
    session_id: str | None = None
    dimension: str | None = None
    confidence: float | None = Field(
        None, description="Semantic only: the confidence left after decay since the memory was last confirmed"
    )
    status: str | None = None
    kind: Kind | None = Field(None, description="Semantic only: preference, fact or lesson")
    facets: dict[str, str] = Field(default_factory=dict)
    evidence: Evidence | None = Field(None, description="Semantic only: the experience an induced memory rests on")
    stale: bool = Field(
        False, description="Semantic only: unconfirmed so long that its confidence decayed below the stale floor"
    )
    outcome: str | None = None
    outcome_status: OutcomeStatus | None = None
    occurrences: Occurrences | None = Field(None, description="Episodic only: how often it happened (merged repeats)")
    collapsed: list[str] = Field(default_factory=list, description="Ids of near-duplicates folded into this hit")
    folded_sources: list[str] = Field(
        default_factory=list,
        description="Semantic only: the episodes it was learned from that this recall matched too, folded under it "
        "rather than returned apart (the knowledge first; follow the ids for the evidence)",
    )
    folded_sources_count: int = Field(0, description="How many sources are folded under it (len of folded_sources)")
    metadata: dict[str, Any] = Field(default_factory=dict, description="The memory's metadata, as written")
    source: str | None = Field(None, description="Where it came from, as written")
    expires_at: datetime | None = Field(None, description="When it expires (null: never)")
    parent_id: str | None = Field(
        None, description="A chunk of a long text: the id of its first chunk, the one the write answered"
    )


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
    timed_out: bool = Field(False, description="The time budget ran out; the `deadline` stage lists what was skipped")


class Exclusion(BaseModel):
    """One thing a recall left out, and the memories it left out for it."""

    phrase: str = Field(description="The phrase, as given in `exclude` or as read from the query")
    source: Literal["query", "request"] = Field(
        description="'query' when read from the query's words ('other than X'), 'request' when given in `exclude`"
    )
    refers_back: bool = Field(
        False,
        description="The phrase names nothing but points back ('the previous approach', '之前那个方法'): the most "
        "recent episode or lesson matching the query was left out, not memories holding its words",
    )
    left_out: list[str] = Field(default_factory=list, description="Ids of the memories left out for it")


class QueryForm(BaseModel):
    """How recall read the query's wording beyond its topic and time words."""

    last_time: str | None = Field(
        None,
        description="The words that asked for the latest occurrence ('last time', 'most recent', '上次'); they were "
        "taken out of the search, and the most recent of the relevant episodes ranks first",
    )
    exclusions: list[Exclusion] = Field(default_factory=list, description="What was left out, phrase by phrase")


class RecallResponse(BaseModel):
    results: list[RecallHit]
    working: dict[str, Any] | None = None
    no_relevant_memory: bool
    truncated: bool
    time_range: dict[str, Any] | None = None
    query_form: QueryForm | None = Field(
        None, description="Set when the query asked for the last time or to leave something out (or `exclude` did)"
    )
    timed_out: bool = Field(
        False,
        description="The time budget (`timeout_ms`) ran out before recall finished: the refinements still ahead were "
        "skipped (the trace's `deadline` stage lists them) and the results are what was ranked by then",
    )
    trace: RecallTrace | None = None
