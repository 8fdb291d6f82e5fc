"""The stored layers: an `Episode` is something that happened, a `Fact` something held true (a fact, preference or
lesson); `Memory` is either. Working memory, the third layer, is in `working`."""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.limits import Identifier
from rearview.domain.metadata import StoredMetadata
from rearview.domain.timestamps import UtcDatetime

Kind = Literal["preference", "fact", "lesson"]
KINDS: tuple[Kind, ...] = ("preference", "fact", "lesson")

OutcomeStatus = Literal["success", "failure", "partial", "unknown"]
OUTCOME_STATUSES: tuple[OutcomeStatus, ...] = ("success", "failure", "partial", "unknown")


class Evidence(BaseModel):
    """How much experience stands behind a semantic memory: the confidence and the guards are computed from it."""

    model_config = ConfigDict(extra="forbid")

    episodes: int = Field(0, description="Distinct source episodes")
    occurrences: int = Field(0, description="Times it was seen, merged repeats of one episode included")
    sessions: int = Field(0, description="Distinct sessions among the sources")
    days: int = Field(0, description="Distinct UTC days among the sources")
    first_at: datetime | None = None
    last_at: datetime | None = None
    failures: int = Field(0, description="Source episodes whose outcome was a failure")
    successes: int = Field(0, description="Source episodes whose outcome was a success")

    @property
    def span_days(self) -> float:
        if self.first_at is None or self.last_at is None:
            return 0.0
        return max(0.0, (self.last_at - self.first_at).total_seconds() / 86400.0)


class Occurrences(BaseModel):
    """How often an episode happened: its merged repeats count, with when and in which sessions."""

    count: int
    first_at: datetime
    last_at: datetime
    sessions: list[str] = Field(default_factory=list)


# Sessions an episode remembers having been seen in (its merged repeats' sessions), most recent last.
MAX_EPISODE_SESSIONS = 16


class Layer(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


StoredLayer = Literal["episodic", "semantic"]


class _Stored(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Identifier
    namespace: Identifier
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
    # The caller's own JSON object (`rearview.domain.metadata`), stored and returned as given, filterable.
    metadata: StoredMetadata = Field(default_factory=dict)
    # Where it came from, in the caller's words: a URL, a document, "user said".
    source: str | None = None
    # When it expires (None: never): from then on no read returns it, and the sweep (or DynamoDB's TTL) deletes it.
    expires_at: UtcDatetime | None = None

    def expired(self, now: datetime) -> bool:
        """True once its expiry has come (`expires_at <= now`)."""
        return self.expires_at is not None and self.expires_at <= now


class Episode(_Stored):
    """Something that happened: timestamped, with entities, type and outcome."""

    layer: Literal["episodic"] = "episodic"
    occurred_at: UtcDatetime
    event_type: str | None = None
    entities: list[str] = Field(default_factory=list)
    outcome: str | None = None
    # success / failure / partial / unknown: set by the caller, or recognised from `outcome`; None without one.
    outcome_status: OutcomeStatus | None = None
    session_id: Identifier | None = None
    # A near-duplicate write merges into this episode and counts as another occurrence (`confirmations` is the
    # count): when the last one happened, and the distinct sessions they happened in (at most 16, latest last).
    last_occurred_at: UtcDatetime | None = None
    session_ids: list[Identifier] = Field(default_factory=list)
    consolidated: bool = False
    # The text of the turn(s) just before this one in its session, set by the write path (write.context_turns):
    # keyword search matches it at a lower weight (recall.context_weight), so a reply is found by its question.
    context: str = ""
    # One chunk of a write too long for one episode (`rearview.domain.chunking`): the id of its first chunk, which
    # the write answered and which forgetting forgets them all by, its position from 0, and how many there are.
    parent_id: str | None = None
    chunk_index: int | None = None
    chunk_count: int | None = None

    @property
    def last_seen_at(self) -> datetime:
        """When this episode last happened (its latest merged repeat, or itself)."""
        return self.last_occurred_at or self.occurred_at

    @property
    def sessions(self) -> list[str]:
        """The distinct sessions it happened in."""
        return list(dict.fromkeys([*([self.session_id] if self.session_id else []), *self.session_ids]))

    def occurrences(self) -> Occurrences:
        return Occurrences(
            count=max(1, self.confirmations),
            first_at=self.occurred_at,
            last_at=self.last_seen_at,
            sessions=self.sessions,
        )


class Fact(_Stored):
    """Semantic memory: a preference, fact or lesson held about the namespace's subject, induced from episodes
    (consolidation) or written directly."""

    layer: Literal["semantic"] = "semantic"
    kind: Kind = "fact"
    dimension: Identifier | None = None
    # What the memory says on its dimension, slot by slot (language: {replies: Chinese}): how consolidation tells
    # a repeat (same facets), a refinement (new slots) and a contradiction (a slot with another value) apart.
    facets: dict[str, str] = Field(default_factory=dict)
    confidence: float = 0.8
    provenance: list[Identifier] = Field(default_factory=list)
    # The experience behind an induced memory (None for one written directly), and who stated it.
    evidence: Evidence | None = None
    induced_by: Identifier | None = None
    first_seen_at: UtcDatetime | None = None
    last_confirmed_at: UtcDatetime
    status: Literal["active", "superseded"] = "active"
    superseded_by: Identifier | None = None
    superseded_at: UtcDatetime | None = None
    # The people, places, products it is about, as a write named them.
    entities: list[str] = Field(default_factory=list)

    @property
    def occurred_at(self) -> datetime:
        """Facts are dated by their last confirmation when ranked or filtered by time."""
        return self.last_confirmed_at

    def confidence_at(self, now: datetime, half_life_days: float) -> float:
        """The confidence left at `now`: it halves every half-life since the memory was last confirmed."""
        age_days = max(0.0, (now - self.last_confirmed_at).total_seconds() / 86400.0)
        return round(self.confidence * math.pow(0.5, age_days / half_life_days), 4)


Memory = Episode | Fact
