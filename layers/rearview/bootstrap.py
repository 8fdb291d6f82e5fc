"""The one composition root: `build(settings, **overrides) -> Services`.

The local server, the CLI, the Lambda handlers and the tests all get their services from here; tests and benchmarks
pass fakes (a ManualClock, a HashingEmbedder, ...) by keyword instead of patching globals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rearview.clock import SystemClock
from rearview.domain.changes import IndexChange
from rearview.domain.namespaces import validate_namespace
from rearview.domain.stats import Stats
from rearview.domain.write import MemoryWrite, WriteResult
from rearview.errors import ConfigurationError
from rearview.ports import (
    Clock,
    DeadLetters,
    Embedder,
    IndexMaintenance,
    Inducer,
    KeyStore,
    MemoryStore,
    Reranker,
    SearchIndex,
    WriteQueue,
)
from rearview.service.access import AccessService
from rearview.service.forget import ForgetService
from rearview.service.hindsight.consolidation import ConsolidationService
from rearview.service.recall import RecallService
from rearview.service.working_memory import WorkingMemoryService
from rearview.service.write import WriteService
from rearview.settings import Settings


@dataclass
class Services:
    """Everything an edge (HTTP, MCP, CLI, Lambda) calls. One instance per process, built at start-up."""

    settings: Settings
    store: MemoryStore
    index: SearchIndex
    embedder: Embedder
    clock: Clock
    working: WorkingMemoryService
    writer: WriteService
    recaller: RecallService
    forgetter: ForgetService
    consolidator: ConsolidationService
    access: AccessService
    # The write side of an index kept apart from the store (OpenSearch), for index sync and reindex; None when
    # the index is written in the store's own transaction (SQLite).
    index_maintenance: IndexMaintenance | None = None

    def submit(self, namespace: str, items: Sequence[MemoryWrite], field_prefix: str = "items") -> list[WriteResult]:
        """Write through the queue when one is configured (`accepted`, stored later by the worker), else now."""
        if self.writer.queued:
            return self.writer.accept(namespace, items, field_prefix=field_prefix)
        return self.writer.write_batch(namespace, items, field_prefix=field_prefix)

    def stats(self, namespace: str) -> Stats:
        validate_namespace(namespace)
        return Stats.of(namespace, self.store.usage(namespace, self.clock.now()))

    def close(self) -> None:
        self.store.close()
        self.access.keys.close()


def build_embedder(settings: Settings) -> Embedder:
    """The embedder named by the settings; imports its dependencies only when chosen."""
    if settings.embedder == "hashing":
        from rearview.adapters.hashing_embedder import HashingEmbedder

        return HashingEmbedder(dim=settings.hashing_dim)
    if settings.embedder == "minilm":
        from rearview.adapters.onnx_minilm_embedder import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder()
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
    """Wire the services. Overrides (by keyword): clock, embedder, store, index, inducer, keys, queue, reranker."""
    settings = settings or Settings()
    clock: Clock = overrides.pop("clock", None) or SystemClock()
    embedder: Embedder = overrides.pop("embedder", None) or build_embedder(settings)
    inducer: Inducer | None = overrides.pop("inducer", None) or build_inducer(settings)
    store: MemoryStore | None = overrides.pop("store", None)
    index: SearchIndex | None = overrides.pop("index", None)
    keys: KeyStore | None = overrides.pop("keys", None)
    queue: WriteQueue | None = overrides.pop("queue", None)
    reranker: Reranker | None = overrides.pop("reranker", None) or build_reranker(settings)
    if overrides:
        raise TypeError(f"unknown overrides: {sorted(overrides)}")
    if settings.backend == "aws":
        store = store or build_dynamodb_store(settings, embedder, clock)
        index = index or build_opensearch_index(settings, embedder)
        queue = queue or build_write_queue(settings, clock)
        keys = keys or build_dynamodb_key_store(settings)
    elif store is None or index is None or keys is None:
        built_store, built_index, built_keys = (
            build_in_memory_backend(embedder, clock)
            if settings.backend == "memory"
            else build_sqlite_backend(settings, embedder, clock)
        )
        store, index, keys = store or built_store, index or built_index, keys or built_keys
    maintenance = index.maintenance()
    # Seconds of recent episodes recall reads from the store: only an index that lags the store needs it.
    freshness_seconds = settings.aws.freshness_window_seconds if maintenance is not None else 0
    floor = embedder.relevance_floor
    consolidator = ConsolidationService(store, embedder, clock, settings.consolidate, settings.write, inducer)
    return Services(
        settings=settings,
        store=store,
        index=index,
        embedder=embedder,
        clock=clock,
        working=WorkingMemoryService(store, clock, settings.working_ttl_seconds),
        writer=WriteService(store, index, embedder, clock, settings.write, queue=queue),
        recaller=RecallService(
            store,
            index,
            embedder,
            clock,
            settings.recall,
            floor,
            freshness_seconds=freshness_seconds,
            reranker=reranker,
        ),
        forgetter=ForgetService(store, consolidator),
        consolidator=consolidator,
        access=AccessService(keys, clock, admin_token=settings.api_token),
        index_maintenance=maintenance,
    )


def build_sqlite_backend(
    settings: Settings, embedder: Embedder, clock: Clock
) -> tuple[MemoryStore, SearchIndex, KeyStore]:
    """The embedded backend: store, index and API keys over one SQLite file in the data directory."""
    from rearview.adapters.sqlite import SqliteDatabase, SqliteKeyStore, SqliteMemoryStore, SqliteSearchIndex

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = SqliteDatabase.in_data_dir(settings.data_dir, embedder_name=embedder.name, dim=embedder.dim)
    return SqliteMemoryStore(db, clock=clock), SqliteSearchIndex(db), SqliteKeyStore(db)


def build_in_memory_backend(embedder: Embedder, clock: Clock) -> tuple[MemoryStore, SearchIndex, KeyStore]:
    """The ephemeral backend: store, index and API keys over one InMemoryData in this process."""
    from rearview.adapters.in_memory import InMemoryData, InMemoryKeyStore, InMemoryMemoryStore, InMemorySearchIndex

    data = InMemoryData()
    store = InMemoryMemoryStore(data, embedder_name=embedder.name, dim=embedder.dim, clock=clock)
    return store, InMemorySearchIndex(data), InMemoryKeyStore(data)


def build_dynamodb_key_store(settings: Settings) -> KeyStore:
    """The AWS backend's key store: `APIKEY#` items in the same table."""
    from rearview.adapters.dynamodb import DynamoDBKeyStore

    return DynamoDBKeyStore(settings.aws.table_name, settings=settings.aws)


