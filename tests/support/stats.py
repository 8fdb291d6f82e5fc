"""Stats as a caller sees them, built from a store's raw counts (as `Services.stats` does)."""

from __future__ import annotations

from datetime import datetime

from rearview.domain.stats import Stats
from rearview.ports import MemoryStore


def usage_stats(store: MemoryStore, namespace: str, now: datetime) -> Stats:
    return Stats.of(namespace, store.usage(namespace, now))
