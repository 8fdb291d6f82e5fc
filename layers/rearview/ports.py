"""Ports: the capabilities the core needs, as Protocols. Adapters live in `rearview.adapters`, one module per technology.

The core (`rearview.service`) depends on these and nothing else; it imports no AWS SDK and no SQLite.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np

from rearview.model import Fact, Memory, Stats, StoredLayer, WorkingEntry


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Text -> unit-length float32 vectors. `name` and `dim` are recorded with the data they produced."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape (len(texts), dim), each row L2-normalised."""
        ...


class Summarizer(Protocol):
    """Turns a cluster of related episodes into one fact (consolidation)."""

    def summarize(self, contents: Sequence[str]) -> str: ...


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


@dataclass(frozen=True)
class Candidate:
    """One hit of a primitive search: the raw score of that search (BM25 or cosine), best first."""

    id: str
    layer: StoredLayer
    score: float


@dataclass
class ChangeSet:
    """Everything one write or batch changes, applied by the store in one transaction.

    `upserts` carry the full memory; a memory with version > 1 must match the stored version - 1 (optimistic locking),
    else the store raises ConcurrentUpdate and applies nothing. A vector of None keeps the stored vector.
    """

    upserts: list[tuple[Memory, np.ndarray | None]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes)


class MemoryStore(Protocol):
    """The source of truth for all three layers. Every method is scoped to one namespace."""

    embedder_name: str
    dim: int

    # working memory
    def put_working(self, entry: WorkingEntry) -> None: ...
    def get_working(self, namespace: str, session_id: str, now: datetime) -> list[WorkingEntry]:
        """Unexpired entries only, even if expired ones are not yet physically removed."""
        ...

    def clear_working(self, namespace: str, session_id: str | None = None) -> int:
        """Delete a session's entries (or, with None, every session of the namespace); return how many."""
        ...

    # episodes and facts
    def apply(self, namespace: str, changes: ChangeSet) -> None: ...
    def get(self, namespace: str, memory_id: str) -> Memory | None: ...
    def get_many(self, namespace: str, ids: Sequence[str]) -> dict[str, Memory]: ...
    def get_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]: ...
    def list_memories(self, namespace: str, flt: MemoryFilter, limit: int | None = None) -> list[Memory]:
        """Memories matching the filter, oldest first."""
        ...

    def active_fact_for_dimension(self, namespace: str, dimension: str) -> Fact | None: ...
    def facts_citing(self, namespace: str, episode_ids: Iterable[str]) -> list[Fact]: ...
    def record_access(self, namespace: str, ids: Sequence[str], at: datetime) -> None: ...
    def record_recall(self, namespace: str, hit: bool, at: datetime) -> None: ...
    def stats(self, namespace: str, now: datetime) -> Stats: ...


class SearchIndex(Protocol):
    """The read side of search: the two primitive candidate lists that the core fuses.

    Both honour the namespace and every condition of the filter; scores are raw (BM25 >= 0, cosine in [-1, 1]).
    """

    def keyword_search(self, namespace: str, text: str, flt: MemoryFilter, limit: int) -> list[Candidate]: ...
    def vector_search(
        self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int
    ) -> list[Candidate]: ...
