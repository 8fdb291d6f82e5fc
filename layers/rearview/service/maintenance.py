"""Housekeeping on a timer in the local server's process: the retention sweep and the purge of expired working
memory (`settings.retention`). One background thread runs each task at start (catching up on what came due while
nothing ran), then every interval of its own; a task that fails is logged and runs again at its next turn. On AWS
the forget function runs the same sweep on an hourly EventBridge rule (`FunctionRuntime.forget_handler`).

Beside the consolidation worker (`hindsight.local_worker`), not inside it: that worker's queue, lease and retries
are about consolidation runs, and a sweep needs none of them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


@dataclass
class PeriodicTask:
    name: str
    every_seconds: float
    run: Callable[[], object]
    due_at: float = 0.0  # on the monotonic clock; 0: at once
    runs: int = 0
    failures: int = 0


@dataclass
class PeriodicTasks:
    """Runs each task every `every_seconds` on one daemon thread. `start()`, `stop(timeout)`; `run_now()` for tests."""

    tasks: list[PeriodicTask] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def add(self, name: str, every_seconds: float, run: Callable[[], object]) -> None:
        """Add a task (one with `every_seconds` <= 0 is off and is not added)."""
        if every_seconds > 0:
            self.tasks.append(PeriodicTask(name, every_seconds, run))

    def start(self) -> PeriodicTasks:
        if self.tasks:
            self._thread = threading.Thread(target=self._loop, name="rearview-maintenance", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run_now(self) -> None:
        """Run every task once, now."""
        for task in self.tasks:
            self._run(task)

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for task in self.tasks:
                if task.due_at <= now and not self._stop.is_set():
                    self._run(task)
                    task.due_at = time.monotonic() + task.every_seconds
            next_due = min(task.due_at for task in self.tasks)
            self._stop.wait(max(next_due - time.monotonic(), 0.05))

    @staticmethod
    def _run(task: PeriodicTask) -> None:
        try:
            task.run()
            task.runs += 1
        except Exception:
            task.failures += 1
            logger.exception("%s failed; it runs again at its next turn", task.name)
