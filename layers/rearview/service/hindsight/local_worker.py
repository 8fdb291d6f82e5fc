"""The local side of consolidation jobs: one background thread in the server's process runs the jobs the triggers
send (the `ConsolidationJobs` port; on AWS an SQS queue and a worker function do the same).

- `send` never blocks a write: it files the job and returns. At most one job waits per namespace; another one for
  that namespace is folded into it (their episodes united, a job over every episode absorbing a targeted one, the
  strongest reason kept). An `extract` job is another kind of run (its turns alone, without the guards): it folds
  only with the extraction waiting for its namespace, up to `MAX_TARGETED_EPISODES` turns, then waits beside it.
  When `WORKER_QUEUE` jobs wait, another one is dropped with a warning: its episodes stay unconsolidated for the
  next trigger or the schedule.
- The thread runs one job at a time through the runner (lease, caps, record). A namespace whose lease another
  process holds (RunInProgress) is tried again later, a few times, each time after a longer delay; any other
  failure is logged (the runner has recorded the failed run) and the thread goes on with the next job.
- The schedule: at start (catching up on what came due while nothing ran), then every sweep interval, the jobs
  `due_by_schedule` names are sent like any other.
- `stop`: no further job is taken, and the running one starts no further cluster (it applies what it has). A run
  still going when the timeout passes applies nothing (the runner applies its changes at the end) and its lease
  expires.

Times are compared on the injected clock; the thread only waits on a Condition, woken by `send`, `stop` and
`wake`, whose timeout merely says when the clock is next worth reading.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.hindsight_runs import MAX_JOB_EPISODES, ConsolidationJob, TriggerReason
from rearview.errors import RunInProgress
from rearview.ports import Clock
from rearview.service.hindsight.runner import LEASE_SECONDS
from rearview.settings import HindsightSettings

logger = logging.getLogger(__name__)

# Which reason a folded job keeps: the one that says most about why the run is wanted.
REASON_STRENGTH: dict[TriggerReason, int] = {
    "manual": 0,
    "schedule": 1,
    "count": 2,
    "session_end": 3,
    "failure_streak": 4,
    "extract": 5,
}
# A job whose namespace another run holds is tried again after these delays, then given up: a lease lasts
# `LEASE_SECONDS` (10 minutes) at most, so the last try comes after any lease has expired.
RETRY_DELAYS = (timedelta(seconds=5), timedelta(seconds=30), timedelta(minutes=2), timedelta(minutes=10))
# The schedule is swept this often (its period, within these bounds): a run comes due at most this late.
MIN_SWEEP_INTERVAL = timedelta(minutes=1)
# Jobs waiting at most (one run per namespace, and its extractions): more are dropped, and the next trigger of a
# namespace retries.
WORKER_QUEUE = 1000
MAX_SWEEP_INTERVAL = timedelta(hours=1)
# A run stops starting clusters when this share of its lease has passed, so that it never outlives the lease.
LEASE_SHARE = 0.9
# How long `stop` waits for a running job by default: what a process manager (docker stop) grants before a kill.
STOP_TIMEOUT_SECONDS = 10.0
# ConsolidationJob.episode_ids holds this many at most; a fold beyond it runs over every unconsolidated episode.
MAX_TARGETED_EPISODES = MAX_JOB_EPISODES


class JobRunner(Protocol):
    """What runs a job (the ConsolidationRunner)."""

    def run(
        self,
        job: ConsolidationJob,
        req: ConsolidateRequest | None = None,
        *,
        seconds_left: Callable[[], float] | None = None,
    ) -> ConsolidateResult: ...


class Schedule(Protocol):
    """What names the namespaces the schedule has made due (the HindsightTriggers)."""

    def due_by_schedule(self, namespaces: Iterable[str] | None = None) -> list[ConsolidationJob]: ...


@dataclass(frozen=True)
class WorkerCounts:
    """What the worker has done since it was built, and what it is doing."""

    sent: int = 0  # jobs sent to it
    folded: int = 0  # of those, folded into a job already waiting for their namespace
    dropped: int = 0  # of those, dropped: the queue was full, or the worker stopped
    ran: int = 0  # runs that finished
    failed: int = 0  # runs that raised, and jobs that found their namespace busy on every try
    retried: int = 0  # jobs filed again because another run held their namespace
    waiting: int = 0  # jobs waiting now (one per namespace)
    busy: bool = False  # running a job or sweeping the schedule now

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.busy


@dataclass
class _Waiting:
    job: ConsolidationJob
    attempts: int = 0  # tries that found the namespace busy
    not_before: datetime | None = None  # when a busy namespace is tried again


_SWEEP = object()  # what `_take` hands the loop when the schedule is due


def fold(held: ConsolidationJob, new: ConsolidationJob) -> ConsolidationJob:
    """One job doing the work of both: their episodes united (a job over every episode absorbs a targeted one),
    the strongest reason, the earlier request time. An extraction is only ever folded with another extraction
    whose turns fit in one job with its own (`slot_of` keeps it apart from runs)."""
    strong, weak = (new, held) if REASON_STRENGTH[new.reason] > REASON_STRENGTH[held.reason] else (held, new)
    episodes: list[str] = []
    if held.episode_ids and new.episode_ids:
        episodes = list(dict.fromkeys([*held.episode_ids, *new.episode_ids]))
        if len(episodes) > MAX_TARGETED_EPISODES:
            episodes = []
    return strong.model_copy(
        update={
            "episode_ids": episodes,
            "requested_at": min(held.requested_at, new.requested_at),
            "session_id": strong.session_id or weak.session_id,
        }
    )


def slot_of(job: ConsolidationJob, waiting: dict[str, _Waiting]) -> str:
    """Where `job` waits: its namespace's slot, or (an extraction) the first of its namespace's extraction slots
    with room for its turns."""
    if job.reason != "extract":
        return job.namespace
    n = 0
    while True:
        slot = f"{job.namespace}\x00extract\x00{n}"
        held = waiting.get(slot)
        if held is None or len(set(held.job.episode_ids) | set(job.episode_ids)) <= MAX_TARGETED_EPISODES:
            return slot
        n += 1


class LocalConsolidationWorker:
    """The triggers' jobs, run by one background thread of this process. `start()`, `send(job)`, `stop(timeout)`;
    `drain(timeout)` waits until nothing waits or runs (tests, and a graceful hand-over)."""

    def __init__(
        self,
        runner: JobRunner,
        schedule: Schedule,
        clock: Clock,
        settings: HindsightSettings,
        *,
        capacity: int = WORKER_QUEUE,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self._runner = runner
        self._schedule = schedule
        self._clock = clock
        self._capacity = capacity
        self._lease = timedelta(seconds=lease_seconds * LEASE_SHARE)
        hours = timedelta(hours=settings.schedule_hours)
        self._sweep_interval = min(max(hours, MIN_SWEEP_INTERVAL), MAX_SWEEP_INTERVAL) if hours else None
        self._next_sweep: datetime | None = None
        self._waiting: dict[str, _Waiting] = {}  # by slot (`slot_of`: the namespace, for a run), oldest first
        self._counts = WorkerCounts()
        self._busy = False
        self._stopping = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    # --- the port -----------------------------------------------------------------------------------------------

    def send(self, job: ConsolidationJob) -> None:
        """File `job` (folded into its namespace's waiting job, if any); never blocks on a run."""
        with self._cond:
            self._count(sent=1)
            slot = slot_of(job, self._waiting)
            held = self._waiting.get(slot)
            if self._stopping:
                self._count(dropped=1)
                logger.info("consolidation worker stopped: %s job for %s not taken", job.reason, job.namespace)
            elif held is not None:
                held.job = fold(held.job, job)
                self._count(folded=1)
            elif len(self._waiting) >= self._capacity:
                self._count(dropped=1)
                logger.warning(
                    "consolidation queue full (%d jobs waiting): dropped a %s job for %s; its episodes wait "
                    "for the next trigger or the schedule",
                    len(self._waiting),
                    job.reason,
                    job.namespace,
                )
            else:
                self._waiting[slot] = _Waiting(job)
            self._cond.notify_all()

    # --- life cycle ---------------------------------------------------------------------------------------------

    def start(self) -> LocalConsolidationWorker:
        """Start the thread; it sweeps the schedule first (catching up), then takes jobs."""
        with self._cond:
            if self._thread is not None:
                raise RuntimeError("the consolidation worker was already started")
            if self._sweep_interval is not None:
                self._next_sweep = self._clock.now()
            self._thread = threading.Thread(target=self._loop, name="rearview-consolidation", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> bool:
        """Take no further job and let the running one wind down; True if the thread ended within `timeout`."""
        with self._cond:
            self._stopping = True
            left = len(self._waiting)
            self._waiting.clear()
            self._count(dropped=left)
            self._cond.notify_all()
        if left:
            logger.info("consolidation worker stopped with %d jobs waiting; their episodes wait for the next run", left)
        if self._thread is None:
            return True
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.warning(
                "a consolidation run was still going %.0f s after the stop: it applies nothing, its lease expires",
                timeout,
            )
            return False
        return True

    def wake(self) -> None:
        """Read the clock again now (a test that moved its clock; the thread otherwise reads it when it expects a
        retry or a sweep to come due)."""
        with self._cond:
            self._cond.notify_all()

    def counts(self) -> WorkerCounts:
        with self._cond:
            return self._snapshot()

    def pending(self) -> list[ConsolidationJob]:
        """The jobs waiting, oldest first."""
        with self._cond:
            return [waiting.job for waiting in self._waiting.values()]

    def wait_for(self, predicate: Callable[[WorkerCounts], bool], timeout: float) -> bool:
        """Wait until `predicate(counts)` holds (re-checked whenever the worker's state changes); False on timeout.
        The thread reads the clock again first, as after `wake`."""
        with self._cond:
            self._cond.notify_all()
            return self._cond.wait_for(lambda: predicate(self._snapshot()), timeout)

    def drain(self, timeout: float) -> bool:
        """Wait until no job waits or runs and no sweep is due; False on timeout."""
        return self.wait_for(lambda counts: counts.idle and not self._sweep_due(), timeout)

    # --- the thread ---------------------------------------------------------------------------------------------

    def _loop(self) -> None:
        while (item := self._take()) is not None:
            if isinstance(item, _Waiting):
                self._run(item)
            else:
                self._sweep()

    def _take(self) -> _Waiting | object | None:
        """The next thing to do (the schedule's sweep, or a job ready to run), waiting for one; None once stopped."""
        with self._cond:
            while not self._stopping:
                now = self._clock.now()
                item = self._sweep_now(now) or self._ready(now)
                if item is not None:
                    self._busy = True
                    return item
                self._cond.wait(self._seconds_until_due(now))
            return None

    def _sweep_now(self, now: datetime) -> object | None:
        if self._sweep_interval is None or self._next_sweep is None or now < self._next_sweep:
            return None
        self._next_sweep = now + self._sweep_interval
        return _SWEEP

    def _ready(self, now: datetime) -> _Waiting | None:
        """The oldest waiting job that may run now, taken off the queue."""
        for slot, waiting in self._waiting.items():
            if waiting.not_before is None or waiting.not_before <= now:
                return self._waiting.pop(slot)
        return None

    def _seconds_until_due(self, now: datetime) -> float | None:
        """How long until a retry or the sweep comes due by the clock (None: nothing will without a send)."""
        moments = [w.not_before for w in self._waiting.values() if w.not_before is not None]
        if self._next_sweep is not None:
            moments.append(self._next_sweep)
        if not moments:
            return None
        return max((min(moments) - now).total_seconds(), 0.05)

    def _sweep_due(self) -> bool:
        return self._next_sweep is not None and self._clock.now() >= self._next_sweep

    def _sweep(self) -> None:
        try:
            due = self._schedule.due_by_schedule()
        except Exception:
            logger.exception("the consolidation schedule could not be read; the next sweep tries again")
            due = []
        for job in due:
            self.send(job)
        self._done()

    def _run(self, waiting: _Waiting) -> None:
        job = waiting.job
        outcome = "failed"
        try:
            self._runner.run(job, seconds_left=self._seconds_left(self._clock.now() + self._lease))
            outcome = "ran"
        except RunInProgress:
            outcome = self._retry_later(waiting)
        except Exception:
            logger.exception("consolidation of %s (%s) failed; the worker goes on", job.namespace, job.reason)
        finally:
            self._done(**{outcome: 1})

    def _seconds_left(self, deadline: datetime) -> Callable[[], float]:
        """The run's time left: none once the worker stops, else until its lease is nearly over."""

        def left() -> float:
            return 0.0 if self._stopping else (deadline - self._clock.now()).total_seconds()

        return left

    def _retry_later(self, waiting: _Waiting) -> str:
        """File a job whose namespace was busy for a later try; the count it adds to."""
        job = waiting.job
        if waiting.attempts >= len(RETRY_DELAYS):
            logger.warning(
                "consolidation of %s gave up: another run held the namespace on %d tries; the next trigger or the "
                "schedule runs it",
                job.namespace,
                waiting.attempts + 1,
            )
            return "failed"
        with self._cond:
            if self._stopping:
                return "dropped"
            retry = _Waiting(job, waiting.attempts + 1, self._clock.now() + RETRY_DELAYS[waiting.attempts])
            slot = slot_of(job, self._waiting)
            newer = self._waiting.pop(slot, None)
            if newer is not None:
                retry.job = fold(job, newer.job)
            self._waiting[slot] = retry
        logger.info("consolidation of %s waits for another run: retry %d", job.namespace, retry.attempts)
        return "retried"

    def _done(self, **counts: int) -> None:
        with self._cond:
            self._busy = False
            self._count(**counts)
            self._cond.notify_all()

    # --- counts (called with the lock held) ---------------------------------------------------------------------

    def _count(self, **increments: int) -> None:
        counts = self._counts
        self._counts = replace(counts, **{name: getattr(counts, name) + n for name, n in increments.items()})

    def _snapshot(self) -> WorkerCounts:
        return replace(self._counts, waiting=len(self._waiting), busy=self._busy)
