"""Reconciling induced memories with the active ones: a repeat confirms, a refinement merges, a contradiction
supersedes the older (kept as history), and anything else is inserted.

Memories on one dimension are compared by their facets: the same facet values confirm; new facets refine (one
memory per dimension holds them all, stated anew); a facet with another value contradicts, and the newer evidence
wins (a changed habit or preference ends with the new one current), except on multi-valued dimensions where
overlapping evidence means both hold. Memories without a dimension are compared by their statement vectors: a
near-duplicate confirms, an opposite-polarity statement of the same thing contradicts. So no two contradictory
active memories remain on one dimension.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from rearview.domain.changes import ChangeSet
from rearview.domain.hindsight import InducedMemory
from rearview.domain.memory import Episode, Evidence, Fact
from rearview.ids import new_ulid
from rearview.service.contradiction import Scale, anchored, judge
from rearview.service.hindsight import statements
from rearview.service.hindsight.evidence import confidence_of, evidence_of
from rearview.text_analysis import is_chinese

# Dimensions on which two values can both hold while their evidence overlaps in time (running and swimming).
MULTI_VALUED = frozenset({"exercise"})
# Facets that describe a memory without being what it holds (when a habit happens): never a contradiction.
_DESCRIPTIVE = frozenset({"when"})

# How many of the nearest active memories a new one is judged against.
_JUDGED = 5

Action = str  # created | confirmed | refined | superseded | history


@dataclass
class Decision:
    """What reconciliation did with one induced memory."""

    memory_id: str
    action: Action
    kind: str
    dimension: str | None
    superseded: list[str] = field(default_factory=list)


@dataclass
class Reconciler:
    """Holds the namespace's active semantic memories for one run and plans the changes, in memory, into one
    ChangeSet (applied by the caller in one transaction)."""

    namespace: str
    active: dict[str, Fact]
    vectors: dict[str, np.ndarray]
    embed: Callable[[str], np.ndarray]
    episodes: Callable[[Sequence[str]], dict[str, Episode]]
    now: datetime
    dedup_threshold: float
    related_threshold: float
    induced_by: str
    changes: ChangeSet = field(default_factory=ChangeSet)
    decisions: list[Decision] = field(default_factory=list)
    _base_versions: dict[str, int] = field(default_factory=dict)
    _inserted: set[str] = field(default_factory=set)
    _said_vectors: dict[str, np.ndarray] = field(default_factory=dict)

    # --- the decision ---------------------------------------------------------------------------------------

    def add(self, induced: InducedMemory) -> Decision:
        evidence = evidence_of(list(self.episodes(induced.provenance).values()))
        if induced.dimension:
            same_dimension = [f for f in self.active.values() if f.dimension == induced.dimension]
            if same_dimension:
                return self._on_dimension(induced, evidence, same_dimension)
        vector = self.embed(induced.statement)
        said = [e.content for e in self.episodes(induced.provenance).values()]
        scale = Scale(related=self.related_threshold, same=self.dedup_threshold)
        subsumed = self._subsumed(induced, vector, said, scale)
        if subsumed is not None:
            return self._refine(subsumed, induced, evidence, restated=vector)
        for fact, cosine in self._nearest(vector, induced.kind):
            verdict = judge(induced.statement, fact.content, cosine, scale, evidence=said)
            if verdict == "confirms":
                return self._confirm(fact, induced, evidence, restate=True)
            if verdict == "refines":
                return self._refine(fact, induced, evidence)
            if verdict == "contradicts":
                return self._contradict(fact, induced, evidence, vector)
        return self._insert(induced, evidence, vector)

    def says_changed(self, said: str, episode: Episode, fact: Fact) -> bool:
        """Whether the clauses `said` (of `episode`) say that `fact` no longer holds: they share words with it and
        the judge finds that they contradict it (see `change_points`)."""
        evidence = [episode.content]
        if not anchored(said, fact.content, evidence=evidence):
            return False
        vector = self._said_vectors.get(said)
        if vector is None:
            vector = self._said_vectors[said] = self.embed(said)
        cosine = float(self._vector_of(fact) @ vector)
        scale = Scale(related=self.related_threshold, same=self.dedup_threshold)
        return judge(said, fact.content, cosine, scale, evidence=evidence) == "contradicts"

    def add_change(self, induced: InducedMemory, replaces: Fact) -> Decision | None:
        """A memory stated from a change point: it supersedes `replaces` (kept as history). None, and nothing
        planned, when that memory is no longer active (another memory of the run superseded it): one turn is
        enough evidence to end a memory, not to start one."""
        current = self.active.get(replaces.id)
        if current is None:
            return None
        evidence = evidence_of(list(self.episodes(induced.provenance).values()))
        return self._contradict(current, induced, evidence, None)

    def _subsumed(self, induced: InducedMemory, vector: np.ndarray, said: list[str], scale: Scale) -> Fact | None:
        """An active memory learned from one turn (a change point's, an extraction's) that a group of the new
        memory's holds, about the same thing (the turns that bear it out): the same knowledge, now stated from more
        of its evidence. A memory learned from a group is judged instead: its group grown by a turn may say it
        changed; and a group that holds the turn but is about something else leaves it alone."""
        if len(induced.provenance) < 2:
            return None
        within = set(induced.provenance)
        for fact in self.active.values():
            if not fact.induced_by or fact.kind == "lesson" or len(fact.provenance) != 1:
                continue
            if fact.provenance[0] not in within:
                continue
            cosine = float(self._vector_of(fact) @ vector)
            if judge(induced.statement, fact.content, cosine, scale, evidence=said) != "unrelated":
                return fact
        return None

    def _on_dimension(self, induced: InducedMemory, evidence: Evidence, held: list[Fact]) -> Decision:
        fact = max(held, key=lambda f: f.last_confirmed_at)
        conflicts = {
            k
            for k, v in induced.facets.items()
            if k in fact.facets and k not in _DESCRIPTIVE and not same_value(fact.facets[k], v)
        }
        if not fact.facets:
            # A memory written directly on this dimension: the same statement confirms, another one conflicts.
            cosine = float(self._vector_of(fact) @ self.embed(induced.statement))
            if cosine >= self.dedup_threshold:
                return self._confirm(fact, induced, evidence, restate=False)
            return self._contradict(fact, induced, evidence, None)
        if conflicts and induced.dimension in MULTI_VALUED and _overlap(fact.evidence, evidence):
            merged = {k: _join_values(fact.facets[k], v) if k in conflicts else v for k, v in induced.facets.items()}
            return self._refine(fact, induced.model_copy(update={"facets": merged}), evidence)
        # Another value, or only a facet that describes it changed ("when": evening, then morning) and its episodes
        # say so.
        if conflicts or self._changed(fact, induced):
            return self._contradict(fact, induced, evidence, None)
        if set(induced.facets) <= set(fact.facets):
            return self._confirm(fact, induced, evidence, restate=fact.kind == "lesson")
        return self._refine(fact, induced, evidence)

    def _changed(self, fact: Fact, induced: InducedMemory) -> bool:
        """A descriptive facet with another value, and the new memory's episodes saying the old value gave way."""
        differs = any(
            k in _DESCRIPTIVE and k in fact.facets and not same_value(fact.facets[k], v)
            for k, v in induced.facets.items()
        )
        if not differs:
            return False
        said = [e.content for e in self.episodes(induced.provenance).values()]
        cosine = float(self._vector_of(fact) @ self.embed(induced.statement))
        scale = Scale(related=self.related_threshold, same=self.dedup_threshold)
        return judge(induced.statement, fact.content, cosine, scale, evidence=said) == "contradicts"

    # --- the outcomes ---------------------------------------------------------------------------------------

    def _insert(self, induced: InducedMemory, evidence: Evidence, vector: np.ndarray | None) -> Decision:
        fact = self._new_fact(induced, evidence)
        self._plan(fact, vector if vector is not None else self.embed(fact.content), inserted=True)
        return self._decide(fact, "created")

    def _confirm(self, fact: Fact, induced: InducedMemory, evidence: Evidence, *, restate: bool) -> Decision:
        provenance = list(dict.fromkeys([*fact.provenance, *induced.provenance]))
        union = evidence_of(list(self.episodes(provenance).values())) if fact.provenance else evidence
        update: dict[str, object] = {
            "provenance": provenance,
            "evidence": union,
            "confirmations": fact.confirmations + 1,
            "last_confirmed_at": max(fact.last_confirmed_at, union.last_at or self.now),
            "confidence": max(fact.confidence, confidence_of(fact.kind, union)),
        }
        vector = None
        if restate and induced.statement != fact.content:
            update["content"] = induced.statement
            update["facets"] = {**fact.facets, **induced.facets}
            update["dimension"] = fact.dimension or induced.dimension
            vector = self.embed(induced.statement)
        confirmed = fact.model_copy(update=update)
        self._plan(confirmed, vector)
        return self._decide(confirmed, "confirmed")

    def _refine(
        self, fact: Fact, induced: InducedMemory, evidence: Evidence, *, restated: np.ndarray | None = None
    ) -> Decision:
        """`fact` refined by `induced`, its evidence the union. With `restated` (the new statement's vector: a
        memory of one turn that a group bears out), `fact` becomes what the new memory states: its kind, dimension
        and statement."""
        facets = {**fact.facets, **induced.facets}
        kind, dimension = fact.kind, fact.dimension or induced.dimension
        if restated is not None:
            kind, dimension = induced.kind, induced.dimension or fact.dimension
            content = induced.statement
        elif fact.kind == "lesson" or (fact.dimension is None and fact.induced_by):
            # A lesson is stated from its subject's whole outcome sequence, a memory found by meaning from all its
            # evidence: the newer statement holds the older.
            content = induced.statement
        else:
            content = statements.state(fact.dimension, facets, chinese=is_chinese(fact.content)) or _join_statements(
                fact.content, induced.statement
            )
        provenance = list(dict.fromkeys([*fact.provenance, *induced.provenance]))
        union = evidence_of(list(self.episodes(provenance).values()))
        refined = fact.model_copy(
            update={
                "content": content,
                "kind": kind,
                "dimension": dimension,
                "facets": facets,
                "provenance": provenance,
                "evidence": union,
                "last_confirmed_at": max(fact.last_confirmed_at, union.last_at or self.now),
                "confidence": max(fact.confidence, confidence_of(kind, union)),
            }
        )
        self._plan(refined, restated if restated is not None else self.embed(content))
        return self._decide(refined, "refined")

    def _contradict(
        self, fact: Fact, induced: InducedMemory, evidence: Evidence, vector: np.ndarray | None
    ) -> Decision:
        """The newer evidence wins (the more confident one on a tie); the loser is kept as superseded history.
        Facets of the old memory that the new one does not contradict carry over to it."""
        new = self._new_fact(induced, evidence)
        carried = {k: v for k, v in fact.facets.items() if k not in induced.facets}
        if carried and fact.dimension == induced.dimension:
            facets = {**carried, **induced.facets}
            content = statements.state(new.dimension, facets, chinese=is_chinese(new.content)) or new.content
            new = new.model_copy(update={"facets": facets, "content": content})
        newer = (evidence.last_at or self.now, new.confidence) >= (fact.last_confirmed_at, fact.confidence)
        if not newer:
            history = new.model_copy(
                update={"status": "superseded", "superseded_by": fact.id, "superseded_at": self.now}
            )
            self._plan(history, self.embed(history.content), inserted=True)
            return self._decide(history, "history")
        self._plan(
            fact.model_copy(update={"status": "superseded", "superseded_by": new.id, "superseded_at": self.now}), None
        )
        self.active.pop(fact.id, None)
        self._plan(
            new,
            self.embed(new.content) if vector is None or new.content != induced.statement else vector,
            inserted=True,
        )
        decision = self._decide(new, "superseded")
        decision.superseded.append(fact.id)
        return decision

    # --- bookkeeping ----------------------------------------------------------------------------------------

    def _new_fact(self, induced: InducedMemory, evidence: Evidence) -> Fact:
        return Fact(
            id=new_ulid(self.now),
            namespace=self.namespace,
            content=induced.statement,
            kind=induced.kind,
            dimension=induced.dimension,
            facets=dict(induced.facets),
            confidence=confidence_of(induced.kind, evidence),
            provenance=list(induced.provenance),
            evidence=evidence,
            induced_by=self.induced_by,
            first_seen_at=evidence.first_at,
            created_at=self.now,
            last_confirmed_at=evidence.last_at or self.now,
            confirmations=1,
            importance=0.7 if induced.kind != "fact" else 0.6,
        )

    def _plan(self, fact: Fact, vector: np.ndarray | None, *, inserted: bool = False) -> None:
        """Put the fact's new state in the change set (one net upsert per id, with the right version)."""
        if inserted:
            self._inserted.add(fact.id)
        version = 1 if fact.id in self._inserted else self._base_versions.setdefault(fact.id, fact.version) + 1
        fact = fact.model_copy(update={"version": version})
        kept = next((v for m, v in self.changes.upserts if m.id == fact.id), None)
        self.changes.upserts = [(m, v) for m, v in self.changes.upserts if m.id != fact.id]
        self.changes.upserts.append((fact, vector if vector is not None else kept))
        if fact.status == "active":
            self.active[fact.id] = fact
            if vector is not None:
                self.vectors[fact.id] = vector
        else:
            self.active.pop(fact.id, None)

    def _decide(self, fact: Fact, action: Action) -> Decision:
        decision = Decision(memory_id=fact.id, action=action, kind=fact.kind, dimension=fact.dimension)
        self.decisions.append(decision)
        return decision

    def _vector_of(self, fact: Fact) -> np.ndarray:
        vector = self.vectors.get(fact.id)
        if vector is None:
            vector = self.embed(fact.content)
            self.vectors[fact.id] = vector
        return vector

    def _nearest(self, vector: np.ndarray, kind: str) -> list[tuple[Fact, float]]:
        """The active memories a new one is judged against, most similar first: of any kind but a lesson's against
        a lesson (a learned preference against a written fact too), on no dimension or one the rules do not name
        (a rule's dimension is compared by its facets)."""
        scored = [
            (fact, float(self._vector_of(fact) @ vector))
            for fact in self.active.values()
            if (fact.kind == "lesson") == (kind == "lesson") and (fact.dimension is None or not fact.facets)
        ]
        return sorted(scored, key=lambda fc: -fc[1])[:_JUDGED]


