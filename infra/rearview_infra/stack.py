"""RearviewStack: the whole deployment, composed from the constructs of this package.

The stack is environment-agnostic (no account or region lookups), so it synthesises without AWS credentials.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from rearview.api.routes import MCP_ROUTE
from rearview_infra.api import RearviewHttpApi
from rearview_infra.functions import (
    CONSOLIDATION_WORKER_TIMEOUT,
    WORKER_TIMEOUT,
    BedrockModels,
    HindsightDeployment,
    RearviewFunctions,
)
from rearview_infra.layer import ARCHITECTURES, RearviewLayer
from rearview_infra.monitoring import RearviewMonitoring
from rearview_infra.queues import (
    DEFAULT_CONSOLIDATION_MAX_RECEIVE_COUNT,
    DEFAULT_MAX_RECEIVE_COUNT,
    ConsolidationQueues,
    WriteQueues,
)
from rearview_infra.schedule import DEFAULT_SCHEDULE_HOURS, ConsolidationSchedule, RetentionSchedule
from rearview_infra.search import ManagedSearchDomain, SearchBackend, SearchMode, ServerlessVectorCollection
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
    ):
        return int(raw)
    if name == "consolidation_schedule_hours":
        return float(raw)
    if name == "inducer" and raw not in ("rules", "bedrock"):
        raise ValueError(f"rearview:inducer must be 'rules' or 'bedrock', not {raw!r}")
    if name == "search_standby_replicas":
        return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes", "on", "enabled")
    if name == "search_admin_principals":
        return tuple(raw) if isinstance(raw, list | tuple) else tuple(p for p in str(raw).split(",") if p)
    if name == "search" and raw not in ("serverless", "domain"):
        raise ValueError(f"rearview:search must be 'serverless' or 'domain', not {raw!r}")
    if name == "architecture" and raw not in ARCHITECTURES:
        raise ValueError(f"rearview:architecture must be one of {sorted(ARCHITECTURES)}, not {raw!r}")
    return raw


class RearviewStack(Stack):
    """Table, queues (writes, consolidation), search, layer, functions, HTTP API, schedule and monitoring, wired
    together."""

    def __init__(self, scope: Construct, construct_id: str, *, props: RearviewProps, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, description="Rearview: long-term memory for LLM agents", **kwargs)
        self.props = props
        self.storage = MemoryTable(self, "Storage", table_name=props.table_name)
        self.queues = WriteQueues(
            self, "Queues", worker_timeout=WORKER_TIMEOUT, max_receive_count=props.max_receive_count
        )
        self.consolidation_queues = ConsolidationQueues(
            self,
            "ConsolidationQueues",
            worker_timeout=CONSOLIDATION_WORKER_TIMEOUT,
            max_receive_count=props.consolidation_max_receive_count,
        )
        self.search: SearchBackend
        if props.search == "domain":
            self.search = ManagedSearchDomain(self, "Search", index_name=props.opensearch_index)
        else:
            self.search = ServerlessVectorCollection(
                self,
                "Search",
                collection_name=props.collection_name,
                index_name=props.opensearch_index,
                standby_replicas=props.search_standby_replicas,
                admin_principal_arns=props.search_admin_principals,
            )
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
            architecture=architecture,
            embedder=props.embedder,
            log_level=props.log_level,
            worker_max_concurrency=props.worker_max_concurrency,
        )
        fn = self.functions.functions
        self.api = RearviewHttpApi(self, "Api", functions=fn, authorizer_function=fn["authorizer"])
        dead_letter_queues = {
            "WriteDlq": self.queues.dead_letter_queue,
            "IndexSyncFailures": self.queues.index_failures,
            "ConsolidationDlq": self.consolidation_queues.dead_letter_queue,
        }
        self.schedule: ConsolidationSchedule | None = None
        if props.consolidation_schedule_hours > 0:
            self.schedule = ConsolidationSchedule(
                self,
                "Schedule",
                function=fn["consolidate"],
                schedule_hours=props.consolidation_schedule_hours,
                schedule=props.consolidation_schedule,
            )
            dead_letter_queues["ScheduleDlq"] = self.schedule.dead_letter_queue
        self.retention = RetentionSchedule(self, "Retention", function=fn["forget"])
        dead_letter_queues["RetentionDlq"] = self.retention.dead_letter_queue
        self.monitoring = RearviewMonitoring(
            self,
            "Monitoring",
            functions=fn,
            dead_letter_queues=dead_letter_queues,
            write_queue=self.queues.queue,
            consolidation_queue=self.consolidation_queues.queue,
            stream_consumer=fn["index_sync"],
            api=self.api.api,
            alarm_email=props.alarm_email,
        )

        # What the CLI (`rearview reindex`, a remote client) needs to find the deployment.
        CfnOutput(self, "ApiUrl", value=self.api.url)
        CfnOutput(self, "McpUrl", value=self.api.url + MCP_ROUTE.path.lstrip("/"))
        CfnOutput(self, "TableName", value=self.storage.table.table_name)
        CfnOutput(self, "WriteQueueUrl", value=self.queues.queue.queue_url)
        CfnOutput(self, "WriteDeadLetterQueueUrl", value=self.queues.dead_letter_queue.queue_url)
        CfnOutput(self, "ConsolidationQueueUrl", value=self.consolidation_queues.queue.queue_url)
        CfnOutput(self, "ConsolidationDeadLetterQueueUrl", value=self.consolidation_queues.dead_letter_queue.queue_url)
        CfnOutput(self, "OpenSearchEndpoint", value=self.search.endpoint)
