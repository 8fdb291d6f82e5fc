"""Recall: the query a caller asks, the hits it gets, and the per-stage trace that explains them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rearview.domain.limits import MAX_QUERY_CHARS, MAX_TAGS, MAX_TOKEN_BUDGET, MAX_TOP_K, SESSION_PATTERN
from rearview.domain.memory import StoredLayer
from rearview.domain.timestamps import UtcDatetime


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
