"""InMemoryHindsightLedger: consolidation's ledger for the in-memory backend (`in_memory`), in this process.

Held to the same contract suite as the SQLite and DynamoDB ledgers: the lease, runs newest first, the spend of
each UTC day, the totals and feedback counts, and namespaces that never see each other's. One lock guards it all.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import get_args

from rearview.domain.hindsight_runs import (
    RUN_RETENTION,
    SPEND_RETENTION,
    ConsolidationRun,
    FeedbackCounts,
    FeedbackVerdict,
    LedgerTotals,
    Spend,
)
from rearview.domain.timestamps import as_utc
from rearview.errors import InvalidInput

FEEDBACK_VERDICTS: tuple[str, ...] = get_args(FeedbackVerdict)


@dataclass
class _Lease:
    owner: str
    until: datetime


@dataclass
class _Namespace:
    """One namespace's part of the ledger."""

    runs: dict[str, ConsolidationRun] = field(default_factory=dict)
    spend: dict[date, Spend] = field(default_factory=dict)
    totals: LedgerTotals = field(default_factory=LedgerTotals)


class InMemoryHindsightLedger:
    """HindsightLedger in this process's memory; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._leases: dict[str, _Lease] = {}
        self._namespaces: dict[str, _Namespace] = {}

    def _namespace(self, namespace: str) -> _Namespace:
        return self._namespaces.setdefault(namespace, _Namespace())

    # the lease

    def acquire_lease(self, namespace: str, owner: str, now: datetime, ttl_seconds: float) -> bool:
        """Take the lease unless another owner holds one that has not expired (`until < now` frees it)."""
        now = as_utc(now)
        with self._lock:
            held = self._leases.get(namespace)
            if held is not None and held.owner != owner and not held.until < now:
                return False
            self._leases[namespace] = _Lease(owner, now + timedelta(seconds=ttl_seconds))
            return True

    def release_lease(self, namespace: str, owner: str) -> None:
        """Give the lease back, if `owner` still holds it."""
        with self._lock:
            held = self._leases.get(namespace)
            if held is not None and held.owner == owner:
                del self._leases[namespace]

    # runs and spend

    def record_run(self, run: ConsolidationRun) -> None:
        """Keep the run and add it to the totals and its day's spend; a run recorded again is counted once."""
        kept = run.model_copy(deep=True)
        day = as_utc(run.started_at).date()
        with self._lock:
            ns = self._namespace(run.namespace)
            if run.run_id in ns.runs:
                return
            ns.runs[run.run_id] = kept
            totals = ns.totals
            totals.runs += 1
            totals.runs_failed += int(run.error is not None)
            totals.tokens += run.tokens
            for kind, count in run.induced.items():
                if count:
                    totals.induced[kind] = totals.induced.get(kind, 0) + count
            totals.last_run_at = as_utc(run.started_at)
            totals.last_run_reason = run.reason
            spend = ns.spend.setdefault(day, Spend(day=day))
            spend.runs += 1
            spend.clusters += run.clusters
            spend.tokens += run.tokens
            oldest = as_utc(run.started_at) - RUN_RETENTION
            ns.runs = {run_id: r for run_id, r in ns.runs.items() if r.started_at >= oldest}
            ns.spend = {d: s for d, s in ns.spend.items() if d >= day - SPEND_RETENTION}

    def runs(self, namespace: str, limit: int = 20) -> list[ConsolidationRun]:
        """The namespace's latest runs, newest first (by start, then id)."""
        with self._lock:
            kept = list(self._namespaces.get(namespace, _Namespace()).runs.values())
        kept.sort(key=lambda r: (r.started_at, r.run_id), reverse=True)
        return [r.model_copy(deep=True) for r in kept[: max(limit, 0)]]

    def spend(self, namespace: str, day: date) -> Spend:
        """What the namespace's runs spent on that UTC day (zeros when nothing ran)."""
        with self._lock:
            found = self._namespaces.get(namespace, _Namespace()).spend.get(day)
            return Spend(day=day) if found is None else found.model_copy()

    # totals and feedback

    def totals(self, namespace: str) -> LedgerTotals:
        """The namespace's running totals (zeros when nothing ran)."""
        with self._lock:
            found = self._namespaces.get(namespace)
            return LedgerTotals() if found is None else found.totals.model_copy(deep=True)

    def record_feedback(self, namespace: str, kind: str, verdict: FeedbackVerdict, adopted: bool) -> None:
        """Count one feedback on a memory of `kind` (any short name), and one adoption when `adopted`."""
        if verdict not in FEEDBACK_VERDICTS:
            raise InvalidInput(f"verdict: unknown feedback verdict {verdict!r}", field="verdict")
        with self._lock:
            counts = self._namespace(namespace).totals.feedback.setdefault(kind, FeedbackCounts())
            setattr(counts, verdict, getattr(counts, verdict) + 1)
            counts.adopted += int(adopted)

    def erase_namespace(self, namespace: str) -> int:
        """Forget the namespace's lease, runs, spend, totals and feedback; how many records went."""
        with self._lock:
            lease = self._leases.pop(namespace, None)
            found = self._namespaces.pop(namespace, None)
        if found is None:
            return int(lease is not None)
        return int(lease is not None) + len(found.runs) + len(found.spend) + 1
