"""API keys in the AWS backend's single DynamoDB table: one item per key, pk=`APIKEY#<key id>`, sk=`APIKEY`.

Only the hash of the secret is stored. Listing scans for `APIKEY#` items: keys are few (one per agent or tenant)
and listing is an admin action, so a scan with a filter is cheaper than a GSI that every memory write would pay
for. Reads by key id (the authorizer's path) are strongly consistent gets, so a revocation is seen at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from rearview.domain.access import ApiKey
from rearview.domain.permissions import parse_permissions
from rearview.errors import ConcurrentUpdate
from rearview.settings import AwsSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

KEY_PK_PREFIX = "APIKEY#"
KEY_SK = "APIKEY"


def _item(key: ApiKey) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pk": {"S": KEY_PK_PREFIX + key.key_id},
        "sk": {"S": KEY_SK},
        "key_id": {"S": key.key_id},
        "scope": {"S": key.scope},
        "permissions": {"S": ",".join(p.value for p in key.permissions)},
        "secret_hash": {"S": key.secret_hash},
        "created_at": {"S": key.created_at.isoformat()},
    }
    if key.expires_at is not None:
        item["expires_at"] = {"S": key.expires_at.isoformat()}
    if key.revoked_at is not None:
        item["revoked_at"] = {"S": key.revoked_at.isoformat()}
    if key.description is not None:
        item["description"] = {"S": key.description}
    if key.requests_per_minute is not None:
        item["requests_per_minute"] = {"N": str(key.requests_per_minute)}
    return item


def _key(item: dict[str, Any]) -> ApiKey:
    def text(name: str) -> str | None:
        value = item.get(name)
        return None if value is None else str(value["S"])

    return ApiKey(
        key_id=str(item["key_id"]["S"]),
        scope=str(item["scope"]["S"]),
        permissions=parse_permissions(str(item["permissions"]["S"])),
        secret_hash=str(item["secret_hash"]["S"]),
        created_at=datetime.fromisoformat(str(item["created_at"]["S"])),
        expires_at=_dt(text("expires_at")),
        revoked_at=_dt(text("revoked_at")),
        description=text("description"),
        requests_per_minute=int(item["requests_per_minute"]["N"]) if "requests_per_minute" in item else None,
    )


def _dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


class DynamoDBKeyStore:
    """KeyStore over the single table (see the module docstring for the item layout)."""

    def __init__(
        self, table_name: str, *, client: DynamoDBClient | None = None, settings: AwsSettings | None = None
    ) -> None:
        if client is None:
            from rearview.adapters.aws_clients import boto3_client

            client = boto3_client("dynamodb", settings)
        self.table_name = table_name
        self.client = client

    def close(self) -> None:
        """Nothing to release: boto3 clients hold no connection that needs closing."""

    def put(self, key: ApiKey) -> None:
        try:
            self.client.put_item(
                TableName=self.table_name, Item=_item(key), ConditionExpression="attribute_not_exists(pk)"
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            raise ConcurrentUpdate(f"key_id: {key.key_id} already exists") from None

    def get(self, key_id: str) -> ApiKey | None:
        response = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": {"S": KEY_PK_PREFIX + key_id}, "sk": {"S": KEY_SK}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return None if item is None else _key(item)

    def list(self) -> list[ApiKey]:
        keys: list[ApiKey] = []
        for item in self._key_items(limit=None):
            keys.append(_key(item))
        return sorted(keys, key=lambda k: (k.created_at, k.key_id))

    def revoke(self, key_id: str, at: datetime) -> ApiKey | None:
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key={"pk": {"S": KEY_PK_PREFIX + key_id}, "sk": {"S": KEY_SK}},
                # Keep the first revocation time; the condition also stops an update from creating an item.
                UpdateExpression="SET revoked_at = if_not_exists(revoked_at, :at)",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":at": {"S": at.isoformat()}},
                ReturnValues="ALL_NEW",
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return None
        return _key(response["Attributes"])

    def set_requests_per_minute(self, key_id: str, requests_per_minute: int | None) -> ApiKey | None:
        limit: dict[str, Any] = (
            {"UpdateExpression": "REMOVE requests_per_minute"}
            if requests_per_minute is None
            else {
                "UpdateExpression": "SET requests_per_minute = :limit",
                "ExpressionAttributeValues": {":limit": {"N": str(requests_per_minute)}},
            }
        )
        try:
            response = self.client.update_item(
                TableName=self.table_name,
                Key={"pk": {"S": KEY_PK_PREFIX + key_id}, "sk": {"S": KEY_SK}},
                ConditionExpression="attribute_exists(pk)",
                ReturnValues="ALL_NEW",
                **limit,
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return None
        return _key(response["Attributes"])

    def has_any(self) -> bool:
        return any(True for _ in self._key_items(limit=1))

    def _key_items(self, limit: int | None) -> Any:
        """Yield the key items, page by page (a scan filtered on the pk prefix)."""
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": "begins_with(pk, :prefix) AND sk = :sk",
            "ExpressionAttributeValues": {":prefix": {"S": KEY_PK_PREFIX}, ":sk": {"S": KEY_SK}},
            "ConsistentRead": True,
        }
        found = 0
        while True:
            page = self.client.scan(**kwargs)
            for item in page.get("Items", []):
                yield item
                found += 1
                if limit is not None and found >= limit:
                    return
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last
