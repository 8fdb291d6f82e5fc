"""Writes docs/configuration.md from `rearview.settings`: every setting's environment variable, its default, and the
comment above it in settings.py (its "why"), so the reference cannot drift from the code.

    .venv/bin/python docs/settings_reference.py > docs/configuration.md

tests/unit/test_configuration_doc.py fails when the file is not what this prints.
"""

from __future__ import annotations

import ast
import inspect
import sys
from enum import Enum
from pathlib import Path

from pydantic import BaseModel

from rearview import settings
from rearview.settings import RETIRED_VARIABLES, Settings

PREFIX = "REARVIEW_"
# The meaning of a setting that shares the comment of the one above it in settings.py.
GROUPED = "(with the row above)"
SECTIONS: dict[str, str] = {
    "": "General",
    "write": "Write path (`REARVIEW_WRITE__*`)",
    "recall": "Recall (`REARVIEW_RECALL__*`)",
    "consolidate": "Hindsight consolidation (`REARVIEW_CONSOLIDATE__*`)",
    "hindsight": "Consolidation by itself: triggers, caps, brief and feedback (`REARVIEW_HINDSIGHT__*`)",
    "server": "The local server: browsers and connections (`REARVIEW_SERVER__*`)",
    "retention": "Retention timers of the local server (`REARVIEW_RETENTION__*`)",
    "throttle": "Per-key throttling: requests per API key per minute (`REARVIEW_THROTTLE__*`)",
    "index": "The embedded backend's search index (`REARVIEW_INDEX__*`)",
    "openai": "The OpenAI-compatible inducer (`REARVIEW_OPENAI__*`, with `REARVIEW_INDUCER=openai`)",
    "aws": "The AWS backend (`REARVIEW_AWS__*`, set by the CDK app in the functions)",
}

