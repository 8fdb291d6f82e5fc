"""The index_sync Lambda's handler: DynamoDB Streams batches -> the search index, with partial batch responses.

The whole batch is decoded and applied first, in one bulk round trip (IndexSyncService coalesces it); then
Powertools' BatchProcessor reports every record whose decoding or application failed, so Lambda retries from the
first failed record. Application is all-or-nothing per batch: when the index refuses any of it, every record
of the batch is reported, which is safe because upserts and deletes are idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from rearview.api.lambda_runtime import Handler, logger, metrics, traced
from rearview.errors import ConfigurationError

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch import BatchProcessor
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

    from rearview.api.lambda_runtime import FunctionRuntime
    from rearview.domain.changes import IndexChange
    from rearview.service.index_sync import IndexSyncService


class IndexSyncFailed(Exception):
    """A record could not be decoded or applied; the message says why."""


def _sequence_number(record: dict[str, Any]) -> str:
    return str(record.get("dynamodb", {}).get("SequenceNumber") or record.get("eventID"))


@dataclass(frozen=True)
class _SyncParts:
    """What a container keeps between invocations: the service, the batch processor and the record decoder."""

    service: IndexSyncService
    processor: BatchProcessor
    decode: Callable[[Mapping[str, Any]], IndexChange | None]


def index_sync_handler(runtime: FunctionRuntime) -> Handler:
    """A handler for DynamoDB Streams events that keeps the index (`Services.index_maintenance`) in step with
    the table.

    The batch utilities (~0.1 s of imports) and the services are set up on the first invocation, not at import.
    """
    cached: list[_SyncParts] = []

    def parts() -> _SyncParts:
        if not cached:
            cached.append(_sync_parts(runtime))
        return cached[0]

    @logger.inject_lambda_context(clear_state=True)
    @traced
    @metrics.log_metrics(capture_cold_start_metric=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        from aws_lambda_powertools.utilities.batch import process_partial_response

        sync = parts()
        decoded, failed = _decode(event.get("Records", []), sync.decode)
        failed.update(_apply(sync.service, decoded))
        metrics.add_metric(name="IndexSyncFailedRecords", unit=MetricUnit.Count, value=len(failed))

        def record_handler(record: DynamoDBRecord) -> None:
            reason = failed.get(str(record.dynamodb.sequence_number if record.dynamodb else record.event_id))
            if reason is not None:
                raise IndexSyncFailed(reason)

        return dict(process_partial_response(event, record_handler, sync.processor, context))

    return handler


def _sync_parts(runtime: FunctionRuntime) -> _SyncParts:
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType

    from rearview.bootstrap import stream_change_decoder
    from rearview.service.index_sync import IndexSyncService

    index = runtime.services().index_maintenance
    if index is None:
        raise ConfigurationError("index_sync: the index is written with the store; there is nothing to sync")
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
    return _SyncParts(IndexSyncService(index), processor, stream_change_decoder())


def _decode(
    records: Iterable[dict[str, Any]], decode: Callable[[Mapping[str, Any]], IndexChange | None]
) -> tuple[dict[str, IndexChange], dict[str, str]]:
    """The changes of the records, by sequence number, and why each undecodable record failed."""
    decoded: dict[str, IndexChange] = {}
    failed: dict[str, str] = {}
    for record in records:
        sequence = _sequence_number(record)
        try:
            change = decode(record)
        except Exception as exc:
            failed[sequence] = f"undecodable record: {type(exc).__name__}: {exc}"
            logger.exception("undecodable stream record", extra={"sequence_number": sequence})
            continue
        if change is not None:
            decoded[sequence] = change
    return decoded, failed


def _apply(service: IndexSyncService, decoded: dict[str, IndexChange]) -> dict[str, str]:
    """Apply the decoded changes in one bulk round trip; when the index refuses it, why each record failed."""
    try:
        report = service.apply(list(decoded.values()))
    except Exception as exc:
        logger.exception("index sync failed", extra={"records": len(decoded)})
        return {sequence: f"index refused the batch: {type(exc).__name__}: {exc}" for sequence in decoded}
    metrics.add_metric(name="IndexUpserts", unit=MetricUnit.Count, value=report.upserted)
    metrics.add_metric(name="IndexDeletes", unit=MetricUnit.Count, value=report.deleted)
    metrics.add_metric(name="IndexExpiries", unit=MetricUnit.Count, value=report.expired)
    metrics.add_metric(name="IndexUnchangedSkipped", unit=MetricUnit.Count, value=report.unchanged)
    return {}
