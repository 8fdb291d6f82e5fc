"""Consolidation: turning recurring episodes into semantic memory; what a run is asked and what it did."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.timestamps import UtcDatetime


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
