"""Lambda's SQS event source: long-polls a queue, hands batches to the function as SQS events, deletes what the
function handled, and leaves what failed to come back after the visibility timeout (receive counts grow, and the
queue's redrive policy moves a message past its maximum to the dead-letter queue, as SQS does).

With `ReportBatchItemFailures` only the records the function lists are retried; a function that fails (raises,
times out) retries the whole batch. `retry_seconds` shortens the wait before a failed message returns (the
stack's visibility timeouts are minutes: six times the worker's timeout).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from rearview.emulator.containers import FunctionError
from rearview.emulator.resources import Queue
from rearview.emulator.template import REGION, EventSource

logger = logging.getLogger(__name__)

# Long polling: an empty queue costs one request a second, and stopping waits at most this long.
WAIT_SECONDS = 1
# function logical id, event, timeout -> the handler's result.
Invoke = Callable[[str, dict[str, Any], float | None], Any]


def sqs_record(message: dict[str, Any], queue: Queue) -> dict[str, Any]:
    """A received message as a record of Lambda's SQS event."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": value.get("BinaryValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value.get("DataType"),
            }
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue.arn,
        "awsRegion": REGION,
    }


class SqsPoller:
    """One SQS event source mapping, polled in a thread of its own."""

    def __init__(
        self,
        source: EventSource,
        queue: Queue,
        sqs: Any,
        invoke: Invoke,
        *,
        retry_seconds: float | None = None,
    ) -> None:
        self.source = source
        self.queue = queue
        self._sqs = sqs
        self._invoke = invoke
        self._retry_seconds = retry_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sqs-{queue.name}", daemon=True)
        self.batches = 0
        self.failed_records = 0

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception:
                logger.exception("polling %s failed; trying again", self.queue.name)
                self._stop.wait(1.0)

    def poll_once(self) -> int:
        """One receive and its delivery; returns how many messages it received."""
        response = self._sqs.receive_message(
            QueueUrl=self.queue.url,
            MaxNumberOfMessages=min(self.source.batch_size, 10),
            AttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=WAIT_SECONDS,
        )
        messages = response.get("Messages", [])
        if not messages:
            return 0
        self.batches += 1
        event = {"Records": [sqs_record(m, self.queue) for m in messages]}
        failed = self._deliver(event, messages)
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), 10):
            entries = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done[start : start + 10])
            ]
            self._sqs.delete_message_batch(QueueUrl=self.queue.url, Entries=entries)
        self.failed_records += len(failed)
        if failed and self._retry_seconds is not None:
            for message in messages:
                if message["MessageId"] in failed:
                    self._sqs.change_message_visibility(
                        QueueUrl=self.queue.url,
                        ReceiptHandle=message["ReceiptHandle"],
                        VisibilityTimeout=int(self._retry_seconds),
                    )
        return len(messages)

    def _deliver(self, event: dict[str, Any], messages: list[dict[str, Any]]) -> set[str]:
        """The ids of the messages to retry."""
        every = {m["MessageId"] for m in messages}
        try:
            result = self._invoke(self.source.function, event, None)
        except FunctionError as exc:
            logger.warning("%s failed on a batch of %d from %s: %s", exc.function, len(messages), self.queue.name, exc)
            return every
        if not self.source.reports_item_failures or not isinstance(result, dict):
            return set()
        listed = {str(f.get("itemIdentifier")) for f in result.get("batchItemFailures") or []}
        # An identifier that names no record of the batch fails the whole batch, as Lambda does.
        return every if listed - every else listed
