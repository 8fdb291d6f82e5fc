"""From the parsed query to fused candidates: the embed, search (keyword + vector, or one hybrid call), fresh, fuse
and feedback stages."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np

from rearview.chat_text import plain_chat_text
from rearview.domain.search import Candidate
from rearview.service.recall.background import in_other_script, is_cjk_text
from rearview.service.recall.deadline import out_of_time
from rearview.service.recall.fusion import rrf, weighted_sum
from rearview.service.recall.state import Collaborators, RecallState, candidate_rows, fused_rows
from rearview.text_analysis import strip_names


def embed(ctx: Collaborators, run: RecallState) -> None:
    """The query's vector, embedded without the names so common in the namespace that they say nothing of a topic."""
    with run.stage("embed") as st:
        common = _common_entities(ctx, run.namespace)
        vector_text = strip_names(run.text, common) if common else run.text
        vector_text = plain_chat_text(vector_text)
        run.query_vector = ctx.embedder.embed_queries([vector_text])[0]
        st.detail = {
            "embedder": ctx.embedder.name,
            "dim": ctx.embedder.dim,
            "text": vector_text,
            "common_entities_left_out": sorted(common),
        }


def _common_entities(ctx: Collaborators, namespace: str) -> list[str]:
    """The entities so many of the namespace's episodes name that they say nothing about a query's topic."""
    tuning = ctx.tuning
    if tuning.common_entity_share <= 0:
        return []
    counted = ctx.index.entity_shares(namespace)
    if counted.episodes < tuning.common_entity_min_episodes:
        return []
    return [entity for entity, share in counted.shares.items() if share >= tuning.common_entity_share]


def search(ctx: Collaborators, run: RecallState) -> None:
    """The two primitive candidate lists: in one round trip where the index can, else one search each. Once the
    time budget is spent (a slow embedding), the keyword list alone."""
    if run.terms and ctx.index.traits.round_trip and not out_of_time(ctx, run, "search"):
        _hybrid_search(ctx, run)
    else:
        _keyword_search(ctx, run)
        if out_of_time(ctx, run, "vector search"):
            run.skipped.append("vector search")
        else:
            _vector_search(ctx, run)
    # A local scan returns more than the pool, for feedback to re-score; fusion takes the pool's best.
    run.vector = run.searched[: run.pool]


def _context_weight(ctx: Collaborators, run: RecallState) -> float:
    """The keyword weight of an episode's context: 0 where the namespace's turns are not exchanges (structure)."""
    return ctx.tuning.context_weight if run.refinements.context else 0.0


def _hybrid_search(ctx: Collaborators, run: RecallState) -> None:
    context = _context_weight(ctx, run)
    with run.stage("search") as st:
        run.keyword, run.searched = ctx.index.hybrid_search(
            run.namespace, run.text, run.query_vector, run.filter, run.pool, context
        )
        st.detail = {
            "mode": "hybrid",
            "keyword_count": len(run.keyword),
            "vector_count": len(run.searched),
            "context_weight": context,
        }
        if run.explain:
            st.candidates = candidate_rows(run.keyword) + candidate_rows(run.searched)


def _keyword_search(ctx: Collaborators, run: RecallState) -> None:
    context = _context_weight(ctx, run)
    with run.stage("keyword") as st:
        if run.terms:
            run.keyword = ctx.index.keyword_search(run.namespace, run.text, run.filter, run.pool, context)
        if run.explain:
            st.candidates = candidate_rows(run.keyword)
        st.detail = {"count": len(run.keyword), "context_weight": context}


def _vector_search(ctx: Collaborators, run: RecallState) -> None:
    tuning = ctx.tuning
    with run.stage("vector") as st:
        # With feedback on, an exact scan keeps a wider list for the second pass to re-score (see feedback); a
        # graph (SQLite past its threshold) or a remote index (OpenSearch) is searched again instead, since the
        # width it is asked for is what a search there costs.
        wide = run.pool
        if (
            tuning.feedback_weight > 0
            and run.refinements.feedback
            and ctx.index.scans_exactly(run.namespace, run.filter)
        ):
            wide = max(run.pool, tuning.feedback_pool)
        if wide > run.pool and ctx.index.searches_all(run.namespace, run.filter, wide):
            # The wide list would be every memory the filter passes, which restricts feedback's search to nothing:
            # the pool's best are all fusion takes (a search's best k are the first k of its best k + n).
            run.searched = ctx.index.vector_search(run.namespace, run.query_vector, run.filter, run.pool)
            run.searched_all = True
        else:
            run.searched = ctx.index.vector_search(run.namespace, run.query_vector, run.filter, wide)
            # Fewer than asked for: every memory the filter passes (an exact search returns min(limit, passing)).
            run.searched_all = len(run.searched) < wide
        if run.explain:
            st.candidates = candidate_rows(run.searched)
        st.detail = {"count": len(run.searched)}


