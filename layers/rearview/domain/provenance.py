"""A memory's provenance, both ways: the episodes a semantic memory was induced from (what each said, when, and how it
went), and the semantic memories an episode fed."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rearview.domain.memory import Episode, Fact, Kind, OutcomeStatus, StoredLayer
from rearview.domain.timestamps import UtcDatetime


class SourceEpisode(BaseModel):
    """An episode a semantic memory was induced from."""

    id: str
    content: str
    occurred_at: UtcDatetime = Field(description="When it happened")
    outcome: str | None = Field(None, description="How it went, as written")
    outcome_status: OutcomeStatus | None = Field(None, description="success, failure, partial or unknown")
    session_id: str | None = None

    @classmethod
    def of(cls, episode: Episode) -> SourceEpisode:
        return cls(
            id=episode.id,
            content=episode.content,
            occurred_at=episode.occurred_at,
            outcome=episode.outcome,
            outcome_status=episode.outcome_status,
            session_id=episode.session_id,
        )


class FedMemory(BaseModel):
    """A semantic memory induced (in part) from an episode."""

    id: str
    kind: Kind
    content: str
    confidence: float
    status: Literal["active", "superseded"] = Field(description="active, or superseded by a later memory")

    @classmethod
    def of(cls, fact: Fact) -> FedMemory:
        return cls(id=fact.id, kind=fact.kind, content=fact.content, confidence=fact.confidence, status=fact.status)


class MemorySources(BaseModel):
    """Where a memory comes from, or what it fed."""

    namespace: str
    memory_id: str
    layer: StoredLayer
    sources: list[SourceEpisode] = Field(
        default_factory=list,
        description="For a semantic memory: the episodes it was induced from, oldest first (a forgotten one is gone)",
    )
    fed: list[FedMemory] = Field(
        default_factory=list, description="For an episode: the semantic memories induced from it, oldest first"
    )