# When a user changes each setting: one line, for the operator of a deployment or a developer on a laptop. A setting
# without a story has no user; make it a constant next to the code that uses it, with its reason beside it.
STORIES: dict[str, str] = {
    "backend": "Set `memory` for a throwaway run or a test; the AWS functions set `aws`.",
    "data_dir": "Set it to keep the embedded store somewhere else than the working directory (one per project).",
    "host": (
        "Set `0.0.0.0` to serve other machines (then set `REARVIEW_API_TOKEN` and keys: a non-loopback bind "
        "needs credentials)."
    ),
    "port": "Change it when 8765 is taken, or to run two servers side by side.",
    "embedder": (
        "Set `minilm` when every memory is English, above all short chat turns (Chatlog R@10 0.555 against "
        "e5's 0.510), and it embeds 2.7x as fast; `bge-zh` for Chinese alone; `bedrock` on AWS; `hashing` for "
        "tests without a model."
    ),
    "reranker": (
        "Set `onnx` (your cross-encoder file) or `bedrock` when a model that reads query and memory together "
        "is worth its latency (`bench/locomo.py --reranker` measures it)."
    ),
    "rerank_model_path": "Set it to your cross-encoder's `.onnx` file when `reranker` is `onnx`.",
    "rerank_tokenizer_path": "Set it when your cross-encoder does not use MiniLM's BERT uncased vocabulary.",
    "hashing_dim": "Lower it to make tests with the hashing embedder faster; raise it for fewer collisions in a demo.",
    "inducer": (
        "Set `openai` (a local model through Ollama, vLLM, LM Studio) or `bedrock` when a model should state "
        "what consolidation learns; `llama_cpp` to run a GGUF model in the process (`make local-llm`)."
    ),
    "inducer_model_path": "Set it to your GGUF chat model's file when `inducer` is `llama_cpp` (none is fetched).",
    "api_token": "Set it to create the first API keys on a server others reach.",
    "default_namespace": "Set it when an MCP client without a key should remember into a namespace of your choice.",
    "working_ttl_seconds": "Raise it when a task's scratch state must outlive two hours; lower it to forget sooner.",
    "log_level": "Set `DEBUG` to see each request and stage; `WARNING` for a quiet server.",
    "freeze_start_up_heap": "Turn it off when you embed Rearview in a process whose heap you manage yourself.",
    "write.importance_threshold": "Raise it when small talk fills the store; lower it to keep every turn.",
    "write.dedup_threshold": (
        "Lower it when the same thing said in other words is stored twice; raise it when distinct memories are merged."
    ),
    "write.default_fact_confidence": (
        "Lower it when facts written without a confidence come from a source you trust less than the user."
    ),
    "write.context_turns": "Set 0 when your episodes are standalone notes rather than turns of a conversation.",
    "write.embed_context": "Set `replies` or `none` when your turns stand alone better than with the turn before them.",
    "recall.vector_weight": (
        "Raise it when users ask in other words than they wrote; lower it when they search for names, codes and ids."
    ),
    "recall.episodic_half_life_days": (
        "Lower it when old events should fade faster (a support desk); raise it for a lifelong diary."
    ),
    "recall.semantic_half_life_days": "Lower it when preferences and facts change often in your domain.",
    "recall.recency_floor": "Lower it when the newest memory should win more often over an older, closer match.",
    "recall.rerank_candidates": (
        "Lower it when the reranker is slow or priced per document; 0 turns it off per deployment."
    ),
    "recall.rerank_weight": (
        "Raise it when your reranker is strong on your data; lower it when it misses dates and speakers."
    ),
    "recall.collapse_threshold": (
        "Lower it when results repeat one another; raise it when distinct memories are folded together."
    ),
    "recall.default_token_budget": (
        "Raise it when your prompts have room for more memories; lower it for a small context window."
    ),
    "recall.min_relevance": (
        "Raise it when recall answers with unrelated memories; lower it when it says no_relevant_memory too often."
    ),
    "recall.confidence_half_life_days": "Lower it when unconfirmed preferences and lessons should go stale sooner.",
    "recall.keyword_relevance": (
        "Lower it when memories holding a question's rare words are still judged irrelevant; raise it when "
        "a few shared words make unrelated memories relevant."
    ),
    "recall.latest_match_share": (
        'Lower it when "last time" should prefer the most recent even of weaker matches; raise it to keep '
        "the best match."
    ),
    "consolidate.lookback_days": (
        "Raise it when preferences stated months apart should still add up; lower it to learn only from recent habits."
    ),
    "consolidate.deny_event_types": "Add the event types of your agent that nothing should be learned from.",
    "consolidate.change_points": (
        'Turn it on when your users often say once that a habit or preference changed ("I\'ve switched to tea") '
        "and the old memory should end at once."
    ),
    "consolidate.allow_event_types": (
        "List event types when only those (say `tool_call`, `user_message`) should be learned from."
    ),
    "hindsight.count_trigger": (
        "Lower it to learn sooner from a busy namespace; 0 when only the schedule or a request should consolidate."
    ),
    "hindsight.failure_streak": "Lower it to learn a lesson from fewer failures; 0 turns the trigger off.",
    "hindsight.session_end": "Turn it off when sessions end often and a model inducer's cost matters.",
    "hindsight.schedule_hours": "Lower it for fresher memories, raise it for fewer runs; 0 turns the schedule off.",
    "hindsight.worker": "Turn it off when something else (a cron job, the CLI) runs consolidation.",
    "hindsight.run_max_clusters": "Lower it to keep one run short and cheap with a model inducer.",
    "hindsight.run_max_tokens": "Lower it to cap what one run may spend on a model.",
    "hindsight.daily_max_clusters": "Lower it to cap a namespace's consolidation work per day.",
    "hindsight.daily_max_tokens": "Lower it to cap what a namespace may spend on a model per day.",
    "index.cache_bytes": "Lower it on a machine with little memory; raise it when many large namespaces are searched.",
    "index.ann_threshold": (
        "Lower it when searches of a namespace of a few thousand memories are slow on your machine; 0 "
        "searches exactly always."
    ),
    "aws.region": "Set it when the functions' region is not the resources' (the CDK app sets it).",
    "aws.table_name": "Set by the CDK app; set it yourself to point a local CLI at a deployed table.",
    "aws.origin_secret_arn": (
        "Set by the CDK app with `rearview:wafOriginOnly`, so that only CloudFront (and its WAF) reaches the API."
    ),
    "aws.write_queue_url": "Set by the CDK app; unset, writes are applied at once.",
    "aws.dead_letter_queue_url": "Set by the CDK app to the write queue's dead-letter queue.",
    "aws.max_receive_count": "Set by the CDK app to match the write queue's redrive policy.",
    "aws.consolidation_queue_url": "Set by the CDK app for the functions that detect triggers.",
    "aws.consolidation_dead_letter_queue_url": "Set by the CDK app to the consolidation queue's dead-letter queue.",
    "aws.consolidation_max_receive_count": "Set by the CDK app to match the consolidation queue's redrive policy.",
    "aws.consolidation_safety_seconds": "Raise it when a model inducer's clusters take longer than 30 s to finish.",
    "aws.search": (
        "Set `store` for a deployment without a search cluster (small namespaces); `embedded` for the emulator."
    ),
    "aws.opensearch_endpoint": "Set by the CDK app; set it yourself to use a cluster of your own.",
    "aws.opensearch_service": "Set `es` for a managed OpenSearch domain rather than OpenSearch Serverless.",
    "aws.opensearch_index": "Set it when several deployments share one cluster.",
    "aws.opensearch_engine": "Set `lucene` on a self-hosted node without faiss's native libraries.",
    "aws.bedrock_embedding_model": "Set it to another Bedrock embedding model your account offers.",
    "aws.bedrock_embedding_dim": "Set 1024 for Titan's best quality, 256 for the smallest index.",
    "aws.bedrock_induction_model": "Set it to another Bedrock chat model (or an inference profile) for consolidation.",
    "aws.bedrock_rerank_model": "Set it to `cohere.rerank-v3-5:0` or a model ARN your region offers.",
    "aws.freshness_window_seconds": (
        "Raise it when the index lags the table for longer (a slow stream); 0 when the index is consistent."
    ),
    "aws.search_fallback_scan": (
        "Raise it for a table-only deployment whose namespaces are larger; 0 makes a failed index a 503."
    ),
    "aws.search_fallback_seconds": (
        "Lower it to ask a recovered cluster again sooner; raise it to spare a struggling one."
    ),
    "openai.base_url": "Set it to your server's OpenAI-compatible URL (vLLM, LM Studio, llama.cpp, OpenAI).",
    "openai.model": "Set it to the model your server runs.",
    "openai.api_key": "Set it for a server that checks keys (OpenAI).",
    "openai.timeout_seconds": "Raise it when your local model needs longer than a minute per answer.",
    "server.allowed_hosts": "Add the name a reverse proxy or another machine uses to reach the server.",
    "server.allowed_origins": "Add the origin of a web app that calls the API from a browser.",
    "server.header_timeout_seconds": "Raise it for clients on slow links; lower it to shed slow senders sooner.",
    "server.idle_timeout_seconds": "Raise it for clients that keep connections open between sparse requests.",
    "server.max_connections": "Raise it when many agents or tabs share one local server.",
    "server.retry_after_seconds": "Raise it to make clients back off longer when the server is full.",
    "retention.sweep_minutes": "Lower it to enforce retention policies sooner; 0 when something else runs the sweep.",
    "retention.working_purge_minutes": (
        "Lower it to free disk from expired working memory sooner; 0 to keep it until read."
    ),
    "throttle.requests_per_minute": "Lower it to protect a shared deployment from one busy key; 0 for no limit.",
}