def merge_on_dimension(memories: Sequence[InducedMemory]) -> InducedMemory:
    """Memories on one dimension as the one memory that holds all their facets (as a refinement would)."""
    first = memories[0]
    facets: dict[str, str] = {}
    provenance: list[str] = []
    for memory in memories:
        facets.update(memory.facets)
        provenance.extend(memory.provenance)
    chinese = is_chinese(first.statement)
    statement = statements.state(first.dimension, facets, chinese=chinese) or "; ".join(m.statement for m in memories)
    return first.model_copy(
        update={"statement": statement, "facets": facets, "provenance": list(dict.fromkeys(provenance))}
    )


def same_value(a: str, b: str) -> bool:
    """Facet values that say the same thing ("a markdown table" and "a table"; "running" within
    "running and swimming")."""
    na, nb = _normal(a), _normal(b)
    return na == nb or nb in [_normal(p) for p in a.split(" and ")]


def _normal(value: str) -> str:
    return " ".join(value.lower().replace("markdown ", "").split())


def _join_values(a: str, b: str) -> str:
    parts = list(dict.fromkeys([*a.split(" and "), *b.split(" and ")]))
    return " and ".join(parts)


def _join_statements(a: str, b: str) -> str:
    return a if b in a else f"{a.rstrip('.。')}; {b}"


def _overlap(old: Evidence | None, new: Evidence) -> bool:
    """True when the new evidence began before the old ended (both went on together)."""
    if old is None or old.last_at is None or new.first_at is None:
        return False
    return new.first_at < old.last_at
