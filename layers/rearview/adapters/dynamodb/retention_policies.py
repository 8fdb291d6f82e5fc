"""`DynamoDBRetentionPolicies`: each namespace's retention policy as an item of the single table,
`RETENTION` / `<namespace>`: one partition holds them all, so the scheduled sweep reads them with one Query. (No
namespace can be `RETENTION`'s partition: namespaces live under `NS#`.) Not a memory: the stream decoding and the
index sync pass the partition by."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rearview.domain.retention import RetentionPolicy
from rearview.domain.timestamps import as_utc
from rearview.settings import AwsSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

RETENTION_PK = "RETENTION"


def _policy(item: dict[str, Any]) -> tuple[RetentionPolicy, datetime]:
    policy = RetentionPolicy.model_validate(json.loads(item["policy"]["S"]))
    return policy, as_utc(datetime.fromisoformat(item["updated_at"]["S"]))


class DynamoDBRetentionPolicies:
    def __init__(
        self, table_name: str, *, client: DynamoDBClient | None = None, settings: AwsSettings | None = None
    ) -> None:
        if client is None:
            from rearview.adapters.aws_clients import boto3_client

            client = boto3_client("dynamodb", settings)
        self.table_name = table_name
        self.client = client

    def _key(self, namespace: str) -> dict[str, Any]:
        return {"pk": {"S": RETENTION_PK}, "sk": {"S": namespace}}

    def get(self, namespace: str) -> tuple[RetentionPolicy, datetime] | None:
        item = self.client.get_item(TableName=self.table_name, Key=self._key(namespace), ConsistentRead=True)
        return _policy(item["Item"]) if "Item" in item else None

    def put(self, namespace: str, policy: RetentionPolicy, at: datetime) -> None:
        self.client.put_item(
            TableName=self.table_name,
            Item={
                **self._key(namespace),
                "policy": {"S": policy.model_dump_json()},
                "updated_at": {"S": as_utc(at).isoformat()},
            },
        )

    def delete(self, namespace: str) -> bool:
        response = self.client.delete_item(TableName=self.table_name, Key=self._key(namespace), ReturnValues="ALL_OLD")
        return "Attributes" in response

    def all(self) -> dict[str, tuple[RetentionPolicy, datetime]]:
        return {item["sk"]["S"]: _policy(item) for item in self._items()}

    def _items(self) -> Iterator[dict[str, Any]]:
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": RETENTION_PK}},
            "ConsistentRead": True,
        }
        while True:
            page = self.client.query(**request)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
