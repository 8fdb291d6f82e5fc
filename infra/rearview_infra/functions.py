"""The Lambda functions: one per `functions/<name>/handler.py`, all on the shared layer, each granted only
what it calls, each (but index_setup) served through its `live` alias, which CodeDeploy shifts to a new version
gradually (`deployment.py`).

| function             | trigger                  | DynamoDB            | SQS                    | search | Bedrock   |
|----------------------|--------------------------|---------------------|------------------------|--------|-----------|
| write                | HTTP: memories, WM, keys | r, w, d, scan (+)   | send: write, jobs      | -      | -         |
| write_worker         | write queue              | r, w                | take; send: DLQ, jobs  | read   | embed     |
| index_sync           | table stream             | r (***)             | on-failure; send: jobs | write  | -         |
| recall               | HTTP: recall, get, stats | r, w (*)            | -                      | read   | embed(**) |
| forget               | HTTP + retention sched.  | r, w, d             | -                      | -      | -         |
| erase                | HTTP: namespace erase    | r, w, d, scan (+)   | -                      | delete | -         |
| consolidate          | HTTP + schedule          | r, w, d (++)        | send: jobs             | -      | embed,LLM |
| consolidation_worker | jobs (FIFO)              | r, w, d (++)        | take; send: its DLQ    | -      | (+++)     |
| mcp                  | HTTP: POST /mcp          | r, w, d             | send: write, jobs      | read   | all (**)  |
| authorizer           | API Gateway authorizer   | r `APIKEY#*`        | -                      | -      | -         |
| index_setup          | CloudFormation (deploy)  | -                   | -                      | create | -         |

`write` is the write queue, `jobs` the consolidation queue, `take` consume (receive, delete), search OpenSearch.
DynamoDB: r(ead) is GetItem, BatchGetItem, Query; w(rite) PutItem, UpdateItem; d(elete) DeleteItem,
BatchWriteItem (only ever deletes); scan Scan. Every statement but the authorizer's is limited to the items of
namespaces (`NS#*`), the consolidation index's shards (`UC#*`), the embedder record (`META`), the retention
policies (`RETENTION`), the namespace listing's index partition (`NAMESPACES`) and the expiring index's shards
(`EXP#*`) by a `dynamodb:LeadingKeys`
condition: no data function can read or forge an API key.
(+) write manages API keys (`APIKEY#*`, listed with a filtered Scan); erase revokes the keys whose whole scope it
erased (listed the same way), and writes each erased namespace's mark (`ERASED`, read by the write worker).
(*) recall writes access counts and the namespace's recall statistics. (**) and rerank, when a rerank model is
deployed (`rearview:rerankModel`). (***) for Hindsight's triggers (the namespace's unconsolidated count, its recent
outcomes); it never writes. (++) a run's lease is released with DeleteItem. (+++) embed; the induction model only with
`rearview:inducer=bedrock`. Index writes happen in index_sync (forget and consolidation change DynamoDB, and the
stream carries it over) and in erase, which also deletes a namespace's documents by query. The namespace is the
tenant, and every function serves every tenant: which tenant a request may touch is checked in code on every
request, which IAM cannot express for one role.

The consolidation queue's senders are the functions that detect triggers: the write worker (after each write), the
stream (writes from any path, sessions the TTL ended), the write and mcp functions (a session ended by its caller)
and consolidate (the schedule)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from constructs import Construct

from rearview.api.routes import API_ROUTES, MCP_ROUTE
from rearview_infra.layer import RUNTIME
from rearview_infra.queues import ConsolidationQueues, WriteQueues
from rearview_infra.search import SearchBackend

HANDLER = "handler.handler"
# The alias every trigger invokes; CodeDeploy moves it from version to version.
ALIAS_NAME = "live"


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    description: str
    timeout_seconds: int
    memory_mb: int
    # Reserved concurrency by default (`rearview:reservedConcurrency` overrides): a ceiling for the public
    # functions, so a flood cannot take the account's whole pool, and a guarantee for the workers, so a flood on the
    # public routes cannot starve them. None: the unreserved pool (the deploy-time custom resource).
    reserved: int | None = None
    # Served through the `live` alias with gradual deployment (every function but the deploy-time one).
    aliased: bool = True


# API Gateway gives up on an integration after 30 s, so HTTP functions stay under it.
FUNCTION_SPECS: tuple[FunctionSpec, ...] = (
    FunctionSpec("write", "Accepts writes (202) onto the write queue; working memory synchronously", 10, 512, 20),
    FunctionSpec("write_worker", "Stores queued writes (embed, dedup, contradictions) in DynamoDB", 60, 1024, 10),
    # One concurrent invocation per stream shard (parallelization factor 1); an on-demand table has a few.
    FunctionSpec("index_sync", "DynamoDB stream -> OpenSearch upserts and deletes", 60, 512, 10),
    FunctionSpec("recall", "Hybrid recall, get memory, stats", 15, 1024, 40),
    FunctionSpec("forget", "Forget by id, session or filter, with cascade; sweeps retention hourly", 28, 512, 5),
    FunctionSpec("erase", "Erases a namespace or a subtree: table, index, and the keys whose scope went", 28, 512, 2),
    # Over HTTP a run of one namespace, which may outlast API Gateway's 30 s: the run still completes and is
    # recorded. On the schedule it only enqueues.
    FunctionSpec("consolidate", "Consolidates a namespace on request; enqueues the scheduled jobs", 300, 1024, 5),
    # A job's run stops starting clusters `consolidation_safety_seconds` before this; shorter than a run's lease
    # (`LEASE_SECONDS`, 600 s), so a run never outlives the lease that keeps a second one out.
    FunctionSpec("consolidation_worker", "Runs consolidation jobs from the FIFO queue", 300, 1024, 5),
    FunctionSpec("mcp", "MCP server (Streamable HTTP, stateless)", 28, 1024, 20),
    # Cached 300 s per key by the gateway, so few invocations; a throttled authorizer fails requests (500).
    FunctionSpec("authorizer", "API key authorizer for the HTTP API (simple responses)", 5, 256, 40),
    # Invoked by CloudFormation once per deploy that changes it: no alias, no reservation.
    FunctionSpec(
        "index_setup", "Creates the search index at deploy (CloudFormation custom resource)", 600, 256, None, False
    ),
)
FUNCTION_NAMES: tuple[str, ...] = tuple(spec.name for spec in FUNCTION_SPECS)
ALIASED_FUNCTIONS: tuple[str, ...] = tuple(spec.name for spec in FUNCTION_SPECS if spec.aliased)
WORKER_TIMEOUT = Duration.seconds(next(s.timeout_seconds for s in FUNCTION_SPECS if s.name == "write_worker"))
CONSOLIDATION_WORKER_TIMEOUT = Duration.seconds(
    next(s.timeout_seconds for s in FUNCTION_SPECS if s.name == "consolidation_worker")
)


# SnapStart by default (`rearview:snapStart` overrides): the functions a caller waits on when a new environment
# starts. Their init and first call import the services, boto3 and (mcp) the MCP SDK; a snapshot taken at publish
# holds those imports (rearview.api.snapstart primes them; no client or credential is made before it). The workers
# (queues, stream, schedule) are not waited on, and a snapshot is charged for as long as it is cached
# (infra/README.md, "Cold starts, SnapStart and memory size").
DEFAULT_SNAP_START: frozenset[str] = frozenset({"authorizer", "mcp", "recall", "write"})


def default_reserved_concurrency() -> dict[str, int]:
    """Each function's reserved concurrency when the deployment does not choose."""
    return {spec.name: spec.reserved for spec in FUNCTION_SPECS if spec.reserved is not None}


