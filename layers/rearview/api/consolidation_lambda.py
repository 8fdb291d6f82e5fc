"""The Lambda side of Hindsight's consolidation on AWS: the consolidation worker's handler (SQS FIFO batches of jobs)
and the schedule's enqueue (the consolidate function's EventBridge invocation).

- The worker runs each job through `ConsolidationJobWorker` (the runner under the namespace's lease, within the
  caps, with the dead-letter policy) with a deadline: the invocation's remaining time less
  `aws.consolidation_safety_seconds`; clusters not started by then stay unconsolidated for the next job. Powertools'
  `SqsFifoPartialProcessor` stops at the first job that must be retried and reports it and every later one as failed,
  so the queue delivers them again in their order.
- The schedule only enqueues: one job per namespace that has unconsolidated episodes (the sparse `unconsolidated`
  index, no table scan) and whose last run is `hindsight.schedule_hours` old; the worker runs them.

Metrics carry no namespace dimension (one per tenant would be a metric per tenant): the namespace goes into the log
keys and the metrics' metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from rearview.api.lambda_runtime import Handler, logger, metrics, traced
from rearview.errors import ConfigurationError, RunInProgress

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from rearview.api.lambda_runtime import FunctionRuntime
    from rearview.bootstrap import Services
    from rearview.service.hindsight.job_worker import ConsolidationJobWorker, JobOutcome


def seconds_left_of(context: Any, safety_seconds: float) -> Callable[[], float]:
    """The run's deadline: the invocation's remaining time less the safety margin, read each time it is asked."""
    return lambda: context.get_remaining_time_in_millis() / 1000 - safety_seconds


def _record_outcome(outcome: JobOutcome, message_id: str) -> None:
    if outcome.status == "ran" and outcome.result is not None:
        result = outcome.result
        metrics.add_metric(name="ConsolidationRuns", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="ConsolidationClusters", unit=MetricUnit.Count, value=result.clusters)
        metrics.add_metric(name="MemoriesInduced", unit=MetricUnit.Count, value=result.facts_created)
        metrics.add_metric(name="ClustersDeferred", unit=MetricUnit.Count, value=result.clusters_deferred)
        logger.info(
            "consolidation job ran",
            extra={"message_id": message_id, "reason": result.reason, "run_id": result.run_id,
                   "clusters": result.clusters, "deferred": result.clusters_deferred, "capped_by": result.capped_by,
                   "induced": result.induced},
        )  # fmt: skip
        return
    if outcome.status == "busy":
        metrics.add_metric(name="ConsolidationJobsDropped", unit=MetricUnit.Count, value=1)
        logger.info("consolidation job dropped: another run holds the lease", extra={"message_id": message_id})
        return
    if outcome.reason == "retries_exhausted":
        metrics.add_metric(name="ConsolidationFailures", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="ConsolidationJobsDeadLettered", unit=MetricUnit.Count, value=1)
    logger.warning(
        "consolidation job sent to the dead-letter queue",
        extra={"message_id": message_id, "reason": outcome.reason, "error": outcome.error},
    )


def _namespace_in_logs(namespace: str | None) -> None:
    if namespace:
        logger.append_keys(namespace=namespace)
        metrics.add_metadata(key="namespace", value=namespace)


def consolidation_job_handler(runtime: FunctionRuntime) -> Handler:
    """A handler for SQS FIFO batches of consolidation jobs, with partial batch responses."""
    from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response

    processor = SqsFifoPartialProcessor()
    # A batch whose every job is retried (a busy namespace) is a partial response listing them, not a function
    # error: the queue retries each by its own receive count, and the errors alarm stays for real faults. (The
    # FIFO processor's constructor does not take the option its base class has.)
    processor.raise_on_entire_batch_failure = False
    # Built on the first invocation, kept for the container's life.
    workers: list[ConsolidationJobWorker] = []

    @logger.inject_lambda_context(clear_state=True)
    @traced
    @metrics.log_metrics(capture_cold_start_metric=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not workers:
            workers.append(build_job_worker(runtime))
        worker = workers[0]
        seconds_left = seconds_left_of(context, runtime.settings.aws.consolidation_safety_seconds)
        metrics.add_metric(name="ConsolidationJobsReceived", unit=MetricUnit.Count, value=len(event.get("Records", [])))

        def record_handler(record: SQSRecord) -> None:
            receive_count = int(record.attributes.approximate_receive_count or 1)
            _namespace_in_logs(record.attributes.message_group_id)
            try:
                outcome = worker.process(record.body, receive_count, seconds_left=seconds_left)
            except RunInProgress:
                metrics.add_metric(name="ConsolidationBusyRetries", unit=MetricUnit.Count, value=1)
                raise
            except Exception:
                metrics.add_metric(name="ConsolidationFailures", unit=MetricUnit.Count, value=1)
                raise
            _record_outcome(outcome, record.message_id)

        return dict(process_partial_response(event, record_handler, processor, context))

    return handler


def build_job_worker(runtime: FunctionRuntime) -> ConsolidationJobWorker:
    """The consolidation worker over the runtime's services and the consolidation dead-letter queue."""
    from rearview.service.hindsight.job_worker import ConsolidationJobWorker

    aws = runtime.settings.aws
    dead_letters = runtime.consolidation_dead_letters
    if dead_letters is None:
        from rearview.bootstrap import build_consolidation_dead_letters

        dead_letters = build_consolidation_dead_letters(runtime.settings)
    return ConsolidationJobWorker(
        runtime.services().runner, dead_letters, max_receive_count=aws.consolidation_max_receive_count
    )


