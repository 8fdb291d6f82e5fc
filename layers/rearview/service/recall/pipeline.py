"""Recall, the product, as a pipeline: filters -> the namespace's structure -> keyword and vector
candidates -> fusion (-> pseudo-relevance feedback) -> decay and boosts -> session neighbours -> named entities, time
answers, questions -> exclusions -> rerank -> "last time" -> what was learned first -> collapse -> no-relevant-memory
verdict -> token budget. Every stage is timed and, with `explain`, reported; a time budget skips the optional ones
once it is spent (see deadline)."""

from __future__ import annotations

import logging
import time
from datetime import datetime

from rearview.domain.namespaces import validate_namespace
from rearview.domain.recall import RecallHit, RecallQuery, RecallResponse, RecallTrace
from rearview.domain.timestamps import check_time_range
from rearview.errors import StorageFull
from rearview.ports import Clock, Embedder, MemoryUsage, Reranker, SearchIndex
from rearview.service.recall.background import Background
from rearview.service.recall.candidates import across, embed, feedback, fresh, fuse, search
from rearview.service.recall.deadline import Stage, run_stages
from rearview.service.recall.form_stages import exclude, latest_first, query_form
from rearview.service.recall.learned import learned_first
from rearview.service.recall.lessons import lessons
from rearview.service.recall.parameters import RecallParameters, recall_parameters
from rearview.service.recall.query import parse, stored_layers
from rearview.service.recall.ranking import entities, neighbours, questions, rank, rerank, time_answers
from rearview.service.recall.relevance import relevance
from rearview.service.recall.results import budget, collapse, hits
from rearview.service.recall.state import Collaborators, RecallState, RecallStore
from rearview.service.recall.structure import structure
from rearview.service.recall.working_layer import asks_working, fused, working_hits
from rearview.settings import RecallTuning

logger = logging.getLogger(__name__)

# The stages in the order they run; a conditional one checks its condition first and, where it does not hold, adds
# no trace entry.
STAGES: tuple[Stage, ...] = (
    parse,  # time expression -> filter or boost; terms, fusion weights, filter
    structure,  # with structure_gates: which of context, neighbours and feedback the namespace's structure supports
    embed,  # the query's vector, common names left out
    search,  # keyword + vector lists, or one hybrid call where the index is a round trip
    across,  # for a model that reads across scripts: the memories a search in the other script finds join (a
    # refinement: a spent time budget skips it)
    fresh,  # with a freshness window: recent episodes the index does not return yet
    fuse,
    feedback,  # with feedback_weight > 0 and candidates: a second vector search from the best results
    rank,  # decay, importance, access, length, time-range boost
    neighbours,  # with neighbour_hits > 0: the turns around the best episodes join
    entities,  # with entity_boost > 0 and query terms: memories of the entities the query names rise
    lessons,  # with lesson_place > 0 and query terms: a lesson about a subject the query names takes a fair place
    time_answers,  # with time_answer_boost > 0, for a query that asks when: memories that say when rise
    questions,  # with question_factor < 1: memories that ask a question drop
    exclude,  # with exclusions ("other than X", `exclude`): the memories about them go
    rerank,  # with a reranker, unless the query skips it: the best candidates re-ordered
    latest_first,  # for a "last time" query: the most recent relevant episode first
    learned_first,  # a semantic memory above the episodes it was learned from that matched, which fold under it
    collapse,  # near-duplicates fold into the best; top_k kept
    relevance,  # the no-relevant-memory verdict: meaning, words, names, a time range; small talk asks for none
    budget,  # the token budget
)

# What a spent time budget skips: the refinements. The others are what it takes to return what was ranked (the
# forms' stages are what the query means, and cheap).
OPTIONAL_STAGES: frozenset[Stage] = frozenset(
    {feedback, neighbours, entities, lessons, time_answers, questions, rerank}
)