def across(ctx: Collaborators, run: RecallState) -> None:
    """For a model that reads across scripts: a multilingual model puts a question nearer every memory in its own
    script than its answer in the other (e5: a Chinese question meets unrelated Chinese memories at 0.85, its
    English answer at 0.80), so the vector list, cut to the pool, holds none of the other script once the namespace
    holds a pool's worth of the query's. A second search with the query moved into the other script (see
    background.in_other_script) finds them; what it adds joins the list scored by the query's own cosine, and
    across_scripts compares them fairly. Not where the list holds every memory the filter passes."""
    if not ctx.tuning.across_search or ctx.embedder.scale.across_margin is None or not run.query_vector.size:
        return
    if len(run.searched) < run.pool:  # the search ran out of memories: every one is in the list already
        return
    if out_of_time(ctx, run, "across"):
        run.skipped.append("across")
        return
    with run.stage("across") as st:
        query_cjk = is_cjk_text(run.query.query)
        moved = in_other_script(ctx.background, run.query_vector, query_cjk)
        found = ctx.index.vector_search(run.namespace, moved, run.filter, run.pool)
        have = {c.id for c in run.vector}
        new = [c for c in found if c.id not in have]
        memories = ctx.store.get_many(run.namespace, [c.id for c in new], shared=True)
        run.memories.update(memories)
        # Only what is in the other script: in a namespace of one script the search finds nothing it should add.
        other = [c for c in new if c.id in memories and is_cjk_text(memories[c.id].content) != query_cjk]
        vectors = ctx.store.get_vectors(run.namespace, [c.id for c in other])
        run.vectors.update(vectors)
        run.across = [c._replace(score=float(vectors[c.id] @ run.query_vector)) for c in other if c.id in vectors]
        run.vector = sorted([*run.vector, *run.across], key=lambda c: -c.score)
        st.detail = {"searched": len(found), "added": len(run.across)}
        if run.explain:
            st.candidates = candidate_rows(run.across)


def fresh(ctx: Collaborators, run: RecallState) -> None:
    """Read-your-writes on an eventually consistent index (only with a freshness window): episodes written within
    the window that the index does not return yet join the vector list, scored in the core by cosine as it is."""
    if ctx.freshness_seconds <= 0:
        return
    with run.stage("fresh") as st:
        run.fresh = _fresh_candidates(ctx, run)
        st.detail = {"window_seconds": ctx.freshness_seconds, "added": len(run.fresh)}
        if run.explain:
            st.candidates = candidate_rows(run.fresh)
        run.vector = sorted([*run.vector, *run.fresh], key=lambda c: -c.score)


def _fresh_candidates(ctx: Collaborators, run: RecallState) -> list[Candidate]:
    seen = {c.id for c in run.keyword} | {c.id for c in run.vector}
    since = ctx.clock.now() - timedelta(seconds=ctx.freshness_seconds)
    recent = [m for m in ctx.store.recent_episodes(run.namespace, since) if m.id not in seen and run.filter.matches(m)]
    if not recent:
        return []
    vectors = ctx.store.get_vectors(run.namespace, [m.id for m in recent])
    return [
        Candidate(id=m.id, layer="episodic", score=float(vectors[m.id] @ run.query_vector))
        for m in recent
        if m.id in vectors
    ]


def fuse(ctx: Collaborators, run: RecallState) -> None:
    """The keyword and vector lists fused into one score per candidate."""
    tuning = ctx.tuning
    with run.stage("fuse") as st:
        run.fused = _fused(ctx, run)
        st.detail = {
            "method": tuning.fusion,
            "rrf_k": tuning.rrf_k,
            "count": len(run.fused),
            "keyword_all": _keyword_all(run),
        }
        if run.explain:
            st.candidates = fused_rows(run.fused)


def _fused(ctx: Collaborators, run: RecallState) -> dict[str, float]:
    vector, across = across_scripts(ctx, run)
    if ctx.tuning.fusion == "rrf":
        fused = rrf(run.keyword, vector, run.weights, ctx.tuning.rrf_k)
    else:
        fused = weighted_sum(run.keyword, vector, run.weights, keyword_all=_keyword_all(run))
    # Keyword search cannot match a memory in another script than the query's: its silence is no vote against it,
    # so such a memory is scored by the vector list alone (fusion divided by both weights; this divides by one).
    blind = across - {c.id for c in run.keyword}
    weights = run.weights
    if blind and weights.vector > 0:
        share = (weights.keyword + weights.vector) / weights.vector
        fused.update({cid: fused[cid] * share for cid in blind if cid in fused})
    return fused


