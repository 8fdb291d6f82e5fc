"""What a recall carries from stage to stage (`RecallState`), what every stage may call (`Collaborators`), and the
trace each stage adds its entry to."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from rearview.domain.memory import Memory
from rearview.domain.recall import RecallQuery, StageTrace
from rearview.domain.search import Candidate, MemoryFilter
from rearview.ports import Clock, Embedder, MemoryReader, MemoryUsage, Reranker, SearchIndex, WorkingMemoryStore
from rearview.service.recall.background import Background, QueryBackground, is_cjk_text
from rearview.service.recall.fusion import FusionWeights
from rearview.service.recall.parameters import RecallParameters
from rearview.service.recall.profile import ProfileCache, Refinements
from rearview.service.recall.query_forms import Excluded


class RecallStore(MemoryReader, WorkingMemoryStore, MemoryUsage, Protocol):
    """What recall asks of the store: memories and vectors, the session's working memory, and the use it records."""


# Candidates shown per stage in an explain trace (the full lists can be hundreds long).
TRACE_CANDIDATES = 25

# (score, memory id), best first: the ranking the stages after `rank` re-order.
Scored = list[tuple[float, str]]


@dataclass(frozen=True)
class Collaborators:
    """The ports and tuning a recall's stages work with, fixed for the service's life."""

    store: RecallStore
    index: SearchIndex
    embedder: Embedder
    clock: Clock
    tuning: RecallParameters
    # The margin by meaning (see background) a memory must reach to be relevant, when nothing else speaks for it.
    relevance_floor: float
    # 0 for an index that is consistent with the store (SQLite: same transaction); the AWS index lags.
    freshness_seconds: int
    reranker: Reranker | None
    # Everyday text the relevance stage measures a query's background against.
    background: Background
    # Each namespace's conversational structure (see the structure stage), measured once and kept.
    profiles: ProfileCache = field(default_factory=ProfileCache)

    def margin_floor(self, same_script: bool) -> float:
        """The margin by meaning a memory needs: `relevance_floor`, the query and it in the same script; else that
        in the proportion the embedder's scale sets for a pair across scripts."""
        if same_script:
            return self.relevance_floor
        scale = self.embedder.scale
        return self.relevance_floor * scale.margin_for(False) / max(scale.relevance_margin, 1e-6)

    def query_background(self, run: RecallState, vector: np.ndarray | None = None) -> QueryBackground:
        """The query (or `vector`, the query as feedback moved it) measured against the background (see
        background), kept for the run's query vector."""
        across = self.embedder.scale.across_margin is not None
        query_cjk = is_cjk_text(run.query.query)
        if vector is not None and vector is not run.query_vector:
            return self.background.for_query(vector, query_cjk, across=across)
        if run.background is None or run.background.query is not run.query_vector:
            run.background = self.background.for_query(run.query_vector, query_cjk, across=across)
        return run.background


class Tracer:
    """The stages' trace entries, in the order they ran, each timed."""

    def __init__(self) -> None:
        self.stages: list[StageTrace] = []

    def stage(self, name: str) -> _TimedStage:
        return _TimedStage(self.stages, name)


class _TimedStage:
    """One stage's trace entry, timed from `with` to its end and then added to the trace (a plain class: the
    generator behind @contextmanager cost more than most stages' own work on a small namespace)."""

    __slots__ = ("_stages", "_start", "trace")

    def __init__(self, stages: list[StageTrace], name: str) -> None:
        self._stages = stages
        self.trace = StageTrace(stage=name, millis=0.0)
        self._start = 0.0

    def __enter__(self) -> StageTrace:
        self._start = time.perf_counter()
        return self.trace

    def __exit__(self, *exc: object) -> None:
        self.trace.millis = round((time.perf_counter() - self._start) * 1000, 3)
        self._stages.append(self.trace)


def _no_vector() -> np.ndarray:
    return np.zeros(0, dtype=np.float32)


