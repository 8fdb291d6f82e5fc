"""Typed settings, read from `REARVIEW_*` environment variables (and CLI options) and validated once at start-up.

The domain code never reads the environment; it receives the tuning sub-models it needs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rearview.errors import ConfigurationError


class WriteTuning(BaseModel):
    """How the write path scores, merges and supersedes. The measurements behind the defaults: bench/RESULTS.md."""

    # Below this importance an episode is skipped (low_importance): low, so only greetings and acknowledgements fall.
    importance_threshold: float = Field(0.2, ge=0.0, le=1.0)
    # Cosine at or above which a new memory is the same memory said again (merged, not inserted). This and the
    # other cosine thresholds are on the reference scale (MiniLM's); each embedder maps them onto its own
    # (`Embedder.scale`, measured by bench/calibrate.py): e5 merges at 0.983.
    dedup_threshold: float = Field(0.92, ge=0.5, le=1.0)
    # The confidence of a fact written without one: stated, not yet confirmed.
    default_fact_confidence: float = Field(0.8, ge=0.0, le=1.0)
    # An episode of a session is embedded with this many turns before it, kept as the `context` keyword search
    # matches: a reply is found by the question it answers. 0 embeds and indexes each memory alone.
    context_turns: int = Field(1, ge=0, le=5)
    # Which episodes embed their context with their own text: `all`, `replies` (only a turn that follows another
    # speaker's question: "yes, twice!" means what it answers) or `none`. `all`: the others lifted vector-only
    # search on short chat turns a little but cost the fused ranking more (bench/RESULTS.md, embed_context).
    embed_context: Literal["all", "replies", "none"] = "all"


class RecallTuning(BaseModel):
    """How recall finds, fuses and ranks. The measurements behind the defaults, with the command that reproduces
    each, are in bench/RESULTS.md under the setting's name."""

    # Vector weight for a query of average length; short queries lean further on vectors (see service.recall.fusion).
    vector_weight: float = Field(0.5, ge=0.0, le=1.0)
    # Recency decay: at this age the decaying part of an episode's score is halved ...
    episodic_half_life_days: float = Field(180.0, gt=0)
    # ... and of a fact's: facts age slower than events.
    semantic_half_life_days: float = Field(365.0, gt=0)
    # Share of the score that never decays, so an old but exact memory still beats a recent vague one.
    recency_floor: float = Field(0.9, ge=0.0, le=1.0)
    # With a reranker (`Settings.reranker`), its order and ours of the best `rerank_candidates` are fused, each rank
    # counting weight / (rerank_rrf_k + rank): ours keeps what it cannot see (dates, recency, the speaker).
    rerank_candidates: int = Field(50, ge=0, le=1000)
    # The reranker's share of that fusion (1: its order alone); chosen on a simulated reranker until a real one runs.
    rerank_weight: float = Field(0.5, ge=0.0, le=1.0)
    # Near-duplicates among results at this cosine (on the reference scale, see write.dedup_threshold) are
    # collapsed into the best one: one answer, said once.
    collapse_threshold: float = Field(0.92, ge=0.5, le=1.0)
    # The token budget of a recall that names none: room for a prompt's worth of memories.
    default_token_budget: int = Field(2000, ge=1)
    # The margin by meaning (a memory's cosine above the query's background, service/recall/background.py) a
    # result must reach unless its words or a name speak for it; below it for every result, no_relevant_memory.
    # None: the embedder's own (`Embedder.scale.relevance_margin`, bench/calibrate.py).
    min_relevance: float | None = Field(None, ge=0.0, le=1.0)
    # A semantic memory nothing confirms halves its confidence every `confidence_half_life_days`; a stale one (an
    # old habit under a current one) is returned marked, at a fraction of its score.
    confidence_half_life_days: float = Field(180.0, gt=0)
    # A memory is relevant by its words when it holds this share of the query's terms, each weighted by how rare
    # it is in the namespace (BM25's IDF over its sampled episodes: "hello", held by a fifth of a chat, weighs
    # little, a name or a place held by one memory in full).
    keyword_relevance: float = Field(0.5, ge=0.0, le=1.0)
    # A "last time" query ranks the most recent of the relevant memories first, and an exclusion that refers back
    # ("the previous approach") leaves out the most recent of them: relevant is at least this share of the best
    # candidate's relevance strength (see the relevance stage). Lower lets recency lift weaker matches; 1 keeps only
    # the best's ties. With the hashing embedder, for "(上次)部署账单服务的时候出了什么问题" the latest billing deploy
    # has 0.59 of the strength of an older one that shares more of the question's words, and for "last time I
    # deployed the billing service" a later deploy of another service 0.47 (tests/unit/test_recall_forms.py).
    latest_match_share: float = Field(0.5, ge=0.0, le=1.0)


