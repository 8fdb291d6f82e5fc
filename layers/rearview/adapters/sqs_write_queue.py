"""SQS for the asynchronous write path: the write queue (WriteQueue) and its dead-letter queue (DeadLetters).

One accepted request is one message (`rearview.service.write_worker.queued_write_body`); an accepted import is one
message per chunk of IMPORT_CHUNK_ITEMS memories (`rearview.domain.transfer.QueuedImport`). SQS caps a message at
256 KiB; a request that does not fit (a full batch of long multi-byte texts) is split into consecutive messages
that each fit, so each part is stored atomically on its own.

Dead letters carry the original body unchanged, plus message attributes `reason` (poison, invalid,
retries_exhausted) and `error`, so an operator can see why, fix the cause, and redrive.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rearview.clock import SystemClock
from rearview.domain.transfer import IMPORT_CHUNK_ITEMS, ExportedMemory, QueuedImport
from rearview.domain.write import MAX_ERROR_CHARS, MemoryWrite, queued_write_body
from rearview.errors import MemoryTooLarge
from rearview.ports import Clock
from rearview.settings import AwsSettings

# SQS's limit is 262,144 bytes for body and attributes together; leave room for the attributes.
MAX_MESSAGE_BYTES = 256 * 1024 - 4 * 1024


def _client(client: Any, settings: AwsSettings | None) -> Any:
    if client is not None:
        return client
    from rearview.adapters.aws_clients import boto3_client

    return boto3_client("sqs", settings)


class SqsWriteQueue:
    """WriteQueue on a standard SQS queue."""

    def __init__(
        self,
        queue_url: str,
        *,
        client: Any = None,
        settings: AwsSettings | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.queue_url = queue_url
        self._client = _client(client, settings)
        self._clock: Clock = clock or SystemClock()

    def send(self, namespace: str, items: Sequence[MemoryWrite]) -> None:
        """Send the request as one message (or, past SQS's size limit, as consecutive parts)."""
        accepted_at = self._clock.now()
        for body in self._bodies(namespace, list(items), accepted_at):
            self._client.send_message(QueueUrl=self.queue_url, MessageBody=body)

    def _bodies(self, namespace: str, items: list[MemoryWrite], accepted_at: Any) -> list[str]:
        body = queued_write_body(namespace, items, accepted_at)
        if len(body.encode("utf-8")) <= MAX_MESSAGE_BYTES:
            return [body]
        if len(items) == 1:
            # Cannot happen with the model's limits (2000 characters); kept as a guard, not a silent drop.
            raise MemoryTooLarge(f"write: item {items[0].id} does not fit in one queue message", field="content")
        half = len(items) // 2
        return self._bodies(namespace, items[:half], accepted_at) + self._bodies(namespace, items[half:], accepted_at)

    def send_restore(self, namespace: str, items: Sequence[ExportedMemory]) -> None:
        """Send an import as messages of at most IMPORT_CHUNK_ITEMS memories each (fewer past SQS's size limit)."""
        accepted_at = self._clock.now()
        chunks = [list(items[i : i + IMPORT_CHUNK_ITEMS]) for i in range(0, len(items), IMPORT_CHUNK_ITEMS)]
        for chunk in chunks:
            for body in self._restore_bodies(namespace, chunk, accepted_at):
                self._client.send_message(QueueUrl=self.queue_url, MessageBody=body)

    def _restore_bodies(self, namespace: str, items: list[ExportedMemory], accepted_at: Any) -> list[str]:
        body = QueuedImport(namespace=namespace, restore=items, accepted_at=accepted_at).model_dump_json()
        if len(body.encode("utf-8")) <= MAX_MESSAGE_BYTES:
            return [body]
        if len(items) == 1:
            raise MemoryTooLarge(f"import: memory {items[0].id} does not fit in one queue message", field="items")
        half = len(items) // 2
        return self._restore_bodies(namespace, items[:half], accepted_at) + self._restore_bodies(
            namespace, items[half:], accepted_at
        )


class SqsDeadLetters:
    """DeadLetters on the write queue's dead-letter queue (the one its redrive policy names)."""

    def __init__(self, queue_url: str, *, client: Any = None, settings: AwsSettings | None = None) -> None:
        self.queue_url = queue_url
        self._client = _client(client, settings)

    def send(self, body: str, reason: str, error: str) -> None:
        """Park the original body with `reason` and `error` as message attributes."""
        self._client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=body,
            MessageAttributes={
                "reason": {"DataType": "String", "StringValue": reason},
                "error": {"DataType": "String", "StringValue": error[:MAX_ERROR_CHARS] or "-"},
            },
        )
