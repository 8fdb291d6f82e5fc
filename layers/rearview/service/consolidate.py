"""Consolidation (baseline, deterministic, no LLM): cluster a namespace's unconsolidated episodes by embedding
similarity; each cluster of at least `min_cluster_size` becomes a fact with provenance, or confirms the active fact it
repeats. Episodes are marked consolidated. Everything is applied in one ChangeSet."""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np

from rearview.domain.changes import ChangeSet
from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.limits import MAX_FACT_CHARS
from rearview.domain.memory import Episode, Fact
from rearview.domain.namespaces import validate_namespace
from rearview.domain.search import MemoryFilter
from rearview.ids import new_ulid
from rearview.ports import Clock, MemoryStore, SearchIndex
from rearview.settings import ConsolidateTuning, WriteTuning

# How many unconsolidated episodes one run considers (oldest first); the rest wait for the next run.
MAX_EPISODES_PER_RUN = 5000
# Cosine at which two episodes join one cluster (to the cluster's centroid), and the smallest cluster that becomes
# a fact. Fixed here: ConsolidateTuning holds the guards of consolidation by induction (`service.hindsight`), which
# replaces this module.
CLUSTER_SIMILARITY = 0.75
MIN_CLUSTER_SIZE = 3


def cluster_by_similarity(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Greedy single pass: each vector joins the most similar cluster centroid at or above `threshold`."""
    clusters: list[list[int]] = []
    sums: list[np.ndarray] = []
    for i, vec in enumerate(vectors):
        best, best_sim = -1, threshold
        for c, total in enumerate(sums):
            centroid = total / (np.linalg.norm(total) or 1.0)
            sim = float(centroid @ vec)
            if sim >= best_sim:
                best, best_sim = c, sim
        if best < 0:
            clusters.append([i])
            sums.append(vec.astype(np.float32).copy())
        else:
            clusters[best].append(i)
            sums[best] += vec
    return clusters


def cluster_confidence(size: int, span_days: float) -> float:
    """More episodes and a longer span (a habit, not a one-off) mean more confidence; capped below certainty."""
    by_size = 1.0 - math.pow(0.5, size / 3.0)
    by_span = min(1.0, span_days / 30.0)
    return round(min(0.95, 0.5 * by_size + 0.3 * by_span + 0.2), 4)


def central_statement(contents: list[str]) -> str:
    """The cluster's most central statement (the contents come most central first), trimmed to a fact's length."""
    text = contents[0].strip()
    return text if len(text) <= MAX_FACT_CHARS else text[: MAX_FACT_CHARS - 1].rstrip() + "…"


class ConsolidationService:
    def __init__(
        self,
        store: MemoryStore,
        index: SearchIndex,
        clock: Clock,
        tuning: ConsolidateTuning,
        write_tuning: WriteTuning,
    ) -> None:
        self._store = store
        self._index = index
        self._clock = clock
        self._tuning = tuning
        self._write_tuning = write_tuning

    def consolidate(self, namespace: str, req: ConsolidateRequest) -> ConsolidateResult:
        validate_namespace(namespace)
        now = self._clock.now()
        episodes = [
            m
            for m in self._store.list_memories(
                namespace,
                MemoryFilter(layers=("episodic",), since=req.since, consolidated=False),
                limit=MAX_EPISODES_PER_RUN,
            )
            if isinstance(m, Episode)
        ]
        result = ConsolidateResult(
            namespace=namespace,
            episodes_considered=len(episodes),
            clusters=0,
            facts_created=0,
            facts_confirmed=0,
            episodes_consolidated=0,
        )
        if not episodes:
            return result
        vectors_by_id = self._store.get_vectors(namespace, [e.id for e in episodes])
        episodes = [e for e in episodes if e.id in vectors_by_id]
        matrix = np.stack([vectors_by_id[e.id] for e in episodes]) if episodes else np.zeros((0, 1))
        groups = [g for g in cluster_by_similarity(matrix, CLUSTER_SIMILARITY) if len(g) >= MIN_CLUSTER_SIZE]
        groups.sort(key=len, reverse=True)
        groups = groups[: req.max_clusters]
        changes = ChangeSet()
        for group in groups:
            members = [episodes[i] for i in group]
            member_vectors = matrix[group]
            centroid = member_vectors.mean(axis=0)
            centroid /= np.linalg.norm(centroid) or 1.0
            order = np.argsort(-(member_vectors @ centroid))
            contents = [members[i].content for i in order]
            fact_id = self._fact_for(namespace, members, contents, centroid, now, changes, result)
            result.fact_ids.append(fact_id)
            for episode in members:
                changes.upserts.append(
                    (episode.model_copy(update={"consolidated": True, "version": episode.version + 1}), None)
                )
            result.episodes_consolidated += len(members)
        result.clusters = len(groups)
        if changes:
            self._store.apply(namespace, changes)
        return result

    def _fact_for(
        self,
        namespace: str,
        members: list[Episode],
        contents: list[str],
        centroid: np.ndarray,
        now: datetime,
        changes: ChangeSet,
        result: ConsolidateResult,
    ) -> str:
        """Confirm the active fact the cluster repeats, or create a new one; return its id."""
        provenance = [e.id for e in members]
        times = [e.occurred_at for e in members]
        span_days = (max(times) - min(times)).total_seconds() / 86400.0
        confidence = cluster_confidence(len(members), span_days)
        existing = self._index.vector_search(namespace, centroid, MemoryFilter(layers=("semantic",)), limit=1)
        if existing and existing[0].score >= self._write_tuning.dedup_threshold:
            planned = [m for m, _ in changes.upserts if m.id == existing[0].id]
            fact = planned[0] if planned else self._store.get(namespace, existing[0].id)
            if isinstance(fact, Fact):
                # Two clusters of one run may repeat the same fact: fold both into one update of the stored version.
                changes.upserts = [(m, v) for m, v in changes.upserts if m.id != fact.id]
                base_version = fact.version - 1 if planned else fact.version
                changes.upserts.append(
                    (
                        fact.model_copy(
                            update={
                                "provenance": list(dict.fromkeys([*fact.provenance, *provenance])),
                                "confirmations": fact.confirmations + len(members),
                                "last_confirmed_at": max(fact.last_confirmed_at, max(times)),
                                "confidence": max(fact.confidence, confidence),
                                "version": base_version + 1,
                            }
                        ),
                        None,
                    )
                )
                result.facts_confirmed += 1
                return fact.id
        fact = Fact(
            id=new_ulid(now),
            namespace=namespace,
            content=central_statement(contents),
            confidence=confidence,
            provenance=provenance,
            created_at=now,
            last_confirmed_at=max(times),
            confirmations=len(members),
            importance=max(e.importance for e in members),
            tags=list(dict.fromkeys(t for e in members for t in e.tags)),
        )
        changes.upserts.append((fact, centroid.astype(np.float32)))
        result.facts_created += 1
        return fact.id