def build_key_store(settings: Settings) -> KeyStore:
    """The API keys alone, for commands that manage keys without the rest of the services: the DynamoDB table's
    on the AWS backend, the data directory's SQLite file otherwise (the caller closes it)."""
    if settings.backend == "aws":
        return build_dynamodb_key_store(settings)
    from rearview.adapters.sqlite import SqliteKeyStore

    return SqliteKeyStore.in_data_dir(settings.data_dir)


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


def stream_change_decoder() -> Callable[[Mapping[str, Any]], IndexChange | None]:
    """What turns a record of the store's change stream (DynamoDB Streams) into an index change, or None for a
    record the index ignores."""
    from rearview.adapters.dynamodb import change_from_record

    return change_from_record


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


def build_opensearch_index(settings: Settings, embedder: Embedder) -> SearchIndex:
    """The AWS backend's index: OpenSearch k-NN at the configured endpoint (the client connects on first use)."""
    aws = settings.aws
    if not aws.opensearch_endpoint:
        raise ConfigurationError(
            "aws.opensearch_endpoint: required with backend aws (REARVIEW_AWS__OPENSEARCH_ENDPOINT)",
            field="aws.opensearch_endpoint",
        )
    from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex

    connection = OpenSearchConnection(
        aws.opensearch_endpoint,
        service=aws.opensearch_service,
        region=aws.region,
        timeout_seconds=aws.read_timeout_seconds,
        max_retries=max(aws.max_attempts - 1, 0),
    )
    return OpenSearchIndex(connection, aws.opensearch_index, embedder.dim, engine=aws.opensearch_engine)


def build_write_queue(settings: Settings, clock: Clock) -> WriteQueue | None:
    """The SQS write queue when its URL is configured (only the functions that accept writes are given it)."""
    if not settings.aws.write_queue_url:
        return None
    from rearview.adapters.sqs_write_queue import SqsWriteQueue

    return SqsWriteQueue(settings.aws.write_queue_url, settings=settings.aws, clock=clock)