class IndexTuning(BaseModel):
    """The embedded backend's search index: vector caches in memory and an HNSW graph for large namespaces. The
    measurements behind the defaults: bench/RESULTS.md."""

    # Bytes of vector caches (float16, their columns and graphs) a process keeps, least recently used namespaces
    # leaving first: 1.6 GB holds 1M memories of 512 dimensions with every cache loaded, under 2 GiB in all.
    cache_bytes: int = Field(1_600_000_000, ge=1_000_000)
    # A namespace's layer with at least this many vectors is searched through an HNSW graph, exactly below: a
    # batch's exact duplicate check grows with the namespace, the graph's with its logarithm. 0 turns it off.
    ann_threshold: int = Field(20_000, ge=0)


class ConsolidateTuning(BaseModel):
    # A run reads the episodes of the last `lookback_days` as evidence (new ones and those seen before): a preference
    # asked twice last month and once today is asked three times.
    lookback_days: float = Field(180.0, gt=0)
    # Event types never learned from; when `allow_event_types` is not empty, the only ones learned from.
    deny_event_types: list[str] = Field(default_factory=lambda: ["chitchat", "small_talk", "greeting", "system"])
    allow_event_types: list[str] = Field(default_factory=list)
    # Change points: one new turn in which the user says that a learned memory changed supersedes it, and the turns
    # after it stop confirming it (`hindsight/change_points.py`). Off by default: on the blind suite it catches one
    # more free-text contradiction and gets one changed habit fewer right (bench/RESULTS.md, "Change points").
    change_points: bool = False


class HindsightSettings(BaseModel):
    """When consolidation runs by itself, and what a run may spend."""

    # Count: a namespace that gained this many episodes no run has seen is consolidated (0: off).
    count_trigger: int = Field(50, ge=0)
    # Failure streak: this many failures in a row of one tool, task or entity are consolidated at once (0: off).
    failure_streak: int = Field(3, ge=0)
    # Session end: clearing a session's working memory, or ending it, consolidates its namespace.
    session_end: bool = True
    # Schedule: every namespace with unconsolidated episodes, this often (0: never).
    schedule_hours: float = Field(24.0, ge=0)
    # The local server runs the triggers' jobs in a background worker; off, nothing runs until asked.
    worker: bool = True
    # Caps per run and per namespace per UTC day: clusters induced and model tokens; what is left waits.
    run_max_clusters: int = Field(50, ge=1, le=1000)
    run_max_tokens: int = Field(50_000, ge=1)
    daily_max_clusters: int = Field(500, ge=1)
    daily_max_tokens: int = Field(500_000, ge=1)


