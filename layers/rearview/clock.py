"""Clocks. Production uses SystemClock; tests and benchmarks inject a ManualClock instead of sleeping."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            self._now = self._now.replace(tzinfo=UTC)
        # Seconds the clock moved forward: its monotonic time, which `set` never moves back.
        self._elapsed = 0.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._elapsed

    def set(self, when: datetime) -> None:
        moved = when if when.tzinfo else when.replace(tzinfo=UTC)
        self._elapsed += max(0.0, (moved - self._now).total_seconds())
        self._now = moved

    def advance(self, **delta: float) -> datetime:
        step = timedelta(**delta)
        self._elapsed += max(0.0, step.total_seconds())
        self._now += step
        return self._now
