"""DynamoDBHindsightLedger: consolidation's ledger as items beside the memories in the single table, under the
namespace's partition key `NS#<namespace>` (the layout is in `table`):

- `LEASE`: owner and `lease_until` (fixed-width ISO, which compares like the instants). Taken by one conditional
  PutItem (`attribute_not_exists(pk) OR lease_until < :now OR owner = :me`), so of two workers racing for it one
  wins; `ttl` a day after it ends removes a lease that a crashed run left.
- `RUN#<started ISO>#<run id>`: the run as JSON (read back whole, so a new field needs no change here), kept
  `RUN_RETENTION` by `ttl`. A query on the prefix, backwards, is the newest runs first.
- `SPEND#<YYYY-MM-DD>`: the UTC day's runs, clusters and tokens, added to (ADD), kept `SPEND_RETENTION` by `ttl`.
- `HINDSIGHT`: the running totals: runs, runs_failed, tokens, last_run_at and last_run_reason, one attribute per
  kind induced (`induced#<kind>`) and one per kind and verdict of feedback (`feedback#<verdict>#<kind>`, `adopted`
  among the verdicts), all added to by ADD, so no read precedes a write.

A run's item, its totals and its day's spend are written in one TransactWriteItems whose put is conditioned on the
run being new, so a run recorded twice (a retry) is counted once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any, get_args

from rearview.adapters.dynamodb.items import iso, parse_iso
from rearview.adapters.dynamodb.table import (
    HINDSIGHT_SK,
    LEASE_SK,
    RUN_SK_PREFIX,
    SPEND_SK_PREFIX,
    TTL_ATTRIBUTE,
    Item,
    item_key,
    namespace_pk,
)
from rearview.domain.hindsight_runs import (
    RUN_RETENTION,
    SPEND_RETENTION,
    ConsolidationRun,
    FeedbackCounts,
    FeedbackVerdict,
    LedgerTotals,
    Spend,
)
from rearview.domain.timestamps import as_utc
from rearview.errors import InvalidInput
from rearview.settings import AwsSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

FEEDBACK_VERDICTS: tuple[str, ...] = get_args(FeedbackVerdict)
_INDUCED = "induced#"
_FEEDBACK = "feedback#"
# An expired lease is removed by TTL this long after it ends (until then the next run simply overwrites it).
_LEASE_KEPT = timedelta(days=1)


def _ttl(when: datetime) -> Item:
    return {"N": str(math.ceil(as_utc(when).timestamp()))}


class DynamoDBHindsightLedger:
    """HindsightLedger on the single table (see the module docstring for the items)."""

    def __init__(
        self, table_name: str, *, client: DynamoDBClient | None = None, settings: AwsSettings | None = None
    ) -> None:
        if client is None:
            from rearview.adapters.aws_clients import boto3_client

            client = boto3_client("dynamodb", settings)
        self.table_name = table_name
        self.client = client

    # the lease

    def acquire_lease(self, namespace: str, owner: str, now: datetime, ttl_seconds: float) -> bool:
        """Take the lease unless another owner holds one that has not expired (`lease_until < now` frees it)."""
        until = as_utc(now) + timedelta(seconds=ttl_seconds)
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    **item_key(namespace, LEASE_SK),
                    "owner": {"S": owner},
                    "lease_until": {"S": iso(until)},
                    TTL_ATTRIBUTE: _ttl(until + _LEASE_KEPT),
                },
                ConditionExpression="attribute_not_exists(pk) OR lease_until < :now OR #owner = :me",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":now": {"S": iso(now)}, ":me": {"S": owner}},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release_lease(self, namespace: str, owner: str) -> None:
        """Give the lease back, if `owner` still holds it."""
        try:
            self.client.delete_item(
                TableName=self.table_name,
                Key=item_key(namespace, LEASE_SK),
                ConditionExpression="#owner = :me",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":me": {"S": owner}},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return  # another owner's now, or gone: nothing of ours to give back

    # runs and spend

    def record_run(self, run: ConsolidationRun) -> None:
        """Keep the run and add it to the totals and its day's spend, in one transaction; a run recorded again
        (same start and id) is counted once."""
        started = as_utc(run.started_at)
        day = started.date()
        put = {
            "Put": {
                "TableName": self.table_name,
                "Item": {
                    **item_key(run.namespace, f"{RUN_SK_PREFIX}{iso(started)}#{run.run_id}"),
                    "run_json": {"S": run.model_dump_json()},
                    TTL_ATTRIBUTE: _ttl(started + RUN_RETENTION),
                },
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        # Typed loosely: the stubs' nested TypedDicts add nothing to these literal requests.
        actions: list[Any] = [put, self._totals_update(run), self._spend_update(run.namespace, day, run)]
        try:
            self.client.transact_write_items(TransactItems=actions)
        except self.client.exceptions.TransactionCanceledException as exc:
            reasons = [r.get("Code", "") for r in exc.response.get("CancellationReasons", [])]
            if reasons[:1] == ["ConditionalCheckFailed"]:
                return  # recorded already
            raise

    def _totals_update(self, run: ConsolidationRun) -> Item:
        names = {"#runs": "runs", "#failed": "runs_failed", "#tokens": "tokens", "#at": "last_run_at",
                 "#reason": "last_run_reason"}  # fmt: skip
        values: Item = {
            ":one": {"N": "1"},
            ":failed": {"N": str(int(run.error is not None))},
            ":tokens": {"N": str(run.tokens)},
            ":at": {"S": iso(run.started_at)},
            ":reason": {"S": run.reason},
        }
        adds = ["#runs :one", "#failed :failed", "#tokens :tokens"]
        for i, (kind, count) in enumerate((k, n) for k, n in run.induced.items() if n):
            names[f"#i{i}"] = _INDUCED + kind
            values[f":i{i}"] = {"N": str(count)}
            adds.append(f"#i{i} :i{i}")
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": item_key(run.namespace, HINDSIGHT_SK),
                "UpdateExpression": f"ADD {', '.join(adds)} SET #at = :at, #reason = :reason",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }

    def _spend_update(self, namespace: str, day: date, run: ConsolidationRun) -> Item:
        day_ends = datetime.combine(day + timedelta(days=1), time(), UTC)
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": item_key(namespace, f"{SPEND_SK_PREFIX}{day.isoformat()}"),
                "UpdateExpression": "ADD #runs :one, #clusters :clusters, #tokens :tokens SET #ttl = :ttl",
                "ExpressionAttributeNames": {
                    "#runs": "runs",
                    "#clusters": "clusters",
                    "#tokens": "tokens",
                    "#ttl": TTL_ATTRIBUTE,
                },
                "ExpressionAttributeValues": {
                    ":one": {"N": "1"},
                    ":clusters": {"N": str(run.clusters)},
                    ":tokens": {"N": str(run.tokens)},
                    ":ttl": _ttl(day_ends + SPEND_RETENTION),
                },
            }
        }

    def runs(self, namespace: str, limit: int = 20) -> list[ConsolidationRun]:
        """The namespace's latest runs, newest first (by start, then id): the `RUN#` items, read backwards."""
        if limit <= 0:
            return []
        found: list[ConsolidationRun] = []
        for item in self._run_items(namespace, limit):
            found.append(ConsolidationRun.model_validate_json(item["run_json"]["S"]))
            if len(found) >= limit:
                break
        return found

    def _run_items(self, namespace: str, limit: int) -> Iterator[Item]:
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": namespace_pk(namespace)}, ":prefix": {"S": RUN_SK_PREFIX}},
            "ProjectionExpression": "run_json",
            "ScanIndexForward": False,
            "ConsistentRead": True,
            "Limit": limit,
        }
        while True:
            response = self.client.query(**request)
            yield from response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last

    def spend(self, namespace: str, day: date) -> Spend:
        """What the namespace's runs spent on that UTC day (zeros when nothing ran)."""
        item = self._get(item_key(namespace, f"{SPEND_SK_PREFIX}{day.isoformat()}"))
        return Spend(
            day=day, runs=_count(item, "runs"), clusters=_count(item, "clusters"), tokens=_count(item, "tokens")
        )

    # totals and feedback

    def totals(self, namespace: str) -> LedgerTotals:
        """The namespace's running totals (zeros when nothing ran): one consistent read of `HINDSIGHT`."""
        item = self._get(item_key(namespace, HINDSIGHT_SK))
        induced = {name[len(_INDUCED) :]: _count(item, name) for name in item if name.startswith(_INDUCED)}
        feedback: dict[str, dict[str, int]] = {}
        for name in item:
            if name.startswith(_FEEDBACK):
                verdict, kind = name[len(_FEEDBACK) :].split("#", 1)
                feedback.setdefault(kind, {})[verdict] = _count(item, name)
        last_run_at = item.get("last_run_at", {}).get("S")
        return LedgerTotals(
            runs=_count(item, "runs"),
            runs_failed=_count(item, "runs_failed"),
            induced=dict(sorted(induced.items())),
            tokens=_count(item, "tokens"),
            last_run_at=parse_iso(last_run_at) if last_run_at else None,
            last_run_reason=item.get("last_run_reason", {}).get("S"),
            feedback={kind: FeedbackCounts(**counts) for kind, counts in sorted(feedback.items())},
        )

    def record_feedback(self, namespace: str, kind: str, verdict: FeedbackVerdict, adopted: bool) -> None:
        """Count one feedback on a memory of `kind` (any short name), and one adoption when `adopted`."""
        if verdict not in FEEDBACK_VERDICTS:
            raise InvalidInput(f"verdict: unknown feedback verdict {verdict!r}", field="verdict")
        names = {"#verdict": f"{_FEEDBACK}{verdict}#{kind}"}
        adds = ["#verdict :one"]
        if adopted:
            names["#adopted"] = f"{_FEEDBACK}adopted#{kind}"
            adds.append("#adopted :one")
        self.client.update_item(
            TableName=self.table_name,
            Key=item_key(namespace, HINDSIGHT_SK),
            UpdateExpression="ADD " + ", ".join(adds),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    def erase_namespace(self, namespace: str) -> int:
        """Delete the namespace's lease, runs, spend and totals items; how many went."""
        keys: list[Item] = []
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": namespace_pk(namespace)}},
            "ProjectionExpression": "pk, sk",
            "ConsistentRead": True,
        }
        ledger = (LEASE_SK, HINDSIGHT_SK)
        while True:
            page = self.client.query(**request)
            for item in page.get("Items", []):
                sk = item["sk"]["S"]
                if sk in ledger or sk.startswith((RUN_SK_PREFIX, SPEND_SK_PREFIX)):
                    keys.append({"pk": item["pk"], "sk": item["sk"]})
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        for key in keys:
            self.client.delete_item(TableName=self.table_name, Key=key)
        return len(keys)

    def _get(self, key: Item) -> Item:
        """The item at `key` (a consistent read), or {} when there is none."""
        item: Item = self.client.get_item(TableName=self.table_name, Key=key, ConsistentRead=True).get("Item", {})
        return item


def _count(item: Mapping[str, Any], name: str) -> int:
    return int(item.get(name, {}).get("N", "0"))
