"""DynamoDBErasureMarks: a namespace's erasure mark, an `ERASED` item in its own partition (which the erase keeps),
with DynamoDB's TTL dropping it once no write accepted before the erase can still be delivered."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from rearview.adapters.dynamodb.items import iso, parse_iso
from rearview.adapters.dynamodb.table import ERASED_SK, TTL_ATTRIBUTE, item_key
from rearview.domain.erase import ErasureMark
from rearview.domain.timestamps import as_utc
from rearview.settings import AwsSettings

# A write accepted before the erase can arrive for as long as a message lives: 4 days in the write queue, 14 in its
# dead-letter queue, from which an operator may redrive it (infra: queues.py). A day more for the TTL's own delay.
MARK_HOLDS = timedelta(days=15)
# What the erase of a namespace cannot reach on this deployment (infra: queues.py, storage.py).
NOT_REACHED = (
    "messages of the namespace in the write and consolidation dead-letter queues, kept 14 days (a write redriven "
    "from there while the mark holds is dropped)",
    "the table's point-in-time recovery, which can restore erased items for 35 days",
)


class DynamoDBErasureMarks:
    """ErasureMarks on the memory table (the `NS#<namespace>` / `ERASED` item)."""

    def __init__(self, table_name: str, *, client: Any = None, settings: AwsSettings | None = None) -> None:
        if client is None:
            from rearview.adapters.aws_clients import boto3_client

            client = boto3_client("dynamodb", settings)
        self._client = client
        self._table = table_name

    def mark(self, namespace: str, at: datetime) -> ErasureMark:
        holds_until = as_utc(at) + MARK_HOLDS
        self._client.put_item(
            TableName=self._table,
            Item={
                **item_key(namespace, ERASED_SK),
                "erased_at": {"S": iso(at)},
                TTL_ATTRIBUTE: {"N": str(math.ceil(holds_until.timestamp()))},
            },
        )
        return ErasureMark(holds_until=holds_until, not_reached=list(NOT_REACHED))

    def erased_at(self, namespace: str) -> datetime | None:
        item = self._client.get_item(
            TableName=self._table, Key=item_key(namespace, ERASED_SK), ConsistentRead=True
        ).get("Item")
        return parse_iso(item["erased_at"]["S"]) if item else None
