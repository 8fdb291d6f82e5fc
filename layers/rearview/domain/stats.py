"""Statistics of a namespace: what a store counts (`NamespaceUsage`) and what a caller is shown (`Stats`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel

from rearview.domain.hindsight_runs import HindsightStats


@dataclass(frozen=True)
class NamespaceUsage:
    """A namespace's raw counts as a store keeps them; the core turns them into `Stats`."""

    working: int  # unexpired working-memory keys
    episodic: int
    semantic_active: int
    semantic_superseded: int
    last_write_at: datetime | None
    recall_count: int
    recall_hits: int


class Stats(BaseModel):
    namespace: str
    counts: dict[str, int]
    last_write_at: datetime | None
    recall_count: int
    recall_hits: int
    hit_rate: float | None
    # Consolidation's side: runs, what they induced and spent, the next trigger, feedback and adoption.
    hindsight: HindsightStats | None = None

    @classmethod
    def of(cls, namespace: str, usage: NamespaceUsage) -> Stats:
        return cls(
            namespace=namespace,
            counts={
                "working": usage.working,
                "episodic": usage.episodic,
                "semantic": usage.semantic_active,
                "semantic_superseded": usage.semantic_superseded,
            },
            last_write_at=usage.last_write_at,
            recall_count=usage.recall_count,
            recall_hits=usage.recall_hits,
            hit_rate=(usage.recall_hits / usage.recall_count) if usage.recall_count else None,
        )
