"""The one composition root: `build(settings, **overrides) -> Services`.

The local server, the CLI, the Lambda handlers and the tests all get their services from here; tests and benchmarks
pass fakes (a ManualClock, a HashingEmbedder, ...) by keyword instead of patching globals.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rearview.clock import SystemClock
from rearview.collector import freeze_start_up_heap
from rearview.domain.changes import IndexChange
from rearview.domain.embedding import CosineScale
from rearview.errors import ConfigurationError
from rearview.ports import (
    Clock,
    ConsolidationJobs,
    DeadLetters,
    Embedder,
    ErasureMarks,
    HindsightLedger,
    IndexMaintenance,
    Inducer,
    KeyStore,
    MemoryStore,
    RequestQuota,
    Reranker,
    RetentionPolicies,
    SearchIndex,
    WriteQueue,
)
from rearview.service.access import AccessService
from rearview.service.brief import BriefService
from rearview.service.bulk_load import BulkLoadService
from rearview.service.consolidation_dispatch import ConsolidationDispatch
from rearview.service.forget import ForgetService
from rearview.service.hindsight.consolidation import ConsolidationService
from rearview.service.hindsight.feedback import FeedbackService
from rearview.service.hindsight.local_worker import STOP_TIMEOUT_SECONDS, LocalConsolidationWorker
from rearview.service.hindsight.runner import ConsolidationRunner
from rearview.service.hindsight.triggers import HindsightTriggers
from rearview.service.maintenance import PeriodicTasks
from rearview.service.manage.edit import EditService
from rearview.service.manage.erase import EraseService
from rearview.service.manage.history import HistoryService
from rearview.service.manage.listing import ListingService
from rearview.service.manage.transfer import TransferService
from rearview.service.recall import RecallService
from rearview.service.retention import RetentionService
from rearview.service.search_fallback import FallbackListener, FallbackSearchIndex
from rearview.service.stats import StatsService
from rearview.service.throttle import RequestThrottle, ThrottleListener
from rearview.service.working_memory import WorkingMemoryService
from rearview.service.write import WriteService
from rearview.settings import Settings, WriteTuning, from_environment

if TYPE_CHECKING:
    from rearview.adapters.sqlite import VectorOptions


@dataclass
class Services:
    """Everything an edge (HTTP, MCP, CLI, Lambda) calls: the services, and the parts they share. One instance per
    process, built at start-up by `build`; it holds no logic of its own."""

    settings: Settings
    store: MemoryStore
    index: SearchIndex
    embedder: Embedder
    clock: Clock
    # Working memory per session, and a session's end (which fires the session-end trigger).
    working: WorkingMemoryService
    writer: WriteService
    recaller: RecallService
    forgetter: ForgetService
    consolidator: ConsolidationService
    access: AccessService
    # Consolidation's bookkeeping (lease, runs, spend, feedback counts), in the backend's own storage.
    ledger: HindsightLedger
    runner: ConsolidationRunner
    triggers: HindsightTriggers
    # Runs asked for now, and where the triggers send their jobs (the local worker, the SQS queue, or nowhere).
    consolidation: ConsolidationDispatch
    briefer: BriefService
    feedback: FeedbackService
    stats: StatsService
    # Retention policies per namespace, their sweep, and the purge of expired working memory.
    retention: RetentionService
    # Memory by hand: pages newest first, edits, history, export and import, namespace erase.
    listing: ListingService
    editor: EditService
    history: HistoryService
    transfer: TransferService
    # A history of episodes through the store's bulk path (`rearview load`, `POST .../load`).
    bulk_load: BulkLoadService
    eraser: EraseService
    # The write side of an index kept apart from the store (OpenSearch), for index sync and reindex; None when
    # the index is written in the store's own transaction (SQLite).
    index_maintenance: IndexMaintenance | None = None

    def close(self) -> None:
        self.store.close()
        self.access.keys.close()


logger = logging.getLogger(__name__)


def build_embedder(settings: Settings) -> Embedder:
    """The embedder named by the settings; imports its dependencies only when chosen."""
    if settings.embedder == "hashing":
        from rearview.adapters.hashing_embedder import HashingEmbedder

        return HashingEmbedder(dim=settings.hashing_dim)
    if settings.embedder == "minilm":
        from rearview.adapters.onnx_embedders.minilm import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder()
    if settings.embedder == "e5":
        from rearview.adapters.onnx_embedders.e5 import OnnxE5Embedder

        return OnnxE5Embedder()
    if settings.embedder in ("bge-en", "bge-zh"):
        from rearview.adapters.onnx_embedders.bge import OnnxBgeEmbedder

        return OnnxBgeEmbedder(settings.embedder.removeprefix("bge-"))
    if settings.embedder == "bedrock":
        from rearview.adapters.aws_clients import boto3_client
        from rearview.adapters.bedrock_embedder import BedrockEmbedder

        return BedrockEmbedder(
            settings.aws.bedrock_embedding_model,
            settings.aws.bedrock_embedding_dim,
            client=boto3_client("bedrock-runtime", settings.aws),
        )
    raise ConfigurationError(f"embedder: unknown embedder {settings.embedder!r}", field="embedder")


def build(settings: Settings | None = None, **overrides: Any) -> Services:
    """Wire the services. Overrides (by keyword): clock, embedder, store, index, inducer, keys, ledger, queue, reranker,
    jobs, policies, quota, erasure_marks, and the listeners on_search_fallback and on_throttled (for metrics)."""
    settings = settings or from_environment()
    clock: Clock = overrides.pop("clock", None) or SystemClock()
    embedder: Embedder = overrides.pop("embedder", None) or build_embedder(settings)
    inducer: Inducer | None = overrides.pop("inducer", None) or build_inducer(settings)
    store: MemoryStore | None = overrides.pop("store", None)
    index: SearchIndex | None = overrides.pop("index", None)
    keys: KeyStore | None = overrides.pop("keys", None)
    ledger: HindsightLedger | None = overrides.pop("ledger", None)
    queue: WriteQueue | None = overrides.pop("queue", None)
    jobs: ConsolidationJobs | None = overrides.pop("jobs", None)
    policies: RetentionPolicies | None = overrides.pop("policies", None)
    reranker: Reranker | None = overrides.pop("reranker", None) or build_reranker(settings)
    quota: RequestQuota | None = overrides.pop("quota", None)
    erasure_marks: ErasureMarks | None = overrides.pop("erasure_marks", None)
    on_search_fallback: FallbackListener | None = overrides.pop("on_search_fallback", None)
    on_throttled: ThrottleListener | None = overrides.pop("on_throttled", None)
    if overrides:
        raise TypeError(f"unknown overrides: {sorted(overrides)}")
    if settings.backend == "aws":
        store = store or build_dynamodb_store(settings, embedder, clock)
        index = index or build_aws_index(settings, embedder, store)
        queue = queue or build_write_queue(settings, clock)
        keys = keys or build_dynamodb_key_store(settings)
        ledger = ledger or build_dynamodb_ledger(settings)
        policies = policies or build_dynamodb_retention_policies(settings)
        quota = quota or build_dynamodb_request_quota(settings)
    elif store is None or index is None or keys is None or ledger is None or policies is None:
        built = build_local_backend(settings, embedder, clock)
        store, index, keys = store or built.store, index or built.index, keys or built.keys
        ledger, policies, quota = ledger or built.ledger, policies or built.policies, quota or built.quota
    backend = LocalBackend(store, index, keys, ledger, policies, quota or in_process_quota())
    jobs = jobs if jobs is not None else build_consolidation_jobs(settings)
    parts = _Parts(
        clock, embedder, backend, inducer, reranker, queue, jobs, erasure_marks, on_search_fallback, on_throttled
    )
    return _started(settings, _wired(settings, parts))


def on_scale(write: WriteTuning, scale: CosineScale) -> WriteTuning:
    """The write path's cosine thresholds, stated on the reference scale, as cosines of the embedder's `scale`
    (consolidation's reconciling reads the same): the embedder's "same statement" is its own."""
    return write.model_copy(update={"dedup_threshold": scale.raw(write.dedup_threshold)})


@dataclass(frozen=True)
class _Parts:
    """What the services are wired from: the clock, the models, the backend, and where writes and jobs go."""

    clock: Clock
    embedder: Embedder
    backend: LocalBackend
    inducer: Inducer | None
    reranker: Reranker | None
    queue: WriteQueue | None
    jobs: ConsolidationJobs | None
    # Where writes are queued: each erased namespace's mark (None: the backend's own, if it has them).
    erasure_marks: ErasureMarks | None
    on_search_fallback: FallbackListener | None
    on_throttled: ThrottleListener | None


def _wired(settings: Settings, parts: _Parts) -> Services:
    """Every service over the parts, each given the narrow ports it uses (the backend's store stands for all)."""
    clock, embedder, store, ledger = parts.clock, parts.embedder, parts.backend.store, parts.backend.ledger
    index = parts.backend.index
    maintenance = index.maintenance()
    if maintenance is not None and settings.aws.search_fallback_scan > 0:
        # An index kept apart from the store may be missing or unreachable: searches then read the store.
        index = build_search_fallback(settings, store, index, parts.on_search_fallback)
    # Seconds of recent episodes recall reads from the store: only an index that lags the store needs it.
    freshness_seconds = settings.aws.freshness_window_seconds if maintenance is not None else 0
    throttle = RequestThrottle(
        parts.backend.quota, clock, settings.throttle.requests_per_minute, on_throttled=parts.on_throttled
    )
    access = AccessService(parts.backend.keys, clock, admin_token=settings.api_token, throttle=throttle)
    write = on_scale(settings.write, embedder.scale)
    consolidator = ConsolidationService(store, embedder, clock, settings.consolidate, write, parts.inducer)
    recaller = RecallService(
        store,
        index,
        embedder,
        clock,
        settings.recall,
        embedder.scale.relevance_margin,
        freshness_seconds=freshness_seconds,
        reranker=parts.reranker,
    )
    forgetter = ForgetService(store, consolidator)
    triggers = HindsightTriggers(store, ledger, clock, settings.hindsight)
    runner = ConsolidationRunner(consolidator, ledger, clock, settings.hindsight)
    dispatch = ConsolidationDispatch(runner, triggers, clock, parts.jobs)
    policies = parts.backend.policies
    writer = WriteService(store, index, embedder, clock, write, queue=parts.queue, on_stored=dispatch.after_write)
    return Services(
        settings=settings,
        store=store,
        index=index,
        embedder=embedder,
        clock=clock,
        working=WorkingMemoryService(store, clock, settings.working_ttl_seconds, on_session_end=dispatch.session_ended),
        writer=writer,
        recaller=recaller,
        forgetter=forgetter,
        consolidator=consolidator,
        access=access,
        ledger=ledger,
        runner=runner,
        triggers=triggers,
        consolidation=dispatch,
        briefer=BriefService(store, recaller, clock, settings.recall),
        feedback=FeedbackService(store, ledger, embedder, clock, settings.recall),
        stats=StatsService(store, ledger, triggers, clock),
        retention=RetentionService(store, policies, forgetter, clock),
        listing=ListingService(store, clock),
        editor=EditService(store, embedder, clock),
        history=HistoryService(store, clock),
        transfer=TransferService(store, embedder, clock, parts.queue),
        bulk_load=BulkLoadService(store, writer, embedder, clock, write),
        eraser=EraseService(store, ledger, access, maintenance, policies, _dated(parts.erasure_marks, settings, clock)),
        index_maintenance=maintenance,
    )


def _started(settings: Settings, services: Services) -> Services:
    """The services built, once the heap alive at the end of start-up is frozen (`freeze_start_up_heap`, once per
    process: what later builds make stays collectable; see rearview/collector.py)."""
    if settings.freeze_start_up_heap:
        freeze_start_up_heap()
    return services


def in_process_quota() -> RequestQuota:
    """Request counters in this process: when a caller gave every other storage part itself."""
    from rearview.adapters.in_memory_quota import InMemoryRequestQuota

    return InMemoryRequestQuota()


@dataclass(frozen=True)
class LocalBackend:
    """What a backend built in this process provides: the store, the index, the API keys and the ledger, over one
    storage."""

    store: MemoryStore
    index: SearchIndex
    keys: KeyStore
    ledger: HindsightLedger
    policies: RetentionPolicies
    quota: RequestQuota


def build_local_backend(settings: Settings, embedder: Embedder, clock: Clock) -> LocalBackend:
    """The backend built in this process: in memory, or SQLite in the data directory."""
    if settings.backend == "memory":
        return build_in_memory_backend(embedder, clock)
    return build_sqlite_backend(settings, embedder, clock)


def build_sqlite_backend(
    settings: Settings, embedder: Embedder, clock: Clock, vectors: VectorOptions | None = None
) -> LocalBackend:
    """The embedded backend: store, index, API keys and ledger over one SQLite file in the data directory. `vectors`:
    how the index caches and searches vectors (None: as a served store does, within the settings' budget)."""
    from rearview.adapters.sqlite import (
        ANN_DIRNAME,
        SqliteDatabase,
        SqliteHindsightLedger,
        SqliteKeyStore,
        SqliteMemoryStore,
        SqliteRequestQuota,
        SqliteRetentionPolicies,
        SqliteSearchIndex,
        VectorOptions,
    )
    from rearview.adapters.sqlite.vector_caches import SERVED_BULK_QUIET_SECONDS, SERVED_IN_BACKGROUND

    # The database creates its directory owner-only (SqliteDatabase: 0700, the file 0600).
    db = SqliteDatabase.in_data_dir(settings.data_dir, embedder_name=embedder.name, dim=embedder.dim)
    options = vectors or VectorOptions(
        max_bytes=settings.index.cache_bytes,
        ann_threshold=settings.index.ann_threshold,
        ann_dir=settings.data_dir / ANN_DIRNAME,
        background=SERVED_IN_BACKGROUND,
        bulk_quiet_seconds=SERVED_BULK_QUIET_SECONDS,
    )
    index = SqliteSearchIndex(db, vectors=options)
    store = SqliteMemoryStore(db, clock=clock)
    return LocalBackend(
        store,
        index,
        SqliteKeyStore(db),
        SqliteHindsightLedger(db),
        SqliteRetentionPolicies(db),
        SqliteRequestQuota(db),
    )


def build_in_memory_backend(embedder: Embedder, clock: Clock) -> LocalBackend:
    """The ephemeral backend: store, index and API keys over one InMemoryData in this process, and a ledger."""
    from rearview.adapters.in_memory import InMemoryData, InMemoryKeyStore, InMemoryMemoryStore, InMemorySearchIndex
    from rearview.adapters.in_memory_ledger import InMemoryHindsightLedger
    from rearview.adapters.in_memory_quota import InMemoryRequestQuota
    from rearview.adapters.in_memory_retention import InMemoryRetentionPolicies

    data = InMemoryData()
    store = InMemoryMemoryStore(data, embedder_name=embedder.name, dim=embedder.dim, clock=clock)
    return LocalBackend(
        store,
        InMemorySearchIndex(data),
        InMemoryKeyStore(data),
        InMemoryHindsightLedger(),
        InMemoryRetentionPolicies(),
        InMemoryRequestQuota(),
    )


def build_dynamodb_key_store(settings: Settings) -> KeyStore:
    """The AWS backend's key store: `APIKEY#` items in the same table."""
    from rearview.adapters.dynamodb import DynamoDBKeyStore

    return DynamoDBKeyStore(settings.aws.table_name, settings=settings.aws)


def _dated(marks: ErasureMarks | None, settings: Settings, clock: Clock) -> tuple[ErasureMarks, Clock] | None:
    """The erasure marks (given, or the backend's), with the clock that dates them; None where writes are not queued."""
    marks = marks or build_erasure_marks(settings)
    return (marks, clock) if marks is not None else None


def build_erasure_marks(settings: Settings) -> ErasureMarks | None:
    """Where writes are queued (AWS), each erased namespace's mark (`ERASED` items in the table), which the write worker
    reads so that a write queued before an erase does not bring the namespace back; None elsewhere."""
    if settings.backend != "aws":
        return None
    from rearview.adapters.dynamodb import DynamoDBErasureMarks

    return DynamoDBErasureMarks(settings.aws.table_name, settings=settings.aws)


def build_dynamodb_request_quota(settings: Settings) -> RequestQuota:
    """The AWS backend's request counters: `QUOTA#` items in the same table."""
    from rearview.adapters.dynamodb import DynamoDBRequestQuota

    return DynamoDBRequestQuota(settings.aws.table_name, settings=settings.aws)


def build_dynamodb_ledger(settings: Settings) -> HindsightLedger:
    """The AWS backend's ledger: `LEASE`, `RUN#`, `SPEND#` and `HINDSIGHT` items in the same table."""
    from rearview.adapters.dynamodb import DynamoDBHindsightLedger

    return DynamoDBHindsightLedger(settings.aws.table_name, settings=settings.aws)


def build_dynamodb_retention_policies(settings: Settings) -> RetentionPolicies:
    """The AWS backend's retention policies: `RETENTION` items in the same table."""
    from rearview.adapters.dynamodb.retention_policies import DynamoDBRetentionPolicies

    return DynamoDBRetentionPolicies(settings.aws.table_name, settings=settings.aws)


def build_key_store(settings: Settings) -> KeyStore:
    """The API keys alone, for commands that manage keys without the rest of the services: the DynamoDB table's
    on the AWS backend, the data directory's SQLite file otherwise (the caller closes it)."""
    if settings.backend == "aws":
        return build_dynamodb_key_store(settings)
    from rearview.adapters.sqlite import SqliteKeyStore

    return SqliteKeyStore.in_data_dir(settings.data_dir)


def read_origin_secret(settings: Settings) -> str | None:
    """The secret CloudFront sends the API (`aws.origin_secret_arn`, the WAF in front), read from Secrets Manager;
    None when the deployment has none. The gateway authorizer's."""
    if not settings.aws.origin_secret_arn:
        return None
    from rearview.adapters.aws_clients import boto3_client

    answer = boto3_client("secretsmanager", settings.aws).get_secret_value(SecretId=settings.aws.origin_secret_arn)
    return str(answer["SecretString"])


def database_file(data_dir: Path) -> Path:
    """The embedded backend's database in a data directory, whether or not it exists yet."""
    from rearview.adapters.sqlite import DB_FILENAME

    return data_dir / DB_FILENAME


def keys_in_data_dir(settings: Settings) -> bool:
    """True if the data directory's database holds an API key; opens nothing if there is no database yet."""
    from rearview.adapters.sqlite import DB_FILENAME, SqliteKeyStore

    if settings.backend != "sqlite" or not (settings.data_dir / DB_FILENAME).exists():
        return False
    store = SqliteKeyStore.in_data_dir(settings.data_dir)
    try:
        return store.has_any()
    finally:
        store.close()


def build_dead_letters(settings: Settings) -> DeadLetters:
    """The write queue's dead-letter queue, where the write worker moves a message that keeps failing."""
    url = settings.aws.dead_letter_queue_url
    if not url:
        raise ConfigurationError(
            "aws.dead_letter_queue_url: required by the write worker (REARVIEW_AWS__DEAD_LETTER_QUEUE_URL)",
            field="aws.dead_letter_queue_url",
        )
    from rearview.adapters.sqs_write_queue import SqsDeadLetters

    return SqsDeadLetters(url, settings=settings.aws)


def build_consolidation_dead_letters(settings: Settings) -> DeadLetters:
    """The consolidation queue's dead-letter queue (FIFO), where the consolidation worker moves a job that keeps
    failing or cannot be read, with the reason."""
    url = settings.aws.consolidation_dead_letter_queue_url
    if not url:
        raise ConfigurationError(
            "aws.consolidation_dead_letter_queue_url: required by the consolidation worker "
            "(REARVIEW_AWS__CONSOLIDATION_DEAD_LETTER_QUEUE_URL)",
            field="aws.consolidation_dead_letter_queue_url",
        )
    from rearview.adapters.sqs_consolidation_jobs import SqsConsolidationDeadLetters

    return SqsConsolidationDeadLetters(url, settings=settings.aws)


def stream_change_decoder() -> Callable[[Mapping[str, Any]], IndexChange | None]:
    """What turns a record of the store's change stream (DynamoDB Streams) into an index change, or None for a
    record the index ignores."""
    from rearview.adapters.dynamodb import change_from_record

    return change_from_record


def stream_session_expiry() -> Callable[[Mapping[str, Any]], tuple[str, str] | None]:
    """What tells a stream record of working memory removed by the TTL (a session that timed out): its
    (namespace, session id), else None."""
    from rearview.adapters.dynamodb import expired_session

    return expired_session


def build_reranker(settings: Settings) -> Reranker | None:
    """The rerank model named by the settings, or None (recall then keeps its own order)."""
    if settings.reranker == "bedrock":
        from rearview.adapters.aws_clients import boto3_client
        from rearview.adapters.bedrock_reranker import BedrockReranker

        return BedrockReranker(
            settings.aws.bedrock_rerank_model, client=boto3_client("bedrock-agent-runtime", settings.aws)
        )
    if settings.reranker == "onnx":
        from rearview.adapters.onnx_cross_encoder_reranker import OnnxCrossEncoderReranker

        if settings.rerank_model_path is None or not settings.rerank_model_path.is_file():
            raise ConfigurationError(
                f"rerank_model_path: the onnx reranker needs a cross-encoder file, not {settings.rerank_model_path}",
                field="rerank_model_path",
            )
        return OnnxCrossEncoderReranker(settings.rerank_model_path, settings.rerank_tokenizer_path)
    return None


def build_inducer(settings: Settings) -> Inducer | None:
    """The model-backed inducer named by the settings, or None for `rules` (consolidation's own default, and the
    fallback of the others)."""
    if settings.inducer == "openai":
        from rearview.adapters.openai_inducer import OpenAICompatibleInducer

        return OpenAICompatibleInducer(settings.openai)
    if settings.inducer == "bedrock":
        from rearview.adapters.aws_clients import boto3_client
        from rearview.adapters.bedrock_inducer import BedrockInducer

        return BedrockInducer(
            settings.aws.bedrock_induction_model, client=boto3_client("bedrock-runtime", settings.aws)
        )
    if settings.inducer == "llama_cpp":
        from rearview.adapters.llama_cpp_inducer import LlamaCppInducer

        if settings.inducer_model_path is None:
            raise ConfigurationError(
                "inducer_model_path: the llama_cpp inducer needs a GGUF model file", field="inducer_model_path"
            )
        return LlamaCppInducer(settings.inducer_model_path)
    return None


def build_dynamodb_store(settings: Settings, embedder: Embedder, clock: Clock) -> MemoryStore:
    """The AWS backend's store: the DynamoDB table named by the settings."""
    from rearview.adapters.dynamodb import DynamoDBMemoryStore

    return DynamoDBMemoryStore(
        settings.aws.table_name,
        clock=clock,
        settings=settings.aws,
        embedder_name=embedder.name,
        dim=embedder.dim,
    )


def build_aws_index(settings: Settings, embedder: Embedder, store: MemoryStore) -> SearchIndex:
    """The AWS backend's index, or with `aws.search` `store` (no cluster) the table's own search of each namespace's
    newest memories."""
    if settings.aws.search == "store":
        from rearview.adapters.store_scan_index import StoreScanIndex

        return StoreScanIndex(store, scan_limit=settings.aws.search_fallback_scan)
    return build_opensearch_index(settings, embedder)


def build_opensearch_index(settings: Settings, embedder: Embedder) -> SearchIndex:
    """The AWS backend's index: OpenSearch k-NN at the configured endpoint (the client connects on first use), or
    with `aws.search` `embedded` the SQLite index in the data directory, kept apart from the store like OpenSearch."""
    aws = settings.aws
    if aws.search == "embedded":
        from rearview.adapters.sqlite.index_replica import SqliteIndexReplica

        return SqliteIndexReplica.in_directory(settings.data_dir, embedder_name=embedder.name, dim=embedder.dim)
    if not aws.opensearch_endpoint:
        raise ConfigurationError(
            "aws.opensearch_endpoint: required with backend aws (REARVIEW_AWS__OPENSEARCH_ENDPOINT)",
            field="aws.opensearch_endpoint",
        )
    from rearview.adapters.aws_clients import MAX_ATTEMPTS, READ_TIMEOUT_SECONDS
    from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex

    connection = OpenSearchConnection(
        aws.opensearch_endpoint,
        service=aws.opensearch_service,
        region=aws.region,
        timeout_seconds=READ_TIMEOUT_SECONDS,
        max_retries=MAX_ATTEMPTS - 1,
    )
    return OpenSearchIndex(connection, aws.opensearch_index, embedder.dim, engine=aws.opensearch_engine)


def build_search_fallback(
    settings: Settings, store: MemoryStore, index: SearchIndex, on_fallback: FallbackListener | None = None
) -> SearchIndex:
    """`index`, answered by the store's own search while it cannot answer (`on_fallback` hears of each such
    answer)."""
    from rearview.adapters.store_scan_index import StoreScanIndex

    return FallbackSearchIndex(
        index,
        StoreScanIndex(store, scan_limit=settings.aws.search_fallback_scan),
        retry_after_seconds=settings.aws.search_fallback_seconds,
        on_fallback=on_fallback,
    )


def reembed_local(settings: Settings, progress: Callable[[str, int], None]) -> tuple[str | None, dict[str, int]]:
    """The embedded backend's data in `settings.data_dir` re-embedded in place by `settings.embedder` (every
    memory's vector, then the database's record of its embedder): (the embedder recorded before, memories per
    namespace). For a store written with another embedder, before it is opened with this one."""
    if settings.backend != "sqlite":
        raise ConfigurationError(
            "reindex --embedder: the embedded backend's data is re-embedded in place; on AWS, rebuild with the "
            "deployment's embedder",
            field="backend",
        )
    from rearview.adapters.sqlite.reembed import recorded_embedder, reembed
    from rearview.service.manage.edit import embedding_text

    before = recorded_embedder(settings.data_dir)
    counts = reembed(settings.data_dir, build_embedder(settings), embedding_text, progress)
    return (before[0] if before else None), counts


def build_index_maintenance(settings: Settings) -> IndexMaintenance | None:
    """The write side of the AWS backend's search index alone (no store, no queue): what provisions the index at
    deploy. None on the local backends, whose index lives in the store."""
    if settings.backend != "aws" or settings.aws.search == "store":
        return None
    return build_opensearch_index(settings, build_embedder(settings)).maintenance()


def build_consolidation_jobs(settings: Settings) -> ConsolidationJobs | None:
    """The SQS consolidation queue when its URL is configured (AWS functions that detect triggers are given it);
    locally, the server attaches its background worker instead (`ConsolidationDispatch.attach`)."""
    if not settings.aws.consolidation_queue_url:
        return None
    from rearview.adapters.sqs_consolidation_jobs import SqsConsolidationJobs

    return SqsConsolidationJobs(settings.aws.consolidation_queue_url, settings=settings.aws)


def build_local_worker(services: Services) -> LocalConsolidationWorker:
    """The local server's background worker over `services` (not started, not attached)."""
    return LocalConsolidationWorker(services.runner, services.triggers, services.clock, services.settings.hindsight)


@contextmanager
def local_consolidation(
    services: Services, *, stop_timeout: float = STOP_TIMEOUT_SECONDS
) -> Iterator[LocalConsolidationWorker | None]:
    """While the block runs, a background worker takes the triggers' jobs and sweeps the schedule (unless
    `settings.hindsight.worker` is off: then None, and nothing runs until asked); on the way out it stops
    gracefully, before the caller closes the services."""
    if not services.settings.hindsight.worker:
        yield None
        return
    worker = build_local_worker(services)
    previous = services.consolidation.jobs
    services.consolidation.attach(worker)
    worker.start()
    try:
        yield worker
    finally:
        services.consolidation.attach(previous)
        worker.stop(stop_timeout)


@contextmanager
def local_maintenance(services: Services, *, stop_timeout: float = STOP_TIMEOUT_SECONDS) -> Iterator[PeriodicTasks]:
    """While the block runs, a background thread sweeps retention and purges expired working memory and expired
    memories on the intervals of `settings.retention` (either at 0 is off); it stops on the way out, before the
    services close."""
    tasks = PeriodicTasks()
    tasks.add("retention sweep", services.settings.retention.sweep_minutes * 60, services.retention.sweep)
    tasks.add("expiry purge", services.settings.retention.working_purge_minutes * 60,
              services.retention.purge)  # fmt: skip
    tasks.start()
    try:
        yield tasks
    finally:
        tasks.stop(stop_timeout)


def build_write_queue(settings: Settings, clock: Clock) -> WriteQueue | None:
    """The SQS write queue when its URL is configured (only the functions that accept writes are given it)."""
    if not settings.aws.write_queue_url:
        return None
    from rearview.adapters.sqs_write_queue import SqsWriteQueue

    return SqsWriteQueue(settings.aws.write_queue_url, settings=settings.aws, clock=clock)
