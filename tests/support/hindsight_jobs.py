"""Consolidation job sinks for tests: one that records the jobs the triggers send, one that runs them at once."""

from __future__ import annotations

from dataclasses import dataclass, field

from rearview.domain.consolidate import ConsolidateResult
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