# Functions that search the index (recall and brief, the write path's near-duplicate search; consolidation does not),
# embed queries or texts, and summarise clusters.
_SEARCHERS = ("write_worker", "recall", "mcp")
_EMBEDDERS = ("write_worker", "recall", "consolidate", "consolidation_worker", "mcp")
_SUMMARISERS = ("consolidate", "mcp")
# Functions that answer recalls, and so call the rerank model when one is deployed.
_RERANKERS = ("recall", "mcp")

# DynamoDB, per function (see the module doc).
_READ = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query")
_WRITE = ("dynamodb:PutItem", "dynamodb:UpdateItem")
_DELETE = ("dynamodb:DeleteItem", "dynamodb:BatchWriteItem")
TABLE_ACTIONS: dict[str, tuple[str, ...]] = {
    "write": (*_READ, *_WRITE, *_DELETE, "dynamodb:Scan"),
    "write_worker": (*_READ, *_WRITE),
    "index_sync": _READ,
    "recall": (*_READ, *_WRITE),
    "forget": (*_READ, *_WRITE, *_DELETE),
    "erase": (*_READ, *_WRITE, *_DELETE, "dynamodb:Scan"),
    "consolidate": (*_READ, *_WRITE, *_DELETE),
    "consolidation_worker": (*_READ, *_WRITE, *_DELETE),
    "mcp": (*_READ, *_WRITE, *_DELETE),
}
# The partition keys the data functions reach: namespaces, the unconsolidated index's shards, the embedder record,
# the retention policies, the sparse `by_namespace` index's one partition (the namespace listing, erase, sweep),
# and the sparse `expiring` index's shards (the sweep's expired memories).
DATA_LEADING_KEYS = ("NS#*", "UC#*", "META", "RETENTION", "NAMESPACES", "EXP#*")
API_KEY_LEADING_KEYS = ("APIKEY#*",)
# The API keys' request counters (per-key throttling, rearview.adapters.dynamodb.quota): every function that serves
# the routes of the route table or /mcp counts each request there (a conditional UpdateItem, read with GetItem).
QUOTA_LEADING_KEYS = ("QUOTA#*",)
# (/mcp states no permission of its own: each tool call checks one, after the request was counted.)
REQUEST_SERVERS: tuple[str, ...] = tuple(
    sorted({r.function for r in API_ROUTES if r.permission is not None} | {MCP_ROUTE.function})
)
# The functions that manage API keys: write (the key routes) and erase (it revokes the keys whose scope it erased).
_KEY_MANAGERS = ("write", "erase")

