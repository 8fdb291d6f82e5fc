"""Recall, the product: filters -> keyword and vector candidates -> fusion (-> pseudo-relevance feedback) -> decay
and boosts -> session neighbours -> named entities, time answers, questions -> collapse -> token budget -> the
no-relevant-memory verdict. Every stage is timed and, with `explain`, reported."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.namespaces import validate_namespace
from rearview.domain.recall import RecallHit, RecallQuery, RecallResponse, RecallTrace, StageTrace
from rearview.domain.search import Candidate, MemoryFilter
from rearview.ports import Clock, Embedder, MemoryStore, Reranker, SearchIndex
from rearview.service.fusion import FusionWeights, adaptive_weights, fuse_rerank, rrf, weighted_sum
from rearview.service.ranking import (
    collapse_near_duplicates,
    cut_to_budget,
    final_score,
    names_an_entity,
    session_factors,
)
from rearview.service.time_expressions import parse_time_range, strip_time_expression
from rearview.settings import RecallTuning
from rearview.text_analysis import (
    asks_question,
    asks_when,
    is_vague_term,
    mentions_time,
    query_terms,
    strip_names,
    tokens,
)

# Candidates shown per stage in an explain trace (the full lists can be hundreds long).
_TRACE_CANDIDATES = 25

logger = logging.getLogger(__name__)


class _Tracer:
    def __init__(self) -> None:
        self.stages: list[StageTrace] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[StageTrace]:
        trace = StageTrace(stage=name, millis=0.0)
        start = time.perf_counter()
        try:
            yield trace
        finally:
            trace.millis = round((time.perf_counter() - start) * 1000, 3)
            self.stages.append(trace)


class RecallService:
    def __init__(
        self,
        store: MemoryStore,
        index: SearchIndex,
        embedder: Embedder,
        clock: Clock,
        tuning: RecallTuning,
        relevance_floor: float,
        freshness_seconds: int = 0,
        reranker: Reranker | None = None,
    ) -> None:
        self._store = store
        self._index = index
        self._embedder = embedder
        self._clock = clock
        self._tuning = tuning
        self._floor = tuning.min_relevance if tuning.min_relevance is not None else relevance_floor
        # 0 for an index that is consistent with the store (SQLite: same transaction); the AWS index lags.
        self._freshness_seconds = freshness_seconds
        # Optional: re-orders the best candidates after ranking (see the rerank stage).
        self._reranker = reranker

    @property
    def reranker(self) -> Reranker | None:
        """The model that re-orders the best candidates, if one is configured."""
        return self._reranker

    @property
    def relevance_floor(self) -> float:
        """Below this relevance of its best candidate, a recall answers no_relevant_memory."""
        return self._floor

    def recall(self, namespace: str, q: RecallQuery) -> RecallResponse:
        validate_namespace(namespace)
        started = time.perf_counter()
        tuning = self._tuning
        tracer = _Tracer()
        as_of = q.as_of or self._clock.now()

        with tracer.stage("parse") as st:
            since, until, text, time_range = q.since, q.until, q.query, None
            parsed = parse_time_range(q.query, as_of) if q.parse_time and not (q.since or q.until) else None
            boost_range: tuple[datetime, datetime] | None = None
            if parsed is not None:
                text = strip_time_expression(q.query, parsed) or q.query
                topical = not all(is_vague_term(t) for t in query_terms(text))
                if tuning.time_expression_boost > 0 and topical:
                    # "When did we go camping in June?": the words name the event, and "June" may be when it
                    # happened rather than when it was told; memories in the range rank higher, others stay.
                    boost_range = (parsed.since, parsed.until)
                else:
                    # "What happened yesterday?" asks for the range itself: a filter.
                    since, until = parsed.since, parsed.until
                time_range = {
                    "expression": parsed.expression,
                    "since": parsed.since.isoformat(),
                    "until": parsed.until.isoformat(),
                    "applied_as": "boost" if boost_range else "filter",
                }
            terms = query_terms(text)
            weights = adaptive_weights(len(terms), tuning.vector_weight, parsed is not None)
            flt = MemoryFilter(
                layers=tuple(dict.fromkeys(q.layers)),
                since=since,
                until=until,
                tags=tuple(q.tags),
                event_types=tuple(q.event_types),
                include_superseded=q.include_superseded,
            )
            st.detail = {
                "keyword_text": text,
                "terms": terms,
                "time_range": time_range,
                "since": since.isoformat() if since else None,
                "until": until.isoformat() if until else None,
                "weights": {"keyword": weights.keyword, "vector": weights.vector, "reason": weights.reason},
            }

        pool = max(tuning.candidates_per_list, q.top_k * 3)
        with tracer.stage("embed") as st:
            common = self._common_entities(namespace)
            vector_text = strip_names(text, common) if common else text
            qvec = self._embedder.embed([vector_text])[0]
            st.detail = {
                "embedder": self._embedder.name,
                "dim": self._embedder.dim,
                "text": vector_text,
                "common_entities_left_out": sorted(common),
            }
        keyword, searched = self._search(namespace, text, terms, qvec, flt, pool, tracer)
        # A local scan returns more than the pool, for feedback to re-score; fusion takes the pool's best.
        vector = searched[:pool]
        fresh: list[Candidate] = []
        if self._freshness_seconds > 0:
            with tracer.stage("fresh") as st:
                fresh = self._fresh_candidates(namespace, qvec, terms, flt, keyword, vector)
                st.detail = {"window_seconds": self._freshness_seconds, "added": len(fresh)}
                st.candidates = _candidate_rows(fresh)
                vector = sorted([*vector, *fresh], key=lambda c: -c.score)

        with tracer.stage("fuse") as st:
            fused = self._fuse(keyword, vector, weights)
            st.detail = {"method": tuning.fusion, "rrf_k": tuning.rrf_k, "count": len(fused)}
            st.candidates = _fused_rows(fused)

        if tuning.feedback_weight > 0 and fused:
            with tracer.stage("feedback") as st:
                # Pseudo-relevance feedback (Rocchio): move the query vector towards the best first-pass results
                # and search again; a question whose answer spans several memories finds the ones that share
                # little wording with the question but much with the first answers.
                top_ids = [cid for cid, _ in sorted(fused.items(), key=lambda kv: -kv[1])[: tuning.feedback_docs]]
                top_vectors = self._store.get_vectors(namespace, top_ids)
                # The second search re-scores the first one's wider list where there is one (a local scan): a
                # memory that is not among the question's best `feedback_pool` by cosine is not what the moved
                # vector is after, and the rows to read drop from the namespace to that list.
                widened = len(searched) > pool
                if top_vectors:
                    centroid = np.mean(np.stack(list(top_vectors.values())), axis=0)
                    moved = qvec + tuning.feedback_weight * centroid
                    moved = moved / (np.linalg.norm(moved) or 1.0)
                    within = replace(flt, ids=tuple(c.id for c in searched)) if widened else flt
                    # The not-yet-indexed episodes stay candidates of the second search as of the first.
                    vector = sorted(
                        [*self._index.vector_search(namespace, moved, within, pool), *fresh], key=lambda c: -c.score
                    )
                    fused = self._fuse(keyword, vector, weights)
                st.detail = {
                    "from": top_ids,
                    "weight": tuning.feedback_weight,
                    "rescored": len(searched) if widened else "namespace",
                }
                st.candidates = _fused_rows(fused)

        with tracer.stage("rank") as st:
            memories = self._store.get_many(namespace, list(fused))
            scored: list[tuple[float, str]] = []
            factors: dict[str, dict[str, float]] = {}
            by_session = session_factors(memories, fused, tuning)
            for cid, fscore in fused.items():
                memory = memories.get(cid)
                if memory is None:  # deleted between index and store read (eventual consistency on AWS)
                    continue
                score, factors[cid] = final_score(memory, fscore, as_of, tuning)
                session = by_session.get(cid, 1.0)
                in_range = boost_range is not None and boost_range[0] <= memory.occurred_at < boost_range[1]
                score *= session * (1.0 + tuning.time_expression_boost if in_range else 1.0)
                factors[cid]["session"] = round(session, 4)
                scored.append((score, cid))
            scored.sort(key=lambda sc: (-sc[0], sc[1]))
            st.candidates = [{"id": cid, "score": round(s, 6), **factors[cid]} for s, cid in scored[:_TRACE_CANDIDATES]]

        if tuning.neighbour_hits > 0 and scored:
            with tracer.stage("neighbours") as st:
                added = self._add_session_neighbours(namespace, scored, memories, flt, tuning)
                st.detail = {"hits": tuning.neighbour_hits, "factor": tuning.neighbour_factor, "added": added}

        if tuning.entity_boost > 0 and scored and terms:
            with tracer.stage("entities") as st:
                # After the neighbours joined, so a hit's reply (often said by someone else) keeps its share of
                # the hit's unboosted score: the boost ranks what the named person said above what was said to them.
                words, factor = set(terms), 1.0 + tuning.entity_boost
                lifted = _rescale(scored, memories, factor, lambda m: names_an_entity(m, words))
                st.detail = {"factor": factor, "boosted": lifted[:_TRACE_CANDIDATES]}

        if tuning.time_answer_boost > 0 and scored and asks_when(q.query):
            with tracer.stage("time_answers") as st:
                boosted = _boost_time_answers(scored, memories, 1.0 + tuning.time_answer_boost)
                st.detail = {"factor": 1.0 + tuning.time_answer_boost, "boosted": boosted[:_TRACE_CANDIDATES]}

        if tuning.question_factor < 1.0 and scored:
            with tracer.stage("questions") as st:
                demoted = _demote_questions(scored, memories, tuning.question_factor)
                st.detail = {"factor": tuning.question_factor, "demoted": demoted[:_TRACE_CANDIDATES]}

        if self._reranker is not None and q.rerank and tuning.rerank_candidates > 0 and len(scored) > 1:
            with tracer.stage("rerank") as st:
                st.detail, st.candidates = _rerank(self._reranker, q.query, scored, memories, tuning)

        ranked_ids = [cid for _, cid in scored]
        final_scores = {cid: s for s, cid in scored}
        head = ranked_ids[: max(q.top_k * 3, q.top_k + 10)]
        vectors = self._store.get_vectors(namespace, head)

        with tracer.stage("collapse") as st:
            collapsed = collapse_near_duplicates(head, vectors, tuning.collapse_threshold)
            top = collapsed.kept[: q.top_k]
            st.detail = {"threshold": tuning.collapse_threshold, "folded": collapsed.folded}

        with tracer.stage("relevance") as st:
            # "What happened yesterday?" asks for the time range itself: whatever lies in it is relevant.
            time_only = (since is not None or until is not None) and all(is_vague_term(t) for t in terms)
            relevance = {
                cid: 1.0 if time_only else self._relevance(memories[cid], vectors.get(cid), qvec, terms) for cid in top
            }
            best = max(relevance.values(), default=0.0)
            no_memory = best < self._floor
            st.detail = {
                "best": round(best, 4),
                "floor": self._floor,
                "time_only_query": time_only,
                "no_relevant_memory": no_memory,
            }
            st.candidates = [{"id": cid, "relevance": round(r, 4)} for cid, r in relevance.items()]
            if no_memory:
                top = []

        with tracer.stage("budget") as st:
            budget = q.token_budget or tuning.default_token_budget
            kept, truncated, shortened = cut_to_budget(top, lambda cid: memories[cid].content, budget)
            st.detail = {"budget": budget, "kept": len(kept), "dropped": len(top) - len(kept)}

        hits = [_hit(memories[cid], final_scores[cid], collapsed.folded.get(cid, [])) for cid in kept]
        if shortened is not None and hits:
            hits[0].content = shortened

        now = self._clock.now()
        if hits:
            self._store.record_access(namespace, [h.id for h in hits], now)
        self._store.record_recall(namespace, hit=bool(hits), at=now)

        working = None
        if q.session_id:
            working = {e.key: e.value for e in self._store.get_working(namespace, q.session_id, now)}

        trace = None
        if q.explain:
            trace = RecallTrace(
                query=q.query,
                as_of=as_of,
                stages=tracer.stages,
                total_millis=round((time.perf_counter() - started) * 1000, 3),
            )
        return RecallResponse(
            results=hits,
            working=working,
            no_relevant_memory=no_memory,
            truncated=truncated,
            time_range=time_range,
            trace=trace,
        )

    def _search(
        self,
        namespace: str,
        text: str,
        terms: list[str],
        qvec: np.ndarray,
        flt: MemoryFilter,
        pool: int,
        tracer: _Tracer,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """The two primitive candidate lists: in one round trip where the index can, else one search each."""
        context = self._tuning.context_weight
        if terms and self._index.traits.round_trip:
            with tracer.stage("search") as st:
                keyword, vector = self._index.hybrid_search(namespace, text, qvec, flt, pool, context)
                st.detail = {
                    "mode": "hybrid",
                    "keyword_count": len(keyword),
                    "vector_count": len(vector),
                    "context_weight": context,
                }
                st.candidates = _candidate_rows(keyword) + _candidate_rows(vector)
            return keyword, vector
        with tracer.stage("keyword") as st:
            keyword = self._index.keyword_search(namespace, text, flt, pool, context) if terms else []
            st.candidates = _candidate_rows(keyword)
            st.detail = {"count": len(keyword), "context_weight": context}
        with tracer.stage("vector") as st:
            # With feedback on, a local scan keeps a wider list for the second pass to re-score (see feedback); a
            # remote index (OpenSearch) runs its second k-NN search as an ANN query instead.
            local = self._index.traits.local_scan
            wide = max(pool, self._tuning.feedback_pool) if local and self._tuning.feedback_weight > 0 else pool
            vector = self._index.vector_search(namespace, qvec, flt, wide)
            st.candidates = _candidate_rows(vector)
            st.detail = {"count": len(vector)}
        return keyword, vector

    def _fuse(self, keyword: list[Candidate], vector: list[Candidate], weights: FusionWeights) -> dict[str, float]:
        if self._tuning.fusion == "rrf":
            return rrf(keyword, vector, weights, self._tuning.rrf_k)
        return weighted_sum(keyword, vector, weights)

    def _common_entities(self, namespace: str) -> list[str]:
        """The entities so many of the namespace's episodes name that they say nothing about a query's topic."""
        tuning = self._tuning
        if tuning.common_entity_share <= 0:
            return []
        counted = self._index.entity_shares(namespace)
        if counted.episodes < tuning.common_entity_min_episodes:
            return []
        return [entity for entity, share in counted.shares.items() if share >= tuning.common_entity_share]

    def _add_session_neighbours(
        self,
        namespace: str,
        scored: list[tuple[float, str]],
        memories: dict[str, Memory],
        flt: MemoryFilter,
        tuning: RecallTuning,
    ) -> list[str]:
        """The turns just before and after each of the best episodic hits in their session join the ranking at a
        share of the hit's score: the answer to a question is often the reply to the turn that matched it, so the
        reply to a hit that asks a question gets the larger `reply_factor`."""
        best: dict[str, float] = {cid: score for score, cid in scored}
        added: list[str] = []
        changed = False
        for score, cid in list(scored[: tuning.neighbour_hits]):
            hit = memories.get(cid)
            if not isinstance(hit, Episode) or not hit.session_id:
                continue
            around = MemoryFilter(
                layers=("episodic",),
                session_id=hit.session_id,
                since=hit.occurred_at - timedelta(hours=6),
                until=hit.occurred_at + timedelta(hours=6),
            )
            turns = self._store.list_memories(namespace, around)
            position = next((i for i, m in enumerate(turns) if m.id == cid), None)
            if position is None:
                continue
            reply = tuning.reply_factor if asks_question(hit.content) else tuning.neighbour_factor
            around_hit = [(m, tuning.neighbour_factor) for m in turns[max(0, position - 1) : position]]
            around_hit += [(m, reply) for m in turns[position + 1 : position + 2]]
            for neighbour, factor in around_hit:
                if not flt.matches(neighbour):
                    continue
                value = score * factor
                if value > best.get(neighbour.id, 0.0):
                    if neighbour.id not in best:
                        added.append(neighbour.id)
                    best[neighbour.id] = value
                    memories[neighbour.id] = neighbour
                    changed = True
        if changed:
            scored[:] = sorted(((v, k) for k, v in best.items()), key=lambda sc: (-sc[0], sc[1]))
        return added

    def _fresh_candidates(
        self,
        namespace: str,
        qvec: np.ndarray,
        terms: list[str],
        flt: MemoryFilter,
        keyword: list[Candidate],
        vector: list[Candidate],
    ) -> list[Candidate]:
        """Read-your-writes on an eventually consistent index: episodes written within the freshness window that
        the index does not return yet, scored in the core by cosine (as the vector list is)."""
        seen = {c.id for c in keyword} | {c.id for c in vector}
        since = self._clock.now() - timedelta(seconds=self._freshness_seconds)
        recent = [m for m in self._store.recent_episodes(namespace, since) if m.id not in seen and flt.matches(m)]
        if not recent:
            return []
        vectors = self._store.get_vectors(namespace, [m.id for m in recent])
        return [
            Candidate(id=m.id, layer="episodic", score=float(vectors[m.id] @ qvec)) for m in recent if m.id in vectors
        ]

    def _relevance(self, memory: Memory, vec: np.ndarray | None, qvec: np.ndarray, terms: list[str]) -> float:
        """An absolute relevance (unlike fused scores, which are rank-based): the best of the cosine with the query
        and the share of query terms the memory contains."""
        cosine = float(vec @ qvec) if vec is not None else 0.0
        coverage = 0.0
        if terms:
            words = set(tokens(memory.content + " " + " ".join(memory.tags)))
            coverage = sum(1 for t in terms if t in words) / len(terms)
        return max(cosine, self._tuning.keyword_relevance * coverage)


def _rerank(
    reranker: Reranker,
    query: str,
    scored: list[tuple[float, str]],
    memories: Mapping[str, Memory],
    tuning: RecallTuning,
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
        for rank, cid in enumerate(order[:_TRACE_CANDIDATES], start=1)
    ]
    return detail, rows


def _fused_rows(fused: dict[str, float]) -> list[dict[str, Any]]:
    best = sorted(fused.items(), key=lambda kv: -kv[1])[:_TRACE_CANDIDATES]
    return [{"id": cid, "fused": round(score, 6)} for cid, score in best]


def _boost_time_answers(scored: list[tuple[float, str]], memories: Mapping[str, Memory], factor: float) -> list[str]:
    """For a query that asks when: multiply the score of every memory that says when or for how long by `factor`
    and re-sort; the boosted ids. "When did Nate get his turtles?" is answered by "I've had them for 3 years",
    not by the turns that only talk about the turtles."""
    return _rescale(scored, memories, factor, lambda m: mentions_time(m.content))


def _rescale(
    scored: list[tuple[float, str]], memories: Mapping[str, Memory], factor: float, applies: Callable[[Memory], bool]
) -> list[str]:
    """Multiply the score of each memory `applies` to by `factor`, re-sort `scored` in place; the ids changed."""
    changed = [cid for _, cid in scored if (m := memories.get(cid)) is not None and applies(m)]
    if changed:
        chosen = set(changed)
        scored[:] = sorted(
            ((score * factor if cid in chosen else score, cid) for score, cid in scored),
            key=lambda sc: (-sc[0], sc[1]),
        )
    return changed


def _demote_questions(scored: list[tuple[float, str]], memories: Mapping[str, Memory], factor: float) -> list[str]:
    """Multiply the score of every memory that asks a question by `factor` and re-sort; the demoted ids.

    Runs after session neighbours joined, so the reply a question lifted (at `reply_factor` of its score) ranks
    above the question: a turn that asks holds less of an answer than the turn that answers it.
    """
    return _rescale(scored, memories, factor, lambda m: asks_question(m.content))


def _candidate_rows(cands: list[Candidate]) -> list[dict[str, Any]]:
    return [
        {"rank": i, "id": c.id, "layer": c.layer, "score": round(c.score, 6)}
        for i, c in enumerate(cands[:_TRACE_CANDIDATES], start=1)
    ]


def _hit(memory: Memory, score: float, folded: list[str]) -> RecallHit:
    occurred: datetime = memory.occurred_at
    if isinstance(memory, Fact):
        return RecallHit(
            id=memory.id,
            layer="semantic",
            content=memory.content,
            score=round(score, 6),
            occurred_at=occurred,
            tags=memory.tags,
            provenance=memory.provenance,
            dimension=memory.dimension,
            confidence=memory.confidence,
            status=memory.status,
            collapsed=folded,
        )
    return RecallHit(
        id=memory.id,
        layer="episodic",
        content=memory.content,
        score=round(score, 6),
        occurred_at=occurred,
        tags=memory.tags,
        provenance=[memory.id],
        event_type=memory.event_type,
        entities=memory.entities,
        session_id=memory.session_id,
        collapsed=folded,
    )
