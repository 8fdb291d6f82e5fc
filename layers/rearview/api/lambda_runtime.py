"""What every Lambda function shares: observability, validated settings, and the services cached per container.

A handler module is a few lines:

    runtime = FunctionRuntime("recall")
    handler = runtime.http_handler()

- Settings are read from the environment and validated when the module is imported (the cold start), so a
  misconfigured function fails its init, visibly, instead of its first request.
- Services are built on the first invocation and kept for the container's life (clients, the embedder and the
  resolver are reused warm). They are not built at import, so importing a handler needs no AWS access and its cost
  is the import alone (bench/cold_start.py measures it).
- Powertools Logger (JSON, Lambda context, correlation id), Tracer (X-Ray; responses are not captured: they hold
  users' memories) and Metrics (CloudWatch EMF) wrap every handler. The namespace goes into log keys and metric
  metadata, never into metric dimensions: one dimension value per tenant would make a metric per tenant.

Tests build a runtime with `settings=` and `build=` (a function returning Services) instead of patching globals.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from rearview.api import snapstart
from rearview.settings import Settings, from_environment

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from rearview.bootstrap import Services
    from rearview.ports import DeadLetters
    from rearview.service.write_worker import WriteWorker

Handler = Callable[[dict[str, Any], Any], Any]

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Rearview"))


def traced(handler: Handler) -> Handler:
    """Powertools Tracer (X-Ray) around a handler, set up on its first invocation.

    Importing the X-Ray SDK costs about 350 ms (it loads botocore's session); at import it would land on every
    cold start's init, before anything needs it. Responses are not captured: they hold users' memories.
    """
    wrapped: Handler | None = None

    @functools.wraps(handler)
    def run(event: dict[str, Any], context: Any) -> Any:
        nonlocal wrapped
        if wrapped is None:
            from aws_lambda_powertools import Tracer

            wrapped = Tracer().capture_lambda_handler(handler, capture_response=False)
        return wrapped(event, context)

    return run


# The retention sweep stops starting work when the invocation has less than this left (a batch of deletes fits).
SWEEP_MARGIN_MILLIS = 8000

# The metric of every search the store answered because the index could not (service.search_fallback); the CDK
# app alarms on it.
SEARCH_FALLBACK_METRIC = "SearchFallbacks"


def count_search_fallback(operation: str, reason: str) -> None:
    """One search answered by the store's own search instead of the index: a metric (the log says why, once)."""
    metrics.add_metric(name=SEARCH_FALLBACK_METRIC, unit=MetricUnit.Count, value=1)


# The metric of every request refused by per-key throttling (service.throttle); the CDK app alarms on it. The key's
# id goes to the log line, never into a dimension (one metric per key).
THROTTLED_METRIC = "Throttled"


def count_throttled(key_id: str) -> None:
    """One request refused because its key made its limit this minute: a metric."""
    metrics.add_metric(name=THROTTLED_METRIC, unit=MetricUnit.Count, value=1)


# The requests and 5xx answers of each function version (dimensions `service` and `version`): what a canary's
# rollback alarm watches (infra: monitoring.py), since a 500 the function answers is no Lambda error.
VERSION_REQUESTS_METRIC = "VersionRequests"
VERSION_SERVER_ERRORS_METRIC = "Version5xx"


def count_by_version(context: Any, status: int) -> None:
    """One request answered by this function version, and whether it was a 5xx (its own EMF line, apart from the
    function's other metrics, which carry no version dimension)."""
    dimensions = {
        "service": os.environ.get("POWERTOOLS_SERVICE_NAME", "rearview"),
        "version": str(getattr(context, "function_version", None) or "$LATEST"),
    }
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Rearview")
    counted = [VERSION_REQUESTS_METRIC, *([VERSION_SERVER_ERRORS_METRIC] if status >= 500 else [])]
    for name in counted:
        with single_metric(name=name, unit=MetricUnit.Count, value=1, namespace=namespace) as metric:
            for key, value in dimensions.items():
                metric.add_dimension(name=key, value=value)


_NAMESPACE_IN_PATH = re.compile(r"^/v1/namespaces/([^/]+)")


def is_scheduled_event(event: dict[str, Any]) -> bool:
    """True for an EventBridge scheduled event (or any EventBridge event), as opposed to an HTTP one."""
    return event.get("source") in ("aws.events", "aws.scheduler") or "detail-type" in event


def _namespace_of(event: dict[str, Any]) -> str | None:
    match = _NAMESPACE_IN_PATH.match(str(event.get("rawPath") or ""))
    return unquote(match.group(1)) if match else None


class FunctionRuntime:
    """One function's per-container state: validated settings, and services built once, on first use."""

    def __init__(
        self,
        name: str,
        *,
        settings: Settings | None = None,
        build: Callable[[Settings], Services] | None = None,
        dead_letters: DeadLetters | None = None,
        consolidation_dead_letters: DeadLetters | None = None,
    ) -> None:
        self.name = name
        self.settings = settings or from_environment()
        # What a SnapStart snapshot of this function holds loaded (see rearview.api.snapstart); a handler adds its
        # own before the snapshot is taken (the mcp function: its SDK).
        self.snapshot_modules: list[str] = list(snapstart.PRIMED_MODULES)
        snapstart.register(lambda: snapstart.prime(self.snapshot_modules))
        self._build = build
        self._services: Services | None = None
        self._resolver: APIGatewayHttpResolver | None = None
        self._worker: WriteWorker | None = None
        self._dead_letters = dead_letters
        # None: the consolidation queue's dead-letter queue of the settings.
        self.consolidation_dead_letters = consolidation_dead_letters

    # --- cached parts ---------------------------------------------------------------------------------------

    def services(self) -> Services:
        """The services, built on the first call and cached for the container's life."""
        if self._services is None:
            if self._build is not None:
                self._services = self._build(self.settings)
            else:
                from rearview.bootstrap import build

                self._services = build(
                    self.settings, on_search_fallback=count_search_fallback, on_throttled=count_throttled
                )
        return self._services

    def resolver(self) -> APIGatewayHttpResolver:
        """The shared HTTP route table over the services."""
        if self._resolver is None:
            from rearview.api.http import create_resolver

            self._resolver = create_resolver(self.services())
        return self._resolver

    def worker(self) -> WriteWorker:
        """The queue worker: the write service plus the dead-letter queue of the settings."""
        if self._worker is None:
            from rearview.service.write_worker import WriteWorker

            dead_letters = self._dead_letters
            if dead_letters is None:
                from rearview.bootstrap import build_dead_letters

                dead_letters = build_dead_letters(self.settings)
            from rearview.bootstrap import build_erasure_marks

            self._worker = WriteWorker(
                self.services().writer,
                dead_letters,
                max_receive_count=self.settings.aws.max_receive_count,
                erasures=build_erasure_marks(self.settings),
                restore=self.services().transfer.restore,
            )
        return self._worker

    # --- handlers -------------------------------------------------------------------------------------------

    def http_handler(self) -> Handler:
        """A handler for API Gateway HTTP API (v2) events, answered by the shared route table."""

        @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
        @traced
        @metrics.log_metrics(capture_cold_start_metric=True)
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return self.resolve_http(event, context)

        return handler

    def forget_handler(self) -> Handler:
        """The forget function's handler: the HTTP routes, and on its EventBridge schedule the retention sweep
        (every namespace's policy, through the same forget path)."""

        @logger.inject_lambda_context(clear_state=True)
        @traced
        @metrics.log_metrics(capture_cold_start_metric=True)
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            if not is_scheduled_event(event):
                return self.resolve_http(event, context)
            # Stop with time to spare for the answer and the metrics; the next sweep goes on where this one could not.
            sweep = self.services().retention.sweep(
                lambda: context.get_remaining_time_in_millis() < SWEEP_MARGIN_MILLIS
            )
            forgotten = sum(report.forgotten for report in sweep.namespaces)
            archived = sum(report.archived for report in sweep.namespaces)
            metrics.add_metric(name="RetentionForgotten", unit=MetricUnit.Count, value=forgotten)
            metrics.add_metric(name="RetentionArchived", unit=MetricUnit.Count, value=archived)
            metrics.add_metric(name="RetentionUnfinished", unit=MetricUnit.Count, value=sweep.unfinished)
            return sweep.model_dump(mode="json")

        return handler

    def resolve_http(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        namespace = _namespace_of(event)
        if namespace:
            logger.append_keys(namespace=namespace)
            metrics.add_metadata(key="namespace", value=namespace)
        response = self.resolver().resolve(event, context)
        status = int(response.get("statusCode", 500))
        metrics.add_metric(name=f"Http{status // 100}xx", unit=MetricUnit.Count, value=1)
        count_by_version(context, status)
        return response

    def queue_handler(self) -> Handler:
        """A handler for SQS batches of queued writes, with partial batch responses (Powertools BatchProcessor)."""
        from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

        # Every record failing is still a partial response (all listed), not an exception: the queue retries each
        # by its own receive count either way, and the log shows the records' errors instead of a batch error.
        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

        @logger.inject_lambda_context(clear_state=True)
        @traced
        @metrics.log_metrics(capture_cold_start_metric=True)
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            worker = self.worker()
            metrics.add_metric(name="MessagesReceived", unit=MetricUnit.Count, value=len(event.get("Records", [])))

            def record_handler(record: SQSRecord) -> None:
                receive_count = int(record.attributes.approximate_receive_count or 1)
                outcome = worker.process(record.body, receive_count)
                if outcome.status == "stored":
                    stored = sum(1 for r in outcome.results if r.status == "stored" and r.reason is None)
                    metrics.add_metric(name="MemoriesStored", unit=MetricUnit.Count, value=stored)
                elif outcome.status == "dropped_erased":
                    metrics.add_metric(name="WritesDroppedErased", unit=MetricUnit.Count, value=1)
                    logger.info(
                        "write dropped: its namespace was erased after it was accepted",
                        extra={"message_id": record.message_id, "namespace": outcome.namespace},
                    )
                else:
                    metrics.add_metric(name="WritesDeadLettered", unit=MetricUnit.Count, value=1)
                    logger.warning(
                        "write sent to the dead-letter queue",
                        extra={
                            "message_id": record.message_id,
                            "namespace": outcome.namespace,
                            "reason": outcome.reason,
                            "error": outcome.error,
                        },
                    )

            return dict(process_partial_response(event, record_handler, processor, context))

        return handler
