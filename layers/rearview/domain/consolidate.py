"""Consolidation: turning recurring episodes into semantic memory; what a run is asked and what it did."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.timestamps import UtcDatetime


class ConsolidateRequest(BaseModel):
    """What a consolidation run considers. The descriptions are written for the model that calls the MCP tool;
    HTTP's OpenAPI and the CLI's help read the same words."""

    model_config = ConfigDict(extra="forbid")

    since: UtcDatetime | None = Field(
        None, description="Only consider episodes from this time on, ISO 8601; default all unconsolidated"
    )
    max_clusters: int = Field(50, ge=1, le=1000, description="At most this many new facts per run (1 to 1000)")


class ConsolidateResult(BaseModel):
    namespace: str
    episodes_considered: int
    clusters: int
    facts_created: int
    facts_confirmed: int
    episodes_consolidated: int
    fact_ids: list[str] = Field(default_factory=list)
