"""The parse stage: what a query asks for. Its forms ("last time", "other than X", see form_stages) are noted and
their words taken out; a time expression becomes a filter (or, next to a topic, a boost); the rest gives the terms
keyword search matches, the fusion weights and the structured filter."""

from __future__ import annotations

from rearview.domain.memory import StoredLayer
from rearview.domain.metadata import filter_terms
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.service.recall.form_stages import forms_detail, read_forms
from rearview.service.recall.fusion import adaptive_weights
from rearview.service.recall.state import Collaborators, RecallState
from rearview.service.time_expressions import parse_time_range, strip_time_expression
from rearview.text_analysis import is_vague_term, query_terms


def parse(ctx: Collaborators, run: RecallState) -> None:
    """The keyword text and terms, the time range, the filter, the fusion weights and the candidate pool."""
    q, tuning = run.query, ctx.tuning
    with run.stage("parse") as st:
        run.text, run.since, run.until = q.query, q.since, q.until
        read_forms(run)
        has_time_expression = _read_time_expression(ctx, run)
        run.terms = query_terms(run.text)
        run.weights = adaptive_weights(len(run.terms), tuning.vector_weight, has_time_expression)
        run.filter = MemoryFilter(
            layers=stored_layers(q),
            since=run.since,
            until=run.until,
            tags=tuple(q.tags),
            event_types=tuple(q.event_types),
            include_superseded=q.include_superseded,
            outcomes=tuple(q.outcomes),
            kinds=tuple(q.kinds),
            entities=tuple(q.entities),
            metadata=filter_terms(q.metadata),
            # What expired is never returned: by the clock, not `as_of` (which only dates the query's words).
            alive_at=ctx.clock.now(),
        )
        weights = run.weights
        st.detail = {
            "keyword_text": run.text,
            "terms": run.terms,
            "time_range": run.time_range,
            "since": run.since.isoformat() if run.since else None,
            "until": run.until.isoformat() if run.until else None,
            "weights": {"keyword": weights.keyword, "vector": weights.vector, "reason": weights.reason},
            **forms_detail(run),
        }
    run.pool = max(tuning.candidates_per_list, q.top_k * 3)


def stored_layers(q: RecallQuery) -> tuple[StoredLayer, ...]:
    """The stored layers a recall searches (working memory is searched apart, `working_layer`)."""
    return tuple(layer for layer in dict.fromkeys(q.layers) if layer != "working")


def _read_time_expression(ctx: Collaborators, run: RecallState) -> bool:
    """Turn a time expression in the query's text (unless the caller gave a range or turned parsing off) into a
    filter or a boost range, and take its words out of the keyword text; whether the query had one."""
    q = run.query
    parsed = parse_time_range(run.text, run.as_of) if q.parse_time and not (q.since or q.until) else None
    if parsed is None:
        return False
    run.text = strip_time_expression(run.text, parsed) or run.text
    topical = not all(is_vague_term(t) for t in query_terms(run.text))
    if ctx.tuning.time_expression_boost > 0 and topical:
        # "When did we go camping in June?": the words name the event, and "June" may be when it happened rather
        # than when it was told; memories in the range rank higher, others stay.
        run.boost_range = (parsed.since, parsed.until)
    else:
        # "What happened yesterday?" asks for the range itself: a filter.
        run.since, run.until = parsed.since, parsed.until
    run.time_range = {
        "expression": parsed.expression,
        "since": parsed.since.isoformat(),
        "until": parsed.until.isoformat(),
        "applied_as": "boost" if run.boost_range else "filter",
    }
    return True
