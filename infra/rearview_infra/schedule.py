"""The consolidation schedule: an EventBridge rule invoking the consolidate function, which only enqueues. It asks
the triggers which namespaces are due (`due_by_schedule`: unconsolidated episodes, per the sparse `unconsolidated`
index, and a last run `hindsight.schedule_hours` old) and sends one job each to the consolidation queue; the
consolidation worker runs them.

The rule checks more often than the period (hourly for the default daily period), so each namespace is consolidated
about `schedule_hours` after its own last run, and the namespaces that are due spread over the day instead of
arriving at once. A rule firing once per period would find a namespace its previous scheduled run reached a few
minutes after the check not yet due, and skip it to the period after: every namespace every other day.

The target retries a failed invocation (a send the queue refused fails it; the namespaces that ran meanwhile are no
longer due when it is retried) and then parks the event in its dead-letter queue, which has an alarm."""

from __future__ import annotations

import math

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from rearview_infra.queues import QueueProtection

# `hindsight.schedule_hours`' default in rearview.settings: each namespace with a backlog once a day.
DEFAULT_SCHEDULE_HOURS = 24.0
# How often the rule checks at most (a shorter period checks at its own pace).
CHECK_INTERVAL = Duration.hours(1)


def check_expression(schedule_hours: float) -> str:
    """The rule's schedule for a period of `schedule_hours`: hourly, or every period when shorter (whole minutes)."""
    minutes = max(1, min(int(CHECK_INTERVAL.to_minutes()), math.floor(schedule_hours * 60)))
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"rate({hours} hour{'s' if hours > 1 else ''})"
    return f"rate({minutes} minute{'s' if minutes > 1 else ''})"


class ConsolidationSchedule(Construct):
    """`schedule` is an EventBridge expression (`rate(...)` or `cron(...)`) for the checks; by default it follows
    `schedule_hours` (see `check_expression`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        schedule_hours: float = DEFAULT_SCHEDULE_HOURS,
        schedule: str | None = None,
        protection: QueueProtection | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        # Events the target could not deliver after its retries (the function failed or was throttled).
        self.dead_letter_queue: sqs.Queue = (protection or QueueProtection()).dead_letter_queue(
            self, "ScheduleDeadLetterQueue"
        )
        self.expression = schedule or check_expression(schedule_hours)
        self.rule = events.Rule(
            self,
            "Rule",
            description=f"Enqueue consolidation jobs for namespaces whose last run is {schedule_hours:g} h old",
            schedule=events.Schedule.expression(self.expression),
            targets=[
                # A missed check is harmless (the next one finds the same namespaces due), so retries are few and
                # short-lived; what still fails lands in the DLQ.
                targets.LambdaFunction(
                    function,
                    retry_attempts=2,
                    max_event_age=Duration.minutes(30),
                    dead_letter_queue=self.dead_letter_queue,
                )
            ],
        )


# The retention sweep: hourly, as the local server's default (`retention.sweep_minutes`).
RETENTION_INTERVAL = Duration.hours(1)


class RetentionSchedule(Construct):
    """An EventBridge rule invoking the forget function, which sweeps every namespace's retention policy (max age,
    archive, keep often-recalled) through its forget path. A missed sweep is caught up by the next one."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        protection: QueueProtection | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue: sqs.Queue = (protection or QueueProtection()).dead_letter_queue(self, "DeadLetterQueue")
        self.rule = events.Rule(
            self,
            "Rule",
            description="Sweep the namespaces' retention policies",
            schedule=events.Schedule.rate(RETENTION_INTERVAL),
            targets=[
                targets.LambdaFunction(
                    function,
                    retry_attempts=2,
                    max_event_age=Duration.minutes(30),
                    dead_letter_queue=self.dead_letter_queue,
                )
            ],
        )
