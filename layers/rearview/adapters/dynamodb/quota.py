"""RequestQuota in the AWS backend's single table: one counter item per API key and window,
pk=`QUOTA#<key id>`, sk=`WINDOW#<window start, epoch seconds>`, with `requests` and `ttl`.

Requests are counted by one conditional `UpdateItem` (`ADD requests :n` only while `requests <= limit - n`), atomic
across every Lambda container; a refusal is the condition failing, and counts nothing. A function counts a lease of
several requests at a time (`rearview.service.throttle`), so most requests write nothing here. The `ttl` attribute
lets DynamoDB's TTL drop the item an hour after its window ends. A key's counters sit in a partition of their own,
so one tenant's flood neither slows another's counting nor shares its quota; the functions that serve requests are
granted the `QUOTA#*` leading keys (infra/rearview_infra/functions.py). Index sync's stream filter passes these
items by (only `EP#`, `FACT#` and expired working memory reach it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rearview.adapters.dynamodb.table import TTL_ATTRIBUTE
from rearview.domain.quota import QuotaWindow
from rearview.settings import AwsSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

QUOTA_PK_PREFIX = "QUOTA#"
WINDOW_SK_PREFIX = "WINDOW#"


def counter_key(key_id: str, window: QuotaWindow) -> dict[str, dict[str, str]]:
    """The item key of one key's counter in one window."""
    return {"pk": {"S": QUOTA_PK_PREFIX + key_id}, "sk": {"S": f"{WINDOW_SK_PREFIX}{window.epoch}"}}


class DynamoDBRequestQuota:
    """RequestQuota over the single table (see the module docstring for the item layout)."""

    def __init__(
        self, table_name: str, *, client: DynamoDBClient | None = None, settings: AwsSettings | None = None
    ) -> None:
        if client is None:
            from rearview.adapters.aws_clients import boto3_client

            client = boto3_client("dynamodb", settings)
        self.table_name = table_name
        self.client = client

    def take(self, key_id: str, window: QuotaWindow, limit: int, count: int = 1) -> bool:
        if count < 1 or count > limit:
            return False
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=counter_key(key_id, window),
                UpdateExpression="ADD requests :n SET #ttl = if_not_exists(#ttl, :ttl)",
                ConditionExpression="attribute_not_exists(requests) OR requests <= :room",
                ExpressionAttributeNames={"#ttl": TTL_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":n": {"N": str(count)},
                    ":room": {"N": str(limit - count)},
                    ":ttl": {"N": str(int(window.expires_at.timestamp()))},
                },
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def counted(self, key_id: str, window: QuotaWindow) -> int:
        """How many requests of the key the window counted (0 once dropped)."""
        item = self.client.get_item(
            TableName=self.table_name, Key=counter_key(key_id, window), ConsistentRead=True
        ).get("Item")
        return int(item["requests"]["N"]) if item else 0
