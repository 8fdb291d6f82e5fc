"""Consolidation: turning recurring episodes into semantic memory; what a run is asked and what it did."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.hindsight_runs import TriggerReason
from rearview.domain.memory import Kind
from rearview.domain.request_model import RequestModel
from rearview.domain.timestamps import RequestDatetime


class ConsolidateRequest(RequestModel):
    """What a consolidation run considers. The descriptions are written for the model that calls the MCP tool;
    HTTP's OpenAPI and the CLI's help read the same words."""

    model_config = ConfigDict(extra="forbid")
    since: RequestDatetime | None = Field(
        None, description="Only learn from episodes from this time on, ISO 8601; default every unconsolidated one"
    )
    max_clusters: int = Field(50, ge=1, le=1000, description="At most this many memories induced per run (1 to 1000)")


DecisionAction = Literal["created", "confirmed", "refined", "superseded", "history"]


class ConsolidationDecision(BaseModel):
    """What one run did with one induced memory: created it, confirmed or refined a held one, superseded a held one
    it contradicts, or kept it as history because a newer held memory contradicts it."""

    memory_id: str
    action: DecisionAction
    kind: Kind
    dimension: str | None = None
    superseded: list[str] = Field(default_factory=list, description="Memories this one superseded")


class ConsolidateResult(BaseModel):
    namespace: str
    episodes_considered: int = Field(description="Episodes read as evidence (new and within the lookback window)")
    new_episodes: int = Field(0, description="Episodes no run had seen before (now marked consolidated)")
    clusters: int = Field(description="Groups of episodes that passed the guards and were given to the inducer")
    facts_created: int = Field(description="Semantic memories created (of every kind)")
    facts_confirmed: int = Field(description="Held memories confirmed or refined by new evidence")
    superseded: int = Field(0, description="Held memories superseded by a contradicting newer one")
    episodes_consolidated: int
    induced: dict[str, int] = Field(
        default_factory=lambda: {"preference": 0, "fact": 0, "lesson": 0}, description="Memories created, by kind"
    )
    fact_ids: list[str] = Field(default_factory=list)
    decisions: list[ConsolidationDecision] = Field(default_factory=list)
    inducer: str = Field("rules", description="The inducer that stated the memories")
    fallback: str | None = Field(
        None, description="Why some clusters were stated by the rule inducer instead (the model failed or refused)"
    )
    tokens: int = Field(0, description="Model tokens spent (0 for the rule inducer)")
    clusters_deferred: int = Field(
        0, description="Clusters left for a later run because a cap or the time ran out (their new episodes wait)"
    )
    capped_by: str | None = Field(
        None, description="The cap that deferred clusters: run clusters, daily clusters, run tokens, daily tokens, time"
    )
    reason: TriggerReason = Field("manual", description="What started the run: manual, count, failure_streak, ...")
    run_id: str | None = None
    millis: float = 0.0

    @classmethod
    def empty(cls, namespace: str, inducer: str = "rules") -> ConsolidateResult:
        """A run's result before it did anything (or when it had nothing to do)."""
        return cls(
            namespace=namespace,
            episodes_considered=0,
            clusters=0,
            facts_created=0,
            facts_confirmed=0,
            episodes_consolidated=0,
            inducer=inducer,
        )
