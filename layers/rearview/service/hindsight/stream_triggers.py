"""Consolidation triggers read from the table's change stream (DynamoDB Streams on AWS, through index sync).

The write path evaluates the triggers itself after each write (`ConsolidationDispatch.after_write`); the stream sees
every change of the table whoever made it, and one thing the write path never sees: working memory that the store's TTL
removed, which means a session went quiet and timed out (a session-end trigger). Both ends may send the same job;
the job queue folds such repeats (see `rearview.adapters.sqs_consolidation_jobs`).

A trigger that fails is logged and counted, never raised: the stream's batch is the search index's, and a missing
job costs only a delay (the count trigger fires again on the next write, the schedule catches up).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from rearview.domain.changes import IndexChange
from rearview.domain.hindsight_runs import ConsolidationJob
from rearview.domain.memory import Episode
from rearview.ports import ConsolidationJobs
from rearview.service.hindsight.triggers import HindsightTriggers

logger = logging.getLogger(__name__)


def episodes_written(changes: Iterable[IndexChange]) -> dict[str, list[Episode]]:
    """The episodes a batch of changes stored, or merged a repeat into, by namespace (the latest state of each).

    Writes are inserts, and updates that raised `confirmations` (the write path merged a near-duplicate). Other
    updates are not: a consolidation run marking its episodes must not trigger another run, nor recall's access
    counts or forget's redactions."""
    found: dict[str, dict[str, Episode]] = {}
    for change in changes:
        episode, previous = change.memory, change.previous
        if not isinstance(episode, Episode):
            continue
        if previous is None or episode.confirmations > previous.confirmations:
            found.setdefault(change.namespace, {})[episode.id] = episode
    return {namespace: list(episodes.values()) for namespace, episodes in found.items()}


@dataclass
class StreamTriggerReport:
    """What one batch's triggers did: jobs sent, and the namespaces or sessions whose evaluation failed."""

    jobs: int = 0
    failures: int = 0


class StreamTriggers:
    """Evaluates the triggers for a batch of stream changes and sends the jobs they make due."""

    def __init__(self, triggers: HindsightTriggers, jobs: ConsolidationJobs) -> None:
        self._triggers = triggers
        self._jobs = jobs

    def evaluate(
        self, changes: Iterable[IndexChange], expired_sessions: Iterable[tuple[str, str]] = ()
    ) -> StreamTriggerReport:
        """The count and failure-streak triggers for each namespace that was written, and a session-end trigger
        for each (namespace, session) whose working memory expired; each evaluated on its own."""
        report = StreamTriggerReport()
        for namespace, episodes in episodes_written(changes).items():
            self._send(report, namespace, partial(self._triggers.after_write, namespace, episodes))
        for namespace, session_id in dict.fromkeys(expired_sessions):
            self._send(report, namespace, partial(self._triggers.session_ended, namespace, session_id))
        return report

    def _send(
        self, report: StreamTriggerReport, namespace: str, evaluate: Callable[[], list[ConsolidationJob]]
    ) -> None:
        try:
            for job in evaluate():
                self._jobs.send(job)
                report.jobs += 1
        except Exception:
            report.failures += 1
            logger.exception("hindsight triggers failed on the stream for %s", namespace)
