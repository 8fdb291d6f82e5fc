"""A namespace's `stats`: its counts per layer and recall counters, and what consolidation did and will do."""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from rearview.domain.namespaces import validate_namespace
from rearview.domain.stats import RECALL_DAYS_SHOWN, Stats
from rearview.ports import Clock, ConsolidationBacklog, HindsightLedger, MemoryUsage
from rearview.service.hindsight.stats import RECENT_RUNS, hindsight_stats
from rearview.service.hindsight.triggers import HindsightTriggers


class StatsStore(MemoryUsage, ConsolidationBacklog, Protocol):
    """What stats asks of the store: the namespace's counts, and what consolidation has still to see."""


class StatsService:
    def __init__(self, store: StatsStore, ledger: HindsightLedger, triggers: HindsightTriggers, clock: Clock) -> None:
        self._store = store
        self._ledger = ledger
        self._triggers = triggers
        self._clock = clock

    def of(self, namespace: str, runs: int = RECENT_RUNS) -> Stats:
        """The namespace's counts, recall hit rate (in total and per day of the last month), and consolidation's
        latest `runs`, next trigger and feedback."""
        validate_namespace(namespace)
        now = self._clock.now()
        stats = Stats.of(namespace, self._store.usage(namespace, now))
        first_day = now.date() - timedelta(days=RECALL_DAYS_SHOWN - 1)
        stats.recalls_by_day = self._store.recall_days(namespace, first_day)
        stats.hindsight = hindsight_stats(namespace, self._store, self._ledger, self._triggers, self._clock, runs)
        return stats