# Settings that became constants: the variable, the value it is fixed at, and where it lives now (the reason is
# beside it there). Setting the variable does nothing.
REMOVED: list[tuple[str, str, str]] = [
    ("REARVIEW_RECALL__FUSION", "weighted", "`RecallParameters.fusion`"),
    ("REARVIEW_RECALL__RRF_K", "60", "`RecallParameters.rrf_k`"),
    ("REARVIEW_RECALL__CONTEXT_WEIGHT", "0.4", "`RecallParameters.context_weight`"),
    ("REARVIEW_RECALL__CANDIDATES_PER_LIST", "60", "`RecallParameters.candidates_per_list`"),
    ("REARVIEW_RECALL__IMPORTANCE_BOOST", "0.1", "`RecallParameters.importance_boost`"),
    ("REARVIEW_RECALL__ACCESS_BOOST", "0.05", "`RecallParameters.access_boost`"),
    ("REARVIEW_RECALL__FEEDBACK_WEIGHT", "0.5", "`RecallParameters.feedback_weight`"),
    ("REARVIEW_RECALL__FEEDBACK_DOCS", "3", "`RecallParameters.feedback_docs`"),
    ("REARVIEW_RECALL__FEEDBACK_POOL", "1000", "`RecallParameters.feedback_pool`"),
    ("REARVIEW_RECALL__NEIGHBOUR_HITS", "10", "`RecallParameters.neighbour_hits`"),
    ("REARVIEW_RECALL__NEIGHBOUR_FACTOR", "0.6", "`RecallParameters.neighbour_factor`"),
    ("REARVIEW_RECALL__REPLY_FACTOR", "0.9", "`RecallParameters.reply_factor`"),
    ("REARVIEW_RECALL__STRUCTURE_GATES", "true", "`RecallParameters.structure_gates`"),
    ("REARVIEW_RECALL__STRUCTURE_MIN_REPLY_SHARE", "0.6", "`RecallParameters.structure_min_reply_share`"),
    ("REARVIEW_RECALL__STRUCTURE_MAX_SESSION_TURNS", "400", "`RecallParameters.structure_max_session_turns`"),
    ("REARVIEW_RECALL__STRUCTURE_MIN_TURN_WORDS", "6", "`RecallParameters.structure_min_turn_words`"),
    ("REARVIEW_RECALL__STRUCTURE_SAMPLE", "2000", "`RecallParameters.structure_sample`"),
    ("REARVIEW_RECALL__STRUCTURE_MIN_EPISODES", "50", "`RecallParameters.structure_min_episodes`"),
    ("REARVIEW_RECALL__QUESTION_FACTOR", "0.7", "`RecallParameters.question_factor`"),
    ("REARVIEW_RECALL__TIME_ANSWER_BOOST", "0.4", "`RecallParameters.time_answer_boost`"),
    ("REARVIEW_RECALL__LENGTH_PRIOR", "0.3", "`RecallParameters.length_prior`"),
    ("REARVIEW_RECALL__LENGTH_REFERENCE_WORDS", "25", "`RecallParameters.length_reference_words`"),
    ("REARVIEW_RECALL__COMMON_ENTITY_SHARE", "0.2", "`RecallParameters.common_entity_share`"),
    ("REARVIEW_RECALL__COMMON_ENTITY_MIN_EPISODES", "20", "`RecallParameters.common_entity_min_episodes`"),
    ("REARVIEW_RECALL__SHORT_TURN_VECTOR_WEIGHT", "0.2", "`RecallParameters.short_turn_vector_weight`"),
    ("REARVIEW_RECALL__TIME_EXPRESSION_BOOST", "2.0", "`RecallParameters.time_expression_boost`"),
    ("REARVIEW_RECALL__ENTITY_BOOST", "0.2", "`RecallParameters.entity_boost`"),
    ("REARVIEW_RECALL__LESSON_PLACE", "3", "`RecallParameters.lesson_place`"),
    ("REARVIEW_RECALL__RERANK_RRF_K", "10", "`RecallParameters.rerank_rrf_k`"),
    ("REARVIEW_RECALL__STALE_BELOW", "0.3", "`RecallParameters.stale_below`"),
    ("REARVIEW_RECALL__STALE_FACTOR", "0.5", "`RecallParameters.stale_factor`"),
    ("REARVIEW_INDEX__ANN_CONNECTIVITY", "16", "`AnnParams.connectivity`"),
    ("REARVIEW_INDEX__ANN_EXPANSION_ADD", "128", "`AnnParams.expansion_add`"),
    ("REARVIEW_INDEX__ANN_EXPANSION_SEARCH", "128", "`AnnParams.expansion_search`"),
    ("REARVIEW_INDEX__ANN_EXPANSION_DUPLICATES", "32", "`AnnParams.expansion_batch`"),
    ("REARVIEW_INDEX__ANN_EXPANSION_WRITES", "64", "`AnnParams.expansion_writes`"),
    ("REARVIEW_INDEX__ANN_BACKGROUND", "true", "`SERVED_IN_BACKGROUND` (adapters.sqlite.vector_caches)"),
    ("REARVIEW_INDEX__ANN_BULK_QUIET_SECONDS", "2.0", "`SERVED_BULK_QUIET_SECONDS` (adapters.sqlite.vector_caches)"),
    ("REARVIEW_INDEX__OWN_FTS_EPISODES", "20000", "`OWN_FTS_EPISODES` (adapters.sqlite.memory_store)"),
    ("REARVIEW_CONSOLIDATE__MAX_EPISODES", "5000", "`MAX_EPISODES` (service.hindsight.consolidation)"),
    (
        "REARVIEW_CONSOLIDATE__PREFERENCE_MIN_OCCURRENCES",
        "3",
        "`PREFERENCE_MIN_OCCURRENCES` (service.hindsight.evidence)",
    ),
    ("REARVIEW_CONSOLIDATE__PREFERENCE_REPEATS_ALONE", "5", "`PREFERENCE_REPEATS_ALONE` (service.hindsight.evidence)"),
    ("REARVIEW_CONSOLIDATE__FACT_MIN_OCCURRENCES", "2", "`FACT_MIN_OCCURRENCES` (service.hindsight.evidence)"),
    ("REARVIEW_CONSOLIDATE__MIN_SPREAD", "2", "`MIN_SPREAD` (service.hindsight.evidence)"),
    ("REARVIEW_CONSOLIDATE__HABIT_MIN_OCCURRENCES", "3", "`HABIT_MIN_OCCURRENCES` (service.hindsight.evidence)"),
    ("REARVIEW_CONSOLIDATE__HABIT_MIN_DAYS", "3", "`HABIT_MIN_DAYS` (service.hindsight.evidence)"),
    ("REARVIEW_CONSOLIDATE__LESSON_MIN_FAILURES", "2", "`LESSON_MIN_FAILURES` (service.hindsight.evidence)"),
    ("REARVIEW_CONSOLIDATE__RECURRING_FAILURE_MIN", "3", "`RECURRING_FAILURE_MIN` (service.hindsight.evidence)"),
    ("REARVIEW_CONSOLIDATE__LOOKALIKE_OVERLAP", "0.6", "`LOOKALIKE_OVERLAP` (service.hindsight.clusters)"),
    ("REARVIEW_HINDSIGHT__WORKER_QUEUE", "1000", "`WORKER_QUEUE` (service.hindsight.local_worker)"),
    ("REARVIEW_HINDSIGHT__LEASE_SECONDS", "600", "`LEASE_SECONDS` (service.hindsight.runner)"),
    ("REARVIEW_HINDSIGHT__FEEDBACK_USEFUL_STEP", "0.25", "`USEFUL_STEP` (service.hindsight.feedback)"),
    ("REARVIEW_HINDSIGHT__FEEDBACK_WRONG_FACTOR", "0.5", "`WRONG_FACTOR` (service.hindsight.feedback)"),
    ("REARVIEW_HINDSIGHT__BRIEF_MIN_CONFIDENCE", "0.2", "`MIN_CONFIDENCE` (service.brief)"),
    ("REARVIEW_OPENAI__MAX_RETRIES", "2", "`MAX_RETRIES` (adapters.openai_inducer)"),
    ("REARVIEW_OPENAI__MAX_TOKENS", "400", "`MAX_ANSWER_TOKENS` (adapters.openai_inducer)"),
    ("REARVIEW_AWS__CONNECT_TIMEOUT_SECONDS", "2.0", "`CONNECT_TIMEOUT_SECONDS` (adapters.aws_clients)"),
    ("REARVIEW_AWS__READ_TIMEOUT_SECONDS", "10.0", "`READ_TIMEOUT_SECONDS` (adapters.aws_clients)"),
    ("REARVIEW_AWS__MAX_ATTEMPTS", "3", "`MAX_ATTEMPTS` (adapters.aws_clients)"),
]
# Features that were off by default and went, code and all, for winning on no two benchmarks (bench/RESULTS.md,
# "Off by default: kept or gone"): the variable, the value it was, and what it did. Setting the variable does nothing.
GONE: list[tuple[str, str, str]] = [
    ("REARVIEW_WRITE__EMBED_SPEAKER_LABELS", "false", "an episode's vector kept its leading speaker label"),
    ("REARVIEW_WRITE__EMBED_PLAIN_CHAT", "false", "an episode's vector left out emoji and evened out elongations"),
    (
        "REARVIEW_RECALL__TYPO_MIN_LENGTH",
        "0",
        "keyword search matched the namespace's own misspellings of a query word",
    ),
    ("REARVIEW_RECALL__KEYWORD_COMMON_SHARE", "0.0", "terms common in the namespace left keyword search"),
    ("REARVIEW_RECALL__SESSION_BOOST", "0.0", "a session holding strong candidates lifted all of them"),
]