class AwsSettings(BaseModel):
    """Where the AWS backend's resources are. Filled from the Lambda environment that the CDK app sets."""

    # The region of every AWS client; unset: the environment's (AWS_REGION in Lambda).
    region: str | None = None
    # Single DynamoDB table: working memory, episodes, facts, API keys, namespace counters.
    table_name: str = "rearview"
    # The gateway authorizer's: a Secrets Manager secret whose value CloudFront sends as `x-rearview-origin` (the WAF
    # in front, rearview:wafOriginOnly). Set: requests without it, which skipped CloudFront and its WAF, are refused.
    origin_secret_arn: str | None = None
    # Standard SQS queue of the asynchronous write path (its redrive policy names the dead-letter queue).
    write_queue_url: str | None = None
    # The write queue's dead-letter queue and its redrive policy's receive count: on a message's last receive the
    # worker moves it there itself, with the reason, which SQS would not record.
    dead_letter_queue_url: str | None = None
    max_receive_count: int = Field(5, ge=1, le=1000)
    # FIFO SQS queue of consolidation jobs (one message group per namespace), its dead-letter queue, and the
    # receive count of its redrive policy. Functions that detect triggers (the write worker, the stream handler,
    # the schedule) are given the queue; the consolidation worker takes its jobs.
    consolidation_queue_url: str | None = None
    consolidation_dead_letter_queue_url: str | None = None
    consolidation_max_receive_count: int = Field(5, ge=1, le=1000)
    # The consolidation worker stops starting clusters this many seconds before its Lambda timeout; what is left
    # stays unconsolidated for the next job.
    consolidation_safety_seconds: float = Field(30.0, ge=0)
    # The search index: `opensearch` (the endpoint below); `embedded`, the SQLite index `make run` searches, in
    # `data_dir`, kept in step by index sync as OpenSearch is (`rearview emulate` without an OpenSearch node); or
    # `store`, no index: each search reads the namespace's newest `search_fallback_scan` episodes and its facts from
    # the table (a deployment without a cluster, `rearview:search=table`, for small namespaces).
    search: Literal["opensearch", "embedded", "store"] = "opensearch"
    # OpenSearch endpoint (https://...); `aoss` for OpenSearch Serverless, `es` for a managed domain.
    opensearch_endpoint: str | None = None
    opensearch_service: Literal["aoss", "es"] = "aoss"
    # The one index of every namespace's memories (a namespace is a filter, not an index).
    opensearch_index: str = "rearview-memories"
    # The k-NN engine of an index Rearview creates: faiss, as AWS runs it; lucene on a node without faiss's native
    # libraries (one assembled from Maven for the tests). Both score alike.
    opensearch_engine: Literal["faiss", "lucene"] = "faiss"
    # The embedding model of `embedder` `bedrock`: Titan v2, multilingual and sized by `bedrock_embedding_dim`.
    bedrock_embedding_model: str = "amazon.titan-embed-text-v2:0"
    # Titan v2 accepts 256, 512 or 1024: 512 keeps most of 1024's quality at half the index size.
    bedrock_embedding_dim: int = 512
    # The chat model consolidation states memories with when `inducer` is `bedrock` (Converse API).
    bedrock_induction_model: str = "anthropic.claude-3-5-haiku-20241022-v1:0"
    # The rerank model recall uses when `reranker` is `bedrock`: a foundation model id or a full ARN. Amazon Rerank
    # 1.0 is offered in fewer regions than Titan; `cohere.rerank-v3-5:0` also needs a Marketplace subscription.
    bedrock_rerank_model: str = "amazon.rerank-v1:0"
    # Recall also reads the namespace's episodes written this recently from DynamoDB (read-your-writes while the
    # index catches up through the stream).
    freshness_window_seconds: int = Field(300, ge=0)
    # When the search index cannot answer (missing, unreachable, throttling), recall and the write path's duplicate
    # check search the store instead: the namespace's newest this many episodes and as many active facts. 0: no
    # fallback (a search then fails with 503).
    search_fallback_scan: int = Field(500, ge=0, le=10_000)
    # After the index fails, it is left alone this long (searches go to the store) before it is asked again: an
    # unreachable cluster costs one timeout, not one per request.
    search_fallback_seconds: float = Field(30.0, ge=0)

    @field_validator("bedrock_embedding_dim")
    @classmethod
    def _titan_dimension(cls, value: int) -> int:
        if value not in (256, 512, 1024):
            raise ValueError(f"bedrock_embedding_dim: Titan Text Embeddings v2 takes 256, 512 or 1024 (got {value})")
        return value


class OpenAISettings(BaseModel):
    """The OpenAI-compatible chat endpoint consolidation states memories with when `inducer` is `openai`: Ollama
    (the defaults), vLLM, LM Studio, llama.cpp's server or OpenAI itself."""

    # The server's OpenAI-compatible base URL: Ollama's on this machine by default.
    base_url: str = "http://127.0.0.1:11434/v1"
    # A small instruction-tuned model that runs on a laptop and answers in JSON reliably enough.
    model: str = "qwen2.5:7b-instruct"
    # Local servers accept any key; OpenAI needs a real one (REARVIEW_OPENAI__API_KEY).
    api_key: str = "ollama"
    # Generous: a local model on a CPU may take tens of seconds for one answer. A cluster that takes longer is
    # stated by the rules instead.
    timeout_seconds: float = Field(60.0, gt=0, le=600)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"openai.base_url: expected http(s)://host[:port]/v1 (got {value[:200]!r})", field="openai.base_url"
            )
        return value.rstrip("/")


