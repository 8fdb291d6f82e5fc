"""Alarms, dashboards and the cost budget. Every alarm notifies one SNS topic (subscribe an address with
`rearview:alarmEmail`); the functions' own alarms also roll a gradual deployment back (`deployment.py`).

A 500 a function answers is no Lambda error, so the HTTP functions count their answers per version themselves, and a
canary rolls back on `<Function>VersionServerErrorRate` (2 of 3 one-minute periods) as on the error rate.

An alarm here means someone should look: rates and durations held over several periods, not one error in five
minutes. What each watches, and over how long:

| alarm | fires when |
|---|---|
| `ApiServerErrorRate` | 5xx over 5 % of at least 20 requests, in 2 of 3 five-minute periods |
| `ApiLatencyP99` | p99 over `API_P99_MS` in 3 five-minute periods in a row |
| `<Function>ErrorRate` | errors over 5 % of at least 5 invocations of the `live` alias, 2 of 3 periods |
| `<Function>VersionServerErrorRate` | HTTP functions: 5xx over 5 % of at least 5 requests to the alias's new version |
| `<Function>Throttles` | throttles in 3 periods in a row (reserved concurrency reached: the flood ceiling held) |
| `<Function>DurationP99` | p99 duration over 80 % of the timeout, 3 periods in a row |
| `TableThrottles`, `TableSystemErrors` | DynamoDB throttled requests or system errors, 2 of 3 periods |
| `WriteQueueAge`, `ConsolidationQueueAge` | the oldest message older than 5 min (writes) or 1 h (jobs), 3 periods |
| `<Dlq>DepthAlarm` | any message in a dead-letter queue (each one is work that failed every retry) |
| `StreamIteratorAgeAlarm` | index sync 5 min behind the stream, 3 minutes in a row |
| `SearchFallbacks` | searches answered by the store because the index could not, 2 of 3 periods |
| `ThrottledRequests` | over 300 requests refused by per-key throttling (429) in each of 3 periods: a key flooding |
| `SearchErrors` | OpenSearch Serverless search or ingestion errors (throttling included), 2 of 3 periods |
| `Bedrock<Model>Throttles` | Bedrock throttling a model, 2 of 3 periods |
| `ConsolidationFailuresAlarm` | failed consolidation runs in 2 of 4 fifteen-minute periods |

The monthly AWS Budget (`rearview:monthlyBudgetUsd`) warns at 80 % of actual and 100 % of forecast spend."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_budgets as budgets
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from rearview_infra.functions import REQUEST_SERVERS, construct_name, service_name

# Index sync this far behind the stream means recall is missing memories older than the freshness window.
DEFAULT_ITERATOR_AGE_THRESHOLD = Duration.minutes(5)
_PERIOD = Duration.minutes(5)
# The metrics namespace the functions emit to (POWERTOOLS_METRICS_NAMESPACE).
METRICS_NAMESPACE = "Rearview"
# The metric of searches the store answered for the index (rearview.api.lambda_runtime.SEARCH_FALLBACK_METRIC).
SEARCH_FALLBACK_METRIC = "SearchFallbacks"
# The requests and 5xx answers per function version (rearview.api.lambda_runtime.count_by_version).
VERSION_REQUESTS_METRIC = "VersionRequests"
VERSION_SERVER_ERRORS_METRIC = "Version5xx"
# The metric of requests refused by per-key throttling (rearview.api.lambda_runtime.THROTTLED_METRIC).
THROTTLED_METRIC = "Throttled"
# Refused requests per 5 minutes, sustained 15 minutes, worth a look: one a second. A key that hits its limit now
# and then is throttling doing its job; a key refused this often is a flood or a client that ignores Retry-After.
THROTTLED_ALARM_PER_PERIOD = 300
# The functions that search (and so may fall back).
SEARCHERS = ("write_worker", "recall", "mcp")
ERROR_RATE_PERCENT = 5
API_P99_MS = 5000
WRITE_QUEUE_MAX_AGE = Duration.minutes(5)
CONSOLIDATION_QUEUE_MAX_AGE = Duration.hours(1)


@dataclass
class Watched:
    """What the monitoring watches."""

    aliases: Mapping[str, lambda_.Alias]
    timeouts: Mapping[str, Duration]
    dead_letter_queues: Mapping[str, sqs.IQueue]
    write_queue: sqs.IQueue
    consolidation_queue: sqs.IQueue
    stream_consumer: lambda_.IFunction
    api: apigwv2.HttpApi
    table: dynamodb.ITable
    # OpenSearch Serverless: the collection's name (its CloudWatch dimension); None for a managed domain.
    collection_name: str | None = None
    bedrock_models: tuple[str, ...] = ()


@dataclass
class MonitoringOptions:
    alarm_email: str | None = None
    monthly_budget_usd: float = 0.0
    topic_key: kms.IKey | None = None
    iterator_age_threshold: Duration = DEFAULT_ITERATOR_AGE_THRESHOLD


class RearviewMonitoring(Construct):
    """The alarm topic, the alarms of the module doc, a dashboard per concern, and the budget."""

    def __init__(
        self, scope: Construct, construct_id: str, *, watched: Watched, options: MonitoringOptions | None = None
    ) -> None:
        super().__init__(scope, construct_id)
        options = options or MonitoringOptions()
        self.topic = sns.Topic(
            self, "AlarmTopic", display_name="Rearview alarms", enforce_ssl=True, master_key=options.topic_key
        )
        if options.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(options.alarm_email))
        self._action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []
        # Each aliased function's own alarms: what a gradual deployment of it rolls back on.
        self.function_alarms: dict[str, list[cloudwatch.IAlarm]] = {}
        self._watch_api(watched.api)
        self._watch_functions(watched)
        self._watch_queues(watched, options)
        self._watch_data(watched)
        self._watch_consolidation()
        self.dashboards = _Dashboards(self, "Dashboards", watched)
        if options.monthly_budget_usd > 0:
            self._budget(options.monthly_budget_usd)

    def alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        threshold: float,
        description: str,
        *,
        periods: int = 3,
        datapoints: int = 2,
    ) -> cloudwatch.Alarm:
        """An alarm on `metric` above `threshold` in `datapoints` of `periods` periods, notifying the topic."""
        created = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=periods,
            datapoints_to_alarm=datapoints,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        created.add_alarm_action(self._action)
        self.alarms.append(created)
        return created

    def _watch_api(self, api: apigwv2.HttpApi) -> None:
        rate = cloudwatch.MathExpression(
            expression="IF(requests >= 20, 100 * errors / requests, 0)",
            using_metrics={
                "requests": api.metric_count(period=_PERIOD),
                "errors": api.metric_server_error(period=_PERIOD),
            },
            label="5xx %",
            period=_PERIOD,
        )
        self.alarm("ApiServerErrorRate", rate, ERROR_RATE_PERCENT, "API: over 5 % of requests answered 5xx")
        self.alarm(
            "ApiLatencyP99",
            api.metric_latency(period=_PERIOD, statistic="p99"),
            API_P99_MS,
            f"API: p99 latency over {API_P99_MS} ms for 15 minutes",
            datapoints=3,
        )
        self.alarm(
            "ThrottledRequests",
            throttled_requests(),
            THROTTLED_ALARM_PER_PERIOD,
            "per-key throttling refuses a key's requests (429) for 15 minutes: a flood, or a client ignoring "
            "Retry-After; the function logs name the key (`request throttled`)",
            datapoints=3,
        )

    def _watch_functions(self, watched: Watched) -> None:
        for name, alias in watched.aliases.items():
            prefix = construct_name(name)
            rate = cloudwatch.MathExpression(
                expression="IF(invocations >= 5, 100 * errors / invocations, 0)",
                using_metrics={
                    "invocations": alias.metric_invocations(period=_PERIOD),
                    "errors": alias.metric_errors(period=_PERIOD),
                },
                label=f"{name} error %",
                period=_PERIOD,
            )
            errors = self.alarm(f"{prefix}ErrorRate", rate, ERROR_RATE_PERCENT, f"{name}: over 5 % of invocations fail")
            throttles = self.alarm(
                f"{prefix}Throttles",
                alias.metric_throttles(period=_PERIOD),
                0,
                f"{name}: throttled for 15 minutes (its reserved concurrency is reached)",
                datapoints=3,
            )
            limit = watched.timeouts[name].to_milliseconds() * 0.8
            self.alarm(
                f"{prefix}DurationP99",
                alias.metric_duration(period=_PERIOD, statistic="p99"),
                limit,
                f"{name}: p99 duration over 80 % of its timeout for 15 minutes",
                datapoints=3,
            )
            self.function_alarms[name] = [errors, throttles]
            if name in REQUEST_SERVERS:
                self.function_alarms[name].append(self._version_server_errors(name, alias))

    def _version_server_errors(self, name: str, alias: lambda_.Alias) -> cloudwatch.Alarm:
        """The 5xx rate of the version the alias points at (the new one, during a canary): its own requests, counted
        by the function with a `version` dimension (rearview.api.lambda_runtime.count_by_version)."""
        dimensions = {"service": service_name(name), "version": alias.version.version}
        period = Duration.minutes(1)

        def count(metric: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=METRICS_NAMESPACE, metric_name=metric, dimensions_map=dimensions, statistic="Sum",
                period=period,
            )  # fmt: skip

        rate = cloudwatch.MathExpression(
            expression="IF(requests >= 5, 100 * FILL(errors, 0) / requests, 0)",
            using_metrics={"requests": count(VERSION_REQUESTS_METRIC), "errors": count(VERSION_SERVER_ERRORS_METRIC)},
            label=f"{name} new version 5xx %",
            period=period,
        )
        return self.alarm(
            f"{construct_name(name)}VersionServerErrorRate",
            rate,
            ERROR_RATE_PERCENT,
            f"{name}: over 5 % of the requests to its current version answered 5xx (rolls a canary back)",
        )

    def _watch_queues(self, watched: Watched, options: MonitoringOptions) -> None:
        for label, queue in watched.dead_letter_queues.items():
            self.alarm(
                f"{label}DepthAlarm",
                queue.metric_approximate_number_of_messages_visible(period=Duration.minutes(1), statistic="Maximum"),
                0,
                f"{label}: messages waiting (each one is work that failed every retry; read its reason)",
                periods=1,
                datapoints=1,
            )
        for construct_id, queue, age in (
            ("WriteQueueAge", watched.write_queue, WRITE_QUEUE_MAX_AGE),
            ("ConsolidationQueueAge", watched.consolidation_queue, CONSOLIDATION_QUEUE_MAX_AGE),
        ):
            self.alarm(
                construct_id,
                queue.metric_approximate_age_of_oldest_message(period=_PERIOD, statistic="Maximum"),
                age.to_seconds(),
                f"{construct_id}: the oldest message is older than {age.to_human_string()}: the worker is behind",
                datapoints=3,
            )
        iterator_age = cloudwatch.Metric(
            namespace="AWS/Lambda",
            metric_name="IteratorAge",
            dimensions_map={"FunctionName": watched.stream_consumer.function_name},
            statistic="Maximum",
            period=Duration.minutes(1),
        )
        self.alarm(
            "StreamIteratorAgeAlarm",
            iterator_age,
            options.iterator_age_threshold.to_milliseconds(),
            "index sync is behind the table's stream: recall misses recent memories",
            datapoints=3,
        )

    def _watch_data(self, watched: Watched) -> None:
        table_name = watched.table.table_name
        throttles = cloudwatch.MathExpression(
            expression="reads + writes",
            using_metrics={
                "reads": _table_metric(table_name, "ReadThrottleEvents"),
                "writes": _table_metric(table_name, "WriteThrottleEvents"),
            },
            label="throttled requests",
            period=_PERIOD,
        )
        self.alarm("TableThrottles", throttles, 0, "DynamoDB: requests throttled (account or partition limits)")
        self.alarm(
            "TableSystemErrors",
            _table_metric(table_name, "SystemErrors"),
            0,
            "DynamoDB: system errors (on AWS's side; retried, but sustained)",
        )
        fallbacks = cloudwatch.MathExpression(
            expression=" + ".join(f"FILL(s{i}, 0)" for i in range(len(SEARCHERS))),
            using_metrics={f"s{i}": rearview_metric(SEARCH_FALLBACK_METRIC, name) for i, name in enumerate(SEARCHERS)},
            label="searches answered by the store",
            period=_PERIOD,
        )
        self.alarm(
            "SearchFallbacks",
            fallbacks,
            0,
            "the search index is missing or unreachable: recall answers from the store's recent memories",
        )
        if watched.collection_name is not None:
            errors = cloudwatch.MathExpression(
                expression="FILL(search, 0) + FILL(ingestion, 0)",
                using_metrics={
                    "search": _collection_metric(watched.collection_name, "SearchRequestErrors"),
                    "ingestion": _collection_metric(watched.collection_name, "IngestionRequestErrors"),
                },
                label="search and ingestion errors",
                period=_PERIOD,
            )
            self.alarm("SearchErrors", errors, 10, "OpenSearch Serverless: request errors or throttling")
        for model in watched.bedrock_models:
            self.alarm(
                f"Bedrock{_model_label(model)}Throttles",
                cloudwatch.Metric(
                    namespace="AWS/Bedrock",
                    metric_name="InvocationThrottles",
                    dimensions_map={"ModelId": model},
                    statistic="Sum",
                    period=_PERIOD,
                ),
                10,
                f"Bedrock throttles {model} (raise the quota, or lower the workers' concurrency)",
            )

    def _watch_consolidation(self) -> None:
        self.alarm(
            "ConsolidationFailuresAlarm",
            rearview_metric("ConsolidationFailures", "consolidation_worker", period=Duration.minutes(15)),
            0,
            "consolidation runs keep failing (retried, then dead-lettered): the store or the induction model fails",
            periods=4,
            datapoints=2,
        )

    def _budget(self, amount: float) -> None:
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["sns:Publish"],
                principals=[iam.ServicePrincipal("budgets.amazonaws.com")],
                resources=[self.topic.topic_arn],
            )
        )
        subscriber = budgets.CfnBudget.SubscriberProperty(subscription_type="SNS", address=self.topic.topic_arn)

        def notification(kind: str, percent: float) -> budgets.CfnBudget.NotificationWithSubscribersProperty:
            return budgets.CfnBudget.NotificationWithSubscribersProperty(
                notification=budgets.CfnBudget.NotificationProperty(
                    notification_type=kind, comparison_operator="GREATER_THAN", threshold=percent
                ),
                subscribers=[subscriber],
            )

        self.budget = budgets.CfnBudget(
            self,
            "MonthlyBudget",
            budget=budgets.CfnBudget.BudgetDataProperty(
                budget_type="COST",
                time_unit="MONTHLY",
                budget_limit=budgets.CfnBudget.SpendProperty(amount=amount, unit="USD"),
            ),
            notifications_with_subscribers=[notification("ACTUAL", 80), notification("FORECASTED", 100)],
        )


def throttled_requests() -> cloudwatch.MathExpression:
    """Requests refused by per-key throttling, summed over the functions that serve requests."""
    return cloudwatch.MathExpression(
        expression=" + ".join(f"FILL(t{i}, 0)" for i in range(len(REQUEST_SERVERS))),
        using_metrics={f"t{i}": rearview_metric(THROTTLED_METRIC, name) for i, name in enumerate(REQUEST_SERVERS)},
        label="requests refused (429)",
        period=_PERIOD,
    )


def rearview_metric(name: str, function: str, *, period: Duration = _PERIOD) -> cloudwatch.Metric:
    """A metric a function emits (Powertools: the namespace, and its service as the one dimension)."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": service_name(function)},
        statistic="Sum",
        period=period,
    )


