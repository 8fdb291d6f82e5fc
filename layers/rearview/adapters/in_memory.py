"""The in-memory backend: MemoryStore, SearchIndex and KeyStore over one `InMemoryData` in this process.

An ephemeral backend for tests and throwaway runs (`backend = "memory"`): nothing outlives the process. Its
consolidation ledger is `in_memory_ledger.InMemoryHindsightLedger`. It is held
to the same contract suite as the real backends, so what a fast test sees on it is what the others do: optimistic
locking, filters, namespaces, expiry, counters.

Keyword search is BM25 as the embedded backend's FTS5 computes it: the same terms (`stemming.index_terms`, FTS5's
own tokenizer rebuilt in Python), statistics over the whole layer (every namespace, as FTS5 keeps them for its
table), an episode's context as a second column weighted by `context_weight`, k1 = 1.2 and b = 0.75. It scores
every query term, as SQLite does in a namespace small enough not to need its pruning of common terms. Vector
search is an exact cosine scan.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

import numpy as np

from rearview.clock import SystemClock
from rearview.domain.access import ApiKey
from rearview.domain.changes import ChangeSet, PendingUpsert
from rearview.domain.episode_columns import EpisodeColumns
from rearview.domain.erase import ErasedCounts
from rearview.domain.history import ArchivedVersion, archived_versions
from rearview.domain.listing import PagePosition, sort_key
from rearview.domain.memory import Episode, Fact, Memory, StoredLayer
from rearview.domain.search import Candidate, EntityShares, MemoryFilter, SearchTraits, searchable_text
from rearview.domain.stats import NamespaceUsage, RecallDay
from rearview.domain.timestamps import as_utc
from rearview.domain.working import WorkingEntry
from rearview.errors import ConcurrentUpdate, EmbeddingMismatch, InvalidInput
from rearview.ports import Clock, SearchIndex
from rearview.stemming import index_terms
from rearview.text_analysis import query_terms

_LAYERS: tuple[StoredLayer, ...] = ("episodic", "semantic")

# FTS5's bm25() constants, and the IDF it gives a term that most rows hold (instead of a negative one).
_K1 = 1.2
_B = 0.75
_MIN_IDF = 1e-6


# --- keyword statistics ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Document:
    """A memory's terms as keyword search sees them: its own text, and (an episode's) context."""

    text: tuple[str, ...]
    context: tuple[str, ...]
    text_counts: Counter[str]
    context_counts: Counter[str]

    @classmethod
    def of(cls, memory: Memory) -> _Document:
        text = tuple(index_terms(searchable_text(memory)))
        context = tuple(index_terms(memory.context)) if isinstance(memory, Episode) else ()
        return cls(text, context, Counter(text), Counter(context))

    @property
    def length(self) -> int:
        # FTS5 counts the namespace-token column's one token too.
        return 1 + len(self.text) + len(self.context)

    def frequency(self, phrase: tuple[str, ...], context_weight: float | None) -> float:
        """How often the phrase occurs in the text, plus `context_weight` times in the context (None: the context
        is not searched)."""
        found = float(_occurrences(self.text, self.text_counts, phrase))
        if context_weight is not None:
            found += context_weight * _occurrences(self.context, self.context_counts, phrase)
        return found


def _occurrences(terms: tuple[str, ...], counts: Counter[str], phrase: tuple[str, ...]) -> int:
    if len(phrase) == 1:
        return counts[phrase[0]]
    n = len(phrase)
    return sum(1 for i in range(len(terms) - n + 1) if terms[i : i + n] == phrase)


class _KeywordTable:
    """One layer's documents in every namespace, with the statistics BM25 reads from all of them."""

    def __init__(self) -> None:
        self.documents: dict[tuple[str, str], _Document] = {}
        self.postings: dict[str, set[tuple[str, str]]] = {}
        self.total_length = 0

    def put(self, key: tuple[str, str], memory: Memory) -> None:
        self.remove(key)
        document = _Document.of(memory)
        self.documents[key] = document
        self.total_length += document.length
        for term in {*document.text, *document.context}:
            self.postings.setdefault(term, set()).add(key)

    def remove(self, key: tuple[str, str]) -> None:
        document = self.documents.pop(key, None)
        if document is None:
            return
        self.total_length -= document.length
        for term in {*document.text, *document.context}:
            holders = self.postings[term]
            holders.discard(key)
            if not holders:
                del self.postings[term]

    def scores(
        self, namespace: str, phrases: Sequence[tuple[str, ...]], context_weight: float | None
    ) -> dict[str, float]:
        """BM25 of the namespace's documents that hold any of the phrases: one IDF-weighted, length-normalised
        frequency per phrase, summed, as FTS5's bm25() with the text's weight 1 and the context's
        `context_weight` (None: not searched)."""
        if not self.documents:
            return {}
        rows = len(self.documents)
        average_length = self.total_length / rows
        scores: dict[str, float] = {}
        for phrase in phrases:
            frequencies = self._frequencies(phrase, context_weight)
            idf = math.log((rows - len(frequencies) + 0.5) / (len(frequencies) + 0.5))
            idf = idf if idf > 0 else _MIN_IDF
            for (owner, memory_id), f in frequencies.items():
                if owner != namespace:
                    continue
                norm = 1 - _B + _B * self.documents[(owner, memory_id)].length / average_length
                scores[memory_id] = scores.get(memory_id, 0.0) + idf * f * (_K1 + 1) / (f + _K1 * norm)
        return scores

    def _frequencies(self, phrase: tuple[str, ...], context_weight: float | None) -> dict[tuple[str, str], float]:
        """The phrase's frequency in every document (of any namespace) that holds it where searched."""
        holders = set.intersection(*(self.postings.get(term, set()) for term in phrase))
        found = {key: self.documents[key].frequency(phrase, context_weight) for key in holders}
        return {key: f for key, f in found.items() if f > 0}


