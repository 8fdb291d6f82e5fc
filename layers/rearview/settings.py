"""Typed settings, read from `REARVIEW_*` environment variables (and CLI options) and validated once at start-up.

The domain code never reads the environment; it receives the tuning sub-models it needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rearview.errors import ConfigurationError


class WriteTuning(BaseModel):
    # Below this importance an episode is not stored (status skipped, reason low_importance). Low on purpose: only
    # greetings and acknowledgements fall under it; anything with a name, number, preference or plan scores higher.
    importance_threshold: float = Field(0.2, ge=0.0, le=1.0)
    # Cosine at or above which a new memory is the same memory said again (merged, not inserted).
    dedup_threshold: float = Field(0.92, ge=0.5, le=1.0)
    # Cosine above which a new fact with the opposite polarity of an active fact contradicts (and supersedes) it.
    contradiction_threshold: float = Field(0.8, ge=0.5, le=1.0)
    default_fact_confidence: float = Field(0.8, ge=0.0, le=1.0)
    # Contextual indexing: an episode with a session_id is embedded with this many episodes before it in its
    # session, and keeps their text as its `context`, which keyword search matches at `recall.context_weight`.
    # 0 embeds and indexes each memory alone.
    context_turns: int = Field(1, ge=0, le=5)


class RecallTuning(BaseModel):
    # "weighted" (min-max normalised scores, weighted sum) keeps how much better the best BM25 and cosine hits are;
    # RRF keeps only ranks. On LoCoMo weighted scores R@10 0.648 against RRF's 0.570 (bench notes, issue 3).
    fusion: Literal["rrf", "weighted"] = "weighted"
    # RRF's k: 60 is the value of Cormack et al. and of OpenSearch's hybrid search; larger flattens the ranks.
    rrf_k: int = Field(60, ge=1, le=1000)
    # Keyword search matches an episode's `context` (the turn before it in its session, see write.context_turns)
    # as well as its own text, with this weight on the context's BM25 (a field boost on OpenSearch, a column
    # weight in SQLite's FTS5): "I've had them for 3 years" is found by "how long has Nate had his turtles?"
    # through the question it answers. 0 matches the memory's own text only. On LoCoMo, R@10 / nDCG@10 on every
    # 3rd question and on the others: 0 0.806 / 0.640, 0.799 / 0.615; 0.3 0.818 / 0.651, 0.813 / 0.630;
    # 0.45 0.818 / 0.652, 0.815 / 0.635; the context appended to the text itself (weight 1, one field) 0.819 /
    # 0.638, 0.815 / 0.623 (multi-hop -0.04 on the others). Full run: R@10 0.804 -> 0.817, nDCG@10 0.628 -> 0.642.
    context_weight: float = Field(0.4, ge=0.0, le=2.0)
    # How many candidates each primitive search returns before fusion.
    candidates_per_list: int = Field(60, ge=5, le=1000)
    # Vector weight for a query of average length; short queries lean further on vectors (see service.recall.fusion).
    vector_weight: float = Field(0.5, ge=0.0, le=1.0)
    # Recency decay: the score of a memory this old is multiplied by 0.5 on the decaying part.
    episodic_half_life_days: float = Field(180.0, gt=0)
    semantic_half_life_days: float = Field(365.0, gt=0)
    # Share of the score that never decays, so that an old but exact memory still wins over a recent vague one.
    recency_floor: float = Field(0.9, ge=0.0, le=1.0)
    importance_boost: float = Field(0.1, ge=0.0, le=1.0)
    # Pseudo-relevance feedback: the query vector moves towards the mean of the first pass's best
    # `feedback_docs` results by this weight, and the vector search runs again. 0 turns it off. On LoCoMo, with
    # common names left out of the vector query: 1.0 R@10 0.786 / 0.775 (every 3rd question / the others), 0.5
    # 0.787 / 0.780, 1.5 0.779 / -.
    feedback_weight: float = Field(0.5, ge=0.0, le=2.0)
    feedback_docs: int = Field(3, ge=1, le=20)
    # The second vector search re-scores only the first one's best `feedback_pool` memories by cosine (where the
    # index scans locally, as the embedded backend does) instead of the whole namespace again: at 100k episodes
    # in a namespace the second exact scan took 15 ms of a recall's 60 (p50); re-scoring 1,000 takes 2.6 ms, and
    # recall p50 / p95 went from 58-61 / 71-76 ms to 48.5 / 63 ms (bench/recall_latency.py). A namespace no larger
    # than the pool, such as a LoCoMo conversation, gets the same results as a second pass over all of it.
    feedback_pool: int = Field(1000, ge=1, le=100_000)
    # Session neighbours: the turns around each of the best `neighbour_hits` episodes join the ranking at
    # `neighbour_factor` of that episode's score; the turn right after a hit that asks a question (its reply) at
    # `reply_factor`, since the answer to a question is the reply to the turn that asked it. 0 hits turns it off.
    # On LoCoMo (every 3rd question) 0.7 for both: R@5 0.626, R@10 0.732; reply 0.9, others 0.6: R@5 0.663, R@10 0.731.
    neighbour_hits: int = Field(10, ge=0, le=50)
    neighbour_factor: float = Field(0.6, ge=0.0, le=1.0)
    reply_factor: float = Field(0.9, ge=0.0, le=1.0)
    # A memory that asks a question (its last sentence ends with "?") is multiplied by this once the neighbours
    # have joined, so that the reply a question lifted ranks above it; 1 turns it off. Questions are half as often
    # the evidence as other turns on LoCoMo (12% against 25%). R@10 / nDCG@10 on every 3rd question, the others:
    # 1.0 0.787 / 0.594, 0.780 / 0.590; 0.7 0.801 / 0.619, 0.789 / 0.609; 0.85 0.789; 0.6 0.799; 0.5 0.791.
    question_factor: float = Field(0.7, ge=0.0, le=1.0)
    # A query that asks when ("When did ...?", "What year ...", "How long ...") multiplies the memories that say
    # when or for how long ("last week", "two years ago", "in May", "for 3 years") by 1 + this, after neighbours
    # joined: the turn that dates an event is the answer, the turns that only name it are not. 0 turns it off.
    # On LoCoMo, R@10 (temporal R@10) on every 3rd question / the others: 0 0.795 (0.765) / 0.789 (0.767);
    # 0.2 0.797 (0.774); 0.4 0.798 (0.783) / 0.793 (0.793); 0.7 0.798 (0.783).
    time_answer_boost: float = Field(0.4, ge=0.0, le=2.0)
    # Length prior (pivoted length normalisation, Singhal et al. 1996): BM25 discounts long memories more than their
    # odds of holding the answer warrant. A memory of n words is multiplied by
    # (min(max(n, 5), 2 * length_reference_words) / length_reference_words) ** length_prior; 0 turns it off.
    # On LoCoMo (with the reply factor): 0 R@10 0.731, 0.2 0.745, 0.3 0.752, 0.5 0.750.
    length_prior: float = Field(0.3, ge=0.0, le=1.0)
    length_reference_words: int = Field(25, ge=1, le=10_000)
    # Names of the entities that at least `common_entity_share` of a namespace's episodes name (the user of a
    # personal namespace, the speakers of a conversation) are left out of the text embedded for vector search: in
    # a small embedding model they pull the query towards everything said by or to that person rather than towards
    # the topic. Keyword search keeps them (BM25 weighs a term by its rarity). Only in namespaces of at least
    # `common_entity_min_episodes` episodes; 0 turns it off. On LoCoMo (every 3rd question) R@10 0.748 -> 0.786.
    common_entity_share: float = Field(0.2, ge=0.0, le=1.0)
    common_entity_min_episodes: int = Field(20, ge=1)
    # A time expression in a query that also names a topic ("camping in June") boosts memories in its range by
    # 1 + this, leaving the others as candidates; 0 makes it a filter. A query about the range itself ("what
    # happened yesterday?") always filters. On LoCoMo: filter R@10 0.715, boost 1.0 0.726, 2.0 0.731.
    time_expression_boost: float = Field(2.0, ge=0.0, le=5.0)
    # A memory whose entities (e.g. its speaker) the query names is multiplied by 1 + this, once the neighbours
    # joined (so the reply to a hit keeps its share of the hit's unboosted score): what the person asked about said
    # ranks above what was said to them. When a LoCoMo question names one speaker, 96% of its evidence turns are
    # that speaker's (categories 1-4; 24% in the adversarial one, which swaps the names). R@10 on every 3rd question
    # / the others: 0 0.798 / 0.793; 0.15 0.804 / 0.800; 0.2 0.806 / 0.799 (multi-hop +0.035 / +0.024, adversarial
    # +0.006 / -0.009); 0.25 0.808 / 0.795. Applied before the neighbours joined (as until now) 0.2 scored 0.787.
    entity_boost: float = Field(0.2, ge=0.0, le=2.0)
    # A candidate's session lifts it by up to this share, by the session's summed fused score (see ranking).
    session_boost: float = Field(0.0, ge=0.0, le=2.0)
    access_boost: float = Field(0.05, ge=0.0, le=1.0)
    # With a reranker configured (`Settings.reranker`), the best `rerank_candidates` after ranking are re-ordered
    # by fusing two ranks: ours, and the reranker's, which reads the query and the memory together. Each counts
    # (weight) / (rerank_rrf_k + rank): `rerank_weight` the reranker's, 1 - it ours; 1 is the reranker's order alone.
    # Ours keeps what the reranker does not see (dates, recency, the named speaker). 0 candidates turns it off.
    # Why the best 50: an oracle that orders recall's own best 25 / 50 / 100 on LoCoMo reaches R@10 0.881 / 0.919 /
    # 0.951 (recall as is: 0.814), multi-hop 0.665 / 0.763 / 0.856 (0.495), and only candidates beyond the 25th can
    # lift R@25; Bedrock bills a rerank query per 100 documents, and latency grows with the documents sent: a
    # local cross-encoder of MiniLM-L6's size costs about 0.6 s for 50 (0.33 s for 25) on 2 cores, as measured by
    # running that graph (the MiniLM embedder) over 50 question + turn pairs, 2 threads.
    # The weight 0.5: no rerank model runs here, so it was chosen on a simulated one whose scores separate LoCoMo's
    # evidence from the other candidates with AUC 0.8 / 0.9 (independent noise): over the best 50, weight 0.5 gives
    # R@10 0.838 / 0.879 and R@25 0.905 / 0.914, weight 1 (its order alone) 0.579 / 0.759 and 0.807 / 0.881. To be
    # measured again with a real model (bench/locomo.py --reranker bedrock).
    rerank_candidates: int = Field(50, ge=0, le=1000)
    rerank_weight: float = Field(0.5, ge=0.0, le=1.0)
    rerank_rrf_k: int = Field(10, ge=1, le=1000)
    # Near-duplicates among results at this cosine are collapsed into the best one.
    collapse_threshold: float = Field(0.92, ge=0.5, le=1.0)
    default_token_budget: int = Field(2000, ge=1)
    # Below this relevance for the best candidate, recall answers no_relevant_memory. None: the embedder's default.
    min_relevance: float | None = Field(None, ge=0.0, le=1.0)
    # A semantic memory nothing confirms loses confidence: it halves every `confidence_half_life_days` since it was
    # last confirmed. Below `stale_below` the memory is stale: recall still returns it, marked, at `stale_factor` of
    # its score (an old habit ranks under what is current).
    confidence_half_life_days: float = Field(180.0, gt=0)
    stale_below: float = Field(0.3, ge=0.0, le=1.0)
    stale_factor: float = Field(0.5, ge=0.0, le=1.0)
    # The relevance a memory holding every query term counts as against that floor (cosine gives the rest of it).
    keyword_relevance: float = Field(0.6, ge=0.0, le=1.0)
    # A "last time" query ranks the most recent of the relevant memories first, and an exclusion that refers back
    # ("the previous approach") leaves out the most recent of them: relevant is at least this share of the best
    # candidate's relevance (the measure above). Lower lets recency lift weaker matches; 1 keeps only the best's ties.
    # With the hashing embedder, for "(上次)部署账单服务的时候出了什么问题" the latest billing deploy scores 0.68 of an
    # older one that shares more of the question's words, and for "last time I deployed the billing service" a later
    # deploy of another service scores 0.56 (tests/unit/test_recall_forms.py).
    latest_match_share: float = Field(0.6, ge=0.0, le=1.0)


class ConsolidateTuning(BaseModel):
    # A run reads the episodes of the last `lookback_days` as evidence (new ones and those seen before), the newest
    # `max_episodes` at most: a preference asked twice last month and once today is asked three times.
    lookback_days: float = Field(180.0, gt=0)
    max_episodes: int = Field(5000, ge=10, le=100_000)
    # A preference needs this many occurrences in at least `min_spread` sessions or days, or
    # `preference_repeats_alone` occurrences anywhere (asked five times in one chat is a preference too).
    preference_min_occurrences: int = Field(3, ge=1)
    preference_repeats_alone: int = Field(5, ge=1)
    # A fact needs this many mentions in at least `min_spread` sessions or days: stable, not said in passing.
    fact_min_occurrences: int = Field(2, ge=1)
    min_spread: int = Field(2, ge=1)
    # A habit (an activity done again and again) needs this many occurrences on as many distinct days.
    habit_min_occurrences: int = Field(3, ge=1)
    habit_min_days: int = Field(3, ge=1)
    # A lesson needs this many failures before the success that ended them, or `recurring_failure_min` failures
    # in a row sharing an error: one failure then a success is a transient error, not a lesson.
    lesson_min_failures: int = Field(2, ge=1)
    recurring_failure_min: int = Field(3, ge=2)
    # Statements no rule recognises join one group when they share this share of the shorter one's content words
    # (two at least): one request said at two lengths.
    lookalike_overlap: float = Field(0.6, ge=0.1, le=1.0)
    # Event types never learned from; when `allow_event_types` is not empty, the only ones learned from.
    deny_event_types: list[str] = Field(default_factory=lambda: ["chitchat", "small_talk", "greeting", "system"])
    allow_event_types: list[str] = Field(default_factory=list)


class AwsSettings(BaseModel):
    """Where the AWS backend's resources are. Filled from the Lambda environment that the CDK app sets."""

    region: str | None = None
    # Single DynamoDB table: working memory, episodes, facts, API keys, namespace counters.
    table_name: str = "rearview"
    # Standard SQS queue of the asynchronous write path (its redrive policy names the dead-letter queue).
    write_queue_url: str | None = None
    # The write queue's dead-letter queue, and the receive count of its redrive policy: on a message's last
    # receive the worker moves it to the DLQ itself, with the reason, instead of letting SQS move it without one.
    dead_letter_queue_url: str | None = None
    max_receive_count: int = Field(5, ge=1, le=1000)
    # OpenSearch endpoint (https://...); `aoss` for OpenSearch Serverless, `es` for a managed domain.
    opensearch_endpoint: str | None = None
    opensearch_service: Literal["aoss", "es"] = "aoss"
    opensearch_index: str = "rearview-memories"
    bedrock_embedding_model: str = "amazon.titan-embed-text-v2:0"
    # Titan v2 accepts 256, 512 or 1024.
    bedrock_embedding_dim: int = 512
    # The chat model consolidation states memories with when `inducer` is `bedrock` (Converse API).
    bedrock_induction_model: str = "anthropic.claude-3-5-haiku-20241022-v1:0"
    # The rerank model recall uses when `reranker` is `bedrock`: a foundation model id or a full ARN. Amazon Rerank
    # 1.0 is offered in fewer regions than Titan; `cohere.rerank-v3-5:0` also needs a Marketplace subscription.
    bedrock_rerank_model: str = "amazon.rerank-v1:0"
    # Recall also reads the namespace's episodes written this recently from DynamoDB (read-your-writes while the
    # index catches up through the stream).
    freshness_window_seconds: int = Field(300, ge=0)
    # botocore timeouts and retries for every AWS client.
    connect_timeout_seconds: float = 2.0
    read_timeout_seconds: float = 10.0
    max_attempts: int = 3

    @field_validator("bedrock_embedding_dim")
    @classmethod
    def _titan_dimension(cls, value: int) -> int:
        if value not in (256, 512, 1024):
            raise ValueError(f"bedrock_embedding_dim: Titan Text Embeddings v2 takes 256, 512 or 1024 (got {value})")
        return value


