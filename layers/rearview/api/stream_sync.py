"""The index_sync Lambda's handler: DynamoDB Streams batches -> the search index, with partial batch responses.

The whole batch is decoded and applied first, in one bulk round trip (IndexSyncService coalesces it); then
Powertools' BatchProcessor reports every record whose decoding or application failed, so Lambda retries from the
first failed record. Application is all-or-nothing per batch: when the index refuses any of it, every record
of the batch is reported, which is safe because upserts and deletes are idempotent.

When the function is given the consolidation queue (`ConsolidationDispatch.jobs`), the batch also feeds Hindsight's
triggers (`StreamTriggers`): the episodes it stored or merged (count and failure streak, per namespace), and working
memory the TTL removed (a session that timed out: session end). A trigger never fails the batch: the index is its job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rearview.api.lambda_runtime import Handler, logger, metrics, traced
from rearview.errors import ConfigurationError

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch import BatchProcessor
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

    from rearview.api.lambda_runtime import FunctionRuntime
    from rearview.domain.changes import IndexChange
    from rearview.service.hindsight.stream_triggers import StreamTriggers
    from rearview.service.index_sync import IndexSyncService


class IndexSyncFailed(Exception):
    """A record could not be decoded or applied; the message says why."""


def _sequence_number(record: dict[str, Any]) -> str:
    return str(record.get("dynamodb", {}).get("SequenceNumber") or record.get("eventID"))


@dataclass
class _Parts:
    """What the handler builds on its first invocation."""

    # None: no index kept apart from the table (`aws.search` `store`); the stream then feeds the triggers alone.
    service: IndexSyncService | None
    processor: BatchProcessor
    # What turns a stream record into an index change, and into the session a TTL expiry ended.
    decode: Callable[[Mapping[str, Any]], IndexChange | None]
    expired: Callable[[Mapping[str, Any]], tuple[str, str] | None]
    # None when the function is not given the consolidation queue.
    triggers: StreamTriggers | None


@dataclass
class _Decoded:
    """A batch's records as index changes (by sequence number), the undecodable ones, and the expired sessions."""

    changes: dict[str, IndexChange] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    expired_sessions: list[tuple[str, str]] = field(default_factory=list)


def _decode(records: list[dict[str, Any]], parts: _Parts) -> _Decoded:
    decoded = _Decoded()
    for record in records:
        sequence = _sequence_number(record)
        try:
            change = parts.decode(record)
            session = parts.expired(record)
        except Exception as exc:
            decoded.failed[sequence] = f"undecodable record: {type(exc).__name__}: {exc}"
            logger.exception("undecodable stream record", extra={"sequence_number": sequence})
            continue
        if change is not None:
            decoded.changes[sequence] = change
        if session is not None:
            decoded.expired_sessions.append(session)
    return decoded


def _apply(service: IndexSyncService | None, decoded: _Decoded) -> bool:
    """Apply the decoded changes to the index; on failure every one of them is reported failed. True if applied
    (or when there is no index to apply them to)."""
    from aws_lambda_powertools.metrics import MetricUnit

    if service is None:
        return True
    try:
        report = service.apply(list(decoded.changes.values()))
    except Exception as exc:
        logger.exception("index sync failed", extra={"records": len(decoded.changes)})
        reason = f"index refused the batch: {type(exc).__name__}: {exc}"
        decoded.failed.update(dict.fromkeys(decoded.changes, reason))
        return False
    metrics.add_metric(name="IndexUpserts", unit=MetricUnit.Count, value=report.upserted)
    metrics.add_metric(name="IndexDeletes", unit=MetricUnit.Count, value=report.deleted)
    # The retention sweep forgets expired memories a grace before their TTL: one the TTL deleted was missed by it
    # (or written before the `expiring` index), and what was induced from it alone was not forgotten with it.
    metrics.add_metric(name="IndexExpiries", unit=MetricUnit.Count, value=report.expired)
    if report.expired:
        logger.warning(
            "memories deleted by the TTL before the retention sweep forgot them", extra={"expired": report.expired}
        )
    metrics.add_metric(name="IndexUnchangedSkipped", unit=MetricUnit.Count, value=report.unchanged)
    return True


def _fire_triggers(triggers: StreamTriggers, decoded: _Decoded, applied: bool) -> None:
    """Send the jobs the batch makes due. The changes count only once applied: a batch the index refused comes
    back, and is evaluated then. Nothing here may fail the batch."""
    from aws_lambda_powertools.metrics import MetricUnit

    try:
        report = triggers.evaluate(decoded.changes.values() if applied else (), decoded.expired_sessions)
    except Exception:
        logger.exception("hindsight triggers failed on the stream")
        metrics.add_metric(name="StreamTriggerFailures", unit=MetricUnit.Count, value=1)
        return
    metrics.add_metric(name="ConsolidationJobsSent", unit=MetricUnit.Count, value=report.jobs)
    metrics.add_metric(name="StreamTriggerFailures", unit=MetricUnit.Count, value=report.failures)


def index_sync_handler(runtime: FunctionRuntime) -> Handler:
    """A handler for DynamoDB Streams events that keeps the index (`Services.index_maintenance`) in step with
    the table, and feeds the consolidation triggers when the function is given the job queue.

    The batch utilities (~0.1 s of imports) and the services are set up on the first invocation, not at import.
    """
    cached: list[_Parts] = []

    def parts() -> _Parts:
        if not cached:
            from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType

            from rearview.bootstrap import stream_change_decoder, stream_session_expiry
            from rearview.service.hindsight.stream_triggers import StreamTriggers
            from rearview.service.index_sync import IndexSyncService

            services = runtime.services()
            index = services.index_maintenance
            if index is None and services.settings.aws.search != "store":
                raise ConfigurationError("index_sync: the index is written with the store; there is nothing to sync")
            processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
            triggers = (
                StreamTriggers(services.triggers, services.consolidation.jobs)
                if services.consolidation.jobs is not None
                else None
            )
            cached.append(
                _Parts(
                    IndexSyncService(index) if index is not None else None,
                    processor,
                    stream_change_decoder(),
                    stream_session_expiry(),
                    triggers,
                )
            )
        return cached[0]

    @logger.inject_lambda_context(clear_state=True)
    @traced
    @metrics.log_metrics(capture_cold_start_metric=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        from aws_lambda_powertools.metrics import MetricUnit
        from aws_lambda_powertools.utilities.batch import process_partial_response

        built = parts()
        decoded = _decode(event.get("Records", []), built)
        applied = _apply(built.service, decoded)
        if built.triggers is not None:
            _fire_triggers(built.triggers, decoded, applied)
        metrics.add_metric(name="IndexSyncFailedRecords", unit=MetricUnit.Count, value=len(decoded.failed))

        def record_handler(record: DynamoDBRecord) -> None:
            reason = decoded.failed.get(str(record.dynamodb.sequence_number if record.dynamodb else record.event_id))
            if reason is not None:
                raise IndexSyncFailed(reason)

        return dict(process_partial_response(event, record_handler, built.processor, context))

    return handler
