"""ErasureMarks in this process's memory: for tests of the queued write path."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from rearview.domain.erase import ErasureMark
from rearview.domain.timestamps import as_utc


class InMemoryErasureMarks:
    """The marks in a dict under a lock, each held for `holds` after its erase."""

    def __init__(self, holds: timedelta = timedelta(days=15)) -> None:
        self._lock = threading.Lock()
        self._holds = holds
        self._marks: dict[str, datetime] = {}

    def mark(self, namespace: str, at: datetime) -> ErasureMark:
        with self._lock:
            self._marks[namespace] = as_utc(at)
        return ErasureMark(holds_until=as_utc(at) + self._holds)

    def erased_at(self, namespace: str) -> datetime | None:
        with self._lock:
            return self._marks.get(namespace)
