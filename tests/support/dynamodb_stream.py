"""DynamoDB Streams on moto, read the way Lambda's event source mapping reads them.

`StreamReader(table)` follows every shard of the table's stream from where it last stopped and returns the new
records as the `Records` of a Lambda DynamoDB Streams event (binary attributes base64-encoded, as Lambda delivers
them), so a test can hand them to the index_sync function exactly as AWS would.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from rearview.domain.memory import Memory


def _lambda_json(value: Any) -> Any:
    """Typed attribute values as Lambda's JSON event has them: bytes become base64 text."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {k: _lambda_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lambda_json(v) for v in value]
    return value


def moto_streams_client(region: str = "us-east-1") -> Any:
    """A DynamoDB Streams client that moto intercepts. Recent botocore sends calls naming a stream ARN to an
    account-based endpoint (`<account>.streams-ddb.<region>...`) that moto does not route; the regional endpoint
    is the same API."""
    import boto3

    return boto3.client(
        "dynamodbstreams", region_name=region, endpoint_url=f"https://streams.dynamodb.{region}.amazonaws.com"
    )


class StreamReader:
    """Reads a table's stream (moto or real) shard by shard, remembering each shard's position."""

    def __init__(self, dynamodb_client: Any, streams_client: Any, table_name: str) -> None:
        self._streams = streams_client
        self._arn = dynamodb_client.describe_table(TableName=table_name)["Table"]["LatestStreamArn"]
        self._iterators: dict[str, str | None] = {}

    def _shards(self) -> list[str]:
        description = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]
        return [shard["ShardId"] for shard in description["Shards"]]

    def read(self) -> list[dict[str, Any]]:
        """Every record written since the last read, oldest first, in Lambda's event shape."""
        records: list[dict[str, Any]] = []
        for shard in self._shards():
            if shard not in self._iterators:
                self._iterators[shard] = self._streams.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            iterator = self._iterators[shard]
            while iterator:
                response = self._streams.get_records(ShardIterator=iterator, Limit=1000)
                batch = response.get("Records", [])
                iterator = response.get("NextShardIterator")
                records.extend(batch)
                if not batch:
                    break
            self._iterators[shard] = iterator
        for record in records:
            record["eventSourceARN"] = self._arn
        # Round trip through JSON so the records are exactly what a Lambda handler receives.
        return json.loads(json.dumps(_lambda_json(records), default=str))

    def event(self) -> dict[str, Any]:
        """The new records as one Lambda DynamoDB Streams event."""
        return {"Records": self.read()}


def apply_records_to_index(records: list[dict[str, Any]], index: Any) -> int:
    """Apply stream records to an index the way index sync does (INSERT/MODIFY upsert the new image, REMOVE
    deletes; items that are not memories are skipped); returns how many records touched the index.

    For suites that need the index in step with the store after every write (the contract suite); the
    end-to-end tests run the real index_sync function instead.
    """
    from rearview.adapters.dynamodb import is_memory_item, memory_from_item, vector_from_item

    upserts: list[tuple[Memory, np.ndarray]] = []
    touched = 0
    for record in records:
        change = record["dynamodb"]
        image = change.get("NewImage") or change.get("OldImage") or change["Keys"]
        if not is_memory_item(image):
            continue
        touched += 1
        if record["eventName"] == "REMOVE":
            if upserts:
                index.upsert(upserts)
                upserts = []
            old = memory_from_item(change["OldImage"])
            index.delete(old.namespace, [old.id], old.layer)
            continue
        memory = memory_from_item(change["NewImage"])
        vector = vector_from_item(change["NewImage"])
        if vector is not None:
            upserts = [(m, v) for m, v in upserts if (m.namespace, m.id) != (memory.namespace, memory.id)]
            upserts.append((memory, vector))
    if upserts:
        index.upsert(upserts)
    return touched