@dataclass
class RecallState:
    """One recall as it moves through the stages: each stage reads what earlier ones wrote and adds its own."""

    namespace: str
    query: RecallQuery
    # The "now" that relative times resolve against and memories decay towards.
    as_of: datetime
    started: float = field(default_factory=time.perf_counter)
    tracer: Tracer = field(default_factory=Tracer)

    # parse: the text keyword search matches (time words out), its terms, the filter and the fusion weights
    text: str = ""
    terms: list[str] = field(default_factory=list)
    since: datetime | None = None
    until: datetime | None = None
    time_range: dict[str, Any] | None = None
    # A time expression next to a topic lifts the memories in its range instead of filtering.
    boost_range: tuple[datetime, datetime] | None = None
    weights: FusionWeights = FusionWeights(keyword=0.0, vector=0.0, reason="")
    filter: MemoryFilter = field(default_factory=MemoryFilter)
    # How many candidates each list contributes to fusion.
    pool: int = 0
    # The query's forms (see query_forms): the words that asked for the last time, and what to leave out with the
    # ids the exclude stage left out for each phrase.
    last_time: str | None = None
    exclusions: list[Excluded] = field(default_factory=list)
    left_out: dict[str, list[str]] = field(default_factory=dict)

    # structure: which of keyword context, session neighbours and feedback the namespace's structure supports.
    refinements: Refinements = field(default_factory=Refinements)

    # The time budget (see deadline): when it ends on the clock's monotonic seconds, whether a check found it spent
    # (and where), and what was skipped for it.
    deadline: float | None = None
    timed_out: bool = False
    timed_out_before: str | None = None
    skipped: list[str] = field(default_factory=list)

    # embed, search, fresh, fuse, feedback
    query_vector: np.ndarray = field(default_factory=_no_vector)
    keyword: list[Candidate] = field(default_factory=list)
    # The vector search's whole answer; a local scan returns more than the pool, for feedback to re-score.
    searched: list[Candidate] = field(default_factory=list)
    # Whether `searched` holds every memory the filter passes (the search returned fewer than it asked for).
    searched_all: bool = False
    vector: list[Candidate] = field(default_factory=list)
    # What the search in the other script added to the vector list (see across), scored by the query's cosine.
    across: list[Candidate] = field(default_factory=list)
    # The vector the vector list was scored with: the query's, or after feedback the query moved.
    scored_with: np.ndarray | None = None
    fresh: list[Candidate] = field(default_factory=list)
    fused: dict[str, float] = field(default_factory=dict)

    # rank to rerank
    memories: dict[str, Memory] = field(default_factory=dict)
    scored: Scored = field(default_factory=list)

    # learned_first: each semantic memory's sources that matched too, folded under it (they left `scored`).
    learned_from: dict[str, list[str]] = field(default_factory=dict)

    # The query against the background (see background; `Collaborators.query_background`).
    background: QueryBackground | None = None

    # collapse, relevance, budget
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    folded: dict[str, list[str]] = field(default_factory=dict)
    top: list[str] = field(default_factory=list)
    no_relevant_memory: bool = False
    kept: list[str] = field(default_factory=list)
    truncated: bool = False
    # The first result's text cut to the budget, when even it does not fit.
    shortened: str | None = None

    @property
    def explain(self) -> bool:
        """Whether the caller asked for the trace: without it, stages skip building their trace rows."""
        return self.query.explain

    def stage(self, name: str) -> AbstractContextManager[StageTrace]:
        """A trace entry for the stage `name`, timed over the `with` block and added when it ends."""
        return self.tracer.stage(name)


def candidate_rows(cands: list[Candidate]) -> list[dict[str, Any]]:
    """A primitive search's best candidates as trace rows."""
    return [
        {"rank": i, "id": c.id, "layer": c.layer, "score": round(c.score, 6)}
        for i, c in enumerate(cands[:TRACE_CANDIDATES], start=1)
    ]


def fused_rows(fused: dict[str, float]) -> list[dict[str, Any]]:
    """The best fused candidates as trace rows."""
    best = sorted(fused.items(), key=lambda kv: -kv[1])[:TRACE_CANDIDATES]
    return [{"id": cid, "fused": round(score, 6)} for cid, score in best]
