"""What the query's forms (see `query_forms`) do in recall: the parse stage reads them (`read_forms`), the exclude
stage leaves out the memories about what the query excludes, and the latest_first stage ranks the most recent of the
relevant episodes first for a "last time" query.

"Relevant" is the relevance stage's measure (the strongest of a memory's margin by meaning, the weighted share of
the query's terms it holds and a name) among the head of the ranking, at least `latest_match_share` of the best
one's: recency decides among the memories that match about as well as the best, never lifts one that barely
matches.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.recall import Exclusion, QueryForm
from rearview.service.recall.query_forms import Excluded, holds_terms, read_query_forms, requested_exclusion, sets_apart
from rearview.service.recall.relevance import evidence_of
from rearview.service.recall.state import TRACE_CANDIDATES, Collaborators, RecallState


def read_forms(run: RecallState) -> None:
    """Part of the parse stage: take the forms' words out of the text to search, note the forms, and add the
    phrases the caller gave in `exclude`."""
    forms = read_query_forms(run.text)
    run.text = forms.text or run.text
    run.last_time = forms.last_time
    given = [requested_exclusion(phrase) for phrase in run.query.exclude if phrase.strip()]
    unique = {e.phrase.lower(): e for e in [*forms.exclusions, *given]}
    run.exclusions = list(unique.values())


def forms_detail(run: RecallState) -> dict[str, Any]:
    """The parse stage's trace of the forms read."""
    return {
        "form": "last_time" if run.last_time else None,
        "last_time_words": run.last_time,
        "exclude": [
            {"phrase": e.phrase, "source": e.source, "refers_back": e.refers_back, "terms": list(e.terms)}
            for e in run.exclusions
        ],
    }


def query_form(run: RecallState) -> QueryForm | None:
    """The response's account of the forms, None when the query used none."""
    if run.last_time is None and not run.exclusions:
        return None
    exclusions = [
        Exclusion(phrase=e.phrase, source=e.source, refers_back=e.refers_back, left_out=run.left_out.get(e.phrase, []))
        for e in run.exclusions
    ]
    return QueryForm(last_time=run.last_time, exclusions=exclusions)


def exclude(ctx: Collaborators, run: RecallState) -> None:
    """With exclusions: leave out the memories about each excluded thing. A phrase that names something leaves out
    the memories whose text (with their tags) holds its content words, unless a memory names them only to set them
    apart ("besides pottery, we paint"); one that refers back leaves out the most recent relevant episode or
    lesson. After the neighbours joined, so that none of them brings an excluded memory back."""
    if not run.exclusions or not run.scored:
        return
    with run.stage("exclude") as st:
        for excluded in run.exclusions:
            run.left_out[excluded.phrase] = _left_out_for(ctx, run, excluded)
        removed = {cid: phrase for phrase, ids in run.left_out.items() for cid in ids}
        st.candidates = [
            {"rank": rank, "id": cid, "for": removed[cid]}
            for rank, (_, cid) in enumerate(run.scored, start=1)
            if cid in removed
        ][:TRACE_CANDIDATES]
        run.scored = [(score, cid) for score, cid in run.scored if cid not in removed]
        st.detail = {"left_out": len(removed), "share": ctx.tuning.latest_match_share}


def latest_first(ctx: Collaborators, run: RecallState) -> None:
    """For a "last time" query: the most recent of the relevant episodes (by when it last happened, merged repeats
    included) ranks first; the others keep their order below it, and the scores keep theirs."""
    if run.last_time is None or not run.scored:
        return
    with run.stage("latest_first") as st:
        latest = _latest_relevant(ctx, run, lambda m: isinstance(m, Episode))
        st.detail = {"words": run.last_time, "share": ctx.tuning.latest_match_share, "latest": latest}
        if latest is None:
            return
        ids = [cid for _, cid in run.scored]
        before = ids.index(latest) + 1
        # The head up to it keeps its scores in place, so a result's score still orders it among the others.
        order = [latest, *ids[: before - 1]]
        run.scored[:before] = list(zip([score for score, _ in run.scored[:before]], order, strict=True))
        st.candidates = [{"id": latest, "rank_before": before, "rank_after": 1}]


def _left_out_for(ctx: Collaborators, run: RecallState, excluded: Excluded) -> list[str]:
    """The ids of the ranked memories `excluded` leaves out."""
    if excluded.refers_back:
        latest = _latest_relevant(ctx, run, _is_episode_or_lesson)
        return [latest] if latest else []
    return [cid for _, cid in run.scored if cid in run.memories and _is_about(run.memories[cid], excluded.terms)]


def _is_about(memory: Memory, terms: tuple[str, ...]) -> bool:
    """Whether the memory holds all of `terms`, and not only to set them apart from what it is about."""
    return holds_terms(_searchable(memory), terms) and not sets_apart(memory.content, terms)


def _latest_relevant(ctx: Collaborators, run: RecallState, eligible: Callable[[Memory], bool]) -> str | None:
    """The most recent memory that `eligible` accepts among the relevant ones of the ranking's head (the first of
    equally recent ones), or None."""
    relevant = _relevant(ctx, run)
    chosen = [cid for cid in relevant if eligible(run.memories[cid])]
    if not chosen:
        return None
    return max(chosen, key=lambda cid: _last_happened(run.memories[cid]))


def _relevant(ctx: Collaborators, run: RecallState) -> list[str]:
    """The ids of the ranking's head (as many as collapse reads) whose relevance strength (the relevance stage's)
    is at least `latest_match_share` of the best one's, in ranking order."""
    q = run.query
    head = [cid for _, cid in run.scored[: max(q.top_k * 3, q.top_k + 10)] if cid in run.memories]
    vectors = ctx.store.get_vectors(run.namespace, head)
    evidence = evidence_of(ctx, run, head, vectors)
    scores = {cid: e.strength(ctx.tuning.keyword_relevance) for cid, e in evidence.items()}
    best = max(scores.values(), default=0.0)
    bar = ctx.tuning.latest_match_share * best
    return [cid for cid in head if best > 0 and scores[cid] >= bar]


def _searchable(memory: Memory) -> str:
    return memory.content + " " + " ".join(memory.tags)


def _is_episode_or_lesson(memory: Memory) -> bool:
    return isinstance(memory, Episode) or (isinstance(memory, Fact) and memory.kind == "lesson")


def _last_happened(memory: Memory) -> datetime:
    return memory.last_seen_at if isinstance(memory, Episode) else memory.occurred_at
