"""From the ranking to the results: the collapse (near-duplicates fold into the best) and budget (the token budget)
stages, and the hits a caller gets (the relevance verdict between them is `relevance`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from rearview.domain.memory import Fact, Memory
from rearview.domain.recall import RecallHit
from rearview.service.recall.parameters import RecallParameters
from rearview.service.recall.scoring import is_stale
from rearview.service.recall.state import Collaborators, RecallState
from rearview.text_analysis import estimate_tokens


def collapse(ctx: Collaborators, run: RecallState) -> None:
    """The head of the ranking without near-duplicates, cut to top_k."""
    q = run.query
    head = [cid for _, cid in run.scored][: max(q.top_k * 3, q.top_k + 10)]
    # Read before the timed entry starts: collapse's time in a trace is the folding alone.
    run.vectors = ctx.store.get_vectors(run.namespace, head)
    with run.stage("collapse") as st:
        collapsed = collapse_near_duplicates(head, run.vectors, ctx.tuning.collapse_threshold)
        run.folded = collapsed.folded
        run.top = collapsed.kept[: q.top_k]
        st.detail = {"threshold": ctx.tuning.collapse_threshold, "folded": collapsed.folded}


def budget(ctx: Collaborators, run: RecallState) -> None:
    """The results that fit in the token budget."""
    with run.stage("budget") as st:
        limit = run.query.token_budget or ctx.tuning.default_token_budget
        run.kept, run.truncated, run.shortened = cut_to_budget(run.top, lambda cid: run.memories[cid].content, limit)
        st.detail = {"budget": limit, "kept": len(run.kept), "dropped": len(run.top) - len(run.kept)}


def hits(run: RecallState, tuning: RecallParameters) -> list[RecallHit]:
    """The results as the caller gets them: the memories kept, with their final scores and what folded into them."""
    final_scores = {cid: s for s, cid in run.scored}
    out = [hit_of(run.memories[cid], final_scores[cid], run.folded.get(cid, []), run.as_of, tuning) for cid in run.kept]
    for hit in out:
        if sources := run.learned_from.get(hit.id):
            hit.folded_sources, hit.folded_sources_count = list(sources), len(sources)
    if run.shortened is not None and out:
        out[0].content = run.shortened
    return out


@dataclass
class Collapsed:
    kept: list[str]
    folded: dict[str, list[str]] = field(default_factory=dict)


def collapse_near_duplicates(ranked_ids: Sequence[str], vectors: dict[str, np.ndarray], threshold: float) -> Collapsed:
    """Keep the best of each group of near-duplicates (cosine >= threshold); remember what was folded into it."""
    result = Collapsed(kept=[])
    dim = next((v.shape[0] for v in vectors.values()), 0)
    kept_matrix = np.empty((len(ranked_ids), dim), dtype=np.float32)  # rows of kept memories that have a vector
    kept_with_vector: list[str] = []
    for memory_id in ranked_ids:
        vec = vectors.get(memory_id)
        if vec is not None and kept_with_vector:
            sims = kept_matrix[: len(kept_with_vector)] @ vec
            best = int(np.argmax(sims))
            if float(sims[best]) >= threshold:
                result.folded.setdefault(kept_with_vector[best], []).append(memory_id)
                continue
        result.kept.append(memory_id)
        if vec is not None:
            kept_matrix[len(kept_with_vector)] = vec
            kept_with_vector.append(memory_id)
    return result


def cut_to_budget(ids: Sequence[str], text_of: Callable[[str], str], budget: int) -> tuple[list[str], bool, str | None]:
    """The longest prefix of `ids` whose texts fit in `budget` tokens; (ids, truncated, shortened text of the first).

    If even the first result does not fit, it is shortened to the budget rather than returning nothing.
    """
    kept: list[str] = []
    used = 0
    for memory_id in ids:
        cost = estimate_tokens(text_of(memory_id))
        if used + cost > budget:
            if not kept:
                text = text_of(memory_id)
                ratio = budget / max(cost, 1)
                return [memory_id], True, text[: max(1, int(len(text) * ratio) - 1)] + "…"
            return kept, True, None
        kept.append(memory_id)
        used += cost
    return kept, False, None


def hit_of(memory: Memory, score: float, folded: list[str], as_of: datetime, tuning: RecallParameters) -> RecallHit:
    shared: dict[str, Any] = {
        "id": memory.id,
        "content": memory.content,
        "score": round(score, 6),
        "occurred_at": memory.occurred_at,
        "tags": memory.tags,
        "entities": memory.entities,
        "collapsed": folded,
        "metadata": memory.metadata,
        "source": memory.source,
        "expires_at": memory.expires_at,
    }
    if isinstance(memory, Fact):
        return RecallHit(
            layer="semantic",
            provenance=memory.provenance,
            dimension=memory.dimension,
            confidence=memory.confidence_at(as_of, tuning.confidence_half_life_days),
            stale=is_stale(memory, as_of, tuning),
            status=memory.status,
            kind=memory.kind,
            facets=memory.facets,
            # Its own: the memory may be the store's (recall reads them shared), and a caller may change a hit.
            evidence=memory.evidence.model_copy() if memory.evidence is not None else None,
            **shared,
        )
    return RecallHit(
        layer="episodic",
        provenance=[memory.id],
        event_type=memory.event_type,
        session_id=memory.session_id,
        parent_id=memory.parent_id,
        outcome=memory.outcome,
        outcome_status=memory.outcome_status,
        occurrences=memory.occurrences() if memory.confirmations > 1 else None,
        **shared,
    )
