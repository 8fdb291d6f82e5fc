"""RearviewStack: the whole deployment, composed from the constructs of this package.

The stack is environment-agnostic (no account or region lookups), so it synthesises without AWS credentials.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from rearview.api.routes import EDGE_ORIGIN_HEADER, MCP_ROUTE
from rearview_infra import nag
from rearview_infra.api import RearviewHttpApi
from rearview_infra.deployment import DEFAULT_DEPLOYMENT_CONFIG, GradualDeployment
from rearview_infra.edge import DEFAULT_WAF_RATE_LIMIT, ApiEdge, origin_secret
from rearview_infra.encryption import DataKey
from rearview_infra.functions import (
    ALIASED_FUNCTIONS,
    CONSOLIDATION_WORKER_TIMEOUT,
    DEFAULT_SNAP_START,
    FUNCTION_NAMES,
    FUNCTION_SPECS,
    WORKER_TIMEOUT,
    BedrockModels,
    FunctionOptions,
    HindsightDeployment,
    RearviewFunctions,
    default_reserved_concurrency,
)
from rearview_infra.layer import ARCHITECTURES, RearviewLayer
from rearview_infra.monitoring import MonitoringOptions, RearviewMonitoring, Watched
from rearview_infra.queues import (
    DEFAULT_CONSOLIDATION_MAX_RECEIVE_COUNT,
    DEFAULT_MAX_RECEIVE_COUNT,
    ConsolidationQueues,
    QueueProtection,
    WriteQueues,
)
from rearview_infra.schedule import DEFAULT_SCHEDULE_HOURS, ConsolidationSchedule, RetentionSchedule
from rearview_infra.search import (
    ManagedSearchDomain,
    SearchBackend,
    SearchMode,
    ServerlessVectorCollection,
    TableSearch,
)
from rearview_infra.search_index import SearchIndexProvisioning
from rearview_infra.storage import MemoryTable

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTEXT_PREFIX = "rearview:"


@dataclass(frozen=True)
class RearviewProps:
    """What a deployment may choose. Each field can be set with `-c rearview:<camelCaseName>=...` (or in
    cdk.json's context); the defaults match `rearview.settings.AwsSettings`."""

    functions_dir: Path = REPO_ROOT / "functions"
    layer_dir: Path = REPO_ROOT / "build" / "layer"
    # None: CloudFormation names the table (several stacks per account stay possible).
    table_name: str | None = None
    search: SearchMode = "serverless"
    collection_name: str = "rearview"
    # Standby replicas double the OCUs: on for production, off for a cheaper development collection.
    search_standby_replicas: bool = True
    # IAM principals (ARNs) allowed to maintain the index from outside, e.g. whoever runs `rearview reindex`.
    search_admin_principals: tuple[str, ...] = ()
    opensearch_index: str = "rearview-memories"
    embedding_model: str = "amazon.titan-embed-text-v2:0"
    embedding_dim: int = 512
    summary_model: str = "anthropic.claude-3-5-haiku-20241022-v1:0"
    # A Bedrock rerank model (e.g. `amazon.rerank-v1:0`) that recall uses to re-order its best candidates; None
    # (the default) deploys without one. Rerank models are offered in fewer regions than Titan.
    rerank_model: str | None = None
    # `bedrock` in AWS; `hashing` where Bedrock is not available (an emulator such as LocalStack).
    embedder: str = "bedrock"
    # `arm64` (Graviton: cheaper per GB-second); `x86_64` for an emulator on an Intel machine. The layer must
    # be built for the same one (`make layer LAYER_PLATFORMS=...`).
    architecture: str = "arm64"
    max_receive_count: int = DEFAULT_MAX_RECEIVE_COUNT
    # Hindsight: a namespace with unconsolidated episodes is consolidated this long after its last run (0: the
    # schedule is off; the triggers still run). The functions get it as `hindsight.schedule_hours`.
    consolidation_schedule_hours: float = DEFAULT_SCHEDULE_HOURS
    # How often the schedule checks, as an EventBridge expression; None: hourly, or every period when shorter.
    consolidation_schedule: str | None = None
    consolidation_max_receive_count: int = DEFAULT_CONSOLIDATION_MAX_RECEIVE_COUNT
    # Consolidation worker invocations at once (the event source's maximum concurrency, 2 to 1000).
    consolidation_max_concurrency: int = 5
    # `rules` (no model) or `bedrock` (the summary model states memories; the rules where it fails).
    inducer: str = "rules"
    worker_max_concurrency: int = 10
    log_level: str = "INFO"
    alarm_email: str | None = None
    # One customer-managed KMS key for the table, queues, DLQs, topic, logs and the search collection (off: AWS-owned
    # and AWS-managed keys, which encrypt as well but whose policy and use are not yours to see).
    kms_key: bool = False
    # Keep the table (with deletion protection), the DLQs, the collection and the key when the stack is deleted. Off
    # only for throwaway stacks.
    retain_data: bool = True
    # Reserved concurrency per function (`recall=40,write=20`, merged into the defaults of functions.FUNCTION_SPECS;
    # `none` reserves nothing, for accounts whose concurrency quota is still the initial 10).
    reserved_concurrency: Mapping[str, int] = field(default_factory=default_reserved_concurrency)
    # The functions that start from a SnapStart snapshot of their published version (`mcp,recall`; `none`; `all`
    # for every aliased function). Default: functions.DEFAULT_SNAP_START, the ones a caller waits on.
    snap_start: frozenset[str] = DEFAULT_SNAP_START
    # CodeDeploy's configuration for shifting each alias to a new version (deployment.DEPLOYMENT_CONFIGS).
    deployment_config: str = DEFAULT_DEPLOYMENT_CONFIG
    # The gateway's key authorizer on POST /mcp (off: MCP's own 401 challenge, and the function starts for every
    # unauthenticated request; see infra/README.md).
    mcp_gateway_authorizer: bool = True
    # The stage's throttle (every route, every caller together): steady requests per second and burst.
    api_throttle_rate: int = 100
    api_throttle_burst: int = 200
    # An AWS Budget on the account's monthly cost, warning the alarm topic (0: none). Above the idle cost of the
    # default deployment (about $360 a month, nearly all the collection's minimum OCUs; infra/README.md), so that
    # it warns of traffic or a runaway, not of the deployment existing.
    monthly_budget_usd: float = 500.0
    # CloudFront with an AWS WAF web ACL in front of the API (edge.py; infra/README.md, "Floods, throttling and
    # abuse"). Off by default: it adds about $9.40 a month idle and a CloudFront hop to every request.
    waf: bool = False
    # An existing CLOUDFRONT-scope web ACL (us-east-1) to use instead of creating one, which only a stack deployed
    # in us-east-1 can.
    waf_web_acl_arn: str | None = None
    # The WAF's rate-based rule: requests one client IP may send in 5 minutes before it is blocked.
    waf_rate_limit: int = DEFAULT_WAF_RATE_LIMIT
    # With the WAF: the API takes authenticated requests only through CloudFront (a secret header the authorizer
    # checks), so its own URL cannot be used to skip the WAF.
    waf_origin_only: bool = True

    @classmethod
    def from_context(cls, get: Callable[[str], Any], **overrides: Any) -> RearviewProps:
        """Props from CDK context keys `rearview:<camelCaseField>` read with `get` (e.g.
        `app.node.try_get_context`); strings given with `-c` are converted to the field's type."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = get(CONTEXT_PREFIX + _camel(f.name))
            if raw is not None:
                values[f.name] = _convert(f.name, raw)
        values.update(overrides)
        return cls(**values)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _convert(name: str, raw: Any) -> Any:
    if name in ("functions_dir", "layer_dir"):
        return Path(raw)
    if name in (
        "embedding_dim",
        "max_receive_count",
        "worker_max_concurrency",
        "consolidation_max_receive_count",
        "consolidation_max_concurrency",
        "api_throttle_rate",
        "api_throttle_burst",
        "waf_rate_limit",
    ):
        return int(raw)
    if name in ("consolidation_schedule_hours", "monthly_budget_usd"):
        return float(raw)
    if name == "reserved_concurrency":
        return _reserved_concurrency(raw)
    if name == "snap_start":
        return snap_start_functions(raw)
    if name == "inducer" and raw not in ("rules", "bedrock"):
        raise ValueError(f"rearview:inducer must be 'rules' or 'bedrock', not {raw!r}")
    if name in (
        "search_standby_replicas",
        "kms_key",
        "retain_data",
        "mcp_gateway_authorizer",
        "waf",
        "waf_origin_only",
    ):
        return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes", "on", "enabled")
    if name == "search_admin_principals":
        return tuple(raw) if isinstance(raw, list | tuple) else tuple(p for p in str(raw).split(",") if p)
    if name == "search" and raw not in ("serverless", "domain", "table"):
        raise ValueError(f"rearview:search must be 'serverless', 'domain' or 'table', not {raw!r}")
    if name == "architecture" and raw not in ARCHITECTURES:
        raise ValueError(f"rearview:architecture must be one of {sorted(ARCHITECTURES)}, not {raw!r}")
    return raw


def _reserved_concurrency(raw: Any) -> dict[str, int]:
    """`none` (nothing reserved), or `name=count,...` (a JSON object in cdk.json) merged into the defaults."""
    if isinstance(raw, str) and raw.strip().lower() in ("", "none", "off", "false", "0"):
        return {}
    pairs = raw.items() if isinstance(raw, Mapping) else (item.split("=", 1) for item in str(raw).split(",") if item)
    chosen = default_reserved_concurrency()
    for name, count in pairs:
        name = str(name).strip()
        if name not in FUNCTION_NAMES:
            raise ValueError(
                f"rearview:reservedConcurrency: no function {name!r} (functions: {', '.join(FUNCTION_NAMES)})"
            )
        if int(count) > 0:
            chosen[name] = int(count)
        else:
            chosen.pop(name, None)
    return chosen


def snap_start_functions(raw: Any) -> frozenset[str]:
    """`none`, `all` (every aliased function), or `name,...` (a list in cdk.json): the functions SnapStart
    snapshots. Only a published version can be snapshotted, so the deploy-time function, which has none, is refused."""
    if isinstance(raw, str) and raw.strip().lower() in ("", "none", "off", "false"):
        return frozenset()
    if isinstance(raw, str) and raw.strip().lower() == "all":
        return frozenset(ALIASED_FUNCTIONS)
    names = [str(n).strip() for n in (raw if isinstance(raw, list | tuple) else str(raw).split(",")) if str(n).strip()]
    for name in names:
        if name not in ALIASED_FUNCTIONS:
            raise ValueError(
                f"rearview:snapStart: {name!r} is not a function with published versions "
                f"(functions: {', '.join(ALIASED_FUNCTIONS)})"
            )
    return frozenset(names)


def check_reserved_concurrency(props: RearviewProps) -> None:
    """A queue worker whose reserved concurrency is below its event source's maximum concurrency is throttled by
    its own poller, and its messages end in the DLQ: refuse such a deployment."""
    floors = {
        "write_worker": props.worker_max_concurrency,
        "consolidation_worker": props.consolidation_max_concurrency,
    }
    for name, floor in floors.items():
        reserved = props.reserved_concurrency.get(name)
        if reserved is not None and reserved < floor:
            raise ValueError(
                f"rearview:reservedConcurrency: {name}={reserved} is below its queue's maximum concurrency {floor}"
            )


class RearviewStack(Stack):
    """Key, table, queues (writes, consolidation), search and its index, layer, functions, HTTP API, schedule,
    monitoring and gradual deployment, wired together; cdk-nag's findings that are accepted are suppressed with their
    reasons (`nag.py`)."""

    def __init__(self, scope: Construct, construct_id: str, *, props: RearviewProps, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, description="Rearview: long-term memory for LLM agents", **kwargs)
        # A new layer makes new function versions (else an alias would keep running the old library).
        self.node.set_context("@aws-cdk/aws-lambda:recognizeLayerVersion", True)
        check_reserved_concurrency(props)
        self.props = props
        self.key = DataKey(self, "Encryption", retain=props.retain_data).key if props.kms_key else None
        protection = QueueProtection(key=self.key, retain_dead_letters=props.retain_data)
        self._storage_and_queues(props, protection)
        self.search = self._search_backend(props)
        self._functions(props)
        aliases = self.functions.aliases
        self._api(props, aliases)
        dead_letter_queues = self._schedules(props, aliases, protection)
        self._monitoring(props, aliases, dead_letter_queues)
        self.deployment = GradualDeployment(
            self,
            "Deployment",
            aliases=aliases,
            alarms=self.monitoring.function_alarms,
            config_name=props.deployment_config,
        )
        self._outputs()
        self._accept_findings()

    def _storage_and_queues(self, props: RearviewProps, protection: QueueProtection) -> None:
        """The table (the source of truth), the write queues and the consolidation queues, each with its DLQ."""
        self.storage = MemoryTable(
            self, "Storage", table_name=props.table_name, retain=props.retain_data, encryption_key=self.key
        )
        self.queues = WriteQueues(
            self,
            "Queues",
            worker_timeout=WORKER_TIMEOUT,
            max_receive_count=props.max_receive_count,
            protection=protection,
        )
        self.consolidation_queues = ConsolidationQueues(
            self,
            "ConsolidationQueues",
            worker_timeout=CONSOLIDATION_WORKER_TIMEOUT,
            max_receive_count=props.consolidation_max_receive_count,
            protection=protection,
        )

    def _functions(self, props: RearviewProps) -> None:
        """The layer, the functions on it, and the custom resource that makes the search index at deploy."""
        architecture = ARCHITECTURES[props.architecture]
        self.layer = RearviewLayer(self, "Layer", layer_dir=props.layer_dir, architecture=architecture)
        self.functions = RearviewFunctions(
            self,
            "Functions",
            functions_dir=props.functions_dir,
            layer=self.layer.layer,
            table=self.storage.table,
            queues=self.queues,
            hindsight=HindsightDeployment(
                self.consolidation_queues,
                schedule_hours=props.consolidation_schedule_hours,
                inducer=props.inducer,
                worker_max_concurrency=props.consolidation_max_concurrency,
            ),
            search=self.search,
            opensearch_index=props.opensearch_index,
            models=BedrockModels(props.embedding_model, props.embedding_dim, props.summary_model, props.rerank_model),
            options=FunctionOptions(
                architecture=architecture,
                embedder=props.embedder,
                log_level=props.log_level,
                reserved_concurrency=props.reserved_concurrency,
                log_key=self.key,
                snap_start=props.snap_start,
            ),
            worker_max_concurrency=props.worker_max_concurrency,
        )
        self.search_index: SearchIndexProvisioning | None = None
        if isinstance(self.search, TableSearch):
            return
        self.search_index = SearchIndexProvisioning(
            self,
            "SearchIndex",
            function=self.functions.functions["index_setup"],
            search=self.search,  # type: ignore[arg-type]
            index_name=props.opensearch_index,
            embedding_dim=props.embedding_dim,
            layer=self.layer.layer,
        )

    def _api(self, props: RearviewProps, aliases: Mapping[str, lambda_.Alias]) -> None:
        """The HTTP API in front of the functions' `live` aliases, and with the WAF, CloudFront in front of it."""
        edge = props.waf or props.waf_web_acl_arn is not None
        self.origin_secret = (
            origin_secret(self, "EdgeOriginSecret", self.key) if edge and props.waf_origin_only else None
        )
        if self.origin_secret is not None:
            authorizer = self.functions.functions["authorizer"]
            authorizer.add_environment("REARVIEW_AWS__ORIGIN_SECRET_ARN", self.origin_secret.secret_arn)
            self.origin_secret.grant_read(authorizer)
        self.api = RearviewHttpApi(
            self,
            "Api",
            functions=aliases,
            authorizer_function=aliases["authorizer"],
            throttle_rate=props.api_throttle_rate,
            throttle_burst=props.api_throttle_burst,
            mcp_gateway_authorizer=props.mcp_gateway_authorizer,
            log_key=self.key,
            edge_header=EDGE_ORIGIN_HEADER if self.origin_secret is not None else None,
        )
        self.edge: ApiEdge | None = None
        if edge:
            self.edge = ApiEdge(
                self,
                "Edge",
                api_id=self.api.api.api_id,
                web_acl_arn=props.waf_web_acl_arn,
                rate_limit=props.waf_rate_limit,
                origin_secret=self.origin_secret,
            )

    def _schedules(
        self, props: RearviewProps, aliases: Mapping[str, lambda_.Alias], protection: QueueProtection
    ) -> dict[str, sqs.IQueue]:
        """The consolidation check (unless its period is 0) and the retention sweep; every dead-letter queue of the
        stack, by the name its alarm takes."""
        dead_letter_queues: dict[str, sqs.IQueue] = {
            "WriteDlq": self.queues.dead_letter_queue,
            "IndexSyncFailures": self.queues.index_failures,
            "ConsolidationDlq": self.consolidation_queues.dead_letter_queue,
        }
        self.schedule: ConsolidationSchedule | None = None
        if props.consolidation_schedule_hours > 0:
            self.schedule = ConsolidationSchedule(
                self,
                "Schedule",
                function=aliases["consolidate"],
                schedule_hours=props.consolidation_schedule_hours,
                schedule=props.consolidation_schedule,
                protection=protection,
            )
            dead_letter_queues["ScheduleDlq"] = self.schedule.dead_letter_queue
        self.retention = RetentionSchedule(self, "Retention", function=aliases["forget"], protection=protection)
        dead_letter_queues["RetentionDlq"] = self.retention.dead_letter_queue
        return dead_letter_queues

    def _monitoring(
        self, props: RearviewProps, aliases: Mapping[str, lambda_.Alias], dead_letter_queues: dict[str, sqs.IQueue]
    ) -> None:
        """Alarms, dashboards and the budget over everything above."""
        self.monitoring = RearviewMonitoring(
            self,
            "Monitoring",
            watched=Watched(
                aliases=aliases,
                timeouts={spec.name: Duration.seconds(spec.timeout_seconds) for spec in FUNCTION_SPECS},
                dead_letter_queues=dead_letter_queues,
                write_queue=self.queues.queue,
                consolidation_queue=self.consolidation_queues.queue,
                stream_consumer=self.functions.functions["index_sync"],
                api=self.api.api,
                table=self.storage.table,
                collection_name=(
                    props.collection_name.lower() if isinstance(self.search, ServerlessVectorCollection) else None
                ),
                bedrock_models=_bedrock_models(props),
            ),
            options=MonitoringOptions(
                alarm_email=props.alarm_email, monthly_budget_usd=props.monthly_budget_usd, topic_key=self.key
            ),
        )

    def _search_backend(self, props: RearviewProps) -> SearchBackend:
        if props.search == "table":
            return TableSearch()
        if props.search == "domain":
            return ManagedSearchDomain(
                self, "Search", index_name=props.opensearch_index, retain=props.retain_data, encryption_key=self.key
            )
        return ServerlessVectorCollection(
            self,
            "Search",
            collection_name=props.collection_name,
            index_name=props.opensearch_index,
            standby_replicas=props.search_standby_replicas,
            admin_principal_arns=props.search_admin_principals,
            retain=props.retain_data,
            encryption_key=self.key,
        )

    def _accept_findings(self) -> None:
        """Attach each group of accepted cdk-nag findings (nag.py, with their reasons) to the constructs it covers."""
        nag.suppress(self.functions.functions.values(), nag.FUNCTIONS)
        nag.suppress(self.functions.aliases.values(), nag.FUNCTIONS)
        dead_letters: list[IConstruct] = [
            self.queues.dead_letter_queue,
            self.queues.index_failures,
            self.consolidation_queues.dead_letter_queue,
            self.retention.dead_letter_queue,
        ]
        if self.schedule is not None:
            dead_letters.append(self.schedule.dead_letter_queue)
        nag.suppress(dead_letters, nag.DEAD_LETTER_QUEUES)
        nag.suppress(self.deployment.groups.values(), nag.CODEDEPLOY_ROLES)
        nag.suppress([self.api.api], nag.HEALTH_ROUTE)
        nag.suppress([self.monitoring.topic], nag.ALARM_TOPIC)
        if self.edge is not None:
            nag.suppress([self.edge.distribution], nag.EDGE)
        if self.origin_secret is not None:
            nag.suppress([self.origin_secret], nag.EDGE_ORIGIN_SECRET)
        domain = getattr(self.search, "domain", None)
        if domain is not None:
            nag.suppress([domain], nag.MANAGED_DOMAIN)

    def _outputs(self) -> None:
        """What the CLI (`rearview reindex`, a remote client) needs to find the deployment."""
        CfnOutput(self, "ApiUrl", value=self.api.url)
        CfnOutput(self, "McpUrl", value=self.api.url + MCP_ROUTE.path.lstrip("/"))
        if self.edge is not None:
            CfnOutput(self, "EdgeUrl", value=self.edge.url)
            CfnOutput(self, "EdgeMcpUrl", value=self.edge.url + MCP_ROUTE.path.lstrip("/"))
        CfnOutput(self, "TableName", value=self.storage.table.table_name)
        CfnOutput(self, "WriteQueueUrl", value=self.queues.queue.queue_url)
        CfnOutput(self, "WriteDeadLetterQueueUrl", value=self.queues.dead_letter_queue.queue_url)
        CfnOutput(self, "ConsolidationQueueUrl", value=self.consolidation_queues.queue.queue_url)
        CfnOutput(self, "ConsolidationDeadLetterQueueUrl", value=self.consolidation_queues.dead_letter_queue.queue_url)
        CfnOutput(self, "OpenSearchEndpoint", value=self.search.endpoint)
        CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn)


def _bedrock_models(props: RearviewProps) -> tuple[str, ...]:
    """The Bedrock models the deployment calls (their throttling is alarmed)."""
    if props.embedder != "bedrock":
        return ()
    models = [props.embedding_model]
    if props.inducer == "bedrock":
        models.append(props.summary_model)
    if props.rerank_model:
        models.append(props.rerank_model)
    return tuple(models)
