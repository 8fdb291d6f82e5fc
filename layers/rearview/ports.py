"""Ports: the capabilities the core needs, as Protocols. Adapters live in `rearview.adapters`, one per technology.

The core (`rearview.service`) depends on these and nothing else; it imports no AWS SDK and no SQLite.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

from rearview.errors import ConcurrentUpdate, InvalidInput
from rearview.model import Episode, Fact, Memory, MemoryWrite, Stats, StoredLayer, WorkingEntry

if TYPE_CHECKING:
    from rearview.service.access import ApiKey


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


class Reranker(Protocol):
    """Reads the query and each candidate together (a cross-encoder, a rerank model) and scores how well the
    candidate answers it: what a bi-encoder and BM25, which see the two apart, cannot judge. Recall re-orders its
    best candidates by these scores (see RecallTuning.rerank_candidates)."""

    name: str

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One score per document, in the documents' order; higher is more relevant. Scores compare only within
        one call. Raises on failure (recall then keeps its own order)."""
        ...


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

    def matches(self, memory: Memory) -> bool:
        """The filter evaluated in Python, with the semantics every backend implements: time ranges are half-open
        (`since <= t < until`, t = occurred_at or a fact's last_confirmed_at); a fact never matches a session_id or
        event_types condition; `consolidated` constrains episodes only; superseded facts only when asked for."""
        if memory.layer not in self.layers or (self.ids is not None and memory.id not in self.ids):
            return False
        when = memory.occurred_at
        if (self.since is not None and when < self.since) or (self.until is not None and when >= self.until):
            return False
        if self.tags and not set(self.tags) & set(memory.tags):
            return False
        if isinstance(memory, Fact):
            if self.event_types or self.session_id is not None:
                return False
            return self.include_superseded or memory.status == "active"
        if self.event_types and memory.event_type not in self.event_types:
            return False
        if self.session_id is not None and memory.session_id != self.session_id:
            return False
        return self.consolidated is None or memory.consolidated == self.consolidated


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

    def collapsed(self, namespace: str) -> dict[str, PendingUpsert]:
        """One net upsert per id, in first-seen order: the last state wins, a v1 -> v2 chain within the set is
        allowed, and a later upsert without a vector keeps the earlier one's. Every store applies this."""
        pending: dict[str, PendingUpsert] = {}
        for memory, vector in self.upserts:
            if memory.namespace != namespace:
                raise InvalidInput(
                    f"memory {memory.id} belongs to namespace {memory.namespace!r}, not {namespace!r}",
                    field="namespace",
                )
            previous = pending.get(memory.id)
            if previous is None:
                pending[memory.id] = PendingUpsert(memory, vector, memory.version)
                continue
            if memory.layer != previous.memory.layer or memory.version != previous.memory.version + 1:
                raise ConcurrentUpdate(
                    f"memory {memory.id}: version {memory.version} follows version {previous.memory.version} "
                    "in the same change set"
                )
            kept = vector if vector is not None else previous.vector
            pending[memory.id] = PendingUpsert(memory, kept, previous.first_version)
        return pending


@dataclass(frozen=True)
class PendingUpsert:
    """One memory's net upsert within a ChangeSet; the stored memory must be at `first_version - 1` (or absent
    when `first_version` is 1)."""

    memory: Memory
    vector: np.ndarray | None
    first_version: int


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
    def recent_episodes(self, namespace: str, since: datetime, limit: int = 200) -> list[Episode]:
        """Episodes created at or after `since`, newest first, at most `limit` (read-your-writes while an
        eventually consistent index catches up)."""
        ...


class SearchIndex(Protocol):
    """The read side of search: the two primitive candidate lists that the core fuses.

    Both honour the namespace and every condition of the filter; scores are raw (BM25 >= 0, cosine in [-1, 1]).
    Keyword search matches an episode's own text and, with `context_weight` > 0, its `context` too, scoring the
    text's BM25 plus the context's times the weight; at 0 only the memory's own text matches.
    """

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]: ...
    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]: ...


@runtime_checkable
class HybridSearch(Protocol):
    """An index that answers both primitive searches in one round trip (OpenSearch's msearch)."""

    def hybrid_search(
        self,
        namespace: str,
        text: str,
        vector: np.ndarray,
        flt: MemoryFilter,
        limit: int,
        context_weight: float = 0.0,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """(keyword candidates, vector candidates), each as the separate searches would return them."""
        ...


@dataclass(frozen=True)
class EntityShares:
    """How often the entities of a namespace are named: `shares[entity]` is the share of the namespace's
    `episodes` that name it."""

    episodes: int
    shares: dict[str, float]


@runtime_checkable
class EntityStatistics(Protocol):
    """An index that counts the entities its episodes name, per namespace. Recall uses it to tell a name that picks
    out a few memories from one that half the namespace carries (its user, the speakers of a conversation)."""

    def entity_shares(self, namespace: str) -> EntityShares:
        """The namespace's entity shares, over all its episodes or a large recent sample of them; may lag the latest
        writes a little (an index recounts from time to time, not on every write)."""
        ...


class KeyStore(Protocol):
    """Where API keys live (SQLite locally, DynamoDB on AWS). Holds hashes of secrets, never the secrets."""

    def put(self, key: ApiKey) -> None:
        """Insert a new key; raises ConcurrentUpdate if its key_id is taken (ids are never reused)."""
        ...

    def get(self, key_id: str) -> ApiKey | None: ...
    def list(self) -> list[ApiKey]:
        """Every key, revoked and expired ones included."""
        ...

    def revoke(self, key_id: str, at: datetime) -> ApiKey | None:
        """Mark the key revoked at `at` (keeping an earlier revocation time); None if there is no such key."""
        ...

    def has_any(self) -> bool:
        """True if any key was ever stored (revoked ones count)."""
        ...


@runtime_checkable
class ConsolidationBacklog(Protocol):
    """A store that can list where scheduled consolidation has work (the DynamoDB store's sparse index)."""

    def list_namespaces_with_unconsolidated(self) -> list[str]:
        """Every namespace holding at least one unconsolidated episode."""
        ...


class WriteQueue(Protocol):
    """The asynchronous write path: accepted writes wait here until a worker stores them."""

    def send(self, namespace: str, items: Sequence[MemoryWrite]) -> None:
        """Enqueue one request (its items keep their assigned ids, so redelivery stays idempotent)."""
        ...


class DeadLetters(Protocol):
    """Where a queued write that cannot be stored goes, with the reason, for an operator to inspect."""

    def send(self, body: str, reason: str, error: str) -> None:
        """Park the original message body; `reason` is a stable code, `error` the detail."""
        ...


@runtime_checkable
class BatchVectorSearch(Protocol):
    """An index that can run many vector searches in one pass (the write path checks a whole batch for
    near-duplicates at once)."""

    def vector_search_many(
        self, namespace: str, vectors: np.ndarray, flt: MemoryFilter, limit: int
    ) -> list[list[Candidate]]: ...