# --- the data -------------------------------------------------------------------------------------------------


@dataclass
class _Stored:
    memory: Memory
    vector: np.ndarray | None  # as given, float32
    unit: np.ndarray | None  # normalised, for cosine
    ref: int  # insertion order, kept by updates (ties in listings break on it, as on SQLite's rowid)


@dataclass
class _NamespaceState:
    last_write_at: datetime | None = None
    recall_count: int = 0
    recall_hits: int = 0
    # recalls and hits per UTC day
    recall_days: dict[date, list[int]] = field(default_factory=dict)


class InMemoryData:
    """Everything an in-memory backend holds, shared by its store, index and key store (as SQLite's share a
    SqliteDatabase): memories and vectors, working memory, namespace counters, API keys, the keyword statistics,
    and the embedder the vectors were made with. One lock guards it all.

    Build a store, an index and a key store again over the same object to open "the same storage" again."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.embedder_name: str | None = None
        self.dim: int | None = None
        self.memories: dict[str, dict[str, _Stored]] = {}
        self.working: dict[str, dict[tuple[str, str], WorkingEntry]] = {}
        # Made by a namespace's first apply or counted recall, and kept: the namespaces ever written to.
        self.states: dict[str, _NamespaceState] = {}
        self.keys: dict[str, ApiKey] = {}
        self.keywords: dict[StoredLayer, _KeywordTable] = {layer: _KeywordTable() for layer in _LAYERS}
        # The ids of each namespace's unconsolidated episodes (what the real stores keep an index of).
        self.unconsolidated: dict[str, set[str]] = {}
        # Archived versions by namespace and memory id, oldest first.
        self.history: dict[str, dict[str, list[ArchivedVersion]]] = {}
        self._refs = itertools.count(1)

    def adopt_embedder(self, name: str | None, dim: int | None) -> None:
        """Record the embedder the first time one is named; refuse another one afterwards."""
        with self.lock:
            if self.embedder_name is None or self.dim is None:
                if name is not None and dim is not None:
                    self.embedder_name, self.dim = name, dim
                return
            if (name is not None and name != self.embedder_name) or (dim is not None and dim != self.dim):
                raise EmbeddingMismatch(
                    f"this in-memory backend holds vectors made by embedder {self.embedder_name!r} (dim {self.dim}), "
                    f"but the configured embedder is {name!r} (dim {dim})",
                    field="embedder",
                )

    def stored(self, namespace: str) -> dict[str, _Stored]:
        """The namespace's memories by id (read under `lock`)."""
        return self.memories.get(namespace, {})

    def state(self, namespace: str) -> _NamespaceState:
        return self.states.setdefault(namespace, _NamespaceState())

    def put(self, namespace: str, memory: Memory, vector: np.ndarray | None) -> None:
        """Store the memory, which the caller no longer holds; a vector of None keeps the stored one."""
        stored = self.memories.setdefault(namespace, {})
        previous = stored.get(memory.id)
        unit: np.ndarray | None = None
        if vector is not None:
            norm = float(np.linalg.norm(vector))
            unit = vector / norm if norm else vector
        elif previous is not None:
            vector, unit = previous.vector, previous.unit
        ref = previous.ref if previous is not None else next(self._refs)
        stored[memory.id] = _Stored(memory, vector, unit, ref)
        self.keywords[memory.layer].put((namespace, memory.id), memory)
        waiting = self.unconsolidated.setdefault(namespace, set())
        if isinstance(memory, Episode) and not memory.consolidated:
            waiting.add(memory.id)
        else:
            waiting.discard(memory.id)

    def delete(self, namespace: str, memory_id: str) -> None:
        found = self.memories.get(namespace, {}).pop(memory_id, None)
        if found is not None:
            self.keywords[found.memory.layer].remove((namespace, memory_id))
            self.unconsolidated.get(namespace, set()).discard(memory_id)


