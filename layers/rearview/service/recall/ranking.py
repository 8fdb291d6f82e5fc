"""From fused candidates to one ranking: the rank stage (decay and boosts), then the stages that re-order it
(session neighbours, named entities, time answers, questions, the reranker)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from rearview.domain.memory import Episode, Memory
from rearview.domain.search import MemoryFilter
from rearview.ports import Reranker
from rearview.service.recall.fusion import fuse_rerank
from rearview.service.recall.parameters import RecallParameters
from rearview.service.recall.scoring import Scorer, names_an_entity, score_factors
from rearview.service.recall.state import TRACE_CANDIDATES, Collaborators, RecallState, Scored
from rearview.service.recall.text_features import says_when
from rearview.text_analysis import asks_question, asks_when

logger = logging.getLogger(__name__)

# A hit's neighbours are read from its session's turns this close to it, so a long-lived session is not read whole.
_NEIGHBOUR_WINDOW = timedelta(hours=6)


def _by_score(scored: Scored) -> Scored:
    """Best first; equal scores in id order, so a ranking never depends on the order candidates came in."""
    return sorted(scored, key=lambda sc: (-sc[0], sc[1]))


def rank(ctx: Collaborators, run: RecallState) -> None:
    """Each fused candidate's score times its decay and boosts (and the time expression's boost for a memory in its
    range), best first."""
    tuning = ctx.tuning
    with run.stage("rank") as st:
        # Shared: recall reads the memories and never changes them (a hit copies what it takes); those fusion read
        # already are not read again.
        known = run.memories
        missing = [cid for cid in run.fused if cid not in known]
        read = ctx.store.get_many(run.namespace, missing, shared=True) if missing else {}
        run.memories = {cid: m for cid in run.fused if (m := known.get(cid) or read.get(cid)) is not None}
        scored: Scored = []
        scorer, memories = Scorer(run.as_of, tuning), run.memories
        for cid, fscore in run.fused.items():
            memory = memories.get(cid)
            if memory is None:  # deleted between index and store read (eventual consistency on AWS)
                continue
            factor = _time_range_factor(memory, run, tuning) if run.boost_range is not None else 1.0
            try:
                scored.append((scorer.score(memory, fscore) * factor, cid))
            except (ArithmeticError, ValueError, TypeError) as exc:
                # A stored row no write could have made (a negative count, a time past the calendar): skipped and
                # logged, so one bad row never fails every recall of its namespace.
                logger.warning(
                    "recall: memory %s of %s skipped, its stored fields do not rank (%s)", cid, run.namespace, exc
                )
        run.scored = _by_score(scored)
        if run.explain:
            st.candidates = [_rank_row(cid, s, run, tuning) for s, cid in run.scored[:TRACE_CANDIDATES]]


def _rank_row(cid: str, score: float, run: RecallState, tuning: RecallParameters) -> dict[str, Any]:
    made = score_factors(run.memories[cid], run.fused[cid], run.as_of, tuning)
    return {"id": cid, "score": round(score, 6), **made.explained()}


def _time_range_factor(memory: Memory, run: RecallState, tuning: RecallParameters) -> float:
    in_range = run.boost_range is not None and run.boost_range[0] <= memory.occurred_at < run.boost_range[1]
    return 1.0 + tuning.time_expression_boost if in_range else 1.0


def neighbours(ctx: Collaborators, run: RecallState) -> None:
    """When `neighbour_hits` is above 0: the turns just before and after each of the best episodic hits in their
    session join the ranking at a share of the hit's score. The answer to a question is often the reply to the
    turn that matched it, so the reply to a hit that asks a question gets the larger `reply_factor`."""
    tuning = ctx.tuning
    if tuning.neighbour_hits <= 0 or not run.scored or not run.refinements.neighbours:
        return
    with run.stage("neighbours") as st:
        best: dict[str, float] = {cid: score for score, cid in run.scored}
        added: list[str] = []
        changed = False
        for score, cid in list(run.scored[: tuning.neighbour_hits]):
            for neighbour, factor in _turns_around(ctx, run, cid):
                value = score * factor
                if value > best.get(neighbour.id, 0.0):
                    if neighbour.id not in best:
                        added.append(neighbour.id)
                    best[neighbour.id] = value
                    run.memories[neighbour.id] = neighbour
                    changed = True
        if changed:
            run.scored = _by_score([(v, k) for k, v in best.items()])
        st.detail = {"hits": tuning.neighbour_hits, "factor": tuning.neighbour_factor, "added": added}


def _turns_around(ctx: Collaborators, run: RecallState, cid: str) -> list[tuple[Memory, float]]:
    """The turns right before and after the episode `cid` in its session that the recall's filter lets through,
    each with the share of the episode's score it joins at."""
    hit, tuning = run.memories.get(cid), ctx.tuning
    if not isinstance(hit, Episode) or not hit.session_id:
        return []
    around = MemoryFilter(
        layers=("episodic",),
        session_id=hit.session_id,
        since=hit.occurred_at - _NEIGHBOUR_WINDOW,
        until=hit.occurred_at + _NEIGHBOUR_WINDOW,
    )
    turns = ctx.store.list_memories(run.namespace, around)
    position = next((i for i, m in enumerate(turns) if m.id == cid), None)
    if position is None:
        return []
    reply = tuning.reply_factor if asks_question(hit.content) else tuning.neighbour_factor
    around_hit = [(m, tuning.neighbour_factor) for m in turns[max(0, position - 1) : position]]
    around_hit += [(m, reply) for m in turns[position + 1 : position + 2]]
    return [(m, factor) for m, factor in around_hit if run.filter.matches(m)]