PREFACE = """# Configuration

Every setting is a `REARVIEW_*` environment variable, read and validated once at start-up (`rearview.settings`);
nested ones take `__` (`REARVIEW_RECALL__VECTOR_WEIGHT=0.6`). Commands of the CLI take the common ones as options too
(`rearview serve --port 9000`). The meaning column is the comment above the setting in `settings.py`, the last
column says when a user changes it; the measurements behind the defaults are in `bench/RESULTS.md`. A value no user
changes is a constant next to the code that uses it: the last sections list the settings that became constants
and the features that went.

This file is generated: `.venv/bin/python docs/settings_reference.py > docs/configuration.md`.

The command line also reads two variables of its own: `REARVIEW_URL` (talk to a remote server instead of the data
directory) and `REARVIEW_TOKEN` (the API key it sends there, and the key `rearview mcp` acts with).
"""


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """The comment above each field of a settings class; a field with none shares the one of the field right above
    it (a group such as the two half-lives). Raises if a field has neither."""
    source = inspect.getsource(model)
    lines = source.splitlines()
    (cls,) = ast.parse(source).body
    assert isinstance(cls, ast.ClassDef)
    comments: dict[str, str] = {}
    previous: tuple[str, int] | None = None
    for statement in cls.body:
        if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
            continue
        name = statement.target.id
        info = model.model_fields.get(name)
        if info is None or isinstance(info.default, BaseModel):
            continue  # model_config, or a nested section (listed apart)
        above: list[str] = []
        row = statement.lineno - 2
        while row >= 0 and lines[row].strip().startswith("#"):
            above.insert(0, lines[row].strip().lstrip("#").strip())
            row -= 1
        if above:
            comments[name] = " ".join(above)
        elif previous is not None and previous[1] == statement.lineno - 1:
            comments[name] = GROUPED
        else:
            raise ValueError(f"{model.__name__}.{name}: no comment saying why")
        previous = (name, statement.end_lineno or statement.lineno)
    return comments


