"""Fusing the keyword and vector candidate lists into one ranking, with weights that adapt to the query.

Both backends return raw candidate lists; fusion happens here so that SQLite and OpenSearch rank alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rearview.domain.search import Candidate


@dataclass(frozen=True)
class FusionWeights:
    keyword: float
    vector: float
    reason: str


def adaptive_weights(n_terms: int, base_vector_weight: float, has_time_expression: bool) -> FusionWeights:
    """Short queries carry too few words for BM25 to discriminate: lean on vectors. Long, specific queries carry
    rare words (names, places) that BM25 matches exactly: lean on keywords. A time expression's words were moved to
    the time filter, so they take no part here."""
    vector = base_vector_weight
    if n_terms <= 2:
        vector, reason = min(1.0, base_vector_weight + 0.2), f"short query ({n_terms} terms): vectors weigh more"
    elif n_terms >= 8:
        vector, reason = max(0.0, base_vector_weight - 0.1), f"long query ({n_terms} terms): keywords weigh more"
    else:
        reason = f"{n_terms} terms: base weights"
    if has_time_expression:
        reason += "; time words moved to the time filter"
    return FusionWeights(keyword=round(1.0 - vector, 4), vector=round(vector, 4), reason=reason)


def rrf(keyword: Sequence[Candidate], vector: Sequence[Candidate], weights: FusionWeights, k: int) -> dict[str, float]:
    """Weighted reciprocal rank fusion, normalised so that rank 1 in both lists scores 1.0."""
    scores: dict[str, float] = {}
    for weight, ranked in ((weights.keyword, keyword), (weights.vector, vector)):
        for rank, cand in enumerate(ranked, start=1):
            scores[cand.id] = scores.get(cand.id, 0.0) + weight / (k + rank)
    top = (weights.keyword + weights.vector) / (k + 1)
    return {cid: s / top for cid, s in scores.items()} if top > 0 else scores


def weighted_sum(
    keyword: Sequence[Candidate], vector: Sequence[Candidate], weights: FusionWeights, keyword_all: bool = False
) -> dict[str, float]:
    """Min-max normalised scores of each list, weighted and summed (absent from a list = 0 there).

    With `keyword_all` (keyword search returned fewer than asked for, so every memory that holds a query term),
    the keyword list is normalised from 0, not from its lowest score: its last memory still holds a term, and a
    list of two ("Raj" in two memories) must not score the second as if it held none."""
    scores: dict[str, float] = {}
    for weight, ranked, from_zero in ((weights.keyword, keyword, keyword_all), (weights.vector, vector, False)):
        if not ranked:
            continue
        values = [c.score for c in ranked]
        low, high = min(values), max(values)
        if from_zero:
            low = min(0.0, low)
        span = high - low
        for cand in ranked:
            norm = (cand.score - low) / span if span > 0 else 1.0
            scores[cand.id] = scores.get(cand.id, 0.0) + weight * norm
    total = weights.keyword + weights.vector
    return {cid: s / total for cid, s in scores.items()} if total > 0 else scores


def fuse_rerank(head: Sequence[str], rerank_scores: Sequence[float], weight: float, k: int) -> list[str]:
    """`head` (best first) re-ordered by fusing its ranks with the reranker's: each id scores
    (1 - weight) / (k + its rank in `head`) + weight / (k + its rank by `rerank_scores`), ranks from 1. Ties keep
    `head`'s order, so weight 0 changes nothing and weight 1 is the reranker's order."""
    if len(rerank_scores) != len(head):
        raise ValueError(f"a rerank score per candidate: {len(rerank_scores)} scores for {len(head)} candidates")
    by_reranker = sorted(range(len(head)), key=lambda i: (-rerank_scores[i], i))
    their_rank = {i: rank for rank, i in enumerate(by_reranker, start=1)}
    fused = [(1.0 - weight) / (k + i + 1) + weight / (k + their_rank[i]) for i in range(len(head))]
    return [head[i] for i in sorted(range(len(head)), key=lambda i: (-fused[i], i))]