def entities(ctx: Collaborators, run: RecallState) -> None:
    """When the entity boost is on and the query has terms: a memory whose entities (its speaker, say) the query
    names is multiplied by 1 + `entity_boost`. After the neighbours joined, so a hit's reply (often said by someone
    else) keeps its share of the hit's unboosted score: what the named person said ranks above what was said to
    them."""
    tuning = ctx.tuning
    if tuning.entity_boost <= 0 or not run.scored or not run.terms:
        return
    with run.stage("entities") as st:
        words, factor = set(run.terms), 1.0 + tuning.entity_boost
        lifted = _rescale(run, factor, lambda m: names_an_entity(m, words))
        st.detail = {"factor": factor, "boosted": lifted[:TRACE_CANDIDATES]}


def time_answers(ctx: Collaborators, run: RecallState) -> None:
    """For a query that asks when: every memory that says when or for how long is multiplied by 1 +
    `time_answer_boost`. "When did Nate get his turtles?" is answered by "I've had them for 3 years", not by the
    turns that only talk about the turtles."""
    tuning = ctx.tuning
    if tuning.time_answer_boost <= 0 or not run.scored or not asks_when(run.query.query):
        return
    with run.stage("time_answers") as st:
        factor = 1.0 + tuning.time_answer_boost
        boosted = _rescale(run, factor, lambda m: says_when(m.content))
        st.detail = {"factor": factor, "boosted": boosted[:TRACE_CANDIDATES]}


def questions(ctx: Collaborators, run: RecallState) -> None:
    """When `question_factor` is below 1: every memory that asks a question is multiplied by it. After session
    neighbours joined, so the reply a question lifted (at `reply_factor` of its score) ranks above the question: a
    turn that asks holds less of an answer than the turn that answers it."""
    tuning = ctx.tuning
    if tuning.question_factor >= 1.0 or not run.scored:
        return
    with run.stage("questions") as st:
        demoted = _rescale(run, tuning.question_factor, lambda m: asks_question(m.content))
        st.detail = {"factor": tuning.question_factor, "demoted": demoted[:TRACE_CANDIDATES]}


def _rescale(run: RecallState, factor: float, applies: Callable[[Memory], bool]) -> list[str]:
    """Multiply the score of each memory `applies` to by `factor` and re-sort; the ids changed."""
    changed = [cid for _, cid in run.scored if (m := run.memories.get(cid)) is not None and applies(m)]
    if changed:
        chosen = set(changed)
        run.scored = _by_score([(score * factor if cid in chosen else score, cid) for score, cid in run.scored])
    return changed


def rerank(ctx: Collaborators, run: RecallState) -> None:
    """With a reranker configured, a query that does not skip it, and more than one candidate: the best
    `rerank_candidates` re-ordered by fusing our ranks with the reranker's."""
    reranker, tuning = ctx.reranker, ctx.tuning
    if reranker is None or not run.query.rerank or tuning.rerank_candidates <= 0 or len(run.scored) <= 1:
        return
    with run.stage("rerank") as st:
        st.detail, st.candidates = _rerank(reranker, run.query.query, run.scored, run.memories, tuning)


def _rerank(
    reranker: Reranker,
    query: str,
    scored: Scored,
    memories: Mapping[str, Memory],
    tuning: RecallParameters,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Re-order the best `rerank_candidates` of `scored` in place by fusing our ranks with the reranker's. The
    head keeps its scores in descending order, so a result's score still orders it among the others. If the
    reranker fails, our order stays and the trace says why: a recall never fails for want of a re-ordering.
    Returns the stage's detail and the new order's first rows (the reranker's score, the rank before and after)."""
    head = scored[: tuning.rerank_candidates]
    ids = [cid for _, cid in head]
    detail: dict[str, Any] = {
        "reranker": reranker.name,
        "candidates": len(ids),
        "weight": tuning.rerank_weight,
        "rrf_k": tuning.rerank_rrf_k,
    }
    try:
        relevance = reranker.rerank(query, [memories[cid].content for cid in ids])
        order = fuse_rerank(ids, relevance, tuning.rerank_weight, tuning.rerank_rrf_k)
    except Exception as exc:  # noqa: BLE001 - any reranker failure (network, throttling, access) keeps our order
        logger.warning("reranker %s failed; recall keeps its own order: %s", reranker.name, exc)
        detail["error"] = f"{type(exc).__name__}: {exc}"
        return detail, []
    before = {cid: rank for rank, cid in enumerate(ids, start=1)}
    by_id = dict(zip(ids, relevance, strict=True))
    scored[: len(head)] = list(zip(sorted((sc for sc, _ in head), reverse=True), order, strict=True))
    rows = [
        {"id": cid, "rerank_score": round(by_id[cid], 6), "rank_before": before[cid], "rank_after": rank}
        for rank, cid in enumerate(order[:TRACE_CANDIDATES], start=1)
    ]
    return detail, rows