def default_text(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "(none)"
    return str(value)


def rows(model: type[BaseModel], section: str) -> list[str]:
    comments = field_comments(model)
    out = []
    for name, info in model.model_fields.items():
        if isinstance(info.default, BaseModel):
            continue  # a nested section, listed apart
        default = info.get_default(call_default_factory=True)
        variable = PREFIX + (f"{section.upper()}__" if section else "") + name.upper()
        meaning = comments[name].replace("|", "\\|")
        dotted = f"{section}.{name}" if section else name
        if dotted not in STORIES:
            raise ValueError(f"{dotted}: no story saying when a user changes it (STORIES)")
        story = STORIES[dotted].replace("|", "\\|")
        out.append(f"| `{variable}` | `{default_text(default)}` | {meaning} | {story} |")
    return out


def reference() -> str:
    parts = [PREFACE]
    for section, title in SECTIONS.items():
        if section:
            model = type(Settings.model_fields[section].default)
            parts.append(f"## {title}\n")
            doc = model.__dict__.get("__doc__")  # its own, not BaseModel's
            if doc:
                parts.append(" ".join(doc.split()) + "\n")
        else:
            model = Settings
            parts.append(f"## {title}\n")
        header = "| variable | default | meaning | change it when |\n|---|---|---|---|\n"
        parts.append(header + "\n".join(rows(model, section)) + "\n")
    parts.append(
        "## Settings that became constants\n\nNo user changes these; each is a constant with its reason beside it in "
        "the code. Setting the variable does nothing, and a process warns at its start, naming it.\n"
    )
    listed = "\n".join(parts)
    stale = [n for n in STORIES if f"`{PREFIX}{n.replace('.', '__').upper()}`" not in listed]
    stale += [variable for variable, _, _ in [*REMOVED, *GONE] if f"| `{variable}` |" in listed]
    if stale:
        raise ValueError(f"stories of no setting, or constants that are still settings: {stale}")
    retired = {variable for variable, _, _ in [*REMOVED, *GONE]}
    if retired != RETIRED_VARIABLES:
        raise ValueError(f"rearview.settings.RETIRED_VARIABLES differs by {sorted(retired ^ RETIRED_VARIABLES)}")
    removed = [f"| `{variable}` | `{value}` | {where} |" for variable, value, where in REMOVED]
    parts.append("| variable | fixed at | now |\n|---|---|---|\n" + "\n".join(removed) + "\n")
    parts.append(
        '## Features removed\n\nOff by default, and no better on two benchmarks (`bench/RESULTS.md`, "Off by '
        'default: kept or gone"): each went with its code. Setting the variable does nothing, and a process warns '
        "at its start, naming it.\n"
    )
    gone = [f"| `{variable}` | `{value}` | {what} |" for variable, value, what in GONE]
    parts.append("| variable | was | what it did |\n|---|---|---|\n" + "\n".join(gone) + "\n")
    return "\n".join(parts)


if __name__ == "__main__":
    assert Path(settings.__file__).name == "settings.py"
    sys.stdout.write(reference())