@dataclass
class ScheduleReport:
    """What one scheduled invocation enqueued."""

    enqueued: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"enqueued": len(self.enqueued), "failed": self.failed}


class ScheduleEnqueueFailed(Exception):
    """Some due jobs could not be enqueued; the invocation fails so that EventBridge retries it (then its DLQ)."""


def enqueue_scheduled(services: Services) -> ScheduleReport:
    """Send one schedule job per namespace that is due (`HindsightTriggers.due_by_schedule`), each once.

    A namespace whose send fails is reported and the others still go; the caller fails the invocation then, and a
    retry finds the namespaces that ran meanwhile no longer due."""
    if services.consolidation.jobs is None:
        raise ConfigurationError(
            "aws.consolidation_queue_url: required by the schedule (REARVIEW_AWS__CONSOLIDATION_QUEUE_URL)",
            field="aws.consolidation_queue_url",
        )
    report = ScheduleReport()
    due = {job.namespace: job for job in services.triggers.due_by_schedule()}
    for namespace, job in due.items():
        try:
            services.consolidation.jobs.send(job)
        except Exception as exc:
            logger.exception("could not enqueue the scheduled job", extra={"namespace": namespace})
            report.failed[namespace] = f"{type(exc).__name__}: {exc}"[:500]
            continue
        report.enqueued.append(namespace)
    return report


def handle_schedule(services: Services) -> dict[str, Any]:
    """The consolidate function's scheduled invocation: enqueue what is due, count it, fail if a send failed."""
    report = enqueue_scheduled(services)
    metrics.add_metric(name="ConsolidationJobsEnqueued", unit=MetricUnit.Count, value=len(report.enqueued))
    metrics.add_metric(name="ScheduleEnqueueFailures", unit=MetricUnit.Count, value=len(report.failed))
    logger.info("scheduled consolidation jobs enqueued", extra=report.as_dict())
    if report.failed:
        raise ScheduleEnqueueFailed(f"{len(report.failed)} scheduled jobs could not be enqueued: {report.failed}")
    return report.as_dict()


def consolidate_handler(runtime: FunctionRuntime) -> Handler:
    """A handler for the consolidate function: the EventBridge schedule (enqueue one job per namespace that is
    due, for the consolidation worker), or the HTTP route (a run of one namespace, now)."""
    from rearview.api.lambda_runtime import is_scheduled_event

    @logger.inject_lambda_context(clear_state=True)
    @traced
    @metrics.log_metrics(capture_cold_start_metric=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not is_scheduled_event(event):
            return runtime.resolve_http(event, context)
        return handle_schedule(runtime.services())

    return handler