class ServerSettings(BaseModel):
    """The local server's connections and what a browser may do with it (`rearview serve`)."""

    # Host headers accepted besides the loopback names and the bound address (DNS rebinding: a page on another site
    # that re-points its own name at 127.0.0.1 sends that name). `*` accepts any, for a proxy that checks Host itself.
    allowed_hosts: list[str] = Field(default_factory=list)
    # Web origins (`https://app.example`) whose pages may call the API from a browser; each gets CORS headers. None
    # by default: a request carrying any other Origin (a page of another site) is refused. `*` is refused: requests
    # carry credentials (an API key), and a wildcard with credentials lets every site in.
    allowed_origins: list[str] = Field(default_factory=list)
    # A connection must send its request line and headers within this many seconds (a slow sender holds a slot).
    header_timeout_seconds: float = Field(10.0, gt=0, le=600)
    # ... and its body within this many; a kept-alive connection idle this long between requests is closed too.
    idle_timeout_seconds: float = Field(30.0, gt=0, le=3600)
    # Connections served at once; one more is answered 503 with Retry-After at once rather than queued unbounded.
    # Enough for an agent, its MCP client and a browser tab, each with a few connections kept alive.
    max_connections: int = Field(32, ge=1, le=4096)
    # The Retry-After of that 503, in seconds.
    retry_after_seconds: int = Field(1, ge=1, le=3600)

    @field_validator("allowed_origins")
    @classmethod
    def _no_wildcard_origin(cls, value: list[str]) -> list[str]:
        for origin in value:
            if origin.strip() in ("*", "null") or not origin.startswith(("http://", "https://")):
                raise ConfigurationError(
                    f"server.allowed_origins: list origins as scheme://host[:port], never '*' or 'null' "
                    f"(got {origin[:100]!r}): requests carry credentials",
                    field="server.allowed_origins",
                )
        return [origin.rstrip("/").lower() for origin in value]


class RetentionSettings(BaseModel):
    """How often the local server enforces the namespaces' retention policies and purges expired working memory and
    expired memories. On AWS the forget function sweeps hourly on an EventBridge rule (DynamoDB's TTL expires
    working memory, and is the backstop for memories)."""

    # The retention sweep (each namespace's policy: max age, archive, keep often-recalled) runs this often (0: off).
    sweep_minutes: float = Field(60.0, ge=0)
    # Expired working-memory rows, and memories whose expiry came (their `ttl_seconds` or `expires_at`), are deleted
    # from disk this often (reads skip them before that; 0: off).
    working_purge_minutes: float = Field(10.0, ge=0)


class ThrottleSettings(BaseModel):
    """Per-key throttling (rearview.domain.quota): every authenticated request counts against its API key's limit
    per UTC minute, in counters shared by every process (SQLite's file, the DynamoDB table); past it, 429 with
    Retry-After. A key's own `requests_per_minute` (set at creation or later) overrides this default."""

    # The default limit of a key that states none. 0: unlimited (say so explicitly). 1200 (20 a second, sustained
    # for a minute) is far above an agent's pace, a few calls per turn, and well below the stage's throttle (100 a
    # second across every key), so one key cannot take the whole stage.
    requests_per_minute: int = Field(1200, ge=0, le=1_000_000)


