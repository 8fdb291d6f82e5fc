"""Working memory in recall: `layers` naming 'working' searches the scratch state of the session `session_id` names.

Each unexpired key is read as the text `key: value` (a string value as it is, any other as compact JSON) and
judged by the absolute relevance the relevance stage judges memories by: the better of its cosine with the query
and the share of the query's terms it holds (times `keyword_relevance`). A key under the relevance floor is left
out, so a session's unrelated scratch never answers a question. The keys that pass are ranked by it.

With the stored layers asked too, the two rankings are fused by reciprocal rank (the pipeline's scores and these
are on different scales; their orders are not): a hit's score is then its fused score, the list is cut to `top_k`
and to the token budget again. Working memory is never recorded as accessed (it is not a memory).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from rearview.domain.recall import RecallHit, RecallQuery
from rearview.domain.working import WorkingEntry
from rearview.errors import InvalidInput
from rearview.service.recall.background import is_cjk_text
from rearview.service.recall.relevance import readable, text_term_share
from rearview.service.recall.results import cut_to_budget
from rearview.service.recall.state import Collaborators
from rearview.text_analysis import query_terms

# The most keys of one session that a recall reads (the most recently written): working memory is a task's scratch,
# and each key is embedded per recall.
MAX_WORKING_KEYS = 200
# What of a key's text is embedded and returned.
MAX_WORKING_TEXT_CHARS = 2000
# Reciprocal rank fusion's constant (Cormack et al.): ranks deep in one list weigh little against the other's head.
RRF_K = 60


def asks_working(query: RecallQuery) -> bool:
    """Whether the recall searches working memory; InvalidInput (on `session_id`) when it names no session."""
    if "working" not in query.layers:
        return False
    if query.session_id is None:
        raise InvalidInput(
            "session_id: layers 'working' searches a session's working memory; name the session", field="session_id"
        )
    return True


def working_text(key: str, value: Any) -> str:
    """A key and its value as the text recall searches and returns."""
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return f"{key}: {shown}"[:MAX_WORKING_TEXT_CHARS]


def working_hits(
    ctx: Collaborators,
    namespace: str,
    query: RecallQuery,
    query_vector: np.ndarray | None,
    now: datetime,
) -> list[RecallHit]:
    """The session's relevant keys, best first (at most `top_k`); `query_vector`: the recall's, when it made one."""
    assert query.session_id is not None
    entries = ctx.store.get_working(namespace, query.session_id, now)
    entries = sorted(entries, key=lambda e: e.updated_at, reverse=True)[:MAX_WORKING_KEYS]
    if not entries:
        return []
    texts = [working_text(e.key, e.value) for e in entries]
    given = query_vector is not None and query_vector.size
    vector = query_vector if given else ctx.embedder.embed_queries([query.query])[0]
    vectors = np.asarray(ctx.embedder.embed(texts))
    cosines = vectors @ np.asarray(vector)
    terms = query_terms(query.query)
    # Relevant as a stored memory is (the relevance stage): its margin above the query's background reaches the
    # embedder's floor, or it holds `keyword_relevance` of the query's terms; scored by that strength.
    backdrop = ctx.background.for_query(
        np.asarray(vector), is_cjk_text(query.query), across=ctx.embedder.scale.across_margin is not None
    )
    query_script = backdrop.query_cjk
    share = ctx.tuning.keyword_relevance
    scored: list[tuple[float, WorkingEntry, str]] = []
    for entry, text, cosine, entry_vector in zip(entries, texts, cosines.tolist(), vectors, strict=True):
        script = is_cjk_text(text)
        floor = ctx.margin_floor(script == query_script)
        above = backdrop.margin(float(cosine), script, entry_vector)
        meaning = above / floor if floor > 0 and readable(ctx, script, query_script) else 0.0
        words = text_term_share(terms, text) / share if share > 0 else 0.0
        relevance = max(meaning, words)
        if relevance >= 1.0:
            scored.append((relevance, entry, text))
    scored.sort(key=lambda item: -item[0])
    return [
        RecallHit(
            id=entry.key,
            layer="working",
            content=text,
            score=round(relevance, 6),
            occurred_at=entry.updated_at,
            session_id=entry.session_id,
            expires_at=entry.expires_at,
        )
        for relevance, entry, text in scored[: query.top_k]
    ]


def fused(
    stored: Sequence[RecallHit], working: Sequence[RecallHit], top_k: int, budget: int
) -> tuple[list[RecallHit], bool]:
    """The stored layers' hits and the working keys in one ranking (reciprocal rank fusion), cut to `top_k` and
    `budget` tokens; and whether the budget cut any."""
    if not working:
        return list(stored), False
    scores = [(1.0 / (RRF_K + rank), rank, order, hit) for order, ranked in enumerate((stored, working))
              for rank, hit in enumerate(ranked, 1)]  # fmt: skip
    # Equal ranks tie: the stored layers' first.
    scores.sort(key=lambda item: (-item[0], item[1], item[2]))
    ordered = [hit.model_copy(update={"score": round(score, 6)}) for score, _, _, hit in scores]
    head = ordered[:top_k]
    by_id = {str(i): hit for i, hit in enumerate(head)}
    kept, truncated, shortened = cut_to_budget(list(by_id), lambda i: by_id[i].content, budget)
    out = [by_id[i] for i in kept]
    if shortened is not None and out:
        out[0] = out[0].model_copy(update={"content": shortened})
    return out, truncated