def _table_metric(table_name: str, name: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/DynamoDB",
        metric_name=name,
        dimensions_map={"TableName": table_name},
        statistic="Sum",
        period=_PERIOD,
    )


def _collection_metric(collection_name: str, name: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/AOSS",
        metric_name=name,
        dimensions_map={"CollectionName": collection_name},
        statistic="Sum",
        period=_PERIOD,
    )


def _model_label(model_id: str) -> str:
    """`amazon.titan-embed-text-v2:0` -> `AmazonTitanEmbedTextV20` (a construct id)."""
    return "".join(part.capitalize() for part in "".join(c if c.isalnum() else " " for c in model_id).split())


class _Dashboards(Construct):
    """One dashboard per concern: the API, the functions, the asynchronous pipeline, the data and models."""

    def __init__(self, scope: Construct, construct_id: str, watched: Watched) -> None:
        super().__init__(scope, construct_id)
        api, aliases = watched.api, watched.aliases
        self.api = cloudwatch.Dashboard(self, "Api")
        self.api.add_widgets(
            cloudwatch.GraphWidget(
                title="API requests and errors",
                left=[api.metric_count(period=_PERIOD)],
                right=[api.metric_client_error(period=_PERIOD), api.metric_server_error(period=_PERIOD)],
            ),
            cloudwatch.GraphWidget(
                title="API latency (p50, p99)",
                left=[api.metric_latency(period=_PERIOD, statistic=s) for s in ("p50", "p99")],
            ),
            cloudwatch.GraphWidget(title="Requests refused by per-key throttling", left=[throttled_requests()]),
        )
        self.functions = cloudwatch.Dashboard(self, "Functions")
        self.functions.add_widgets(
            cloudwatch.GraphWidget(
                title="Errors", left=[a.metric_errors(period=_PERIOD, label=n) for n, a in aliases.items()]
            ),
            cloudwatch.GraphWidget(
                title="Throttles", left=[a.metric_throttles(period=_PERIOD, label=n) for n, a in aliases.items()]
            ),
            cloudwatch.GraphWidget(
                title="Duration p99",
                left=[a.metric_duration(period=_PERIOD, statistic="p99", label=n) for n, a in aliases.items()],
            ),
        )
        self.pipeline = cloudwatch.Dashboard(self, "Pipeline")
        self.pipeline.add_widgets(
            cloudwatch.GraphWidget(
                title="Write queue (depth, oldest age) and dead-letter queues",
                left=[watched.write_queue.metric_approximate_number_of_messages_visible(label="write queue")],
                right=[
                    q.metric_approximate_number_of_messages_visible(label=label)
                    for label, q in watched.dead_letter_queues.items()
                ],
            ),
            cloudwatch.GraphWidget(
                title="Consolidation: jobs waiting, runs, failures",
                left=[watched.consolidation_queue.metric_approximate_number_of_messages_visible(label="jobs")],
                right=[
                    rearview_metric(m, "consolidation_worker")
                    for m in ("ConsolidationRuns", "ConsolidationFailures", "ConsolidationJobsDeadLettered")
                ],
            ),
            cloudwatch.GraphWidget(
                title="Consolidation: clusters induced and deferred",
                left=[rearview_metric(m, "consolidation_worker") for m in ("ConsolidationClusters", "MemoriesInduced")],
                right=[rearview_metric("ClustersDeferred", "consolidation_worker")],
            ),
        )
        self.data = cloudwatch.Dashboard(self, "Data")
        table_name = watched.table.table_name
        self.data.add_widgets(
            cloudwatch.GraphWidget(
                title="DynamoDB throttles and system errors",
                left=[_table_metric(table_name, m) for m in ("ReadThrottleEvents", "WriteThrottleEvents")],
                right=[_table_metric(table_name, "SystemErrors")],
            ),
            cloudwatch.GraphWidget(
                title="Searches answered by the store (index missing or unreachable)",
                left=[rearview_metric(SEARCH_FALLBACK_METRIC, name) for name in SEARCHERS],
            ),
            cloudwatch.GraphWidget(
                title="Bedrock throttles",
                left=[
                    cloudwatch.Metric(
                        namespace="AWS/Bedrock",
                        metric_name="InvocationThrottles",
                        dimensions_map={"ModelId": model},
                        statistic="Sum",
                        period=_PERIOD,
                    )
                    for model in watched.bedrock_models
                ],
            ),
        )