# Only these put messages on the write queue, so only they are told its URL: with a queue configured,
# `Services.submit` accepts instead of storing, which the worker must never do.
_QUEUE_SENDERS = ("write", "mcp")
# The functions that detect Hindsight's triggers: told the consolidation queue's URL (`Services.jobs`), and allowed
# to send to it. `write` serves ending and clearing sessions over HTTP (the route table), `mcp` as a tool.
_JOB_SENDERS = ("write", "write_worker", "index_sync", "consolidate", "mcp")
# The functions that run consolidation, told the inducer to use.
_CONSOLIDATORS = ("consolidate", "consolidation_worker", "mcp")

# Cross-region inference profiles (`us.anthropic...`) name a geography before the model id.
_INFERENCE_PROFILE_PREFIXES = ("us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.")

# Stream records that index sync acts on: episodes and facts (working memory, namespace state and API keys are
# never indexed). The function ignores the others too; filtering here saves the invocations.
_INDEXED_SORT_KEY_PREFIXES = ("EP#", "FACT#")
# ... and working memory that DynamoDB's TTL removed (a session that timed out: Hindsight's session-end trigger).
# A caller's own delete of working memory is not passed: the function that deleted it sent its job.
_TTL_REMOVAL_OF_WORKING_MEMORY = {
    "eventName": ["REMOVE"],
    "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
    "dynamodb": {"Keys": {"sk": {"S": [{"prefix": "WM#"}]}}},
}


@dataclass(frozen=True)
class BedrockModels:
    embedding_model: str
    embedding_dim: int
    summary_model: str
    # None: recall keeps its own order (no rerank model deployed).
    rerank_model: str | None = None


@dataclass(frozen=True)
class StreamSettings:
    """Index sync's stream polling: retries are bounded and a batch that keeps failing is bisected down to the
    failing record, which then goes (as metadata) to the on-failure queue."""

    batch_size: int = 100
    retry_attempts: int = 5
    max_record_age: Duration = Duration.hours(12)


@dataclass(frozen=True)
class HindsightDeployment:
    """Consolidation on AWS: its queues, how often the schedule consolidates a namespace with a backlog, the
    inducer, and how many worker invocations may run at once (each holds a namespace; a model inducer's quota is
    shared by all of them)."""

    queues: ConsolidationQueues
    schedule_hours: float = 24.0
    inducer: str = "rules"
    worker_max_concurrency: int = 5


