"""A write queue that keeps what it is sent (the asynchronous write path's `WriteQueue`, as SQS would take it), and
services built over it: `accept` then queues instead of storing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings


@dataclass
class RecordingQueue:
    sent: list[tuple[str, list[MemoryWrite]]] = field(default_factory=list)

    def send(self, namespace: str, items: Sequence[MemoryWrite]) -> None:
        self.sent.append((namespace, list(items)))


@contextmanager
def queued_services(data_dir: Path, clock: ManualClock) -> Iterator[tuple[Services, RecordingQueue]]:
    """Services (SQLite in `data_dir`, the hashing embedder) whose writes go to a RecordingQueue."""
    queue = RecordingQueue()
    services = build(Settings(data_dir=data_dir, embedder="hashing"), clock=clock, queue=queue)
    try:
        yield services, queue
    finally:
        services.close()
