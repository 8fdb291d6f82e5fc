"""The stored layers: an `Episode` is something that happened, a `Fact` something held true (a fact, preference or
lesson); `Memory` is either. Working memory, the third layer, is in `working`."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.timestamps import UtcDatetime


class Layer(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


StoredLayer = Literal["episodic", "semantic"]


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
