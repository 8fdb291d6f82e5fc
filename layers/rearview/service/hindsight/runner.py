"""A consolidation run as a job: under the namespace's lease, within the caps, recorded in the ledger.

Every run goes through here, whoever asked (a caller, a trigger, the schedule):
- the lease: never two runs on one namespace at once; a run that crashes leaves its lease to expire, and since a
  run applies its changes in one ChangeSet at the end, its episodes stay unconsolidated;
- the caps: per run and per namespace per UTC day, clusters and model tokens (`HindsightSettings`); what is left
  waits for the next run; a namespace whose day is spent is not run at all until the next UTC day;
- the record: what the run did and spent (`ConsolidationRun`), a failed run included, for `stats`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.hindsight_runs import ConsolidationJob, ConsolidationRun
from rearview.domain.namespaces import validate_namespace
from rearview.errors import RunInProgress
from rearview.ids import new_ulid
from rearview.ports import Clock, HindsightLedger
from rearview.service.hindsight.budget import RunBudget
from rearview.service.hindsight.consolidation import ConsolidationService
from rearview.settings import HindsightSettings

# A run holds its namespace's lease this long at most: a run that crashes frees it when it expires, and a run of
# the largest window finishes well within it.
LEASE_SECONDS = 600.0

logger = logging.getLogger(__name__)


class ConsolidationRunner:
    def __init__(
        self,
        consolidator: ConsolidationService,
        ledger: HindsightLedger,
        clock: Clock,
        settings: HindsightSettings,
    ) -> None:
        self._consolidator = consolidator
        self._ledger = ledger
        self._clock = clock
        self._settings = settings

    @property
    def ledger(self) -> HindsightLedger:
        return self._ledger

    def run(
        self,
        job: ConsolidationJob,
        req: ConsolidateRequest | None = None,
        *,
        seconds_left: Callable[[], float] | None = None,
    ) -> ConsolidateResult:
        """Run `job` now. Raises RunInProgress when another run holds the namespace's lease."""
        namespace = validate_namespace(job.namespace)
        req = req or ConsolidateRequest()
        now = self._clock.now()
        run_id = new_ulid(now)
        if not self._ledger.acquire_lease(namespace, run_id, now, LEASE_SECONDS):
            raise RunInProgress(
                f"namespace {namespace!r}: a consolidation run is in progress; retry when it is done "
                f"(its lease lasts {LEASE_SECONDS:g} s at most)"
            )
        try:
            return self._run(job, req, run_id, now, seconds_left)
        finally:
            self._ledger.release_lease(namespace, run_id)

    def _run(
        self,
        job: ConsolidationJob,
        req: ConsolidateRequest,
        run_id: str,
        started: datetime,
        seconds_left: Callable[[], float] | None,
    ) -> ConsolidateResult:
        caps = self._caps(job.namespace, started, req)
        if caps["clusters"][1] <= 0 or caps["tokens"][1] <= 0:
            spent = min(caps.items(), key=lambda item: item[1][1])
            logger.info("consolidation of %s skipped: %s spent", job.namespace, spent[1][0])
            return _skipped(job, run_id, spent[1][0])
        budget = RunBudget(
            max_clusters=caps["clusters"][1],
            max_tokens=caps["tokens"][1] if self._consolidator.inducer.name != "rules" else None,
            seconds_left=seconds_left,
        )
        try:
            if job.reason == "extract":
                result = self._consolidator.extract(job.namespace, job.episode_ids, budget=budget)
            else:
                result = self._consolidator.consolidate(job.namespace, req, only=job.episode_ids or None, budget=budget)
        except Exception as exc:
            self._ledger.record_run(self._failed(job, run_id, started, exc))
            raise
        result.reason, result.run_id = job.reason, run_id
        if result.clusters_deferred:
            result.capped_by = _capped_by(caps, result, budget, seconds_left)
        self._ledger.record_run(self._record(job, run_id, started, result))
        return result

    def _caps(self, namespace: str, now: datetime, req: ConsolidateRequest) -> dict[str, tuple[str, int]]:
        """The tightest cluster and token caps of this run, each with its name."""
        s = self._settings
        spend = self._ledger.spend(namespace, now.date())
        clusters = min(
            ("request", req.max_clusters),
            ("run clusters", s.run_max_clusters),
            ("daily clusters", s.daily_max_clusters - spend.clusters),
            key=lambda cap: cap[1],
        )
        tokens = min(
            ("run tokens", s.run_max_tokens),
            ("daily tokens", s.daily_max_tokens - spend.tokens),
            key=lambda cap: cap[1],
        )
        return {"clusters": clusters, "tokens": tokens}

    def _record(self, job: ConsolidationJob, run_id: str, started: datetime, r: ConsolidateResult) -> ConsolidationRun:
        return ConsolidationRun(
            run_id=run_id,
            namespace=job.namespace,
            reason=job.reason,
            started_at=started,
            finished_at=self._clock.now(),
            episodes_considered=r.episodes_considered,
            new_episodes=r.new_episodes,
            clusters=r.clusters,
            clusters_deferred=r.clusters_deferred,
            induced=dict(r.induced),
            confirmed=r.facts_confirmed,
            superseded=r.superseded,
            tokens=r.tokens,
            inducer=r.inducer,
            fallback=r.fallback,
        )

    def _failed(self, job: ConsolidationJob, run_id: str, started: datetime, exc: Exception) -> ConsolidationRun:
        return ConsolidationRun(
            run_id=run_id,
            namespace=job.namespace,
            reason=job.reason,
            started_at=started,
            finished_at=self._clock.now(),
            inducer=self._consolidator.inducer.name,
            error=f"{type(exc).__name__}: {exc}"[:500],
        )


def _skipped(job: ConsolidationJob, run_id: str, cap: str) -> ConsolidateResult:
    return ConsolidateResult.empty(job.namespace).model_copy(
        update={"capped_by": cap, "reason": job.reason, "run_id": run_id}
    )


def _capped_by(
    caps: dict[str, tuple[str, int]],
    result: ConsolidateResult,
    budget: RunBudget,
    seconds_left: Callable[[], float] | None,
) -> str:
    if result.clusters >= budget.max_clusters:
        return caps["clusters"][0]
    if seconds_left is not None and seconds_left() <= 0:
        return "time"
    return caps["tokens"][0]
