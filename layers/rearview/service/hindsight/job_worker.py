"""The queue side of consolidation: a queued job becomes one run, with the write worker's dead-letter policy.

The message body is a `ConsolidationJob` as JSON (`consolidation_job_body`, read by `parse_consolidation_job`). A
job is safe to run twice: a run consolidates what is unconsolidated when it runs, under the namespace's lease.

The policy (`ConsolidationJobWorker.process`):
- a body that is not a job is poison: retrying cannot help, so it goes straight to the dead letters with reason
  `poison`;
- another run holds the namespace's lease (RunInProgress): not a failure, the queue delivers the job again later;
  on its last allowed receive it is dropped instead (`busy`), never dead-lettered: the run that holds the lease is
  consolidating that namespace, and the next trigger or the schedule takes what it leaves. An extraction is
  dead-lettered instead (`retries_exhausted`), since no trigger asks for it again;
- any other failure (the store or a model down) is retried by the queue until the message's last allowed receive:
  then it goes to the dead letters with reason `retries_exhausted` and the error (the runner has recorded the
  failed run in the ledger), instead of being moved by the queue's redrive policy without one.
A job that ran, was dropped or was dead-lettered is done with (deleted from the queue).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from rearview.domain.consolidate import ConsolidateResult
from rearview.domain.hindsight_runs import ConsolidationJob, parse_consolidation_job
from rearview.domain.write import PoisonMessage, short_error
from rearview.errors import RunInProgress
from rearview.ports import DeadLetters
from rearview.service.hindsight.runner import ConsolidationRunner

JobDeadLetterReason = Literal["poison", "retries_exhausted"]


@dataclass(frozen=True)
class JobOutcome:
    """What became of one job: it ran (with the result), was dropped because another run held the lease, or was
    sent to the dead letters (with why)."""

    status: Literal["ran", "busy", "dead_lettered"]
    job: ConsolidationJob | None = None
    result: ConsolidateResult | None = None
    reason: JobDeadLetterReason | None = None
    error: str | None = None

    @property
    def namespace(self) -> str | None:
        return self.job.namespace if self.job is not None else None


class ConsolidationJobWorker:
    """Runs queued consolidation jobs; parks the ones that cannot run in the dead letters, with the reason."""

    def __init__(self, runner: ConsolidationRunner, dead_letters: DeadLetters, *, max_receive_count: int) -> None:
        self._runner = runner
        self._dead_letters = dead_letters
        self._max_receive_count = max_receive_count

    def process(self, body: str, receive_count: int, *, seconds_left: Callable[[], float] | None = None) -> JobOutcome:
        """Handle one message on its `receive_count`-th receive (1 for the first); `seconds_left` is the run's
        deadline (clusters it leaves unstarted wait for the next job).

        Returns the outcome when the message is done with; raises the run's error when the queue should deliver
        it again.
        """
        try:
            job = parse_consolidation_job(body)
        except PoisonMessage as exc:
            return self._dead_letter(body, "poison", str(exc), None)
        last_receive = receive_count >= self._max_receive_count
        try:
            result = self._runner.run(job, seconds_left=seconds_left)
        except RunInProgress as exc:
            if last_receive and job.reason == "extract":
                # Nothing takes an extraction up later: it waits in the dead letters for a redrive.
                return self._dead_letter(body, "retries_exhausted", short_error(exc), job)
            if last_receive:
                return JobOutcome(status="busy", job=job, error=short_error(exc))
            raise
        except Exception as exc:
            if last_receive:
                return self._dead_letter(body, "retries_exhausted", short_error(exc), job)
            raise
        return JobOutcome(status="ran", job=job, result=result)

    def _dead_letter(
        self, body: str, reason: JobDeadLetterReason, error: str, job: ConsolidationJob | None
    ) -> JobOutcome:
        self._dead_letters.send(body, reason, error)
        return JobOutcome(status="dead_lettered", job=job, reason=reason, error=error)
