"""Lambda's DynamoDB Streams event source: reads the table's stream shard by shard, drops the records the mapping's
filters do not match, and hands the rest to the function in order, in batches of its batch size.

A batch the function fails (raises, times out) is retried, halved when `BisectBatchOnFunctionError` is set, up to
`MaximumRetryAttempts`; then its metadata goes to the on-failure destination and the shard moves on. With
`ReportBatchItemFailures` the records before the first one reported are done and the rest are retried.

DynamoDB's TTL deletes carry `userIdentity` (the service's principal); moto's deletes do not, so the records of
the items the emulator's TTL sweeper removed (`TtlDeletes`) are given it here.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from rearview.emulator.containers import FunctionError
from rearview.emulator.event_filter import matches_any
from rearview.emulator.resources import Deployment, Table
from rearview.emulator.template import REGION, EventSource

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.25
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
Invoke = Callable[[str, dict[str, Any], float | None], Any]


class TtlDeletes:
    """The keys of the items the TTL sweeper deleted, until their REMOVE record is read."""

    def __init__(self) -> None:
        self._keys: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def _key(keys: dict[str, Any]) -> str:
        return json.dumps(keys, sort_keys=True, default=str)

    def add(self, keys: dict[str, Any]) -> None:
        with self._lock:
            self._keys.add(self._key(keys))

    def claim(self, keys: dict[str, Any]) -> bool:
        with self._lock:
            key = self._key(keys)
            if key in self._keys:
                self._keys.discard(key)
                return True
            return False


def lambda_json(value: Any) -> Any:
    """Typed attribute values as Lambda's JSON event has them: bytes base64, times as epoch seconds."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime):
        return int(value.timestamp())
    if isinstance(value, dict):
        return {k: lambda_json(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [lambda_json(v) for v in value]
    return value


class StreamPoller:
    """One DynamoDB stream event source mapping, polled in a thread of its own."""

    def __init__(
        self,
        source: EventSource,
        table: Table,
        deployment: Deployment,
        streams: Any,
        invoke: Invoke,
        sqs: Any,
        ttl_deletes: TtlDeletes,
    ) -> None:
        if table.stream_arn is None:
            raise ValueError(f"table {table.name} has no stream")
        self.source = source
        self.table = table
        self._arn = table.stream_arn
        self._deployment = deployment
        self._streams = streams
        self._invoke = invoke
        self._sqs = sqs
        self._ttl = ttl_deletes
        self._iterators: dict[str, str | None] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"stream-{table.name}", daemon=True)
        self.delivered = 0
        self.failed_batches = 0

    def skip_to_latest(self) -> None:
        """Start after what the stream holds now (the state restored at start-up is indexed already)."""
        for shard in self._shards():
            self._iterators[shard] = self._streams.get_shard_iterator(
                StreamArn=self._arn, ShardId=shard, ShardIteratorType="LATEST"
            )["ShardIterator"]

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
                if not self.poll_once():
                    self._stop.wait(POLL_SECONDS)
            except Exception:
                logger.exception("reading the stream of %s failed; trying again", self.table.name)
                self._stop.wait(1.0)

    def _shards(self) -> list[str]:
        description = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]
        return [shard["ShardId"] for shard in description["Shards"]]

    def poll_once(self) -> int:
        """Read every shard once and deliver what it held; returns how many records were read."""
        read = 0
        for shard in self._shards():
            if shard not in self._iterators:
                start = self.source.properties.get("StartingPosition", "TRIM_HORIZON")
                self._iterators[shard] = self._streams.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard, ShardIteratorType=start
                )["ShardIterator"]
            iterator = self._iterators[shard]
            if not iterator:
                continue
            response = self._streams.get_records(ShardIterator=iterator, Limit=1000)
            self._iterators[shard] = response.get("NextShardIterator")
            records = [self._lambda_record(r) for r in response.get("Records", [])]
            read += len(records)
            kept = [r for r in records if matches_any(self.source.filters, r)]
            size = self.source.batch_size
            for start in range(0, len(kept), size):
                self._deliver(kept[start : start + size], shard)
        return read

    def _lambda_record(self, record: dict[str, Any]) -> dict[str, Any]:
        shaped: dict[str, Any] = lambda_json(record)
        shaped["eventSourceARN"] = self._arn
        shaped["awsRegion"] = REGION
        if shaped.get("eventName") == "REMOVE" and self._ttl.claim(shaped["dynamodb"].get("Keys", {})):
            shaped["userIdentity"] = dict(TTL_IDENTITY)
        return shaped

    def _deliver(self, batch: list[dict[str, Any]], shard: str) -> None:
        """Deliver `batch` until it is handled or its retries are spent (then to the on-failure destination)."""
        pending = [batch]
        attempts = 0
        retries = int(self.source.properties.get("MaximumRetryAttempts", -1))
        bisect = bool(self.source.properties.get("BisectBatchOnFunctionError", False))
        while pending and not self._stop.is_set():
            current = pending.pop(0)
            rest = self._invoke_once(current)
            if rest is None:
                self.delivered += len(current)
                continue
            attempts += 1
            if 0 <= retries < attempts:
                self._give_up(rest, shard)
                attempts = 0
                continue
            if bisect and len(rest) > 1 and rest is current:
                half = len(rest) // 2
                pending[:0] = [rest[:half], rest[half:]]
            else:
                pending.insert(0, rest)
            self._stop.wait(min(0.2 * attempts, 2.0))

    def _invoke_once(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """None when the batch is handled, else the records to retry (the batch itself on a function error)."""
        try:
            result = self._invoke(self.source.function, {"Records": batch}, None)
        except FunctionError as exc:
            logger.warning("%s failed on %d stream records: %s", exc.function, len(batch), exc)
            self.failed_batches += 1
            return batch
        failures = (result or {}).get("batchItemFailures") if isinstance(result, dict) else None
        if not failures or not self.source.reports_item_failures:
            return None
        sequence = [r["dynamodb"]["SequenceNumber"] for r in batch]
        listed = [sequence.index(f["itemIdentifier"]) for f in failures if f.get("itemIdentifier") in sequence]
        if len(listed) != len(failures):
            return batch
        self.failed_batches += 1
        return batch[min(listed) :]

    def _give_up(self, batch: list[dict[str, Any]], shard: str) -> None:
        """The on-failure destination gets the batch's metadata (not its records), as Lambda sends it."""
        destination = self.source.properties.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        logger.error("%d stream records of %s failed every retry", len(batch), self.table.name)
        if destination is None:
            return
        arn = self._deployment.resolver().resolve(destination)
        sequence = [r["dynamodb"]["SequenceNumber"] for r in batch]
        body = {
            "requestContext": {"condition": "RetryAttemptsExhausted", "functionArn": self.source.function},
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "DDBStreamBatchInfo": {
                "shardId": shard,
                "startSequenceNumber": sequence[0],
                "endSequenceNumber": sequence[-1],
                "batchSize": len(batch),
                "streamArn": self._arn,
            },
        }
        queue = self._deployment.queue_by_arn(str(arn))
        self._sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps(body))