@dataclass(frozen=True)
class FunctionOptions:
    """How every function runs: architecture, embedder, log level, reserved concurrency per function, the key its
    logs are encrypted with (None: CloudWatch's own), and which functions start from a SnapStart snapshot."""

    architecture: lambda_.Architecture
    embedder: str = "bedrock"
    log_level: str = "INFO"
    reserved_concurrency: Mapping[str, int] = field(default_factory=default_reserved_concurrency)
    log_key: kms.IKey | None = None
    # The functions whose published versions are snapshotted (SnapStart); only aliased ones can be.
    snap_start: frozenset[str] = DEFAULT_SNAP_START


def service_name(function: str) -> str:
    """Powertools' service name of a function: the `service` dimension of the metrics it emits."""
    return f"rearview-{function}"


def construct_name(function: str) -> str:
    """`consolidation_worker` -> `ConsolidationWorker`: the construct id of a function (and its alarms)."""
    return "".join(part.capitalize() for part in function.split("_"))


def bedrock_model_arns(model_id: str) -> list[str]:
    """The resources `bedrock:InvokeModel` needs for a model id: the foundation model, or for an inference
    profile the profile plus the foundation model in every region it may route to."""
    if model_id.startswith("arn:"):
        return [model_id]
    if model_id.startswith(_INFERENCE_PROFILE_PREFIXES):
        base = model_id.split(".", 1)[1]
        return [
            f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}:{Aws.ACCOUNT_ID}:inference-profile/{model_id}",
            f"arn:{Aws.PARTITION}:bedrock:*::foundation-model/{base}",
        ]
    return [f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{model_id}"]


class RearviewFunctions(Construct):
    """Every function, its `live` alias, its environment, its grants, and the SQS and stream event sources (on the
    aliases: what CodeDeploy shifts is what the queues and the stream invoke)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions_dir: Path,
        layer: lambda_.ILayerVersion,
        table: dynamodb.Table,
        queues: WriteQueues,
        hindsight: HindsightDeployment,
        search: SearchBackend,
        opensearch_index: str,
        models: BedrockModels,
        options: FunctionOptions,
        worker_max_concurrency: int = 10,
        stream: StreamSettings | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.options = options
        env = _environments(table, queues, hindsight, search, opensearch_index, models, options)
        self.functions: dict[str, lambda_.Function] = {}
        self.aliases: dict[str, lambda_.Alias] = {}
        for spec in FUNCTION_SPECS:
            fn = self._function(spec, functions_dir, layer, env[spec.name])
            self.functions[spec.name] = fn
            if spec.aliased:
                self.aliases[spec.name] = fn.add_alias(ALIAS_NAME)
        fn = self.functions

        for name, actions in TABLE_ACTIONS.items():
            _grant_table(table, fn[name], actions, leading_keys(name))
        _grant_table(table, fn["authorizer"], _READ, API_KEY_LEADING_KEYS)
        for name in _QUEUE_SENDERS:
            queues.queue.grant_send_messages(fn[name])
        queues.dead_letter_queue.grant_send_messages(fn["write_worker"])
        for name in _SEARCHERS:
            search.grant_read(fn[name])
        search.grant_write(fn["index_sync"])
        # The erase deletes a namespace's documents at once (the stream would, one record at a time).
        search.grant_delete_documents(fn["erase"])
        search.grant_create_index(fn["index_setup"])
        for name in _EMBEDDERS:
            _grant_invoke(fn[name], models.embedding_model)
        for name in _SUMMARISERS:
            _grant_invoke(fn[name], models.summary_model)
        self._wire_hindsight(hindsight, models)
        if models.rerank_model:
            for name in _RERANKERS:
                _grant_rerank(fn[name], models.rerank_model)
        self._wire_write_path(table, queues, worker_max_concurrency, stream or StreamSettings())

    def _wire_write_path(
        self, table: dynamodb.Table, queues: WriteQueues, worker_max_concurrency: int, stream: StreamSettings
    ) -> None:
        """The write worker on the write queue, index sync on the table's stream."""
        # The SQS source grants consume (receive, delete, change visibility) on the write queue.
        self.aliases["write_worker"].add_event_source(
            event_sources.SqsEventSource(
                queues.queue,
                batch_size=10,
                report_batch_item_failures=True,
                max_concurrency=worker_max_concurrency,
            )
        )
        # The stream source grants stream reads; the on-failure destination grants sending to its queue.
        self.aliases["index_sync"].add_event_source(
            event_sources.DynamoEventSource(
                table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=stream.batch_size,
                max_batching_window=Duration.seconds(1),
                report_batch_item_failures=True,
                bisect_batch_on_error=True,
                retry_attempts=stream.retry_attempts,
                max_record_age=stream.max_record_age,
                on_failure=event_sources.SqsDlq(queues.index_failures),
                filters=[
                    *(
                        lambda_.FilterCriteria.filter(
                            {"dynamodb": {"Keys": {"sk": {"S": lambda_.FilterRule.begins_with(prefix)}}}}
                        )
                        for prefix in _INDEXED_SORT_KEY_PREFIXES
                    ),
                    lambda_.FilterCriteria.filter(_TTL_REMOVAL_OF_WORKING_MEMORY),
                ],
            )
        )

    def _wire_hindsight(self, hindsight: HindsightDeployment, models: BedrockModels) -> None:
        """The consolidation queue's senders, and the worker: its grants and its event source."""
        fn = self.functions
        queues = hindsight.queues
        for name in _JOB_SENDERS:
            queues.queue.grant_send_messages(fn[name])
        worker = fn["consolidation_worker"]
        queues.dead_letter_queue.grant_send_messages(worker)
        if hindsight.inducer == "bedrock":
            _grant_invoke(worker, models.summary_model)
        # The SQS source grants consume (receive, delete, change visibility) on the consolidation queue. One job per
        # invocation: each gets the whole timeout as its time budget. The maximum concurrency bounds the runs at
        # once (a FIFO queue also never runs two of one namespace), protecting the table and a model's quota.
        self.aliases["consolidation_worker"].add_event_source(
            event_sources.SqsEventSource(
                queues.queue,
                batch_size=1,
                report_batch_item_failures=True,
                max_concurrency=hindsight.worker_max_concurrency,
            )
        )

    def _function(
        self, spec: FunctionSpec, functions_dir: Path, layer: lambda_.ILayerVersion, env: dict[str, str]
    ) -> lambda_.Function:
        code_dir = functions_dir / spec.name
        if not (code_dir / "handler.py").is_file():
            raise FileNotFoundError(f"{code_dir / 'handler.py'} does not exist: every function needs its handler")
        construct_id = construct_name(spec.name)
        log_group = logs.LogGroup(
            self,
            f"{construct_id}Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            encryption_key=self.options.log_key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        return lambda_.Function(
            self,
            construct_id,
            description=f"rearview {spec.name}: {spec.description}",
            runtime=RUNTIME,
            architecture=self.options.architecture,
            handler=HANDLER,
            code=lambda_.Code.from_asset(str(code_dir), exclude=["__pycache__", "*.pyc", "tests"]),
            layers=[layer],
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            environment=env,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            reserved_concurrent_executions=self.options.reserved_concurrency.get(spec.name),
            # Every published version is kept when the next replaces it, so `aws lambda update-alias
            # --function-version <n>` can go back to any earlier release (infra/README.md, "Roll back").
            current_version_options=lambda_.VersionOptions(removal_policy=RemovalPolicy.RETAIN),
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if spec.name in self.options.snap_start else None,
        )


def _environments(
    table: dynamodb.Table,
    queues: WriteQueues,
    hindsight: HindsightDeployment,
    search: SearchBackend,
    opensearch_index: str,
    models: BedrockModels,
    options: FunctionOptions,
) -> dict[str, dict[str, str]]:
    """Each function's environment: what all share, and what only some are told."""
    shared_env = {
        "REARVIEW_BACKEND": "aws",
        "REARVIEW_EMBEDDER": options.embedder,
        "REARVIEW_LOG_LEVEL": options.log_level,
        "REARVIEW_AWS__REGION": Aws.REGION,
        "REARVIEW_AWS__TABLE_NAME": table.table_name,
        # No endpoint: no cluster (rearview:search=table); the functions search the table itself.
        "REARVIEW_AWS__SEARCH": "opensearch" if search.endpoint else "store",
        "REARVIEW_AWS__OPENSEARCH_ENDPOINT": search.endpoint,
        "REARVIEW_AWS__OPENSEARCH_SERVICE": search.service,
        "REARVIEW_AWS__OPENSEARCH_INDEX": opensearch_index,
        "REARVIEW_AWS__BEDROCK_EMBEDDING_MODEL": models.embedding_model,
        "REARVIEW_AWS__BEDROCK_EMBEDDING_DIM": str(models.embedding_dim),
        "REARVIEW_AWS__BEDROCK_INDUCTION_MODEL": models.summary_model,
        # Every function reports the schedule's next run in `stats`; the schedule reads it to pick the namespaces.
        "REARVIEW_HINDSIGHT__SCHEDULE_HOURS": f"{hindsight.schedule_hours:g}",
        "POWERTOOLS_METRICS_NAMESPACE": "Rearview",
        "POWERTOOLS_LOG_LEVEL": options.log_level,
        # Responses carry users' memories: keep them out of X-Ray.
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
    }
    extra_env: dict[str, Mapping[str, str]] = {
        name: {"REARVIEW_AWS__WRITE_QUEUE_URL": queues.queue.queue_url} for name in _QUEUE_SENDERS
    }
    extra_env["write_worker"] = {
        "REARVIEW_AWS__DEAD_LETTER_QUEUE_URL": queues.dead_letter_queue.queue_url,
        "REARVIEW_AWS__MAX_RECEIVE_COUNT": str(queues.max_receive_count),
    }
    _add_hindsight_env(extra_env, hindsight)
    if models.rerank_model:
        for name in _RERANKERS:
            extra_env[name] = {
                **extra_env.get(name, {}),
                "REARVIEW_RERANKER": "bedrock",
                "REARVIEW_AWS__BEDROCK_RERANK_MODEL": models.rerank_model,
            }
    return {
        spec.name: {**shared_env, "POWERTOOLS_SERVICE_NAME": service_name(spec.name), **extra_env.get(spec.name, {})}
        for spec in FUNCTION_SPECS
    }


def _add_hindsight_env(extra_env: dict[str, Mapping[str, str]], hindsight: HindsightDeployment) -> None:
    """The consolidation queue for the senders; its DLQ, redrive count and safety margin for the worker; the
    inducer for the functions that run consolidation."""
    queues = hindsight.queues
    for name in _JOB_SENDERS:
        extra_env[name] = {**extra_env.get(name, {}), "REARVIEW_AWS__CONSOLIDATION_QUEUE_URL": queues.queue.queue_url}
    extra_env["consolidation_worker"] = {
        "REARVIEW_AWS__CONSOLIDATION_DEAD_LETTER_QUEUE_URL": queues.dead_letter_queue.queue_url,
        "REARVIEW_AWS__CONSOLIDATION_MAX_RECEIVE_COUNT": str(queues.max_receive_count),
    }
    if hindsight.inducer != "rules":
        for name in _CONSOLIDATORS:
            extra_env[name] = {**extra_env.get(name, {}), "REARVIEW_INDUCER": hindsight.inducer}


def leading_keys(function: str) -> tuple[str, ...]:
    """The partition keys a data function's table grant is conditioned on."""
    keys: tuple[str, ...] = DATA_LEADING_KEYS
    if function in _KEY_MANAGERS:
        keys = (*keys, *API_KEY_LEADING_KEYS)
    if function in REQUEST_SERVERS:
        keys = (*keys, *QUOTA_LEADING_KEYS)
    return keys


def _grant_table(table: dynamodb.Table, fn: lambda_.Function, actions: tuple[str, ...], keys: tuple[str, ...]) -> None:
    """`actions` on the table and its indexes, only on items whose partition key matches one of `keys`; with a
    customer-managed key, the use of the key too."""
    fn.add_to_role_policy(
        iam.PolicyStatement(
            actions=list(actions),
            resources=[table.table_arn, f"{table.table_arn}/index/*"],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(keys)}},
        )
    )
    if table.encryption_key is not None:
        table.encryption_key.grant_encrypt_decrypt(fn)


def _grant_invoke(fn: lambda_.Function, model_id: str) -> None:
    # Converse is authorised as bedrock:InvokeModel.
    fn.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=bedrock_model_arns(model_id)))


def _grant_rerank(fn: lambda_.Function, model_id: str) -> None:
    # The Rerank API needs bedrock:Rerank (which takes no resource) and bedrock:InvokeModel on the rerank model.
    fn.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:Rerank"], resources=["*"]))
    _grant_invoke(fn, model_id)
