"""DynamoDB Streams on moto, read the way Lambda's event source mapping reads them.

`StreamReader(table)` follows every shard of the table's stream from where it last stopped and returns the new
records as the `Records` of a Lambda DynamoDB Streams event (binary attributes base64-encoded, as Lambda delivers
them), so a test can hand them to the index_sync function exactly as AWS would.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def _lambda_json(value: Any) -> Any:
    """Typed attribute values as Lambda's JSON event has them: bytes become base64 text."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {k: _lambda_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lambda_json(v) for v in value]
    return value


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
