"""What AWS does on a clock: EventBridge's scheduled rules invoking their targets, and DynamoDB's TTL deleting
expired items (moto keeps the TTL setting but deletes nothing).

- `ScheduleTicker` invokes each target of an enabled rule once a period (`rate(...)`; a `cron(...)` rule every
  `default_seconds`, or the period given), with the Scheduled Event EventBridge sends; a target that fails is
  retried up to its `RetryPolicy`, then the event goes to its `DeadLetterConfig` queue with the error, as
  EventBridge does. The rule's state is read from the emulated EventBridge at every tick, so disabling it there
  (`aws events disable-rule`) stops it.
- `TtlSweeper` scans the table for items whose TTL attribute is in the past and deletes them, once a period; their
  stream records then look like DynamoDB's own TTL deletes (`TtlDeletes`).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from rearview.emulator.containers import FunctionError
from rearview.emulator.resources import Deployment, Table
from rearview.emulator.stream_poller import TtlDeletes
from rearview.emulator.template import ACCOUNT, REGION, Schedule

logger = logging.getLogger(__name__)

_RATE = re.compile(r"rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
Invoke = Callable[[str, dict[str, Any], float | None], Any]


def rate_seconds(expression: str, default_seconds: float = 3600.0) -> float:
    """The period of a `rate(...)` expression; `default_seconds` for a `cron(...)` one."""
    match = _RATE.fullmatch(expression.strip())
    if match is None:
        return default_seconds
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2).rstrip("s")]


class _Periodic:
    """A thread that calls `tick` every `period` seconds until stopped."""

    def __init__(self, name: str, period: float) -> None:
        self.period = period
        self.ticks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.tick()
                self.ticks += 1
            except Exception:
                logger.exception("%s failed", self._thread.name)

    def tick(self) -> None:
        raise NotImplementedError


class ScheduleTicker(_Periodic):
    """One scheduled rule and its targets."""

    def __init__(
        self,
        schedule: Schedule,
        deployment: Deployment,
        events: Any,
        sqs: Any,
        invoke: Invoke,
        *,
        period: float | None = None,
    ) -> None:
        super().__init__(f"schedule-{schedule.logical_id}", period or rate_seconds(schedule.expression))
        self.schedule = schedule
        self.rule_name = f"{deployment.template.stack_name}-{schedule.logical_id}"
        self._deployment = deployment
        self._events = events
        self._sqs = sqs
        self._invoke = invoke
        self.failures = 0

    def tick(self) -> None:
        rule = self._events.describe_rule(Name=self.rule_name)
        if rule.get("State") != "ENABLED":
            return
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT,
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": REGION,
            "resources": [rule["Arn"]],
            "detail": {},
        }
        for target in self.schedule.targets:
            self._deliver(target, json.loads(target["Input"]) if "Input" in target else event, rule["Arn"])

    def _deliver(self, target: dict[str, Any], event: dict[str, Any], rule_arn: str) -> None:
        function = self._deployment.template.function_of(target["Arn"])
        retries = int(target.get("RetryPolicy", {}).get("MaximumRetryAttempts", 185))
        error: FunctionError | None = None
        for attempt in range(retries + 1):
            try:
                self._invoke(function, event, None)
                return
            except FunctionError as exc:
                error = exc
                logger.warning("the schedule's target %s failed (attempt %d): %s", exc.function, attempt + 1, exc)
            if self._stop.wait(min(0.5 * (attempt + 1), 5.0)):
                return
        self.failures += 1
        dead_letter = target.get("DeadLetterConfig", {}).get("Arn")
        if dead_letter is None or error is None:
            return
        queue = self._deployment.queue_by_arn(str(self._deployment.resolver().resolve(dead_letter)))
        attributes = {
            "ERROR_CODE": error.error_type,
            "ERROR_MESSAGE": error.message[:256],
            "RULE_ARN": rule_arn,
            "TARGET_ARN": str(self._deployment.resolver().resolve(target["Arn"])),
        }
        self._sqs.send_message(
            QueueUrl=queue.url,
            MessageBody=json.dumps(event),
            MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()},
        )


class TtlSweeper(_Periodic):
    """Deletes the table's expired items once a period."""

    def __init__(self, table: Table, dynamodb: Any, ttl_deletes: TtlDeletes, period: float) -> None:
        super().__init__(f"ttl-{table.name}", period)
        if table.ttl_attribute is None:
            raise ValueError(f"table {table.name} has no TTL attribute")
        self.table = table
        self._dynamodb = dynamodb
        self._ttl = ttl_deletes
        self.deleted = 0
        self._key_names: list[str] | None = None

    def tick(self) -> None:
        self.deleted += self.sweep(int(time.time()))

    def sweep(self, now: int) -> int:
        """Delete the items whose TTL is at or before `now` (epoch seconds); how many went."""
        if self._key_names is None:
            schema = self._dynamodb.describe_table(TableName=self.table.name)["Table"]["KeySchema"]
            self._key_names = [k["AttributeName"] for k in schema]
        names = {f"#k{i}": name for i, name in enumerate(self._key_names)} | {"#ttl": str(self.table.ttl_attribute)}
        request: dict[str, Any] = {
            "TableName": self.table.name,
            "FilterExpression": "#ttl <= :now",
            "ProjectionExpression": ", ".join(k for k in names if k != "#ttl"),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {":now": {"N": str(now)}},
        }
        deleted = 0
        while True:
            page = self._dynamodb.scan(**request)
            for key in page.get("Items", []):
                self._ttl.add(key)
                try:
                    self._dynamodb.delete_item(
                        TableName=self.table.name,
                        Key=key,
                        ConditionExpression="#ttl <= :now",
                        ExpressionAttributeNames={"#ttl": str(self.table.ttl_attribute)},
                        ExpressionAttributeValues={":now": {"N": str(now)}},
                    )
                    deleted += 1
                except self._dynamodb.exceptions.ConditionalCheckFailedException:
                    self._ttl.claim(key)  # renewed meanwhile: not expired after all
            if "LastEvaluatedKey" not in page:
                return deleted
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