class Settings(BaseSettings):
    """Every setting, with its environment variable `REARVIEW_<NAME>` (nested: `REARVIEW_RECALL__VECTOR_WEIGHT`)."""

    model_config = SettingsConfigDict(env_prefix="REARVIEW_", env_nested_delimiter="__", extra="ignore")

    # `sqlite` embedded on disk; `aws` in the Lambda functions (DynamoDB, SQS, OpenSearch); `memory` for tests and
    # throwaway runs (nothing persists).
    backend: Literal["sqlite", "aws", "memory"] = "sqlite"
    # Where the SQLite database lives.
    data_dir: Path = Path(".rearview")
    # The local server's address: loopback, as a non-loopback bind requires credentials.
    host: str = "127.0.0.1"
    # The local server's port.
    port: int = Field(8765, ge=1, le=65535)
    # `e5` (offline multilingual-e5-small, PyPI: Chinese, English and ~100 languages, and across them), `minilm`
    # (offline all-MiniLM-L6-v2, English only, PyPI), `bge-en` / `bge-zh` (offline BGE small, one language, from
    # Maven Central on first use: needs Java and Maven), `hashing` (no model: tests, demos), `bedrock` (Titan). e5
    # by default: as good as MiniLM on English recall and the only one that reads Chinese and across languages
    # (bench/RESULTS.md, "Recall that understands, round 2"). A store keeps the embedder it was written with:
    # another needs `rearview reindex --embedder`.
    embedder: Literal["minilm", "e5", "bge-en", "bge-zh", "hashing", "bedrock"] = "e5"
    # A model that re-orders recall's best candidates, reading the query and each memory together: `bedrock`
    # (aws.bedrock_rerank_model) or `onnx` (your cross-encoder file). `none` by default because no rerank model
    # ships offline; the one offline stand-in, a second embedder's opinion, lowered LoCoMo R@10 (bench/RESULTS.md).
    reranker: Literal["none", "bedrock", "onnx"] = "none"
    # The `onnx` reranker's cross-encoder file (none is bundled: no package on the registries ships one).
    rerank_model_path: Path | None = None
    # Its tokenizer.json; unset: MiniLM's BERT uncased vocabulary, which the ms-marco MiniLM cross-encoders share.
    rerank_tokenizer_path: Path | None = None
    # The hashing embedder's dimension: collisions, hence noise, shrink as 1/sqrt(dim).
    hashing_dim: int = Field(512, ge=32, le=4096)
    # `rules` is deterministic and offline; `openai` and `bedrock` state memories with a model, the rules where it
    # fails; `llama_cpp` with a GGUF model file in this process (the `local-llm` extra).
    inducer: Literal["rules", "openai", "bedrock", "llama_cpp"] = "rules"
    # The GGUF file `llama_cpp` runs: any chat model the user has (none is fetched).
    inducer_model_path: Path | None = None
    # A static admin bearer token over every namespace, to create the first API keys with; keys are the credential.
    api_token: str | None = None
    # The namespace of MCP calls made without a key (stdio, the open local server).
    default_namespace: str = "default"
    # Working memory's TTL when a write names none: a task's scratch state outlives a turn, not a day.
    working_ttl_seconds: int = Field(7200, ge=1)
    # The log level of the local server and the functions.
    log_level: str = "INFO"
    # At the end of the first `build()` in a process, freeze the objects then alive (gc.freeze): full collections no
    # longer walk the start-up heap (~45 ms each, which a request or a bulk load waited for; see
    # rearview/collector.py). Off for a host that embeds Rearview and wants its own heap left as it is.
    freeze_start_up_heap: bool = True

    write: WriteTuning = WriteTuning()
    recall: RecallTuning = RecallTuning()
    consolidate: ConsolidateTuning = ConsolidateTuning()
    hindsight: HindsightSettings = HindsightSettings()
    index: IndexTuning = IndexTuning()
    aws: AwsSettings = AwsSettings()
    openai: OpenAISettings = OpenAISettings()
    server: ServerSettings = ServerSettings()
    retention: RetentionSettings = RetentionSettings()
    throttle: ThrottleSettings = ThrottleSettings()