def _keyword_all(run: RecallState) -> bool:
    """Whether the keyword list holds every memory with a query term (fewer than the pool came back): fusion then
    normalises it from 0 (`weighted_sum`)."""
    return len(run.keyword) < run.pool


def across_scripts(ctx: Collaborators, run: RecallState) -> tuple[list[Candidate], set[str]]:
    """The vector list scored by each memory's margin above the query's background of its script (see background),
    best first, and the ids of the memories in another script than the query's. A multilingual model puts every
    pair of one script above every pair across scripts (e5: a Chinese question meets an unrelated Chinese memory
    at 0.85, its English answer at 0.80); the margin, centred across scripts, compares them fairly. Within one
    script it is the cosine's order, and fusion's min-max normalisation leaves the scores as they were, so a
    namespace in one script ranks exactly as by cosine. Only for a model that reads across scripts (its scale states
    a margin across them); the memories read are kept for the rank stage, the vectors of those across scripts in
    `run.vectors`."""
    if not run.vector or not run.query_vector.size or ctx.embedder.scale.across_margin is None:
        return run.vector, set()
    backdrop = ctx.query_background(run, run.scored_with)
    # Read once a recall: the search in the other script and the first fusion read theirs already.
    unread = [c.id for c in run.vector if c.id not in run.memories]
    if unread:
        run.memories.update(ctx.store.get_many(run.namespace, unread, shared=True))
    script = {c.id: is_cjk_text(run.memories[c.id].content) for c in run.vector if c.id in run.memories}
    across = {cid for cid, s in script.items() if s != backdrop.query_cjk}
    missing = [cid for cid in across if cid not in run.vectors]
    if missing:
        run.vectors.update(ctx.store.get_vectors(run.namespace, missing))
    fair = [
        c._replace(score=backdrop.margin(c.score, script[c.id], run.vectors.get(c.id)))
        for c in run.vector
        if c.id in script
    ]
    return sorted(fair, key=lambda c: -c.score), across


def feedback(ctx: Collaborators, run: RecallState) -> None:
    """Pseudo-relevance feedback (Rocchio), when its weight is above 0 and the first pass found anything: move the
    query vector towards the best first-pass results and search again. A question whose answer spans several
    memories finds the ones that share little wording with the question but much with the first answers."""
    tuning = ctx.tuning
    if tuning.feedback_weight <= 0 or not run.fused or not run.refinements.feedback:
        return
    with run.stage("feedback") as st:
        top_ids = [cid for cid, _ in sorted(run.fused.items(), key=lambda kv: -kv[1])[: tuning.feedback_docs]]
        top_vectors = ctx.store.get_vectors(run.namespace, top_ids)
        # The second search re-scores the first one's wider list where there is one (an exact scan): the rows to
        # read drop from the namespace to that list, and what the moved vector is after lies among the question's
        # best by cosine (on LoCoMo, a list of 100 leaves every conversation's R@10 as the whole namespace's).
        widened = len(run.searched) > run.pool and not run.searched_all
        if top_vectors:
            centroid = np.mean(np.stack(list(top_vectors.values())), axis=0)
            _search_again(ctx, run, centroid, widened)
        st.detail = {
            "from": top_ids,
            "weight": tuning.feedback_weight,
            "rescored": len(run.searched) if widened else "namespace",
        }
        if run.explain:
            st.candidates = fused_rows(run.fused)


def _search_again(ctx: Collaborators, run: RecallState, centroid: np.ndarray, widened: bool) -> None:
    """The vector search with the query vector moved towards `centroid`, fused again with the keyword list."""
    moved = run.query_vector + ctx.tuning.feedback_weight * centroid
    moved = moved / (np.linalg.norm(moved) or 1.0)
    # The wide list restricts the second search unless it holds every memory the filter passes already (a
    # namespace no larger than the list): then the restriction changes nothing, and costs a lookup per id.
    within = replace(run.filter, ids=tuple(c.id for c in run.searched)) if widened else run.filter
    # The not-yet-indexed episodes stay candidates of the second search as of the first.
    again = ctx.index.vector_search(run.namespace, moved, within, run.pool)
    # What the search in the other script added stays, scored by the moved vector as the rest.
    found = {c.id for c in again}
    kept = [c._replace(score=float(run.vectors[c.id] @ moved)) for c in run.across if c.id not in found]
    run.vector = sorted([*again, *kept, *run.fresh], key=lambda c: -c.score)
    run.scored_with = moved
    run.fused = _fused(ctx, run)
