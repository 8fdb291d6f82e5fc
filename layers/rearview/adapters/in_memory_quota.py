"""RequestQuota in this process's memory: for tests and the `memory` backend (nothing is shared between
processes, as nothing of that backend is)."""

from __future__ import annotations

import threading

from rearview.domain.quota import QuotaWindow


class InMemoryRequestQuota:
    """The counters in a dict under a lock; a window's counters go once a window counted in starts after the
    first one's `expires_at`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, int], int] = {}
        self._newest = 0.0

    def take(self, key_id: str, window: QuotaWindow, limit: int, count: int = 1) -> bool:
        with self._lock:
            if window.epoch > self._newest:
                self._newest = window.epoch
                kept = window.epoch - (window.expires_at - window.start).total_seconds()
                self._counts = {slot: n for slot, n in self._counts.items() if slot[1] > kept}
            slot = (key_id, window.epoch)
            counted = self._counts.get(slot, 0)
            if count < 1 or counted + count > limit:
                return False
            self._counts[slot] = counted + count
            return True

    def counted(self, key_id: str, window: QuotaWindow) -> int:
        """How many requests of the key the window counted (a test's assertion helper)."""
        with self._lock:
            return self._counts.get((key_id, window.epoch), 0)
