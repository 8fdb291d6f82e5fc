"""A namespace's recall counters per UTC day on the single table: `NS#<namespace>` / `RECALLS#<YYYY-MM-DD>`, kept
`RECALL_DAY_RETENTION` by `ttl`; a query on the prefix reads a month of them in one page.

A recall writes none of them: it counts itself in its minute's access window (`access_windows`), its one write. The
fold that moves the windows' counts into the memories and the namespace's totals adds each day's recalls here (one
write per day folded), and a read adds what the unfolded windows hold."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING

from rearview.adapters.dynamodb.table import RECALL_DAY_SK_PREFIX, TTL_ATTRIBUTE, item_key, namespace_pk
from rearview.domain.stats import RECALL_DAY_RETENTION, RecallDay

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def add_day(client: DynamoDBClient, table: str, namespace: str, day: date, recalls: int, hits: int) -> None:
    """Add folded recalls to the counters of a UTC day (the item expires `RECALL_DAY_RETENTION` after the day)."""
    expires = datetime.combine(day, time(), tzinfo=UTC) + RECALL_DAY_RETENTION
    client.update_item(
        TableName=table,
        Key=item_key(namespace, f"{RECALL_DAY_SK_PREFIX}{day.isoformat()}"),
        UpdateExpression="ADD recalls :n, hits :h SET #ttl = :ttl",
        ExpressionAttributeNames={"#ttl": TTL_ATTRIBUTE},
        ExpressionAttributeValues={
            ":n": {"N": str(recalls)},
            ":h": {"N": str(hits)},
            ":ttl": {"N": str(math.ceil(expires.timestamp()))},
        },
    )


def read_days(client: DynamoDBClient, table: str, namespace: str, since: date) -> list[RecallDay]:
    """The namespace's day counters from `since` on, oldest first (a consistent query of the key range)."""
    found: list[RecallDay] = []
    request = {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk AND sk BETWEEN :from AND :to",
        "ExpressionAttributeValues": {
            ":pk": {"S": namespace_pk(namespace)},
            ":from": {"S": f"{RECALL_DAY_SK_PREFIX}{since.isoformat()}"},
            ":to": {"S": f"{RECALL_DAY_SK_PREFIX}9999-12-31"},
        },
        "ConsistentRead": True,
    }
    while True:
        response = client.query(**request)  # type: ignore[arg-type]
        for item in response.get("Items", []):
            found.append(
                RecallDay(
                    day=date.fromisoformat(item["sk"]["S"][len(RECALL_DAY_SK_PREFIX) :]),
                    recalls=int(item.get("recalls", {}).get("N", "0")),
                    hits=int(item.get("hits", {}).get("N", "0")),
                )
            )
        last = response.get("LastEvaluatedKey")
        if not last:
            return found
        request["ExclusiveStartKey"] = last
