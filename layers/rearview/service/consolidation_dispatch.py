"""What sets consolidation off, outside the schedule: a caller asking for a run now, and the triggers after a write
and at a session's end, whose jobs go to whichever `ConsolidationJobs` is attached (the local server's background
worker, the SQS queue on AWS; none for a one-shot command, where the schedule catches up). A write that asked for
extraction sends an `extract` job over its turns; with no job queue attached, that run happens at once, since the
caller asked for it."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.hindsight_runs import MAX_JOB_EPISODES, ConsolidationJob
from rearview.domain.memory import Episode
from rearview.domain.namespaces import validate_namespace
from rearview.ports import Clock, ConsolidationJobs
from rearview.service.hindsight.runner import ConsolidationRunner
from rearview.service.hindsight.triggers import HindsightTriggers

logger = logging.getLogger(__name__)


class ConsolidationDispatch:
    """Runs asked for now, and the jobs the triggers make due, sent where `jobs` says."""

    def __init__(
        self,
        runner: ConsolidationRunner,
        triggers: HindsightTriggers,
        clock: Clock,
        jobs: ConsolidationJobs | None = None,
    ) -> None:
        self._runner = runner
        self._triggers = triggers
        self._clock = clock
        self.jobs = jobs

    def attach(self, jobs: ConsolidationJobs | None) -> None:
        """Send the triggers' jobs to `jobs` from now on (the local server attaches its worker at start)."""
        self.jobs = jobs

    def consolidate(self, namespace: str, req: ConsolidateRequest | None = None) -> ConsolidateResult:
        """A run asked for by a caller: under the lease and the caps, recorded (RunInProgress when one runs)."""
        validate_namespace(namespace)
        job = ConsolidationJob(namespace=namespace, reason="manual", requested_at=self._clock.now())
        return self._runner.run(job, req)

    def after_write(self, namespace: str, episodes: list[Episode], extract: Sequence[str] = ()) -> None:
        """The write path's hook: the jobs the stored episodes make due, sent; and the extraction of the turns
        `extract`. A trigger or an extraction that fails is logged and never fails the write (the episodes are
        stored; the count trigger or the schedule will run them)."""
        try:
            jobs = self._extract_jobs(namespace, extract)
            if self.jobs is None:
                for job in jobs:
                    self._runner.run(job)
                return
            jobs += self._triggers.after_write(namespace, episodes)
            for job in jobs:
                self.jobs.send(job)
        except Exception:
            logger.exception("hindsight triggers or extraction failed after a write to %s", namespace)

    def _extract_jobs(self, namespace: str, ids: Sequence[str]) -> list[ConsolidationJob]:
        """One `extract` job per `MAX_JOB_EPISODES` turns."""
        now = self._clock.now()
        parts = [list(ids[i : i + MAX_JOB_EPISODES]) for i in range(0, len(ids), MAX_JOB_EPISODES)]
        return [ConsolidationJob(namespace=namespace, reason="extract", requested_at=now, episode_ids=p) for p in parts]

    def session_ended(self, namespace: str, session_id: str) -> bool:
        """The session-end trigger's job, sent; True if one was. A job that cannot be sent is logged and never fails
        the caller (the schedule will run the namespace)."""
        if self.jobs is None:
            return False
        sent = False
        try:
            for job in self._triggers.session_ended(namespace, session_id):
                self.jobs.send(job)
                sent = True
        except Exception:
            logger.exception("hindsight session-end trigger failed for %s", namespace)
        return sent
