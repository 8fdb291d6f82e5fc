"""Alarms and a dashboard. Every alarm notifies one SNS topic (subscribe an address with
`rearview:alarmEmail`).

What pages someone: a message in a dead-letter queue (an accepted write that was not stored, a stream batch that
never reached the index, a consolidation job that failed every retry or was poison, a schedule check EventBridge
could not deliver), function errors and throttles (the consolidation worker's included), a consolidation run that
failed (the `ConsolidationFailures` metric the worker emits: a failed run is retried, but the store or the model
is failing), and index sync falling behind the stream (recall then misses recent memories beyond the freshness
window)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from rearview_infra.functions import service_name

# Index sync this far behind the stream means recall is missing memories older than the freshness window.
DEFAULT_ITERATOR_AGE_THRESHOLD = Duration.minutes(5)
_PERIOD = Duration.minutes(5)
# The metrics namespace the functions emit to (POWERTOOLS_METRICS_NAMESPACE).
METRICS_NAMESPACE = "Rearview"


class RearviewMonitoring(Construct):
    """Alarms on the dead-letter queues, every function's errors and throttles, failed consolidation runs, and stream
    iterator age."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: dict[str, lambda_.Function],
        dead_letter_queues: dict[str, sqs.IQueue],
        write_queue: sqs.IQueue,
        consolidation_queue: sqs.IQueue,
        stream_consumer: lambda_.IFunction,
        api: apigwv2.HttpApi,
        alarm_email: str | None = None,
        iterator_age_threshold: Duration = DEFAULT_ITERATOR_AGE_THRESHOLD,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "AlarmTopic", display_name="Rearview alarms", enforce_ssl=True)
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []

        def alarm(construct_id: str, metric: cloudwatch.IMetric, threshold: float, description: str) -> None:
            created = cloudwatch.Alarm(
                self,
                construct_id,
                metric=metric,
                threshold=threshold,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            )
            created.add_alarm_action(action)
            self.alarms.append(created)

        for label, queue in dead_letter_queues.items():
            alarm(
                f"{label}DepthAlarm",
                queue.metric_approximate_number_of_messages_visible(period=Duration.minutes(1), statistic="Maximum"),
                0,
                f"{label}: messages waiting (each one is work that failed every retry; read its reason)",
            )
        for name, fn in functions.items():
            construct_name = "".join(part.capitalize() for part in name.split("_"))
            alarm(
                f"{construct_name}ErrorsAlarm",
                fn.metric_errors(period=_PERIOD),
                0,
                f"{name}: invocation errors",
            )
            alarm(
                f"{construct_name}ThrottlesAlarm",
                fn.metric_throttles(period=_PERIOD),
                0,
                f"{name}: throttled",
            )
        consolidation_failures = _worker_metric("ConsolidationFailures")
        alarm(
            "ConsolidationFailuresAlarm",
            consolidation_failures,
            0,
            "consolidation runs failed (retried, then dead-lettered): the store or the induction model is failing",
        )
        iterator_age = cloudwatch.Metric(
            namespace="AWS/Lambda",
            metric_name="IteratorAge",
            dimensions_map={"FunctionName": stream_consumer.function_name},
            statistic="Maximum",
            period=Duration.minutes(1),
        )
        alarm(
            "StreamIteratorAgeAlarm",
            iterator_age,
            iterator_age_threshold.to_milliseconds(),
            "index sync is behind the table's stream: recall misses recent memories",
        )

        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=None)
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="API requests and errors",
                left=[api.metric_count(period=_PERIOD)],
                right=[api.metric_client_error(period=_PERIOD), api.metric_server_error(period=_PERIOD)],
            ),
            cloudwatch.GraphWidget(
                title="API latency (p50, p99)",
                left=[
                    api.metric_latency(period=_PERIOD, statistic="p50"),
                    api.metric_latency(period=_PERIOD, statistic="p99"),
                ],
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Function errors",
                left=[fn.metric_errors(period=_PERIOD, label=n) for n, fn in functions.items()],
            ),
            cloudwatch.GraphWidget(
                title="Function duration p99",
                left=[fn.metric_duration(period=_PERIOD, statistic="p99", label=n) for n, fn in functions.items()],
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Write queue and dead-letter queues",
                left=[write_queue.metric_approximate_number_of_messages_visible(label="write queue")],
                right=[
                    q.metric_approximate_number_of_messages_visible(label=label)
                    for label, q in dead_letter_queues.items()
                ],
            ),
            cloudwatch.GraphWidget(title="Index sync iterator age (ms)", left=[iterator_age]),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Consolidation: queue and runs",
                left=[consolidation_queue.metric_approximate_number_of_messages_visible(label="jobs waiting")],
                right=[
                    _worker_metric("ConsolidationRuns"),
                    _worker_metric("ConsolidationFailures"),
                    _worker_metric("ConsolidationJobsDeadLettered"),
                ],
            ),
            cloudwatch.GraphWidget(
                title="Consolidation: clusters induced and deferred",
                left=[_worker_metric("ConsolidationClusters"), _worker_metric("MemoriesInduced")],
                right=[_worker_metric("ClustersDeferred")],
            ),
        )


def _worker_metric(name: str) -> cloudwatch.Metric:
    """A metric the consolidation worker emits (Powertools: the namespace, and its service as the one dimension)."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": service_name("consolidation_worker")},
        statistic="Sum",
        period=_PERIOD,
    )
