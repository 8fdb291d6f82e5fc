"""A recall's time budget (`RecallQuery.timeout_ms`), on the clock's monotonic time.

The stages run in order; before each optional one (a refinement: feedback, neighbours, boosts, rerank) and inside
the search stage (before its vector search), recall checks the budget. Once it is spent, what is optional is skipped
and the rest runs: what was ranked by then is collapsed, judged for relevance and cut to the token budget, and the
response says `timed_out`. A budget never makes a recall fail.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from rearview.service.recall.state import Collaborators, RecallState

Stage = Callable[[Collaborators, RecallState], None]


def run_stages(ctx: Collaborators, run: RecallState, stages: Sequence[Stage], optional: Collection[Stage]) -> None:
    """Run `stages` in order, skipping the `optional` ones once the time budget is spent; then trace the budget."""
    if run.query.timeout_ms is not None:
        run.deadline = ctx.clock.monotonic() + run.query.timeout_ms / 1000.0
    for stage in stages:
        if stage in optional and out_of_time(ctx, run, stage.__name__):
            run.skipped.append(stage.__name__)
            continue
        stage(ctx, run)
    # Spent during the last optional stage or after it: nothing was left to skip, and the response says so anyway.
    out_of_time(ctx, run, "the response")
    _trace_budget(ctx, run)


def out_of_time(ctx: Collaborators, run: RecallState, before: str) -> bool:
    """Whether the time budget is spent, checked before `before` runs (the first time it is, `before` is noted)."""
    if run.deadline is None:
        return False
    if not run.timed_out and ctx.clock.monotonic() >= run.deadline:
        run.timed_out, run.timed_out_before = True, before
    return run.timed_out


def _trace_budget(ctx: Collaborators, run: RecallState) -> None:
    if run.deadline is None:
        return
    with run.stage("deadline") as st:
        st.detail = {
            "timeout_ms": run.query.timeout_ms,
            "timed_out": run.timed_out,
            "ran_out_before": run.timed_out_before,
            "skipped": run.skipped,
            "left_ms": round((run.deadline - ctx.clock.monotonic()) * 1000, 3),
        }
