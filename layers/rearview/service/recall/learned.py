"""The learned_first stage: what was learned ranks above the episodes it was learned from, which fold under it.

A preference, fact or lesson that consolidation induced names the episodes it rests on (`provenance`). When a recall
matches both, the episodes say again, five times over, what the semantic memory says once: the agent should get
the knowledge first, and the evidence as ids it can follow. So the semantic memory rises to just above the best of
its sources that matched, and those sources leave the ranking, listed under it (`RecallHit.folded_sources`): they
cost no tokens of the budget.

A stale memory (confidence decayed below the stale floor) and a superseded one fold nothing: they are history, and
their sources may say what replaced them. A "last time" query folds nothing either: it asks for the episode.
"""

from __future__ import annotations

from rearview.domain.memory import Fact
from rearview.service.recall.scoring import is_stale
from rearview.service.recall.state import TRACE_CANDIDATES, Collaborators, RecallState

# A semantic memory that rises goes this little above its best source, so it takes that place and no more.
_ABOVE = 1.0 + 1e-6


def learned_first(ctx: Collaborators, run: RecallState) -> None:
    """With semantic memories among the candidates whose sources are candidates too: each rises above its best
    matching source, and its matching sources fold under it (a trace entry only when one does)."""
    if run.last_time is not None or not run.scored:
        return
    score_of = {cid: score for score, cid in run.scored}
    learned = _learned_with_sources(ctx, run, score_of)
    if not learned:
        return
    with run.stage("learned_first") as st:
        folded: set[str] = set()
        lifted: list[str] = []
        for fact_id, sources in learned.items():
            sources = [s for s in sources if s not in folded and s in score_of]
            if not sources or fact_id in folded:
                continue
            best_source = max(score_of[s] for s in sources)
            if score_of[fact_id] < best_source:
                score_of[fact_id] = best_source * _ABOVE
                lifted.append(fact_id)
            run.learned_from[fact_id] = sources
            folded.update(sources)
        run.scored = sorted(
            ((score, cid) for cid, score in score_of.items() if cid not in folded), key=lambda sc: (-sc[0], sc[1])
        )
        st.detail = {"lifted": lifted[:TRACE_CANDIDATES], "folded": len(folded)}
        st.candidates = [
            {"id": fact_id, "sources": sources[:TRACE_CANDIDATES], "count": len(sources)}
            for fact_id, sources in list(run.learned_from.items())[:TRACE_CANDIDATES]
        ]


def _learned_with_sources(ctx: Collaborators, run: RecallState, score_of: dict[str, float]) -> dict[str, list[str]]:
    """Each active, current semantic memory among the candidates whose provenance holds other candidates: those
    candidates, best first; the semantic memories best first."""
    found: dict[str, list[str]] = {}
    for _, cid in run.scored:
        memory = run.memories.get(cid)
        if not isinstance(memory, Fact) or memory.status != "active" or is_stale(memory, run.as_of, ctx.tuning):
            continue
        sources = [s for s in dict.fromkeys(memory.provenance) if s != cid and s in score_of]
        if sources:
            found[cid] = sorted(sources, key=lambda s: -score_of[s])
    return found
