"""The scheduled consolidation: an EventBridge rule invoking the consolidate function, which walks every
namespace that has unconsolidated episodes (the sparse `unconsolidated` index)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

DEFAULT_SCHEDULE = "rate(1 hour)"


class ConsolidationSchedule(Construct):
    """`schedule` is an EventBridge expression (`rate(...)` or `cron(...)`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        schedule: str = DEFAULT_SCHEDULE,
    ) -> None:
        super().__init__(scope, construct_id)
        self.rule = events.Rule(
            self,
            "Rule",
            description="Consolidate episodes into facts in every namespace with unconsolidated episodes",
            schedule=events.Schedule.expression(schedule),
            targets=[
                # A missed run is harmless (the next one picks the episodes up), so retries are few and
                # short-lived.
                targets.LambdaFunction(function, retry_attempts=2, max_event_age=Duration.minutes(30))
            ],
        )
