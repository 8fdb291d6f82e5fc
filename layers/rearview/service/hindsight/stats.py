"""The consolidation side of `stats`: the ledger's totals, today's spend, the backlog and the next trigger."""

from __future__ import annotations

from rearview.domain.hindsight_runs import HindsightStats
from rearview.domain.memory import KINDS
from rearview.ports import Clock, ConsolidationBacklog, HindsightLedger
from rearview.service.hindsight.triggers import HindsightTriggers

# The latest runs `stats` returns unless asked for more: what a model reading the tool's answer needs.
RECENT_RUNS = 5


def hindsight_stats(
    namespace: str,
    store: ConsolidationBacklog,
    ledger: HindsightLedger,
    triggers: HindsightTriggers,
    clock: Clock,
    runs: int = RECENT_RUNS,
) -> HindsightStats:
    totals = ledger.totals(namespace)
    unconsolidated = store.unconsolidated_count(namespace)
    return HindsightStats(
        runs=totals.runs,
        runs_failed=totals.runs_failed,
        induced={kind: totals.induced.get(kind, 0) for kind in KINDS},
        tokens=totals.tokens,
        today=ledger.spend(namespace, clock.now().date()),
        last_run_at=totals.last_run_at,
        last_run_reason=totals.last_run_reason,
        unconsolidated=unconsolidated,
        next_trigger=triggers.next_trigger(namespace, unconsolidated),
        feedback=totals.feedback,
        recent_runs=ledger.runs(namespace, limit=runs),
    )