class OpenAISettings(BaseModel):
    """The OpenAI-compatible chat endpoint consolidation states memories with when `inducer` is `openai`: Ollama
    (the defaults), vLLM, LM Studio, llama.cpp's server or OpenAI itself."""

    base_url: str = "http://127.0.0.1:11434/v1"
    model: str = "qwen2.5:7b-instruct"
    # Local servers accept any key; OpenAI needs a real one (REARVIEW_OPENAI__API_KEY).
    api_key: str = "ollama"
    # Generous: a local model on a CPU may take tens of seconds for one answer. A cluster that takes longer is
    # stated by the rules instead.
    timeout_seconds: float = Field(60.0, gt=0, le=600)
    # The client's own retries of a timeout, a connection error, a 429 or a 5xx, before the cluster falls back.
    max_retries: int = Field(2, ge=0, le=10)
    # An answer is one JSON object of about 100 tokens; the cap stops a model that rambles, not a good answer.
    max_tokens: int = Field(400, ge=64, le=8192)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"openai.base_url: expected http(s)://host[:port]/v1 (got {value[:200]!r})", field="openai.base_url"
            )
        return value.rstrip("/")


class Settings(BaseSettings):
    """Every setting, with its environment variable `REARVIEW_<NAME>` (nested: `REARVIEW_RECALL__RRF_K`)."""

    model_config = SettingsConfigDict(env_prefix="REARVIEW_", env_nested_delimiter="__", extra="ignore")

    # `memory`: an ephemeral backend for tests and throwaway runs; nothing persists.
    backend: Literal["sqlite", "aws", "memory"] = "sqlite"
    data_dir: Path = Path(".rearview")
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    embedder: Literal["minilm", "hashing", "bedrock"] = "minilm"
    # A model that re-orders recall's best candidates (see RecallTuning.rerank_candidates): `none`; `bedrock`
    # (aws.bedrock_rerank_model through the Rerank API); or `onnx`, a local cross-encoder file at
    # `rerank_model_path` (none is bundled: no package the registries hold ships one), with its tokenizer.json at
    # `rerank_tokenizer_path` unless it uses MiniLM's BERT uncased vocabulary.
    reranker: Literal["none", "bedrock", "onnx"] = "none"
    rerank_model_path: Path | None = None
    rerank_tokenizer_path: Path | None = None
    hashing_dim: int = Field(512, ge=32, le=4096)
    # rules is deterministic and offline; openai and bedrock state memories with a model, the rules where it fails.
    inducer: Literal["rules", "openai", "bedrock"] = "rules"
    api_token: str | None = None
    default_namespace: str = "default"
    working_ttl_seconds: int = Field(7200, ge=1)
    log_level: str = "INFO"

    write: WriteTuning = WriteTuning()
    recall: RecallTuning = RecallTuning()
    consolidate: ConsolidateTuning = ConsolidateTuning()
    aws: AwsSettings = AwsSettings()
    openai: OpenAISettings = OpenAISettings()
