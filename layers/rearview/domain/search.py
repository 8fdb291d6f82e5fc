"""What the searches take and give: the structured filter every backend honours alike, a primitive search's
candidates, the entity statistics recall reads, and the traits an index states about how it answers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rearview.domain.memory import Episode, Fact, Kind, Memory, OutcomeStatus, StoredLayer


@dataclass(frozen=True)
class MemoryFilter:
    """Structured filters shared by listing, forgetting and both searches. All conditions are ANDed."""

    layers: tuple[StoredLayer, ...] = ("episodic", "semantic")
    since: datetime | None = None
    until: datetime | None = None
    tags: tuple[str, ...] = ()  # any of
    event_types: tuple[str, ...] = ()  # any of (episodes only; facts never match a non-empty event_types)
    session_id: str | None = None
    include_superseded: bool = False
    consolidated: bool | None = None  # episodes only; None = either
    ids: tuple[str, ...] | None = None
    outcomes: tuple[OutcomeStatus, ...] = ()  # any of (episodes only; facts never match a non-empty outcomes)
    kinds: tuple[Kind, ...] = ()  # any of (facts only; episodes never match a non-empty kinds)

    def matches(self, memory: Memory) -> bool:
        """The filter evaluated in Python, with the semantics every backend implements: time ranges are half-open
        (`since <= t < until`, t = occurred_at or a fact's last_confirmed_at); a fact never matches a session_id,
        event_types or outcomes condition, an episode never a kinds condition; `consolidated` constrains episodes
        only; superseded facts only when asked for."""
        if memory.layer not in self.layers or (self.ids is not None and memory.id not in self.ids):
            return False
        when = memory.occurred_at
        if (self.since is not None and when < self.since) or (self.until is not None and when >= self.until):
            return False
        if self.tags and not set(self.tags) & set(memory.tags):
            return False
        if isinstance(memory, Fact):
            if self.event_types or self.session_id is not None or self.outcomes:
                return False
            if self.kinds and memory.kind not in self.kinds:
                return False
            return self.include_superseded or memory.status == "active"
        if self.kinds:
            return False
        if self.event_types and memory.event_type not in self.event_types:
            return False
        if self.outcomes and memory.outcome_status not in self.outcomes:
            return False
        if self.session_id is not None and memory.session_id != self.session_id:
            return False
        return self.consolidated is None or memory.consolidated == self.consolidated


def searchable_text(memory: Memory) -> str:
    """What keyword search matches as a memory's own text: its content, its tags and (an episode's) entities. An
    episode's `context` is matched apart, at `context_weight`."""
    words = [memory.content, *memory.tags]
    if isinstance(memory, Episode):
        words.extend(memory.entities)
    return " ".join(words)


@dataclass(frozen=True)
class Candidate:
    """One hit of a primitive search: the raw score of that search (BM25 or cosine), best first."""

    id: str
    layer: StoredLayer
    score: float


@dataclass(frozen=True)
class EntityShares:
    """How often the entities of a namespace are named: `shares[entity]` is the share of the namespace's
    `episodes` that name it."""

    episodes: int
    shares: dict[str, float]


@dataclass(frozen=True)
class SearchTraits:
    """How an index answers, stated by the index itself, so the core asks it the cheapest way."""

    # Every search is a network round trip: recall asks for both candidate lists in one (`hybrid_search`).
    round_trip: bool = False
    # Vector search scans the namespace's vectors in this process: a wider first list costs little to keep, and
    # pseudo-relevance feedback re-scores it instead of searching the namespace again.
    local_scan: bool = False
