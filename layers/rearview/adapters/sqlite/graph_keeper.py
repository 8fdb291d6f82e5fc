"""The background thread that does the HNSW graphs' work off the write path: building a large namespace's graph
(after a bulk load, or when a namespace crosses the threshold) and adding the rows written since.

Until a graph is built its cache is searched exactly (the write path's duplicate check through `coarse_cells`);
rows not yet in a graph are scored exactly beside the graph's candidates (`VectorCache.pending_positions`), so no
search misses a write while the keeper catches up. usearch releases the GIL while it inserts, so the work runs
beside the request threads on another core. What a job does is the owner's (`VectorCaches._keep`); the keeper only
queues keys, runs one job at a time and stops with the database.

A job may be deferred (`schedule_after`): a bulk load's graph is left until the load has been quiet for a moment, so
that the build does not take the CPU the load is using (on a busy machine it halved the load's rate), nor reload a
cache that each further change set would then update row by row.

usearch's binding takes the GIL back after every vector it inserts (to check for signals). A thread that wants the
GIL while another runs Python waits for the interpreter's switch interval (5 ms by default) before the holder is
asked to let go: a request thread busy planning writes held each insertion (0.7 ms of work at 100,000 vectors) for
up to 5 ms. While any keeper's thread runs, the process's switch interval is lowered to `_SWITCH_INTERVAL` (never
raised), and put back when the last one ends: a thread switch costs microseconds, and only threads that contend for
the GIL switch more often.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from rearview.domain.memory import StoredLayer

logger = logging.getLogger(__name__)

CacheKey = tuple[str, StoredLayer]

# Seconds: how long a thread waiting for the GIL lets the holder run on (see the module's docstring).
_SWITCH_INTERVAL = 0.0002


class _SwitchInterval:
    """The process's switch interval, lowered while at least one keeper thread runs (a count under a lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved = 0.0
        self._set = 0.0

    def acquire(self) -> None:
        with self._lock:
            if self._running == 0:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(self._saved, _SWITCH_INTERVAL))
                # What the interpreter keeps (whole microseconds), so that `release` recognises its own setting.
                self._set = sys.getswitchinterval()
            self._running += 1

    def release(self) -> None:
        with self._lock:
            self._running -= 1
            # Put back unless someone else has set it meanwhile.
            if self._running == 0 and sys.getswitchinterval() == self._set:
                sys.setswitchinterval(self._saved)


_switch_interval = _SwitchInterval()


class GraphKeeper:
    """Runs `work(key)` on one daemon thread for each key scheduled, again while it returns True (more to do),
    round-robin among the keys due; a key scheduled twice before it runs runs once. `clock`: seconds, for deferred
    jobs (tests inject one and `wake` the keeper after moving it)."""

    def __init__(self, work: Callable[[CacheKey], bool], clock: Callable[[], float] = time.monotonic) -> None:
        self._work = work
        self._clock = clock
        # Each queued key and the clock time from which it may run.
        self._queue: OrderedDict[CacheKey, float] = OrderedDict()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._busy = False
        self._stopped = False

    @property
    def stopping(self) -> bool:
        """True once `stop` was called: a long job checks it between steps."""
        return self._stopped

    def schedule(self, key: CacheKey) -> None:
        """Run `work(key)` as soon as the thread is free (earlier than a deferred run of the same key)."""
        with self._cond:
            now = self._clock()
            self._enqueue(key, min(self._queue.get(key, now), now))

    def schedule_after(self, key: CacheKey, seconds: float) -> None:
        """Run `work(key)` once `seconds` have passed without another call for the key (each call defers the run)."""
        with self._cond:
            now = self._clock()
            self._enqueue(key, max(self._queue.get(key, now), now + seconds))

    def wake(self) -> None:
        """Look at the clock again (a test's clock has moved)."""
        with self._cond:
            self._cond.notify_all()

    def _enqueue(self, key: CacheKey, due: float) -> None:
        if self._stopped:
            return
        self._queue[key] = due
        if self._thread is None:
            _switch_interval.acquire()  # released as the thread ends
            self._thread = threading.Thread(target=self._run, name="rearview-graph-keeper", daemon=True)
            self._thread.start()
            # A process that exits without closing its database: the thread ends before the interpreter does
            # (usearch's native state must not be torn down under a live thread).
            atexit.register(self.stop)
        self._cond.notify_all()

    def _due(self) -> tuple[CacheKey | None, float | None]:
        """The first queued key that may run now, else None and how long until one may (None: nothing queued)."""
        now = self._clock()
        for key, due in self._queue.items():
            if due <= now:
                return key, None
        return None, (min(self._queue.values()) - now) if self._queue else None

    def _run(self) -> None:
        try:
            self._serve()
        finally:
            _switch_interval.release()

    def _serve(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    key, wait = self._due()
                    if key is not None:
                        break
                    self._cond.wait(wait)
                del self._queue[key]
                self._busy = True
            try:
                more = self._work(key)
            except Exception:  # a failed job leaves its cache searched exactly; the next write schedules it again
                logger.exception("graph keeper: work on %s failed", key)
                more = False
            with self._cond:
                self._busy = False
                if more and not self._stopped:
                    self._queue.setdefault(key, self._clock())
                self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is queued or running, deferred jobs included (tests, benchmarks); False if `timeout`
        passed first."""
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