# --- the store ------------------------------------------------------------------------------------------------


class InMemoryMemoryStore:
    """MemoryStore over InMemoryData. `embedder_name` and `dim` are checked against the embedder the data was
    first opened with (without them the store adopts that one), as on the real backends."""

    def __init__(
        self,
        data: InMemoryData,
        *,
        embedder_name: str | None = None,
        dim: int | None = None,
        clock: Clock | None = None,
    ) -> None:
        data.adopt_embedder(embedder_name, dim)
        self.data = data
        self.embedder_name = data.embedder_name or ""
        self.dim = data.dim or 0
        # Only for the namespace's last write time: apply() carries no time of its own.
        self._clock: Clock = clock or SystemClock()

    # working memory

    def put_working(self, entry: WorkingEntry) -> None:
        """Insert or replace one entry; the session's expired entries are removed on the way."""
        updated_at = as_utc(entry.updated_at)
        copy = WorkingEntry(
            namespace=entry.namespace,
            session_id=entry.session_id,
            key=entry.key,
            # Through JSON, as a real store keeps it: what cannot be stored fails here too.
            value=json.loads(json.dumps(entry.value, ensure_ascii=False)),
            updated_at=updated_at,
            expires_at=as_utc(entry.expires_at),
        )
        with self.data.lock:
            entries = self.data.working.setdefault(entry.namespace, {})
            entries[(entry.session_id, entry.key)] = copy
            for key, kept in list(entries.items()):
                if kept.session_id == entry.session_id and kept.expires_at <= updated_at:
                    del entries[key]

    def get_working(self, namespace: str, session_id: str, now: datetime) -> list[WorkingEntry]:
        """Unexpired entries of the session, by key."""
        with self.data.lock:
            entries = self.data.working.get(namespace, {}).values()
            found = [e for e in entries if e.session_id == session_id and e.expires_at > as_utc(now)]
        return [e.model_copy(deep=True) for e in sorted(found, key=lambda e: e.key)]

    def clear_working(self, namespace: str, session_id: str | None = None) -> int:
        """Delete the session's entries (every session's with None); return how many went."""
        with self.data.lock:
            entries = self.data.working.get(namespace, {})
            gone = [key for key in entries if session_id is None or key[0] == session_id]
            for key in gone:
                del entries[key]
        return len(gone)

    def purge_expired_working(self, now: datetime) -> int:
        gone = 0
        with self.data.lock:
            for entries in self.data.working.values():
                expired = [key for key, entry in entries.items() if entry.expires_at <= now]
                for key in expired:
                    del entries[key]
                gone += len(expired)
        return gone

    # writes

    def load_episodes(self, namespace: str, rows: EpisodeColumns, vectors: np.ndarray | None) -> None:
        """The rows inserted as episodes, through `apply` (this store has no path of its own for columns)."""
        self.apply(namespace, ChangeSet.loading(namespace, rows, vectors, self.dim))

    def apply(self, namespace: str, changes: ChangeSet) -> None:
        """Apply every upsert, then every delete, at once; a ConcurrentUpdate applies nothing."""
        if not changes:
            return
        pending = changes.collapsed(namespace)
        # Copied and checked before anything changes. Validated again, as a real store reads back what it wrote:
        # datetimes in UTC, no list shared with the caller.
        memories = {memory_id: type(p.memory).model_validate(p.memory.model_dump()) for memory_id, p in pending.items()}
        vectors = {memory_id: self._checked(p.vector) for memory_id, p in pending.items() if p.vector is not None}
        with self.data.lock:
            self._check_versions(namespace, pending)
            self._archive(namespace, changes, {i: p.memory for i, p in pending.items() if p.first_version > 1})
            for memory_id, memory in memories.items():
                self.data.put(namespace, memory, vectors.get(memory_id))
            for memory_id in dict.fromkeys(changes.deletes):
                self.data.delete(namespace, memory_id)
            self.data.state(namespace).last_write_at = as_utc(self._clock.now())

    def _archive(self, namespace: str, changes: ChangeSet, updates: dict[str, Memory]) -> None:
        """Keep the archives of this change set, and drop the history it purges (under the lock)."""
        stored = {i: s.memory for i, s in self.data.stored(namespace).items() if i in updates}
        now = as_utc(self._clock.now())
        kept = self.data.history.setdefault(namespace, {})
        for memory_id in changes.history_purged():
            kept.pop(memory_id, None)
        for archive in [*changes.archived, *archived_versions(updates, stored, changes.cause, now, changes.actor)]:
            versions = [a for a in kept.get(archive.memory.id, []) if a.version != archive.version]
            kept[archive.memory.id] = sorted([*versions, archive.model_copy(deep=True)], key=lambda a: a.version)

    def _checked(self, vector: np.ndarray) -> np.ndarray:
        array = np.asarray(vector, dtype=np.float32).reshape(-1).copy()
        if self.dim and array.shape[0] != self.dim:
            raise InvalidInput(f"vector: expected dimension {self.dim}, got {array.shape[0]}", field="vector")
        return array

    def _check_versions(self, namespace: str, pending: dict[str, PendingUpsert]) -> None:
        stored = self.data.stored(namespace)
        for memory_id, item in pending.items():
            current = stored.get(memory_id)
            if item.first_version <= 1:
                if current is not None:
                    raise ConcurrentUpdate(f"memory {memory_id} already exists; version 1 is an insert")
                continue
            expected = item.first_version - 1
            if current is None or (current.memory.layer, current.memory.version) != (item.memory.layer, expected):
                found = "nothing" if current is None else f"{current.memory.layer} version {current.memory.version}"
                raise ConcurrentUpdate(
                    f"memory {memory_id}: expected stored {item.memory.layer} version {expected}, found {found}"
                )

    # reads

    def get(self, namespace: str, memory_id: str) -> Memory | None:
        """The memory with this id in this namespace, of either layer."""
        return self.get_many(namespace, [memory_id]).get(memory_id)

    def get_many(self, namespace: str, ids: Sequence[str], *, shared: bool = False) -> dict[str, Memory]:
        """The memories found among `ids`, by id (missing ids are absent): copies, or with `shared` the stored
        memories themselves (a change set replaces a stored memory, never changes it)."""
        with self.data.lock:
            stored = self.data.stored(namespace)
            found = [stored[i].memory for i in dict.fromkeys(ids) if i in stored]
        return {m.id: m if shared else m.model_copy(deep=True) for m in found}

    def get_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors (float32) of those of `ids` that have one."""
        with self.data.lock:
            stored = self.data.stored(namespace)
            found = (stored[i] for i in dict.fromkeys(ids) if i in stored)
            return {s.memory.id: s.vector.copy() for s in found if s.vector is not None}

    def _all(self, namespace: str) -> list[_Stored]:
        with self.data.lock:
            return list(self.data.stored(namespace).values())

    def list_memories(self, namespace: str, flt: MemoryFilter, limit: int | None = None) -> list[Memory]:
        """Matching memories, oldest first (episodes by occurred_at, facts by last_confirmed_at)."""
        chosen = sorted(
            (s for s in self._all(namespace) if flt.matches(s.memory)),
            key=lambda s: (s.memory.occurred_at, s.ref),
        )
        if limit is not None:
            chosen = chosen[: max(limit, 0)]
        return [s.memory.model_copy(deep=True) for s in chosen]

    def _facts(self, namespace: str) -> list[tuple[Fact, int]]:
        return [(s.memory, s.ref) for s in self._all(namespace) if isinstance(s.memory, Fact)]

    def active_fact_for_dimension(self, namespace: str, dimension: str) -> Fact | None:
        """The active fact on this dimension (the latest confirmed if, against the rules, several are)."""
        active = [(f, ref) for f, ref in self._facts(namespace) if f.dimension == dimension and f.status == "active"]
        latest = max(active, key=lambda pair: (pair[0].last_confirmed_at, pair[1]), default=None)
        return None if latest is None else latest[0].model_copy(deep=True)

    def facts_citing(self, namespace: str, episode_ids: Iterable[str]) -> list[Fact]:
        """Facts (active or superseded) whose provenance names any of the episodes, oldest first."""
        wanted = set(episode_ids)
        citing = [(f, ref) for f, ref in self._facts(namespace) if wanted.intersection(f.provenance)]
        citing.sort(key=lambda pair: (pair[0].last_confirmed_at, pair[1]))
        return [f.model_copy(deep=True) for f, _ in citing]

    def recent_episodes(self, namespace: str, since: datetime, limit: int = 200) -> list[Episode]:
        """Episodes created at or after `since`, newest first."""
        recent = [
            (s.memory, s.ref)
            for s in self._all(namespace)
            if isinstance(s.memory, Episode) and s.memory.created_at >= as_utc(since)
        ]
        recent.sort(key=lambda pair: (pair[0].created_at, pair[1]), reverse=True)
        return [e.model_copy(deep=True) for e, _ in recent[: max(limit, 0)]]

    # management

    def page_memories(
        self, namespace: str, flt: MemoryFilter, limit: int, after: PagePosition | None = None
    ) -> list[Memory]:
        """At most `limit` matching memories, newest first, strictly after `after`."""
        start = after.key() if after is not None else None
        chosen = [s.memory for s in self._all(namespace) if flt.matches(s.memory)]
        chosen = [m for m in chosen if start is None or sort_key(m) < start]
        chosen.sort(key=sort_key, reverse=True)
        return [m.model_copy(deep=True) for m in chosen[: max(limit, 0)]]

    def history(self, namespace: str, memory_id: str) -> list[ArchivedVersion]:
        """The archived versions of a memory, oldest first."""
        with self.data.lock:
            return [a.model_copy(deep=True) for a in self.data.history.get(namespace, {}).get(memory_id, [])]

    def facts_superseded_by(self, namespace: str, fact_id: str) -> list[Fact]:
        """The facts that `fact_id` superseded, oldest first."""
        found = [(f, ref) for f, ref in self._facts(namespace) if f.superseded_by == fact_id]
        found.sort(key=lambda pair: (pair[0].created_at, pair[1]))
        return [f.model_copy(deep=True) for f, _ in found]

    def erase_namespace(self, namespace: str) -> ErasedCounts:
        """Everything of the namespace gone; it is listed no more."""
        with self.data.lock:
            memories = [s.memory for s in self.data.stored(namespace).values()]
            for memory in memories:
                self.data.delete(namespace, memory.id)
            self.data.memories.pop(namespace, None)
            working = len(self.data.working.pop(namespace, {}))
            versions = sum(len(v) for v in self.data.history.pop(namespace, {}).values())
            self.data.states.pop(namespace, None)
            self.data.unconsolidated.pop(namespace, None)
        semantic = sum(1 for m in memories if isinstance(m, Fact))
        return ErasedCounts(working=working, episodic=len(memories) - semantic, semantic=semantic, versions=versions)

    # counters

    def record_access(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """Count one access of each memory; neither the version nor the namespace generation changes."""
        with self.data.lock:
            stored = self.data.stored(namespace)
            for memory_id in dict.fromkeys(ids):
                found = stored.get(memory_id)
                if found is not None:
                    found.memory = found.memory.model_copy(
                        update={"access_count": found.memory.access_count + 1, "last_accessed_at": as_utc(at)}
                    )

    def record_recall(self, namespace: str, hit: bool, at: datetime, accessed: Sequence[str] = ()) -> None:
        """Count one recall (and whether it found anything) for the namespace's hit rate, and the accesses."""
        self.record_access(namespace, accessed, at)
        with self.data.lock:
            state = self.data.state(namespace)
            state.recall_count += 1
            state.recall_hits += int(hit)
            day = state.recall_days.setdefault(as_utc(at).date(), [0, 0])
            day[0] += 1
            day[1] += int(hit)

    def recall_days(self, namespace: str, since: date) -> list[RecallDay]:
        """The namespace's recall counters per UTC day from `since` on, oldest first."""
        with self.data.lock:
            state = self.data.states.get(namespace, _NamespaceState())
            return [
                RecallDay(day=day, recalls=counts[0], hits=counts[1])
                for day, counts in sorted(state.recall_days.items())
                if day >= since
            ]

    def settle_access(self, namespace: str, now: datetime) -> int:
        """Nothing to fold: accesses are counted on the memories themselves."""
        return 0

    def usage(self, namespace: str, now: datetime) -> NamespaceUsage:
        """Counts: working (unexpired), episodic, semantic (active), semantic_superseded; recall counters."""
        with self.data.lock:
            working = sum(1 for e in self.data.working.get(namespace, {}).values() if e.expires_at > as_utc(now))
            memories = [s.memory for s in self.data.stored(namespace).values()]
            facts = Counter(m.status for m in memories if isinstance(m, Fact))
            state = self.data.states.get(namespace, _NamespaceState())
            return NamespaceUsage(
                working=working,
                episodic=len(memories) - facts.total(),
                semantic_active=facts["active"],
                semantic_superseded=facts["superseded"],
                last_write_at=state.last_write_at,
                recall_count=state.recall_count,
                recall_hits=state.recall_hits,
            )

    # across namespaces

    def list_namespaces(self, prefix: str = "") -> list[str]:
        """The namespaces written (or recalled in) since they were last erased whose name starts with `prefix`."""
        with self.data.lock:
            return sorted(n for n in self.data.states if n.startswith(prefix))

    def expired_memories(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        """(namespace, id) of at most `limit` memories that expired by `now`, soonest expired first."""
        with self.data.lock:
            found = [
                (s.memory.expires_at, namespace, memory_id)
                for namespace, stored in self.data.memories.items()
                for memory_id, s in stored.items()
                if s.memory.expired(now)
            ]
        return [(namespace, memory_id) for _, namespace, memory_id in sorted(found)[: max(limit, 0)]]

    def namespaces_with_unconsolidated(self) -> list[str]:
        """Every namespace holding an unconsolidated episode."""
        with self.data.lock:
            return sorted(namespace for namespace, waiting in self.data.unconsolidated.items() if waiting)

    def unconsolidated_count(self, namespace: str, at_most: int | None = None) -> int:
        """How many of the namespace's episodes no run has seen, up to `at_most` (kept as they are written)."""
        with self.data.lock:
            count = len(self.data.unconsolidated.get(namespace, ()))
        return count if at_most is None else min(count, at_most)

    def close(self) -> None:
        """Nothing to release: the data stays with its InMemoryData (idempotent)."""


# --- the search index -----------------------------------------------------------------------------------------


class InMemorySearchIndex(SearchIndex):
    """SearchIndex over InMemoryData: BM25 as FTS5 scores it, exact cosine; both see every write at once."""

    # Written with the store's own writes, and vector search a scan in this process.
    traits = SearchTraits(local_scan=True)

    def __init__(self, data: InMemoryData, *, max_query_terms: int = 32) -> None:
        self.data = data
        # The first this many query terms are matched (SqliteSearchIndex's default).
        self.max_query_terms = max_query_terms

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]:
        """BM25 over the analysed text (and an episode's context, weighted): any query term matches; best first.
        No terms (stop words only): []."""
        terms = query_terms(text)[: self.max_query_terms]
        if not terms or limit <= 0:
            return []
        # A query term is a phrase of the terms FTS5's tokenizer makes of it (usually one).
        phrases = [tuple(index_terms(term)) for term in terms]
        found: list[tuple[float, int, int, Candidate]] = []
        with self.data.lock:
            stored = self.data.stored(namespace)
            for order, layer in enumerate(dict.fromkeys(flt.layers)):
                weight = context_weight if layer == "episodic" and context_weight > 0 else None
                for memory_id, score in self.data.keywords[layer].scores(namespace, phrases, weight).items():
                    item = stored[memory_id]
                    if flt.matches(item.memory):
                        found.append((-score, order, item.ref, Candidate(memory_id, layer, score)))
        found.sort(key=lambda hit: hit[:3])
        return [hit[3] for hit in found[:limit]]

    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]:
        """Exact cosine against every vector of the namespace that passes the filter; best first."""
        if limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self.data.dim and query.shape[0] != self.data.dim:
            raise InvalidInput(f"vector: expected dimension {self.data.dim}, got {query.shape[0]}", field="vector")
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            return []
        with self.data.lock:
            chosen = [(s.memory, s.unit) for s in self.data.stored(namespace).values() if s.unit is not None]
        chosen = [(memory, unit) for memory, unit in chosen if flt.matches(memory)]
        if not chosen:
            return []
        scores = np.stack([unit for _, unit in chosen]) @ (query / norm)
        best = np.argsort(-scores, kind="stable")[:limit]
        return [Candidate(chosen[i][0].id, chosen[i][0].layer, float(scores[i])) for i in best]

    def searches_all(self, namespace: str, flt: MemoryFilter, limit: int) -> bool:
        """No more than `limit` of the namespace's memories with a vector pass the filter."""
        with self.data.lock:
            chosen = [s.memory for s in self.data.stored(namespace).values() if s.unit is not None]
        return len(chosen) <= limit or sum(1 for memory in chosen if flt.matches(memory)) <= limit

    def entity_shares(self, namespace: str) -> EntityShares:
        """Shares over every episode of the namespace (what the other indexes count: episodes, not facts)."""
        with self.data.lock:
            episodes = [s.memory for s in self.data.stored(namespace).values() if isinstance(s.memory, Episode)]
        # An entity named twice in one episode counts once.
        counts = Counter(entity for episode in episodes for entity in set(episode.entities))
        return EntityShares(episodes=len(episodes), shares={e: n / len(episodes) for e, n in counts.items()})