class RecallService:
    """Recall over one store and index: each query runs `STAGES` over a fresh `RecallState`."""

    def __init__(
        self,
        store: RecallStore,
        index: SearchIndex,
        embedder: Embedder,
        clock: Clock,
        tuning: RecallTuning,
        relevance_floor: float,
        freshness_seconds: int = 0,
        reranker: Reranker | None = None,
    ) -> None:
        # The collapse threshold is stated on the reference scale (see domain.embedding); recall compares cosines
        # of this embedder.
        tuning = tuning.model_copy(update={"collapse_threshold": embedder.scale.raw(tuning.collapse_threshold)})
        self._ctx = Collaborators(
            store=store,
            index=index,
            embedder=embedder,
            clock=clock,
            tuning=recall_parameters(tuning),
            relevance_floor=tuning.min_relevance if tuning.min_relevance is not None else relevance_floor,
            background=Background(embedder),
            freshness_seconds=freshness_seconds,
            # Optional: re-orders the best candidates after ranking (see the rerank stage).
            reranker=reranker,
        )

    @property
    def tuning(self) -> RecallParameters:
        """The settings and constants this service ranks with."""
        return self._ctx.tuning

    @property
    def reranker(self) -> Reranker | None:
        """The model that re-orders the best candidates, if one is configured."""
        return self._ctx.reranker

    @property
    def relevance_floor(self) -> float:
        """The margin by meaning (see relevance) below which, with no other evidence, a recall answers
        no_relevant_memory."""
        return self._ctx.relevance_floor

    def recall(self, namespace: str, q: RecallQuery, *, record: bool = True) -> RecallResponse:
        """The memories that answer `q`, best first, within its token budget (with every stage's trace if asked).
        `record=False` leaves the access and recall counters alone (a caller that picks among the results, such as
        brief, records what it returns itself)."""
        validate_namespace(namespace)
        check_time_range(q.since, q.until)
        searches_working = asks_working(q)
        run = RecallState(namespace=namespace, query=q, as_of=q.as_of or self._ctx.clock.now())
        if stored_layers(q):
            run_stages(self._ctx, run, STAGES, OPTIONAL_STAGES)
        return self._respond(run, record, searches_working)

    def _respond(self, run: RecallState, record: bool, searches_working: bool = False) -> RecallResponse:
        """The response, once the access and recall counters have recorded what was returned; with `working`, the
        session's working memory fused in (`working_layer`)."""
        store, q = self._ctx.store, run.query
        results = hits(run, self._ctx.tuning)
        now = self._ctx.clock.now()
        if searches_working:
            found = working_hits(self._ctx, run.namespace, q, run.query_vector, now)
            budget = q.token_budget or self._ctx.tuning.default_token_budget
            results, cut = fused(results, found, q.top_k, budget)
            run.truncated = run.truncated or cut
            run.no_relevant_memory = not results
        if record:
            _bookkeeping(run.namespace, results, now, store)
        working = None
        if q.session_id:
            working = {e.key: e.value for e in store.get_working(run.namespace, q.session_id, now)}
        trace = None
        if q.explain:
            trace = RecallTrace(
                query=q.query,
                as_of=run.as_of,
                stages=run.tracer.stages,
                total_millis=round((time.perf_counter() - run.started) * 1000, 3),
                timed_out=run.timed_out,
            )
        return RecallResponse(
            results=results,
            working=working,
            no_relevant_memory=run.no_relevant_memory,
            truncated=run.truncated,
            time_range=run.time_range,
            query_form=query_form(run),
            timed_out=run.timed_out,
            trace=trace,
        )


def _bookkeeping(namespace: str, results: list[RecallHit], now: datetime, store: MemoryUsage) -> None:
    """Count the recall, its hit and an access of each memory it returns, in one write where writes are billed.
    Counters only: a store that cannot write (a full disk) still answers recalls, so its refusal is logged, never
    the caller's."""
    try:
        accessed = [h.id for h in results if h.layer != "working"]
        store.record_recall(namespace, hit=bool(results), at=now, accessed=accessed)
    except StorageFull as exc:
        logger.warning("recall: the counters of %s were not recorded: %s", namespace, exc.message)
