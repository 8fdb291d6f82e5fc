"""The background thread that does the HNSW graphs' work off the write path: building a large namespace's graph
(after a bulk load, or when a namespace crosses the threshold) and adding the rows written since.

Until a graph is built its cache is searched exactly; rows not yet in a graph are scored exactly beside the graph's
candidates (`VectorCache.pending_positions`), so no search misses a write while the keeper catches up. usearch
releases the GIL while it inserts, so the work runs beside the request threads on another core. What a job does is
the owner's (`VectorCaches._keep`); the keeper only queues keys, runs one job at a time and stops with the database.

usearch's binding takes the GIL back after every vector it inserts (to check for signals). A thread that wants the
GIL while another runs Python waits for the interpreter's switch interval (5 ms by default) before the holder is
asked to let go: a request thread busy planning writes held each insertion (0.7 ms of work at 100,000 vectors) for
up to 5 ms. While the keeper runs, the process's switch interval is lowered to `_SWITCH_INTERVAL` (never raised):
a thread switch costs microseconds, and only threads that contend for the GIL switch more often.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable

from rearview.domain.memory import StoredLayer

logger = logging.getLogger(__name__)

CacheKey = tuple[str, StoredLayer]

# Seconds: how long a thread waiting for the GIL lets the holder run on (see the module's docstring).
_SWITCH_INTERVAL = 0.0002


class GraphKeeper:
    """Runs `work(key)` on one daemon thread for each key scheduled, again while it returns True (more to do),
    round-robin among the keys queued; a key scheduled twice before it runs runs once."""

    def __init__(self, work: Callable[[CacheKey], bool]) -> None:
        self._work = work
        self._queue: OrderedDict[CacheKey, None] = OrderedDict()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._busy = False
        self._stopped = False

    @property
    def stopping(self) -> bool:
        """True once `stop` was called: a long job checks it between steps."""
        return self._stopped

    def schedule(self, key: CacheKey) -> None:
        with self._cond:
            if self._stopped:
                return
            self._queue[key] = None
            if self._thread is None:
                sys.setswitchinterval(min(sys.getswitchinterval(), _SWITCH_INTERVAL))
                self._thread = threading.Thread(target=self._run, name="rearview-graph-keeper", daemon=True)
                self._thread.start()
                # A process that exits without closing its database: the thread ends before the interpreter does
                # (usearch's native state must not be torn down under a live thread).
                atexit.register(self.stop)
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                key, _ = self._queue.popitem(last=False)
                self._busy = True
            try:
                more = self._work(key)
            except Exception:  # a failed job leaves its cache searched exactly; the next write schedules it again
                logger.exception("graph keeper: work on %s failed", key)
                more = False
            with self._cond:
                self._busy = False
                if more and not self._stopped:
                    self._queue[key] = None
                self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is queued or running (tests, benchmarks); False if `timeout` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._stopped or (not self._queue and not self._busy), timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Drop what is queued and wait for the running job's current step (the database is closing)."""
        with self._cond:
            self._stopped = True
            self._queue.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            atexit.unregister(self.stop)
            thread.join(timeout)