# --- the key store --------------------------------------------------------------------------------------------


class InMemoryKeyStore:
    """KeyStore over InMemoryData."""

    def __init__(self, data: InMemoryData) -> None:
        self.data = data

    def put(self, key: ApiKey) -> None:
        with self.data.lock:
            if key.key_id in self.data.keys:
                raise ConcurrentUpdate(f"key_id: {key.key_id} already exists")
            self.data.keys[key.key_id] = key

    def get(self, key_id: str) -> ApiKey | None:
        with self.data.lock:
            return self.data.keys.get(key_id)

    def list(self) -> list[ApiKey]:
        with self.data.lock:
            return sorted(self.data.keys.values(), key=lambda k: (k.created_at, k.key_id))

    def revoke(self, key_id: str, at: datetime) -> ApiKey | None:
        with self.data.lock:
            key = self.data.keys.get(key_id)
            if key is not None and key.revoked_at is None:
                key = self.data.keys[key_id] = key.model_copy(update={"revoked_at": as_utc(at)})
            return key

    def set_requests_per_minute(self, key_id: str, requests_per_minute: int | None) -> ApiKey | None:
        with self.data.lock:
            key = self.data.keys.get(key_id)
            if key is not None:
                key = self.data.keys[key_id] = key.model_copy(update={"requests_per_minute": requests_per_minute})
            return key

    def has_any(self) -> bool:
        with self.data.lock:
            return bool(self.data.keys)

    def close(self) -> None:
        """Nothing to release (idempotent)."""
