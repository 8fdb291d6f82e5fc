"""Ports: every capability the core needs, as a Protocol. Adapters (`rearview.adapters`, one module or package per
technology) implement them; the core (`rearview.service`) depends on these and on `rearview.domain`, never on an
adapter, an AWS SDK or SQLite.

A capability that differs between implementations is stated by the port (an attribute such as
`SearchIndex.traits`, or a method every implementation has), never guessed by inspecting an adapter's class.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rearview.domain.access import ApiKey
from rearview.domain.changes import ChangeSet
from rearview.domain.embedding import CosineScale
from rearview.domain.episode_columns import EpisodeColumns
from rearview.domain.erase import ErasedCounts, ErasureMark
from rearview.domain.hindsight import EvidenceCluster, Induction
from rearview.domain.hindsight_runs import (
    ConsolidationJob,
    ConsolidationRun,
    FeedbackVerdict,
    LedgerTotals,
    Spend,
)
from rearview.domain.history import ArchivedVersion
from rearview.domain.listing import PagePosition
from rearview.domain.memory import Episode, Fact, Memory, StoredLayer
from rearview.domain.quota import QuotaWindow
from rearview.domain.retention import RetentionPolicy
from rearview.domain.search import Candidate, EntityShares, MemoryFilter, SearchTraits
from rearview.domain.stats import NamespaceUsage, RecallDay
from rearview.domain.transfer import ExportedMemory
from rearview.domain.working import WorkingEntry
from rearview.domain.write import MemoryWrite

if TYPE_CHECKING:
    import numpy as np


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for time budgets); only differences mean anything."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Text -> unit-length float32 vectors. `name` and `dim` are recorded with the data they produced."""

    name: str
    dim: int
    # What this model's cosines mean (calibrated by bench/calibrate.py): the write path's and recall's cosine
    # thresholds, stated on the reference scale, are mapped onto it, and recall judges relevance by its margin.
    scale: CosineScale

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Memories: an array of shape (len(texts), dim), each row L2-normalised."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """What recall searches for, as `embed` does memories: a model trained on (query, passage) pairs reads
        each side its own way (e5's "query: " and "passage: "); a symmetric model embeds both alike."""
        ...


class Inducer(Protocol):
    """States the semantic memory a cluster of episodes supports (consolidation): a preference, fact or lesson
    with its dimension and facets, or None where the cluster supports none. The rule inducer does it with no
    model; model-backed inducers report the clusters they could not handle in `Induction.failed`, which the
    rule inducer then states."""

    name: str

    def induce(self, clusters: Sequence[EvidenceCluster]) -> Induction:
        """One result per cluster, in order."""
        ...


class Reranker(Protocol):
    """Reads the query and each candidate together (a cross-encoder, a rerank model) and scores how well the
    candidate answers it: what a bi-encoder and BM25, which see the two apart, cannot judge. Recall re-orders its
    best candidates by these scores (see RecallTuning.rerank_candidates)."""

    name: str

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One score per document, in the documents' order; higher is more relevant. Scores compare only within
        one call. Raises on failure (recall then keeps its own order)."""
        ...


class MemoryReader(Protocol):
    """Reading episodes and facts: what recall, the write path and consolidation look up. Every method is scoped to
    one namespace."""

    def get(self, namespace: str, memory_id: str) -> Memory | None: ...
    def get_many(self, namespace: str, ids: Sequence[str], *, shared: bool = False) -> dict[str, Memory]:
        """The memories found among `ids`, by id (missing ids are absent). Each is the caller's to change, unless
        `shared`: then it may be the store's own (a store that keeps what it read hands that out without a copy),
        and the caller only reads it (recall)."""
        ...

    def get_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]: ...
    def list_memories(self, namespace: str, flt: MemoryFilter, limit: int | None = None) -> list[Memory]:
        """Memories matching the filter, oldest first."""
        ...

    def active_fact_for_dimension(self, namespace: str, dimension: str) -> Fact | None: ...
    def facts_citing(self, namespace: str, episode_ids: Iterable[str]) -> list[Fact]: ...
    def recent_episodes(self, namespace: str, since: datetime, limit: int = 200) -> list[Episode]:
        """Episodes created at or after `since`, newest first, at most `limit` (read-your-writes while an
        eventually consistent index catches up)."""
        ...


class MemoryWriter(Protocol):
    """Changing episodes and facts: every change of a write, an edit, a forget or a consolidation run is one
    ChangeSet, applied atomically."""

    def apply(self, namespace: str, changes: ChangeSet) -> None: ...
    def load_episodes(self, namespace: str, rows: EpisodeColumns, vectors: np.ndarray | None) -> None:
        """Insert `rows` as new episodes of the namespace in one transaction, each with its row of `vectors`
        (None: without vectors), as `apply` of `ChangeSet.loading` would; an id the namespace holds already
        refuses the whole load (ConcurrentUpdate). A bulk load's path: a store may insert the columns as they
        are, without a model per row."""
        ...


class WorkingMemoryStore(Protocol):
    """Working memory: a session's scratch keys, each with its expiry."""

    def put_working(self, entry: WorkingEntry) -> None: ...
    def get_working(self, namespace: str, session_id: str, now: datetime) -> list[WorkingEntry]:
        """Unexpired entries only, even if expired ones are not yet physically removed."""
        ...

    def clear_working(self, namespace: str, session_id: str | None = None) -> int:
        """Delete a session's entries (or, with None, every session of the namespace); return how many."""
        ...

    def purge_expired_working(self, now: datetime) -> int:
        """Delete the working-memory entries of every namespace that expired by `now` from storage (reads skip
        them already); how many went. A store whose storage expires them itself (DynamoDB's TTL) returns 0."""
        ...


class MemoryUsage(Protocol):
    """What use is made of a namespace's memories: access counts (recall ranks by them), recall's hit counters,
    and the counts read back for stats and the namespace listing."""

    def record_access(self, namespace: str, ids: Sequence[str], at: datetime) -> None: ...
    def record_recall(self, namespace: str, hit: bool, at: datetime, accessed: Sequence[str] = ()) -> None:
        """Count one recall, whether it found anything, and an access of each of `accessed` (the memories it
        returned): one write where writes are billed (DynamoDB), however many memories it returned."""
        ...

    def settle_access(self, namespace: str, now: datetime) -> int:
        """Fold the access counts a store keeps apart from the memories (DynamoDB's per-minute windows) into them;
        how many memories changed. A store that counts on the memories themselves has nothing to fold (0). `get`
        and `usage` count what is not folded yet; other reads, once it is."""
        ...

    def usage(self, namespace: str, now: datetime) -> NamespaceUsage:
        """The namespace's counts (unexpired working keys, episodes, active and superseded facts) and recall
        counters; the core turns them into `Stats`."""
        ...

    def recall_days(self, namespace: str, since: date) -> list[RecallDay]:
        """The namespace's recall counters per UTC day from `since` on, oldest first; days without a recall are
        left out. A store may drop the days older than `RECALL_DAY_RETENTION`."""
        ...


class MemoryManagement(Protocol):
    """Memory by hand: pages newest first, history, the namespaces, and a namespace's erasure."""

    def page_memories(
        self, namespace: str, flt: MemoryFilter, limit: int, after: PagePosition | None = None
    ) -> list[Memory]:
        """At most `limit` memories matching the filter, newest first (time, then id, both descending; see
        `rearview.domain.listing`), starting strictly after `after`. On a remote store, a query, never a scan."""
        ...

    def history(self, namespace: str, memory_id: str) -> list[ArchivedVersion]:
        """The archived earlier versions of a memory, oldest first (empty when it was never changed in earnest)."""
        ...

    def facts_superseded_by(self, namespace: str, fact_id: str) -> list[Fact]:
        """The facts (superseded) whose `superseded_by` is `fact_id`, oldest first."""
        ...

    def erase_namespace(self, namespace: str) -> ErasedCounts:
        """Delete everything the store holds of one namespace (not those under it): working memory, memories,
        their history and vectors, its counters. The namespace is then listed no more."""
        ...

    def list_namespaces(self, prefix: str = "") -> list[str]:
        """The namespaces written or recalled in (since last erased) whose name starts with `prefix`, in name
        order. A request path (the namespace listing, a subtree's erase): never a scan of every memory."""
        ...

    def expired_memories(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        """(namespace, id) of at most `limit` memories of any namespace whose `expires_at` is at or before `now`,
        soonest expired first: what the sweep forgets, with forget's cascade. Never a scan of every memory."""
        ...


class ConsolidationBacklog(Protocol):
    """What consolidation has still to see: the unconsolidated episodes, counted without a scan."""

    def namespaces_with_unconsolidated(self) -> list[str]:
        """Every namespace holding at least one unconsolidated episode (where scheduled consolidation has work),
        without scanning every memory."""
        ...

    def unconsolidated_count(self, namespace: str, at_most: int | None = None) -> int:
        """How many of the namespace's episodes no consolidation run has seen yet, counting no further than
        `at_most` when given (the count trigger reads it after writes, up to its threshold: no namespace scan)."""
        ...


class MemoryStore(
    MemoryReader, MemoryWriter, WorkingMemoryStore, MemoryUsage, MemoryManagement, ConsolidationBacklog, Protocol
):
    """The source of truth for all three layers: what a backend implements (docs/new-backend.md). Each service
    takes only the narrow ports above that it uses; the composition root hands every one the same store."""

    embedder_name: str
    dim: int

    def close(self) -> None:
        """Release connections; idempotent."""
        ...


class SearchIndex(Protocol):
    """The read side of search: the two primitive candidate lists that the core fuses.

    Both honour the namespace and every condition of the filter; scores are raw (BM25 >= 0, cosine in [-1, 1]).
    Keyword search matches an episode's own text and, with `context_weight` > 0, its `context` too, scoring the
    text's BM25 plus the context's times the weight; at 0 only the memory's own text matches.

    An adapter subclasses this Protocol to inherit the default `vector_search_many` and `hybrid_search` (one
    primitive search after the other) where it has nothing faster.
    """

    traits: SearchTraits

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]: ...

    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]: ...

    def searches_all(self, namespace: str, flt: MemoryFilter, limit: int) -> bool | None:
        """Whether a vector search with `flt` and `limit` returns every memory it chooses from (those with a vector
        that pass the filter number no more than `limit`), where the index can tell without a round trip; None
        where it cannot. Recall's feedback asks for a wide first list only where it would not hold them all."""
        return None

    def scans_exactly(self, namespace: str, flt: MemoryFilter) -> bool:
        """Whether a vector search with `flt` scores every vector the filter passes, in this process: a wider list
        then costs little more than a narrow one, and recall's feedback keeps one to re-score. False where the
        search walks a graph or asks a remote index, whose cost grows with the width asked for."""
        return self.traits.local_scan

    def vector_search_many(
        self, namespace: str, vectors: np.ndarray, flt: MemoryFilter, limit: int
    ) -> list[list[Candidate]]:
        """One vector search per row of `vectors` (the write path checks a whole batch for near-duplicates)."""
        return [self.vector_search(namespace, vector, flt, limit) for vector in vectors]

    def hybrid_search(
        self,
        namespace: str,
        text: str,
        vector: np.ndarray,
        flt: MemoryFilter,
        limit: int,
        context_weight: float = 0.0,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """(keyword candidates, vector candidates), each as the separate searches would return them; an index
        whose searches are round trips answers both in one."""
        return (
            self.keyword_search(namespace, text, flt, limit, context_weight),
            self.vector_search(namespace, vector, flt, limit),
        )

    def maintenance(self) -> IndexMaintenance | None:
        """The write side of an index kept apart from the store (kept in step by index sync, so it lags the store a
        little, and rebuilt from the store by reindex); None for an index written in the store's own transaction."""
        return None

    def entity_shares(self, namespace: str) -> EntityShares:
        """How often each entity is named in the namespace's episodes (over all of them or a large recent sample;
        may lag the latest writes a little). Recall uses it to tell a name that picks out a few memories from one
        that half the namespace carries (its user, the speakers of a conversation)."""
        ...


class IndexMaintenance(Protocol):
    """The write side of a search index kept apart from the store (`SearchIndex.maintenance`): kept in step with
    the store by index sync, rebuilt from it by reindex."""

    def ensure_index(self) -> bool:
        """Create the index, or bring an existing one's mapping up to date; True if created."""
        ...

    def upsert(self, docs: Sequence[tuple[Memory, np.ndarray | None]]) -> int: ...
    def delete(self, namespace: str, ids: Sequence[str], layer: StoredLayer | None = None) -> None: ...
    def delete_namespace(self, namespace: str) -> int:
        """Remove every document of a namespace; how many went."""
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

    def set_requests_per_minute(self, key_id: str, requests_per_minute: int | None) -> ApiKey | None:
        """Set the key's own request limit (None: back to the default; 0: unlimited); the updated key, or None if
        there is no such key (nothing is created)."""
        ...

    def has_any(self) -> bool:
        """True if any key was ever stored (revoked ones count)."""
        ...

    def close(self) -> None:
        """Release connections; idempotent."""
        ...


class RequestQuota(Protocol):
    """The request counters of API keys, one per key and window, shared by every process and function that serves
    requests (SQLite's file locally, the DynamoDB table on AWS): what per-key throttling counts against."""

    def take(self, key_id: str, window: QuotaWindow, limit: int, count: int = 1) -> bool:
        """Count `count` requests of `key_id` in `window` unless that would put the window's count past `limit`;
        True if counted (all of them), False if not (nothing counted). Atomic: callers racing on one key never get
        more than `limit` requests counted in a window between them. A window's counter is dropped some time after
        `window.expires_at`."""
        ...


class HindsightLedger(Protocol):
    """Consolidation's bookkeeping per namespace: the run lease (never two runs on one namespace at once), the
    runs (what each did and spent), the day's spend (held against the daily caps) and feedback counts. SQLite
    tables locally, items beside the memories in the DynamoDB table on AWS."""

    def acquire_lease(self, namespace: str, owner: str, now: datetime, ttl_seconds: float) -> bool:
        """Take the namespace's run lease for `owner` until `now + ttl_seconds`, atomically, unless another owner
        holds one that has not expired; True if taken. A run that crashes leaves its lease to expire."""
        ...

    def release_lease(self, namespace: str, owner: str) -> None:
        """Give the lease back, if `owner` still holds it."""
        ...

    def record_run(self, run: ConsolidationRun) -> None:
        """Keep the run, and add it to the namespace's totals and to the spend of its day (`started_at`, UTC)."""
        ...

    def runs(self, namespace: str, limit: int = 20) -> list[ConsolidationRun]:
        """The namespace's latest runs, newest first."""
        ...

    def spend(self, namespace: str, day: date) -> Spend:
        """What the namespace's runs spent on that UTC day (zeros when nothing ran)."""
        ...

    def totals(self, namespace: str) -> LedgerTotals:
        """The namespace's running totals (zeros when nothing ran)."""
        ...

    def record_feedback(self, namespace: str, kind: str, verdict: FeedbackVerdict, adopted: bool) -> None:
        """Count one feedback on a memory of `kind` (preference, fact, lesson, or episode); `adopted` when it was
        useful and the memory had been returned before."""
        ...

    def erase_namespace(self, namespace: str) -> int:
        """Delete every record of one namespace (lease, runs, spend, totals, feedback counts); how many went."""
        ...


class ConsolidationJobs(Protocol):
    """Where triggers send consolidation jobs for a worker to take: in process locally, an SQS queue on AWS."""

    def send(self, job: ConsolidationJob) -> None:
        """Enqueue one job; a job for a namespace that already has one waiting may be folded into it."""
        ...


class WriteQueue(Protocol):
    """The asynchronous write path: accepted writes wait here until a worker stores them."""

    def send(self, namespace: str, items: Sequence[MemoryWrite]) -> None:
        """Enqueue one request (its items keep their assigned ids, so redelivery stays idempotent)."""
        ...

    def send_restore(self, namespace: str, items: Sequence[ExportedMemory]) -> None:
        """Enqueue an import, in chunks the worker restores one at a time (ids kept: a chunk restored twice is
        skipped the second time)."""
        ...


class DeadLetters(Protocol):
    """Where a queued write that cannot be stored goes, with the reason, for an operator to inspect."""

    def send(self, body: str, reason: str, error: str) -> None:
        """Park the original message body; `reason` is a stable code, `error` the detail."""
        ...


class RetentionPolicies(Protocol):
    """Where each namespace's retention policy is kept: the SQLite file locally, the DynamoDB table on AWS."""

    def get(self, namespace: str) -> tuple[RetentionPolicy, datetime] | None:
        """The policy set on exactly this namespace, and when; None if it has none of its own."""
        ...

    def put(self, namespace: str, policy: RetentionPolicy, at: datetime) -> None: ...
    def delete(self, namespace: str) -> bool:
        """Remove the namespace's own policy; True if it had one."""
        ...

    def all(self) -> dict[str, tuple[RetentionPolicy, datetime]]:
        """Every policy set, by the namespace it is set on."""
        ...


class ErasureMarks(Protocol):
    """When each namespace was last erased, kept for as long as a write accepted before it may still be delivered by
    the write queue (or redriven from its dead-letter queue): the queue's worker drops such a write rather than
    bring the namespace back. Only a deployment whose writes are queued has them (AWS)."""

    def mark(self, namespace: str, at: datetime) -> ErasureMark:
        """Record that `namespace` is erased as of `at`; how long the mark holds and what no erase reaches."""
        ...

    def erased_at(self, namespace: str) -> datetime | None:
        """When the namespace was last erased, while the mark holds; None otherwise."""
        ...
