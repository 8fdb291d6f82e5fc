"""What the searches take and give: the structured filter every backend honours alike, a primitive search's
candidates, the entity statistics recall reads, and the traits an index states about how it answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from rearview.domain.memory import Episode, Fact, Kind, Memory, OutcomeStatus, StoredLayer
from rearview.domain.metadata import matches_terms, metadata_terms


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
    entities: tuple[str, ...] = ()  # any of
    # Per key of a metadata filter, the terms (`rearview.domain.metadata`) of which the memory must hold one.
    metadata: tuple[tuple[str, ...], ...] = ()
    # What a caller may still see: a memory that expired by then (`expires_at <= alive_at`) never matches. None:
    # expiry is not looked at (the sweep that deletes expired memories, index maintenance).
    alive_at: datetime | None = None

    def matchable_layers(self) -> tuple[StoredLayer, ...]:
        """The layers a memory matching this filter can be in: a fact has no event type, session or outcome, an
        episode no kind; none at all when `ids` is empty."""
        if self.ids is not None and not self.ids:
            return ()
        layers = tuple(dict.fromkeys(self.layers))
        if self.event_types or self.session_id is not None or self.outcomes:
            layers = tuple(layer for layer in layers if layer == "episodic")
        if self.kinds:
            layers = tuple(layer for layer in layers if layer == "semantic")
        return layers

    def matches(self, memory: Memory) -> bool:
        """The filter evaluated in Python, with the semantics every backend implements: time ranges are half-open
        (`since <= t < until`, t = occurred_at or a fact's last_confirmed_at); a fact never matches a session_id,
        event_types or outcomes condition, an episode never a kinds condition; `consolidated` constrains episodes
        only; superseded facts only when asked for; entities any of; metadata as `rearview.domain.metadata` says;
        nothing expired by `alive_at`."""
        if memory.layer not in self.matchable_layers() or (self.ids is not None and memory.id not in self.ids):
            return False
        if not self._in_time_range(memory.occurred_at) or (self.tags and not set(self.tags) & set(memory.tags)):
            return False
        if not self._matches_common(memory):
            return False
        if isinstance(memory, Fact):
            return self._matches_fact(memory)
        return self._matches_episode(memory)

    def _matches_common(self, memory: Memory) -> bool:
        """Entities (any of), metadata (a term of every condition) and expiry: the conditions of either layer."""
        if self.entities and set(self.entities).isdisjoint(memory.entities):
            return False
        if self.alive_at is not None and memory.expired(self.alive_at):
            return False
        return not self.metadata or matches_terms(metadata_terms(memory.metadata), self.metadata)

    def _in_time_range(self, when: datetime) -> bool:
        return (self.since is None or when >= self.since) and (self.until is None or when < self.until)

    def _matches_fact(self, fact: Fact) -> bool:
        if self.kinds and fact.kind not in self.kinds:
            return False
        return self.include_superseded or fact.status == "active"

    def _matches_episode(self, episode: Episode) -> bool:
        return (
            (not self.event_types or episode.event_type in self.event_types)
            and (not self.outcomes or episode.outcome_status in self.outcomes)
            and (self.session_id is None or episode.session_id == self.session_id)
            and (self.consolidated is None or episode.consolidated == self.consolidated)
        )


def searchable_text(memory: Memory) -> str:
    """What keyword search matches as a memory's own text: its content, its tags and its entities. An episode's
    `context` is matched apart, at `context_weight`."""
    return episode_searchable_text(memory.content, memory.tags, memory.entities)


def episode_searchable_text(content: str, tags: Sequence[str], entities: Sequence[str]) -> str:
    """`searchable_text` of an episode from its fields (a bulk load has no model of it)."""
    return " ".join([content, *tags, *entities]) if tags or entities else content


class Candidate(NamedTuple):
    """One hit of a primitive search: the raw score of that search (BM25 or cosine), best first. A named tuple,
    not a frozen dataclass: a local vector search returns a thousand of them (recall's wide first pass), and a
    tuple is built in half the time."""

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
    # Vector search scans the namespace's vectors in this process (unless `SearchIndex.scans_exactly` says that a
    # namespace's search walks a graph): a wider first list costs little to keep, and pseudo-relevance feedback
    # re-scores it instead of searching the namespace again.
    local_scan: bool = False
    # How far a vector search's cosine may be from the exact one: an index that keeps its vectors at half precision
    # (the SQLite backend's float16 caches) scores within about 1e-3; one that keeps float32, within rounding.
    cosine_error: float = 1e-6
