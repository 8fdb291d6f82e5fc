"""Statistics of a namespace: what a store counts (`NamespaceUsage`) and what a caller is shown (`Stats`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from pydantic import BaseModel, Field

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


# How many UTC days of recall counters `stats` shows (today included): a month of the inspector's chart.
RECALL_DAYS_SHOWN = 30
# How long a store keeps a day's recall counters (DynamoDB's TTL removes them lazily; SQLite as recalls come).
RECALL_DAY_RETENTION = timedelta(days=90)


class RecallDay(BaseModel):
    """A namespace's recalls on one UTC day, and how many of them found something."""

    day: date
    recalls: int = 0
    hits: int = 0


class Stats(BaseModel):
    namespace: str
    counts: dict[str, int]
    last_write_at: datetime | None
    recall_count: int
    recall_hits: int
    hit_rate: float | None
    recalls_by_day: list[RecallDay] = Field(
        default_factory=list,
        description=f"Recalls and those that found something, per UTC day of the last {RECALL_DAYS_SHOWN} (days "
        "without a recall left out), oldest first",
    )
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
