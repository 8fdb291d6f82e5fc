"""Consolidation job sinks for tests: one that records the jobs the triggers send, one that runs them at once; and a
fake runner and schedule for the local worker."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.hindsight_runs import ConsolidationJob
from rearview.service.hindsight.runner import ConsolidationRunner


@dataclass
class RecordingJobs:
    """Keeps every job sent, in order."""

    jobs: list[ConsolidationJob] = field(default_factory=list)

    def send(self, job: ConsolidationJob) -> None:
        self.jobs.append(job)

    def reasons(self) -> list[str]:
        return [j.reason for j in self.jobs]


@dataclass
class InlineJobs:
    """Runs each job as it is sent, in the sender's thread (what the local worker does a moment later)."""

    runner: ConsolidationRunner
    results: list[ConsolidateResult] = field(default_factory=list)

    def send(self, job: ConsolidationJob) -> None:
        self.results.append(self.runner.run(job))


@dataclass
class FakeRunner:
    """Stands in for the ConsolidationRunner behind a worker: records the jobs it runs, fails those of the
    namespaces in `failing`, and, with `gate` set, holds each run until the gate opens (`entered` is set as a run
    starts), keeping what the worker's `seconds_left` said at the end of the run."""

    failing: set[str] = field(default_factory=set)
    gate: threading.Event | None = None
    entered: threading.Event = field(default_factory=threading.Event)
    ran: list[ConsolidationJob] = field(default_factory=list)
    seconds_left_at_end: list[float] = field(default_factory=list)

    def run(
        self,
        job: ConsolidationJob,
        req: ConsolidateRequest | None = None,
        *,
        seconds_left: Callable[[], float] | None = None,
    ) -> ConsolidateResult:
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(timeout=30), "the test never opened the gate"
        if seconds_left is not None:
            self.seconds_left_at_end.append(seconds_left())
        if job.namespace in self.failing:
            raise ConnectionError(f"store unreachable for {job.namespace}")
        self.ran.append(job)
        return ConsolidateResult(
            namespace=job.namespace,
            episodes_considered=0,
            clusters=0,
            facts_created=0,
            facts_confirmed=0,
            episodes_consolidated=0,
            reason=job.reason,
        )


@dataclass
class NoSchedule:
    """A schedule that never makes anything due."""

    def due_by_schedule(self, namespaces: Iterable[str] | None = None) -> list[ConsolidationJob]:
        return []