# Variables that were settings and are no longer: settings that became constants, and features removed with their
# code (docs/configuration.md lists each and what became of it; docs/settings_reference.py checks the two lists
# agree). Settings ignore variables they do not know, so setting one of these does nothing: `from_environment` says
# so.
RETIRED_VARIABLES: frozenset[str] = frozenset(
    {
        "REARVIEW_AWS__CONNECT_TIMEOUT_SECONDS",
        "REARVIEW_AWS__MAX_ATTEMPTS",
        "REARVIEW_AWS__READ_TIMEOUT_SECONDS",
        "REARVIEW_CONSOLIDATE__FACT_MIN_OCCURRENCES",
        "REARVIEW_CONSOLIDATE__HABIT_MIN_DAYS",
        "REARVIEW_CONSOLIDATE__HABIT_MIN_OCCURRENCES",
        "REARVIEW_CONSOLIDATE__LESSON_MIN_FAILURES",
        "REARVIEW_CONSOLIDATE__LOOKALIKE_OVERLAP",
        "REARVIEW_CONSOLIDATE__MAX_EPISODES",
        "REARVIEW_CONSOLIDATE__MIN_SPREAD",
        "REARVIEW_CONSOLIDATE__PREFERENCE_MIN_OCCURRENCES",
        "REARVIEW_CONSOLIDATE__PREFERENCE_REPEATS_ALONE",
        "REARVIEW_CONSOLIDATE__RECURRING_FAILURE_MIN",
        "REARVIEW_HINDSIGHT__BRIEF_MIN_CONFIDENCE",
        "REARVIEW_HINDSIGHT__FEEDBACK_USEFUL_STEP",
        "REARVIEW_HINDSIGHT__FEEDBACK_WRONG_FACTOR",
        "REARVIEW_HINDSIGHT__LEASE_SECONDS",
        "REARVIEW_HINDSIGHT__WORKER_QUEUE",
        "REARVIEW_INDEX__ANN_BACKGROUND",
        "REARVIEW_INDEX__ANN_BULK_QUIET_SECONDS",
        "REARVIEW_INDEX__ANN_CONNECTIVITY",
        "REARVIEW_INDEX__ANN_EXPANSION_ADD",
        "REARVIEW_INDEX__ANN_EXPANSION_DUPLICATES",
        "REARVIEW_INDEX__ANN_EXPANSION_SEARCH",
        "REARVIEW_INDEX__ANN_EXPANSION_WRITES",
        "REARVIEW_INDEX__OWN_FTS_EPISODES",
        "REARVIEW_OPENAI__MAX_RETRIES",
        "REARVIEW_OPENAI__MAX_TOKENS",
        "REARVIEW_RECALL__ACCESS_BOOST",
        "REARVIEW_RECALL__CANDIDATES_PER_LIST",
        "REARVIEW_RECALL__COMMON_ENTITY_MIN_EPISODES",
        "REARVIEW_RECALL__COMMON_ENTITY_SHARE",
        "REARVIEW_RECALL__CONTEXT_WEIGHT",
        "REARVIEW_RECALL__ENTITY_BOOST",
        "REARVIEW_RECALL__FEEDBACK_DOCS",
        "REARVIEW_RECALL__FEEDBACK_POOL",
        "REARVIEW_RECALL__FEEDBACK_WEIGHT",
        "REARVIEW_RECALL__FUSION",
        "REARVIEW_RECALL__IMPORTANCE_BOOST",
        "REARVIEW_RECALL__KEYWORD_COMMON_SHARE",
        "REARVIEW_RECALL__LENGTH_PRIOR",
        "REARVIEW_RECALL__LENGTH_REFERENCE_WORDS",
        "REARVIEW_RECALL__LESSON_PLACE",
        "REARVIEW_RECALL__NEIGHBOUR_FACTOR",
        "REARVIEW_RECALL__NEIGHBOUR_HITS",
        "REARVIEW_RECALL__QUESTION_FACTOR",
        "REARVIEW_RECALL__REPLY_FACTOR",
        "REARVIEW_RECALL__RERANK_RRF_K",
        "REARVIEW_RECALL__RRF_K",
        "REARVIEW_RECALL__SESSION_BOOST",
        "REARVIEW_RECALL__SHORT_TURN_VECTOR_WEIGHT",
        "REARVIEW_RECALL__STALE_BELOW",
        "REARVIEW_RECALL__STALE_FACTOR",
        "REARVIEW_RECALL__STRUCTURE_GATES",
        "REARVIEW_RECALL__STRUCTURE_MAX_SESSION_TURNS",
        "REARVIEW_RECALL__STRUCTURE_MIN_EPISODES",
        "REARVIEW_RECALL__STRUCTURE_MIN_REPLY_SHARE",
        "REARVIEW_RECALL__STRUCTURE_MIN_TURN_WORDS",
        "REARVIEW_RECALL__STRUCTURE_SAMPLE",
        "REARVIEW_RECALL__TIME_ANSWER_BOOST",
        "REARVIEW_RECALL__TIME_EXPRESSION_BOOST",
        "REARVIEW_RECALL__TYPO_MIN_LENGTH",
        "REARVIEW_WRITE__EMBED_PLAIN_CHAT",
        "REARVIEW_WRITE__EMBED_SPEAKER_LABELS",
    }
)


def retired_variables_set(environ: Mapping[str, str]) -> list[str]:
    """The retired variables set in `environ` (names compared case-insensitively, as settings read them)."""
    return sorted(name for name in environ if name.upper() in RETIRED_VARIABLES)


def from_environment() -> Settings:
    """The settings a process reads at its start, warning about each retired variable that is set."""
    settings = Settings()
    for name in retired_variables_set(os.environ):
        logging.getLogger(__name__).warning(
            "%s is set but does nothing: it is no longer a setting (docs/configuration.md says what became of it)", name
        )
    return settings
