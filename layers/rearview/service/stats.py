"""A namespace's `stats`: its counts per layer and recall counters, and what consolidation did and will do."""

from __future__ import annotations

from typing import Protocol

from rearview.domain.namespaces import validate_namespace
from rearview.domain.stats import Stats
from rearview.ports import Clock, ConsolidationBacklog, HindsightLedger, MemoryUsage
from rearview.service.hindsight.stats import hindsight_stats
from rearview.service.hindsight.triggers import HindsightTriggers


class StatsStore(MemoryUsage, ConsolidationBacklog, Protocol):
    """What stats asks of the store: the namespace's counts, and what consolidation has still to see."""


class StatsService:
    def __init__(self, store: StatsStore, ledger: HindsightLedger, triggers: HindsightTriggers, clock: Clock) -> None:
        self._store = store
        self._ledger = ledger
        self._triggers = triggers
        self._clock = clock

    def of(self, namespace: str) -> Stats:
        """The namespace's counts, recall hit rate, and consolidation's runs, next trigger and feedback."""
        validate_namespace(namespace)
        stats = Stats.of(namespace, self._store.usage(namespace, self._clock.now()))
        stats.hindsight = hindsight_stats(namespace, self._store, self._ledger, self._triggers, self._clock)
        return stats
