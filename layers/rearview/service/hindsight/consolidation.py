"""Consolidation that learns: a namespace's recent episodes become preferences, facts and lessons.

A run reads the episodes of the lookback window (the new ones and those seen before: evidence accumulates across
runs), groups them (`clusters`), keeps the groups with a new episode whose evidence passes the guards, has the
inducer state a memory for each (the configured one, with the rule inducer as fallback for whatever it fails or
refuses), reconciles them with the active memories (`reconcile`), marks the new episodes consolidated, and applies
everything in one ChangeSet: a run that fails applies nothing. With `change_points` on, the turns that say an active
memory changed are stated first, each its own cluster, and end that memory (`change_points`).

Extraction (`extract`) is the same path over turns a write asked to remember, each turn its own cluster and no guard
(`clusters.turn_clusters`); it leaves the turns unconsolidated, so that consolidation still counts them as evidence.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

import numpy as np

from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult, ConsolidationDecision
from rearview.domain.hindsight import EvidenceCluster, InducedMemory, Induction
from rearview.domain.memory import Episode, Fact
from rearview.domain.namespaces import validate_namespace
from rearview.domain.search import MemoryFilter
from rearview.ports import Clock, Embedder, Inducer, MemoryReader, MemoryWriter
from rearview.service.contradiction import related_similarity
from rearview.service.hindsight.budget import RunBudget
from rearview.service.hindsight.change_points import ChangePoint, change_points, cut_at_changes
from rearview.service.hindsight.checker import facets_grounded, problem
from rearview.service.hindsight.clusters import build_clusters, passes, turn_clusters
from rearview.service.hindsight.evidence import confidence_of, enough, evidence_of
from rearview.service.hindsight.lessons import read_in_sequence
from rearview.service.hindsight.reconcile import Reconciler, merge_on_dimension
from rearview.service.hindsight.rule_inducer import RuleInducer
from rearview.settings import ConsolidateTuning, WriteTuning

logger = logging.getLogger(__name__)

# A run reads at most this many episodes, the newest, as evidence: a bound on a run's time and memory that a
# namespace's lookback window rarely reaches.
MAX_EPISODES = 5000


class ConsolidationStore(MemoryReader, MemoryWriter, Protocol):
    """What a consolidation run asks of the store: the episodes and facts with their vectors, and one ChangeSet
    applied."""


# The decisions whose memory the run made or kept active: the ids a result lists (not a version kept as history).
_HELD_ACTIONS = ("created", "superseded", "confirmed", "refined")


class ConsolidationService:
    def __init__(
        self,
        store: ConsolidationStore,
        embedder: Embedder,
        clock: Clock,
        tuning: ConsolidateTuning,
        write_tuning: WriteTuning,
        inducer: Inducer | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._clock = clock
        self._tuning = tuning
        self._write_tuning = write_tuning
        self._fallback = RuleInducer()
        self._inducer: Inducer = inducer or self._fallback

    @property
    def inducer(self) -> Inducer:
        return self._inducer

    def consolidate(
        self,
        namespace: str,
        req: ConsolidateRequest,
        *,
        only: Sequence[str] | None = None,
        budget: RunBudget | None = None,
    ) -> ConsolidateResult:
        """One run: over every unconsolidated episode (from `req.since` on), or over those of `only` (a targeted
        run, e.g. a failure streak's episodes). The clusters past the budget (clusters, model tokens, time) are
        deferred: their new episodes stay unconsolidated, so the next run takes them up."""
        validate_namespace(namespace)
        started = time.perf_counter()
        budget = budget or RunBudget()
        new = self._new_episodes(namespace, req, only)
        result = ConsolidateResult.empty(namespace, self._inducer.name)
        if not new:
            return result
        pool = read_in_sequence(self._evidence_pool(namespace, new))
        new = [e for e in pool if e.id in {n.id for n in new}] + [e for e in new if e.id not in {p.id for p in pool}]
        new_ids = {e.id for e in new}
        by_id = {e.id: e for e in pool}
        reconciler = self._reconciler(namespace, by_id)
        cap = min(req.max_clusters, budget.max_clusters)
        told = self._tell_changes(pool, by_id, new_ids, reconciler, cap, budget)
        found = build_clusters(pool, new_ids, self._tuning, self._embed_many, self._embedder.scale)
        clusters = cut_at_changes(found, told.points, lambda c: passes(c, new_ids, self._tuning))
        rest = told.rest_of(budget, cap)
        induction, fallback, done = self._induce_within(clusters[: rest.max_clusters], rest)
        taken, deferred = clusters[:done], clusters[done:]
        checked = _values_apart(_checked(induction.memories, taken, self._tuning, by_id), by_id)
        ends = _carriers(told.stated, checked)
        replaces = {id(memory): point.replaces for memory, point in ends}
        alone = [m for m, _ in ends if all(m is not c for c in checked)]
        for induced in sorted([*alone, *checked], key=_evidence_end(by_id)):
            if id(induced) in replaces:
                reconciler.add_change(induced, replaces[id(induced)])
            else:
                reconciler.add(induced)
        induction.tokens += told.induction.tokens
        fallback = "; ".join(r for r in (told.fallback, fallback) if r) or None
        changes = reconciler.changes
        waiting = {e.id for c in deferred for e in c.episodes} | {p.episode.id for p in told.waiting}
        seen = [e for e in new if e.id not in waiting]
        for episode in seen:
            changes.upserts.append(
                (episode.model_copy(update={"consolidated": True, "version": episode.version + 1}), None)
            )
        changes.cause = "consolidation"
        self._store.apply(namespace, changes)
        self._fill(result, reconciler, pool, new, [*told.clusters, *taken], induction, fallback)
        result.episodes_consolidated = len(seen)
        result.clusters_deferred = len(deferred) + len(told.waiting)
        result.millis = round((time.perf_counter() - started) * 1000, 3)
        return result

    def extract(self, namespace: str, ids: Sequence[str], *, budget: RunBudget | None = None) -> ConsolidateResult:
        """The facts and preferences the turns `ids` state, each from its turn alone (the configured inducer, the
        rules as its fallback), checked, and reconciled with the active memories like any induced memory; applied
        in one ChangeSet. The clusters past the budget are dropped (`clusters_deferred`): an extraction is asked for
        once. Turns already forgotten or expired are skipped."""
        validate_namespace(namespace)
        started = time.perf_counter()
        budget = budget or RunBudget()
        flt = MemoryFilter(layers=("episodic",), ids=tuple(ids), alive_at=self._clock.now())
        turns = read_in_sequence(
            [e for e in self._store.list_memories(namespace, flt, limit=len(ids) or 1) if isinstance(e, Episode)]
        )
        result = ConsolidateResult.empty(namespace, self._inducer.name)
        clusters = turn_clusters(turns, self._tuning, open_ended=self._inducer is not self._fallback)
        induction, fallback, done = self._induce_within(clusters[: budget.max_clusters], budget)
        taken = clusters[:done]
        by_id = {e.id: e for e in turns}
        reconciler = self._reconciler(namespace, by_id)
        # One turn has no repetition to weed out a misreading: a memory must name what its turn says.
        memories = [
            m if m is not None and _said_in(m, c) else None for m, c in zip(induction.memories, taken, strict=True)
        ]
        checked = _values_apart(_checked(memories, taken, self._tuning, by_id, guarded=False), by_id)
        for induced in sorted(checked, key=_evidence_end(by_id)):
            reconciler.add(induced)
        changes = reconciler.changes
        if changes.upserts or changes.deletes:
            changes.cause = "consolidation"
            self._store.apply(namespace, changes)
        self._fill(result, reconciler, turns, [], taken, induction, fallback)
        result.clusters_deferred = len(clusters) - done
        result.millis = round((time.perf_counter() - started) * 1000, 3)
        return result

    def _tell_changes(
        self,
        pool: Sequence[Episode],
        by_id: dict[str, Episode],
        new_ids: set[str],
        reconciler: Reconciler,
        cap: int,
        budget: RunBudget,
    ) -> _Told:
        """The run's change points, each stated from its turn first (few, one turn each); a point whose turn
        states no memory ends nothing and cuts no group."""
        if not self._tuning.change_points:
            return _Told([], [], [], Induction(memories=[]), None)
        found = change_points(pool, new_ids, list(reconciler.active.values()), reconciler.says_changed)
        clusters = [p.cluster() for p in found[:cap]]
        induction, fallback, done = self._induce_within(clusters, budget)
        stated = _said_changes(induction.memories[:done], found[:done], clusters[:done], self._tuning, by_id)
        return _Told(stated, clusters[:done], found[done:], induction, fallback)

    def _new_episodes(self, namespace: str, req: ConsolidateRequest, only: Sequence[str] | None) -> list[Episode]:
        flt = MemoryFilter(
            layers=("episodic",),
            since=req.since,
            consolidated=False,
            ids=tuple(only) if only is not None else None,
            # An expired episode teaches nothing: the sweep forgets it (and what was induced from it alone).
            alive_at=self._clock.now(),
        )
        found = self._store.list_memories(namespace, flt, limit=MAX_EPISODES)
        return [e for e in found if isinstance(e, Episode)]

    def _induce_within(
        self, clusters: Sequence[EvidenceCluster], budget: RunBudget
    ) -> tuple[Induction, str | None, int]:
        """`induce` over as many clusters as the budget allows, a few at a time when a model spends tokens or the
        run has a deadline; and how many were induced (the rest are deferred)."""
        metered = budget.seconds_left is not None or (self._inducer is not self._fallback and budget.max_tokens)
        if not metered:
            induction, fallback = self.induce(clusters)
            return induction, fallback, len(clusters)
        total, done, model_down = Induction(memories=[]), 0, False
        reasons: list[str] = []
        while done < len(clusters):
            size = budget.next_chunk(total.tokens, done)
            if size == 0:
                break
            chunk = clusters[done : done + size]
            why: str | None
            if model_down:
                part, why = self._fallback.induce(chunk), "the model failed every cluster of an earlier chunk"
            else:
                part, why = self.induce(chunk)
                model_down = part.tokens == 0 and why is not None
            total.memories.extend(part.memories)
            total.tokens += part.tokens
            if why:
                reasons.append(why)
            done += len(chunk)
        fallback = "; ".join(dict.fromkeys(reasons))[:300] if reasons else None
        return total, fallback, done

    def induce(self, clusters: Sequence[EvidenceCluster]) -> tuple[Induction, str | None]:
        """The configured inducer's memories, the rule inducer's for the clusters it failed on; and why the
        fallback was needed, if it was."""
        if not clusters:
            return Induction(memories=[]), None
        if self._inducer is self._fallback:
            return self._fallback.induce(clusters), None
        try:
            induction = self._inducer.induce(clusters)
        except Exception as exc:  # noqa: BLE001 - any model failure falls back to the rules, and the result says so
            logger.warning("inducer %s failed; the rule inducer states this run: %s", self._inducer.name, exc)
            return self._fallback.induce(clusters), f"{type(exc).__name__}: {exc}"[:300]
        for i, (memory, cluster) in enumerate(zip(induction.memories, clusters, strict=True)):
            wrong = problem(memory, cluster.episodes) if memory is not None and i not in induction.failed else None
            if wrong is not None:
                logger.info("%s: a statement rejected by the checker (%s): %s", self._inducer.name, wrong, memory)
                induction.failed[i] = f"rejected by the checker: {wrong}"
        if not induction.failed:
            return induction, None
        redo = sorted(induction.failed)
        fallback = self._fallback.induce([clusters[i] for i in redo])
        for i, memory in zip(redo, fallback.memories, strict=True):
            induction.memories[i] = memory
        reasons = sorted(set(induction.failed.values()))
        return induction, f"{len(redo)} of {len(clusters)} clusters: " + "; ".join(reasons)[:300]

    def reinduce(self, namespace: str, fact: Fact, sources: Sequence[Episode]) -> tuple[Fact, np.ndarray] | None:
        """`fact` stated again from `sources` alone (some of its episodes were forgotten), with its new vector; None
        when they no longer support a memory of its kind and dimension. Nothing of a forgotten episode survives:
        statement, facets, evidence and confidence all come from the sources."""
        sources = read_in_sequence(sources)
        clusters = build_clusters(
            sources, {e.id for e in sources}, self._tuning, self._embed_many, self._embedder.scale
        )
        induction, _ = self.induce(clusters)
        by_id = {e.id: e for e in sources}
        matches = [
            m
            for m in _checked(induction.memories, clusters, self._tuning, by_id)
            if m.kind == fact.kind and m.dimension == fact.dimension
        ]
        if not matches:
            return None
        restated = merge_on_dimension(matches) if fact.dimension else max(matches, key=lambda m: len(m.provenance))
        evidence = evidence_of([by_id[i] for i in restated.provenance])
        updated = fact.model_copy(
            update={
                "content": restated.statement,
                "facets": restated.facets,
                "provenance": restated.provenance,
                "evidence": evidence,
                "confidence": confidence_of(fact.kind, evidence),
                "first_seen_at": evidence.first_at,
                "last_confirmed_at": evidence.last_at or fact.last_confirmed_at,
                "confirmations": 1,
            }
        )
        return updated, self._embed_one(updated.content)

    # --- steps ----------------------------------------------------------------------------------------------

    def _evidence_pool(self, namespace: str, new: Sequence[Episode]) -> list[Episode]:
        """The new episodes and the others of the lookback window, the newest `max_episodes` at most."""
        now = self._clock.now()
        since = now - timedelta(days=self._tuning.lookback_days)
        window = self._store.list_memories(namespace, MemoryFilter(layers=("episodic",), since=since, alive_at=now))
        merged = {e.id: e for e in window if isinstance(e, Episode)}
        merged.update({e.id: e for e in new})
        pool = sorted(merged.values(), key=lambda e: (e.occurred_at, e.id))
        return pool[-MAX_EPISODES:]

    def _reconciler(self, namespace: str, pool: dict[str, Episode]) -> Reconciler:
        active = [
            m
            for m in self._store.list_memories(
                namespace, MemoryFilter(layers=("semantic",), alive_at=self._clock.now())
            )
            if isinstance(m, Fact)
        ]
        vectors = self._store.get_vectors(namespace, [f.id for f in active])

        def episodes(ids: Sequence[str]) -> dict[str, Episode]:
            found = {i: pool[i] for i in ids if i in pool}
            missing = [i for i in ids if i not in found]
            if missing:
                found.update(
                    {m.id: m for m in self._store.get_many(namespace, missing).values() if isinstance(m, Episode)}
                )
            return found

        return Reconciler(
            namespace=namespace,
            active={f.id: f for f in active},
            vectors=vectors,
            embed=self._embed_one,
            episodes=episodes,
            now=self._clock.now(),
            dedup_threshold=self._write_tuning.dedup_threshold,
            related_threshold=related_similarity(self._embedder.scale),
            induced_by=self._inducer.name,
        )

    def _embed_many(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._embedder.embed(texts), dtype=np.float32)

    def _embed_one(self, text: str) -> np.ndarray:
        return np.asarray(self._embedder.embed([text])[0], dtype=np.float32)

    @staticmethod
    def _fill(
        result: ConsolidateResult,
        reconciler: Reconciler,
        pool: list[Episode],
        new: Sequence[object],
        clusters: list[EvidenceCluster],
        induction: Induction,
        fallback: str | None,
    ) -> None:
        result.episodes_considered = len(pool)
        result.new_episodes = len(new)
        result.clusters = len(clusters)
        result.tokens = induction.tokens
        result.fallback = fallback
        for decision in reconciler.decisions:
            result.decisions.append(
                ConsolidationDecision(
                    memory_id=decision.memory_id,
                    action=decision.action,
                    kind=decision.kind,
                    dimension=decision.dimension,
                    superseded=decision.superseded,
                )
            )
            if decision.action in ("created", "superseded"):
                result.facts_created += 1
                result.induced[decision.kind] = result.induced.get(decision.kind, 0) + 1
            elif decision.action in ("confirmed", "refined"):
                result.facts_confirmed += 1
            # A memory two clusters stated (made by one, confirmed by the other) is one memory of the run.
            if decision.action in _HELD_ACTIONS and decision.memory_id not in result.fact_ids:
                result.fact_ids.append(decision.memory_id)
            result.superseded += len(decision.superseded)


@dataclass
class _Told:
    """The change points of a run: those stated (with their memory), the clusters induced for them, those the
    budget left waiting, what induction spent and why it fell back."""

    stated: list[tuple[InducedMemory, ChangePoint]]
    clusters: list[EvidenceCluster]
    waiting: list[ChangePoint]
    induction: Induction
    fallback: str | None

    @property
    def points(self) -> list[ChangePoint]:
        return [p for _, p in self.stated]

    def rest_of(self, budget: RunBudget, cap: int) -> RunBudget:
        """What the run's other clusters may still spend."""
        tokens = None if budget.max_tokens is None else max(0, budget.max_tokens - self.induction.tokens)
        return replace(budget, max_clusters=max(0, cap - len(self.clusters)), max_tokens=tokens)


def _checked(
    memories: Sequence[InducedMemory | None],
    clusters: Sequence[EvidenceCluster],
    tuning: ConsolidateTuning,
    pool: dict[str, Episode],
    *,
    guarded: bool = True,
) -> list[InducedMemory]:
    """The induced memories that keep to their cluster: provenance within it, the guards still passed on what it
    cites (unless not `guarded`: an extraction), and no statement that is one of its episodes verbatim."""
    kept = []
    for memory, cluster in zip(memories, clusters, strict=True):
        if memory is None:
            continue
        members = {e.id: e for e in cluster.episodes}
        cited = [members[i] for i in memory.provenance if i in members]
        if not cited or (guarded and not enough(memory.kind, memory.dimension, cited)):
            continue
        if any(_same_text(memory.statement, e.content) for e in cited):
            continue
        kept.append(memory.model_copy(update={"provenance": [e.id for e in cited]}))
    return kept


def _said_changes(
    stated: Sequence[InducedMemory | None],
    points: Sequence[ChangePoint],
    clusters: Sequence[EvidenceCluster],
    tuning: ConsolidateTuning,
    pool: dict[str, Episode],
) -> list[tuple[InducedMemory, ChangePoint]]:
    """The change points whose turn (`clusters`, one each) states a memory that keeps to it (as an extraction's
    must), with it."""
    out: list[tuple[InducedMemory, ChangePoint]] = []
    for memory, point, cluster in zip(stated, points, clusters, strict=True):
        if memory is not None and _said_in(memory, cluster):
            out += [(kept, point) for kept in _checked([memory], [cluster], tuning, pool, guarded=False)]
    return out


def _carriers(
    stated: Sequence[tuple[InducedMemory, ChangePoint]], others: Sequence[InducedMemory]
) -> list[tuple[InducedMemory, ChangePoint]]:
    """The memory that ends each change point's old memory. A group of the run that holds the point's turn (the
    turns that bear the change out) carries the change: on the old memory's dimension it ends it (even one on which
    two values may hold: the user said this one gave way); otherwise it is judged like any memory, and is not
    listed. No group holding the turn: the memory stated from the turn alone ends the old one."""
    out: list[tuple[InducedMemory, ChangePoint]] = []
    carriers: set[int] = set()
    for memory, point in stated:
        group = next(
            (m for m in others if point.episode.id in m.provenance and id(m) not in carriers and len(m.provenance) > 1),
            None,
        )
        if group is None:
            out.append((memory, point))
            continue
        carriers.add(id(group))
        if group.dimension is not None and group.dimension == point.replaces.dimension:
            out.append((group, point))
    return out


def _said_in(memory: InducedMemory, cluster: EvidenceCluster) -> bool:
    """Whether a memory stated from one turn is what the turn says: its facets named there (a rules' template) or
    its statement supported (the checker; a model's statement passed it already)."""
    if any(_copies(memory.statement, e.content) for e in cluster.episodes):
        return False
    return facets_grounded(memory.facets, cluster.episodes) or problem(memory, cluster.episodes) is None


def _copies(statement: str, turn: str) -> bool:
    """A statement that is its turn, or most of it, copied (a definition read out of a long turn)."""
    said, text = " ".join(statement.lower().split()).strip(" .。"), " ".join(turn.lower().split())
    return len(said) > 40 and said in text


def _values_apart(memories: list[InducedMemory], pool: dict[str, Episode]) -> list[InducedMemory]:
    """Memories of one run that give one dimension different values ("replies in Chinese", "replies in Spanish")
    each keep only the episodes that do not name a rival's value without naming their own: a cluster of similar
    requests can hold both, and "Answer in Spanish please" must not confirm the Chinese preference (it would make
    the old value the newer one). A memory left with no episode is dropped."""
    out = []
    for memory in memories:
        own = _values(memory)
        rivals = [o for o in memories if o is not memory and memory.dimension and o.dimension == memory.dimension]
        other = {v for o in rivals if o.facets != memory.facets for v in _values(o)} - own
        if not other:
            out.append(memory)
            continue
        kept = [i for i in memory.provenance if i not in pool or not _names_only(pool[i].content, other, own)]
        if kept:
            out.append(memory.model_copy(update={"provenance": kept}))
    return out


def _values(memory: InducedMemory) -> set[str]:
    return {v.casefold() for v in memory.facets.values() if v.strip()}


def _names_only(text: str, other: set[str], own: set[str]) -> bool:
    folded = text.casefold()
    return any(v in folded for v in other) and not any(v in folded for v in own)


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.lower().split()).strip(" .。") == " ".join(b.lower().split()).strip(" .。")


def _evidence_end(pool: dict[str, Episode]) -> Callable[[InducedMemory], tuple[datetime, str]]:
    """Older evidence first, so that a newer memory supersedes an older one induced in the same run."""

    def key(memory: InducedMemory) -> tuple[datetime, str]:
        times = [pool[i].last_seen_at for i in memory.provenance if i in pool]
        return (max(times, default=datetime.min.replace(tzinfo=UTC)), memory.statement)

    return key
