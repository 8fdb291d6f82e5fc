"""The lessons stage: a lesson about a tool, task or entity the query names gets a fair place in the results.

The episodes a lesson was learned from say the tool's name as often as the query does, and there are many of them:
ranked by the same scores, they crowd the one lesson out of the first results. When the query names the subject
of a lesson (its dimension is `tool:<subject>`), the lesson is lifted among the candidates to at least the score
of the result at `lesson_place`. No search of its own: a lesson that names the tool the query names is among the
keyword candidates already, however low it ranked.
"""

from __future__ import annotations

from rearview.domain.memory import Fact
from rearview.service.recall.state import TRACE_CANDIDATES, Collaborators, RecallState
from rearview.text_analysis import names_subject


def lessons(ctx: Collaborators, run: RecallState) -> None:
    """With `lesson_place` above 0, query terms, and lessons among the layers and kinds asked for: the lessons
    among the candidates whose subject the query names rise to the `lesson_place`-th score at least (a trace
    entry only when there is one)."""
    place, flt = ctx.tuning.lesson_place, run.filter
    if place <= 0 or not run.terms or not run.scored or "semantic" not in flt.layers:
        return
    if flt.kinds and "lesson" not in flt.kinds:
        return
    named = [cid for _, cid in run.scored if _names_subject(run.memories.get(cid), run.query.query)]
    if not named:
        return
    with run.stage("lessons") as st:
        # Just above the score at the place, so the lesson takes it.
        floor = run.scored[min(place, len(run.scored)) - 1][0] * (1.0 + 1e-6)
        current = {cid: score for score, cid in run.scored}
        lifted = [cid for cid in named if current.get(cid, 0.0) < floor]
        for cid in lifted:
            current[cid] = floor
        run.scored = sorted(((s, cid) for cid, s in current.items()), key=lambda pair: (-pair[0], pair[1]))
        st.detail = {"place": place, "named": named[:TRACE_CANDIDATES], "lifted": lifted[:TRACE_CANDIDATES]}


def _names_subject(memory: object, query: str) -> bool:
    if not isinstance(memory, Fact) or memory.kind != "lesson" or not (memory.dimension or "").startswith("tool:"):
        return False
    return names_subject((memory.dimension or "").removeprefix("tool:"), query)
