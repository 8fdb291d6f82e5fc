"""LoCoMo retrieval benchmark: Rearview's recall against plain BM25, vector-only and keyword-only, in one run.

Protocol: ../shared/benchmarks/locomo/README.md. One namespace per conversation; every turn is written
in order through the service write path as an episode (id = dia_id, occurred_at = ts, the speaker as
entity); each question is asked verbatim with as_of = ask_ts. Only the question text and ask_ts reach the
pipeline: gold ids, answers and categories are read by the scorer alone.

    .venv/bin/python bench/locomo.py --data ../shared/benchmarks/locomo [--embedder e5|minilm|bge-en|bge-zh|hashing]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
from rank_bm25 import BM25Okapi

import folds
from metrics import (
    dedup_ids,
    format_table,
    mean,
    ndcg_at_k,
    percentile,
    recall_all_at_k,
    recall_at_k,
    session_recall_any_at_k,
)
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.search import Candidate, MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.ports import Embedder, MemoryStore
from rearview.service.recall import RecallService
from rearview.service.recall.parameters import RecallParameters
from rearview.settings import AwsSettings, Settings
from rearview.text_analysis import query_terms
from recall_params import add_param_argument, with_params

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 25, 50)
TOP_K = 50
BATCH = 100
# Large enough that the token budget never cuts the 50 results (a LoCoMo turn is ~30 tokens).
TOKEN_BUDGET = 32000
# The README's figures for plain BM25 on this protocol, categories 1-5; our BM25 baseline should land close.
README_BM25 = {"R@5": 0.452, "R@10": 0.526, "R@25": 0.629, "R@50": 0.694, "nDCG@10": 0.389}
README_DRAGON = {"R@5": 0.567, "R@10": 0.662, "R@25": 0.767, "R@50": 0.827}
# Rearview's recall targets on the embedded default with MiniLM (categories 1-5; every category's R@10).
TARGETS = {"R@10": 0.80, "R@25": 0.90, "nDCG@10": 0.60}
CATEGORY_R10_TARGET = 0.60
METRIC_NAMES = ("R@5", "R@10", "R@25", "R@50", "Rall@10", "nDCG@10", "S@5")
SYSTEMS = ("rearview", "bm25", "bm25-ws", "vector", "keyword")
_WORD = re.compile(r"\w+")


# --ablations: the pipeline again with one stage (or one choice) undone at a time, each against the defaults.
ABLATIONS: dict[str, dict[str, Any]] = {
    "defaults (every stage)": {},
    "no keyword context": {"context_weight": 0.0},
    "no entity boost": {"entity_boost": 0.0},
    "no time-answer boost": {"time_answer_boost": 0.0},
    "no question demotion": {"question_factor": 1.0},
    "no session neighbours": {"neighbour_hits": 0},
    "no pseudo-relevance feedback": {"feedback_weight": 0.0},
    "common names kept in vector query": {"common_entity_share": 0.0},
    "no length prior": {"length_prior": 0.0},
    "time expressions filter": {"time_expression_boost": 0.0},
    "RRF instead of weighted fusion": {"fusion": "rrf"},
    "structure gates off (context, neighbours, feedback everywhere)": {"structure_gates": False},
    "context and neighbours everywhere": {"structure_min_reply_share": 0.0, "structure_max_session_turns": 10**9},
    "feedback everywhere": {"structure_min_turn_words": 0},
    "no short-turn vector weight": {"short_turn_vector_weight": 0.0},
    "vector weight 0.6": {"vector_weight": 0.6},
    "vector weight 0.4": {"vector_weight": 0.4},
}
# Added to the ablations when a reranker is configured (--reranker).
NO_RERANKER = {"rerank_candidates": 0}


@dataclass(frozen=True)
class Turn:
    conv: str
    session: int
    dia_id: str
    speaker: str
    text: str
    ts: datetime


@dataclass(frozen=True)
class Question:
    qid: str
    conv: str
    question: str
    category: int
    ask_ts: datetime
    gold: tuple[str, ...]
    gold_sessions: tuple[int, ...]
    # The evidence as the LoCoMo audit corrected it (`gold_dia_ids_audited`); the original where the file has none.
    gold_audited: tuple[str, ...] = ()


@dataclass
class Scored:
    """One system's answer to one question, with its metrics."""

    qid: str
    category: int
    metrics: dict[str, float]
    millis: float


@dataclass
class ConvState:
    """What the scorer knows of a conversation's store: merged turns, and the sessions each id stands for."""

    alias: dict[str, str] = field(default_factory=dict)  # merged turn id -> surviving memory id
    sessions: dict[str, set[int]] = field(default_factory=dict)  # memory id -> sessions of the turns it holds


def utc(ts: str) -> datetime:
    """The dataset's timestamps are naive; the protocol takes them as UTC."""
    return datetime.fromisoformat(ts).replace(tzinfo=UTC)


def load_turns(path: Path) -> dict[str, list[Turn]]:
    """Turns grouped by conversation, in file order (the order of the dialogue)."""
    convs: dict[str, list[Turn]] = defaultdict(list)
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            convs[row["conv"]].append(
                Turn(
                    row["conv"],
                    int(row["session"]),
                    row["dia_id"],
                    row["speaker"],
                    row["text"],
                    utc(row["ts"]),
                )
            )
    return dict(convs)


def load_questions(path: Path) -> tuple[list[Question], int]:
    """Questions with gold evidence, and how many were skipped for having none."""
    questions: list[Question] = []
    skipped = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            gold = tuple(dict.fromkeys(row["gold_dia_ids"] or []))
            if not gold:
                skipped += 1
                continue
            questions.append(
                Question(
                    qid=row["qid"],
                    conv=row["conv"],
                    question=row["question"],
                    category=int(row["category"]),
                    ask_ts=utc(row["ask_ts"]),
                    gold=gold,
                    gold_sessions=tuple(int(s) for s in row["gold_sessions"]),
                    gold_audited=tuple(dict.fromkeys(row.get("gold_dia_ids_audited", gold) or [])),
                )
            )
    return questions, skipped


def bm25_tokens(text: str) -> list[str]:
    """Lowercased `\\w+` words: on "speaker: text" this reproduces the README's BM25 figures to the third
    decimal (a whitespace split, which leaves "group?" unmatched by "group", scores R@10 0.40)."""
    return _WORD.findall(text.lower())


def whitespace_tokens(text: str) -> list[str]:
    """The naive tokenisation: lowercase, split on whitespace; kept as a second BM25 row for comparison."""
    return text.lower().split()


def score(ranked: Sequence[str], q: Question, state: ConvState) -> dict[str, float]:
    """The protocol's metrics for one ranked id list."""

    def sessions_of(rid: str) -> Iterable[int]:
        return state.sessions.get(rid, ())

    out = {f"R@{k}": recall_at_k(ranked, q.gold, k, state.alias) for k in KS}
    out["Rall@10"] = recall_all_at_k(ranked, q.gold, 10, state.alias)
    out["nDCG@10"] = ndcg_at_k(ranked, q.gold, 10, state.alias)
    out["S@5"] = session_recall_any_at_k(ranked, q.gold_sessions, 5, sessions_of)
    return out


def audited(q: Question, state: ConvState) -> Question | None:
    """The question scored against the audit's evidence (its sessions from the ids), or None if the audit left none."""
    if not q.gold_audited:
        return None
    sessions = sorted({s for g in q.gold_audited for s in state.sessions.get(g, ())})
    return replace(q, gold=q.gold_audited, gold_sessions=tuple(sessions))


def category_names(path: Path) -> dict[int, str]:
    """The categories and their names: those the gold rows name (`category_name`, as a benchmark in LoCoMo's shape
    with categories of its own has them, such as bench/memorybank.py's), else LoCoMo's (CATEGORIES)."""
    names: dict[int, str] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row.get("category_name"):
                names[int(row["category"])] = row["category_name"]
    return dict(sorted(names.items())) or dict(CATEGORIES)


def aggregate(scored: Sequence[Scored], categories: dict[int, str] = CATEGORIES) -> dict[str, dict[str, float]]:
    """Mean of each metric per category and overall (1-5 and 1-4), with the question count as `n`."""
    groups: dict[str, list[Scored]] = {
        f"{c} {name}": [s for s in scored if s.category == c] for c, name in categories.items()
    }
    groups["overall 1-5"] = list(scored)
    groups["overall 1-4"] = [s for s in scored if s.category != 5]
    return {
        name: {"n": float(len(rows)), **{m: mean([r.metrics[m] for r in rows]) for m in METRIC_NAMES}}
        for name, rows in groups.items()
    }


def latency(scored: Sequence[Scored]) -> dict[str, float]:
    millis = [s.millis for s in scored]
    return {"p50": percentile(millis, 50), "p95": percentile(millis, 95), "mean": mean(millis)}


def ids_of(cands: Sequence[Candidate]) -> list[str]:
    return dedup_ids([c.id] for c in cands)


def namespace_of(conv: str) -> str:
    """One namespace per conversation, as the protocol asks."""
    return f"locomo:{conv}"


def ask_recall(
    recaller: RecallService, q: Question, parse_time: bool = True
) -> tuple[RecallResponse, list[str], float]:
    """One question through Rearview's recall as the protocol asks it (verbatim, as of ask_ts, top 50, a budget
    that never cuts): the response, the ranked ids (a result stands for its provenance and what collapsed into it),
    and the milliseconds it took."""
    started = time.perf_counter()
    resp = recaller.recall(
        namespace_of(q.conv),
        RecallQuery(query=q.question, top_k=TOP_K, as_of=q.ask_ts, token_budget=TOKEN_BUDGET, parse_time=parse_time),
    )
    millis = (time.perf_counter() - started) * 1000
    return resp, dedup_ids([h.id, *h.provenance, *h.collapsed] for h in resp.results), millis


class Bench:
    """Ingests and asks, conversation by conversation, keeping every system's scores."""

    def __init__(self, services: Services, clock: ManualClock, categories: dict[int, str] = CATEGORIES) -> None:
        self.s = services
        self.clock = clock
        self.categories = categories
        self.scored: dict[str, list[Scored]] = {name: [] for name in SYSTEMS}
        self.scored_audited: dict[str, list[Scored]] = {name: [] for name in SYSTEMS}
        self.write_status: Counter[str] = Counter()
        self.write_reasons: Counter[str] = Counter()
        self.ingest_seconds = 0.0
        self.turns = 0
        # Questions whose text held a time expression that recall turned into a filter.
        self.time_parsed: dict[str, dict[str, Any]] = {}
        self.time_unparsed_rerun: list[Scored] = []
        self.no_relevant = 0

    def ingest(self, namespace: str, turns: Sequence[Turn], *, extract: bool = False) -> ConvState:
        state = ConvState()
        for turn in turns:
            state.sessions[turn.dia_id] = {turn.session}
        for start in range(0, len(turns), BATCH):
            batch = turns[start : start + BATCH]
            items = [
                MemoryWrite(
                    layer="episodic",
                    id=t.dia_id,
                    content=f"{t.speaker}: {t.text}",
                    occurred_at=t.ts,
                    entities=[t.speaker],
                    session_id=f"{t.conv}-s{t.session}",
                    importance=1.0,
                    extract=extract or None,
                )
                for t in batch
            ]
            # write_batch reads the clock once per batch: created_at is the ts of the batch's last turn, so no
            # memory is created before it occurred (ranking decays on occurred_at, not created_at).
            self.clock.set(batch[-1].ts)
            started = time.perf_counter()
            results = self.s.writer.write_batch(namespace, items)
            self.ingest_seconds += time.perf_counter() - started
            self.turns += len(batch)
            for turn, res in zip(batch, results, strict=True):
                self.write_status[res.status] += 1
                if res.reason and res.status != "stored":
                    self.write_reasons[f"{res.status}:{res.reason}"] += 1
                if res.status == "merged" and res.merged_into and res.merged_into != turn.dia_id:
                    state.alias[turn.dia_id] = res.merged_into
                    state.sessions.setdefault(res.merged_into, set()).add(turn.session)
        return state

    def ask(self, namespace: str, questions: Sequence[Question], turns: Sequence[Turn], state: ConvState) -> None:
        # The baselines index exactly what the pipeline stores: "speaker: text".
        contents = [f"{t.speaker}: {t.text}" for t in turns]
        bm25 = BM25Okapi([bm25_tokens(c) for c in contents])
        bm25_ws = BM25Okapi([whitespace_tokens(c) for c in contents])
        turn_ids = [t.dia_id for t in turns]
        # BM25 indexes every turn, merged or not: its ids need no alias, and each stands for its own session.
        plain = ConvState(sessions={t.dia_id: {t.session} for t in turns})
        everything = MemoryFilter()
        for q in questions:
            self.clock.set(q.ask_ts)

            resp, ranked, millis = ask_recall(self.s.recaller, q)
            self._keep("rearview", q, ranked, state, millis)
            self.no_relevant += int(resp.no_relevant_memory)
            if resp.time_range is not None:
                self.time_parsed[q.qid] = {"question": q.question, **resp.time_range}

            started = time.perf_counter()
            scores = bm25.get_scores(bm25_tokens(q.question))
            order = np.argsort(-scores, kind="stable")[:TOP_K]
            millis = (time.perf_counter() - started) * 1000
            self._keep("bm25", q, [turn_ids[i] for i in order], plain, millis)

            started = time.perf_counter()
            scores = bm25_ws.get_scores(whitespace_tokens(q.question))
            order = np.argsort(-scores, kind="stable")[:TOP_K]
            millis = (time.perf_counter() - started) * 1000
            self._keep("bm25-ws", q, [turn_ids[i] for i in order], plain, millis)

            started = time.perf_counter()
            qvec = self.s.embedder.embed_queries([q.question])[0]
            cands = self.s.index.vector_search(namespace, qvec, everything, TOP_K)
            millis = (time.perf_counter() - started) * 1000
            self._keep("vector", q, ids_of(cands), state, millis)

            started = time.perf_counter()
            cands = (
                self.s.index.keyword_search(namespace, q.question, everything, TOP_K) if query_terms(q.question) else []
            )
            millis = (time.perf_counter() - started) * 1000
            self._keep("keyword", q, ids_of(cands), state, millis)

        # The pipeline without the time filter, on the questions where one was parsed: what the filter costs.
        for q in questions:
            if q.qid not in self.time_parsed:
                continue
            _, ranked, _ = ask_recall(self.s.recaller, q, parse_time=False)
            self.time_unparsed_rerun.append(Scored(q.qid, q.category, score(ranked, q, state), 0.0))

    def _keep(self, system: str, q: Question, ranked: list[str], state: ConvState, millis: float) -> None:
        self.scored[system].append(Scored(q.qid, q.category, score(ranked, q, state), millis))
        if (corrected := audited(q, state)) is not None:
            self.scored_audited[system].append(Scored(q.qid, q.category, score(ranked, corrected, state), millis))


class _AccessNotRecorded:
    """The store as an ablation's recall sees it: every read passes through, but the access and recall counts are
    not written, so each variant ranks over the counts the main run left, like the one before it."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def record_access(self, *args: Any, **kwargs: Any) -> None:
        return None

    def record_recall(self, *args: Any, **kwargs: Any) -> None:
        return None


class _RememberedQueries:
    """The embedder as an ablation's recall sees it: a query asked again (by the next variant) is not embedded again;
    the vectors are the embedder's own, so no figure changes, only the time the runs take."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._vectors: dict[str, np.ndarray] = {}
        self.name, self.dim, self.scale = embedder.name, embedder.dim, embedder.scale

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embedder.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._embedder.embed_queries(missing), strict=True))
        return np.stack([self._vectors[t] for t in texts])


def ablation_changes(services: Services, skip: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """ABLATIONS (less those whose name holds a `skip` string), and "no reranker" when recall has one."""
    kept = {name: change for name, change in ABLATIONS.items() if not any(s in name for s in skip)}
    if services.recaller.reranker is None:
        return kept
    return {**kept, "no reranker": NO_RERANKER}


def run_ablations(
    services: Services,
    clock: ManualClock,
    questions: Sequence[Question],
    states: dict[str, ConvState],
    skip: Sequence[str] = (),
) -> dict[str, list[Scored]]:
    """Every question through recall once per ablation (the stored memories stay as the main run wrote them)."""
    store = cast(MemoryStore, _AccessNotRecorded(services.store))
    embedder = _RememberedQueries(services.embedder)
    floor = services.recaller.relevance_floor
    # The settings' values, not the recaller's: its collapse threshold is already on the embedder's scale.
    base = services.settings.recall.model_dump()
    out: dict[str, list[Scored]] = {}
    for name, change in ablation_changes(services, skip).items():
        tuning = RecallParameters(**{**base, **change})
        recaller = RecallService(
            store, services.index, embedder, clock, tuning, floor, reranker=services.recaller.reranker
        )
        rows: list[Scored] = []
        for q in questions:
            clock.set(q.ask_ts)
            _, ranked, millis = ask_recall(recaller, q)
            rows.append(Scored(q.qid, q.category, score(ranked, q, states[q.conv]), millis))
        out[name] = rows
    return out


def ablation_table(ablations: dict[str, dict[str, Any]]) -> str:
    """One row an ablation: the overall figures, R@10's change against the defaults, and R@10 per category."""
    defaults = next(iter(ablations.values()))["by_category"]["overall 1-5"]["R@10"]
    labels = category_labels(next(iter(ablations.values()))["by_category"])
    rows: list[list[object]] = []
    for name, result in ablations.items():
        agg = result["by_category"]
        overall = agg["overall 1-5"]
        per_category = [agg[label]["R@10"] for label in labels]
        rows.append(
            [name, overall["R@10"], overall["R@10"] - defaults, overall["R@25"], overall["nDCG@10"], *per_category,
             result["latency_ms"]["p50"]]
        )  # fmt: skip
    return format_table(
        ["ablation", "R@10", "dR@10", "R@25", "nDCG@10", *category_headers(labels), "p50 ms"],
        rows,
        title="== ablations: the pipeline with one stage undone (same store, access counts frozen) ==",
    )


def audited_table(audited_evidence: dict[str, Any]) -> str:
    """Every system on the audit's corrected evidence: how much of what looks missed is mislabelled gold."""
    rows: list[list[object]] = []
    labels = category_labels(next(iter(audited_evidence["systems"].values())))
    for name, agg in audited_evidence["systems"].items():
        overall = agg["overall 1-5"]
        per_category = [agg[label]["R@10"] for label in labels]
        rows.append([name, int(overall["n"]), overall["R@10"], overall["R@25"], overall["nDCG@10"], *per_category])
    return format_table(
        ["system", "n", "R@10", "R@25", "nDCG@10", *category_headers(labels)],
        rows,
        title=(
            f"== on the audited evidence (gold_dia_ids_audited, {audited_evidence['questions_changed']} questions' "
            "evidence corrected; the targets above use gold_dia_ids) =="
        ),
    )


def category_labels(by_category: dict[str, dict[str, float]]) -> list[str]:
    """The per-category rows of an aggregate ("2 temporal", ...), without the overall ones."""
    return [label for label in by_category if not label.startswith("overall")]


def category_headers(labels: Sequence[str]) -> list[str]:
    """The column headers of the per-category rows: R@10 and the category name."""
    return [f"R@10 {label.split(' ', 1)[1]}" for label in labels]


def system_table(name: str, agg: dict[str, dict[str, float]]) -> str:
    rows = [[group, int(vals["n"]), *(vals[m] for m in METRIC_NAMES)] for group, vals in agg.items()]
    return format_table(["category", "n", *METRIC_NAMES], rows, title=f"== {name} ==")


def question_split(questions: list[Question], split: str) -> list[Question]:
    """All the questions, or a tuning split of the gold file: every third (the 1st, 4th, ...) or the others."""
    if split == "thirds":
        return questions[::3]
    if split == "others":
        return [q for i, q in enumerate(questions) if i % 3]
    return questions


def run(args: argparse.Namespace, data_dir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    turns_by_conv = load_turns(args.data / "locomo10_turns.jsonl")
    questions, no_gold = load_questions(args.data / "locomo10_gold.jsonl")
    questions = question_split(questions, args.questions)
    convs = list(turns_by_conv)[: args.limit_convs] if args.limit_convs else list(turns_by_conv)

    clock = ManualClock()
    settings = with_params(
        Settings(
            embedder=args.embedder,
            data_dir=data_dir,
            reranker=args.reranker,
            rerank_model_path=args.rerank_model_path,
            rerank_tokenizer_path=args.rerank_tokenizer_path,
            aws=AwsSettings(region=args.region, bedrock_rerank_model=args.rerank_model),
        ),
        args.param,
    )
    services = build(settings, clock=clock)
    reranker = services.recaller.reranker
    changes = ablation_changes(services, args.skip_ablation)
    services.embedder.embed(["warm up the embedder before anything is timed"])
    bench = Bench(services, clock, category_names(args.data / "locomo10_gold.jsonl"))
    states: dict[str, ConvState] = {}
    ablations: dict[str, list[Scored]] = {}
    try:
        for conv in convs:
            namespace = namespace_of(conv)
            turns = turns_by_conv[conv]
            conv_questions = [q for q in questions if q.conv == conv]
            started = time.perf_counter()
            state = states[conv] = bench.ingest(namespace, turns)
            ingested = time.perf_counter() - started
            bench.ask(namespace, conv_questions, turns, state)
            log(
                f"{conv}: {len(turns)} turns in {ingested:.1f}s, {len(conv_questions)} questions in "
                f"{time.perf_counter() - started - ingested:.1f}s"
            )
        if args.ablations or args.folds:
            started = time.perf_counter()
            asked = [q for q in questions if q.conv in states]
            ablations = run_ablations(services, clock, asked, states, args.skip_ablation)
            log(f"ablations: {len(changes)} runs in {time.perf_counter() - started:.1f}s")
    finally:
        services.close()

    results: dict[str, Any] = {
        "config": {
            "data": str(args.data),
            "embedder": services.embedder.name,
            "reranker": reranker.name if reranker is not None else None,
            "params": list(args.param),
            "conversations": convs,
            "top_k": TOP_K,
            "token_budget": TOKEN_BUDGET,
            "batch": BATCH,
            "questions_without_gold_skipped": no_gold,
        },
        "ingest": {
            "turns": bench.turns,
            "seconds": round(bench.ingest_seconds, 3),
            "turns_per_second": bench.turns / bench.ingest_seconds if bench.ingest_seconds else math.nan,
            "status": dict(bench.write_status),
            "reasons": dict(bench.write_reasons),
        },
        "systems": {
            name: {"by_category": aggregate(rows, bench.categories), "latency_ms": latency(rows)}
            for name, rows in bench.scored.items()
        },
        "no_relevant_memory": bench.no_relevant,
        "load_average_at_end": os.getloadavg(),
    }
    parsed = set(bench.time_parsed)
    subset: dict[str, dict[str, float]] = {}
    for name, rows in bench.scored.items():
        subset[name] = {
            "parsed_R@10": mean([r.metrics["R@10"] for r in rows if r.qid in parsed]),
            "unparsed_R@10": mean([r.metrics["R@10"] for r in rows if r.qid not in parsed]),
        }
    subset["rearview parse_time=False"] = {
        "parsed_R@10": mean([r.metrics["R@10"] for r in bench.time_unparsed_rerun]),
        "unparsed_R@10": math.nan,
    }
    results["time_expressions"] = {
        "questions": len(bench.scored["rearview"]),
        "parsed": len(parsed),
        "by_system": subset,
        "parsed_questions": bench.time_parsed,
    }
    results["audited_evidence"] = {
        "questions_changed": sum(1 for q in questions if q.conv in states and q.gold_audited != q.gold),
        "systems": {name: aggregate(rows, bench.categories) for name, rows in bench.scored_audited.items()},
    }
    results["ablations"] = {
        name: {"by_category": aggregate(rows, bench.categories), "latency_ms": latency(rows), "change": changes[name]}
        for name, rows in ablations.items()
    }
    results["folds"] = folds_figures(args.folds, [c for c in convs if c in states], questions, ablations, bench)
    results["per_question"] = [
        {
            "qid": r.qid,
            "category": r.category,
            "time_parsed": r.qid in parsed,
            **{name: bench.scored[name][i].metrics["R@10"] for name in SYSTEMS},
        }
        for i, r in enumerate(bench.scored["rearview"])
    ]
    return results


def folds_figures(
    k: int, convs: list[str], questions: Sequence[Question], ablations: dict[str, list[Scored]], bench: Bench
) -> dict[str, Any]:
    """What --folds reports, per question: each ablation's R@10 and the keyword and vector baselines'."""
    conv_of = {q.qid: q.conv for q in questions}

    def kept(rows: list[Scored]) -> list[list[Any]]:
        return [[r.qid, conv_of[r.qid], r.metrics["R@10"]] for r in rows]

    return {
        "k": k,
        "convs": convs,
        "variants": {name: kept(rows) for name, rows in ablations.items()},
        "baselines": {name: kept(bench.scored[name]) for name in ("keyword", "vector")},
    }


def targets_table(by_category: dict[str, dict[str, float]]) -> str:
    """Rearview against its recall targets, one row a target, each marked met or NOT met."""
    rows: list[list[object]] = []
    overall = by_category["overall 1-5"]
    for metric, target in TARGETS.items():
        rows.append([f"{metric} overall 1-5", overall[metric], f">= {target}", _verdict(overall[metric] >= target)])
    for name, metrics in by_category.items():
        if not name.startswith("overall") and metrics["n"]:
            value = metrics["R@10"]
            rows.append([f"R@10 {name}", value, f">= {CATEGORY_R10_TARGET}", _verdict(value >= CATEGORY_R10_TARGET)])
    met = sum(1 for row in rows if row[3] == "met")
    return format_table(
        ["target", "rearview", "wanted", "verdict"], rows, title=f"== targets: {met} of {len(rows)} met =="
    )


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(results: dict[str, Any]) -> str:
    cfg, ingest, systems = results["config"], results["ingest"], results["systems"]
    out: list[str] = [
        f"LoCoMo retrieval, embedder {cfg['embedder']}, reranker {cfg.get('reranker') or 'none'}, "
        f"{len(cfg['conversations'])} conversations, "
        f"top_k {cfg['top_k']}, {cfg['questions_without_gold_skipped']} questions without gold skipped",
        "",
    ]
    status = ingest["status"]
    out.append(
        format_table(
            ["ingest", "turns", "stored", "merged", "skipped", "seconds", "turns/s"],
            [
                [
                    "write_batch x100",
                    ingest["turns"],
                    status.get("stored", 0),
                    status.get("merged", 0),
                    status.get("skipped", 0),
                    ingest["seconds"],
                    ingest["turns_per_second"],
                ]
            ],
        )
    )
    if ingest["reasons"]:
        out.append("  reasons: " + ", ".join(f"{k} {v}" for k, v in sorted(ingest["reasons"].items())))
    out.append("")
    for name in SYSTEMS:
        out.append(system_table(name, systems[name]["by_category"]))
        out.append("")
    rows: list[list[object]] = []
    for name in SYSTEMS:
        all5 = systems[name]["by_category"]["overall 1-5"]
        all4 = systems[name]["by_category"]["overall 1-4"]
        lat = systems[name]["latency_ms"]
        rows.append([name, all5["R@10"], all5["R@25"], all5["nDCG@10"], all4["R@10"], lat["p50"], lat["p95"]])
    nan = math.nan
    rows.append(["README bm25 (ref)", README_BM25["R@10"], README_BM25["R@25"], README_BM25["nDCG@10"], nan, nan, nan])
    rows.append(["README DRAGON (ref)", README_DRAGON["R@10"], README_DRAGON["R@25"], nan, nan, nan, nan])
    out.append(
        format_table(
            ["system", "R@10 1-5", "R@25 1-5", "nDCG@10 1-5", "R@10 1-4", "p50 ms", "p95 ms"],
            rows,
            title="== summary (latency: whole query incl. query embedding; rearview = recaller.recall) ==",
        )
    )
    bm25_r10 = systems["bm25"]["by_category"]["overall 1-5"]["R@10"]
    if abs(bm25_r10 - README_BM25["R@10"]) > 0.02:
        out.append(f"  note: BM25 R@10 {bm25_r10:.3f} is more than 0.02 from the README's {README_BM25['R@10']}")
    out.append(f"  rearview answered no_relevant_memory on {results['no_relevant_memory']} questions")
    out.append("")
    out.append(targets_table(systems["rearview"]["by_category"]))
    load = ", ".join(f"{x:.1f}" for x in results["load_average_at_end"])
    out.append(f"  machine load average at the end (1/5/15 min): {load} on {os.cpu_count()} cores")
    out.append("")
    te = results["time_expressions"]
    trows = [[name, vals["parsed_R@10"], vals["unparsed_R@10"]] for name, vals in te["by_system"].items()]
    out.append(
        format_table(
            [
                "system",
                f"R@10 parsed (n={te['parsed']})",
                f"R@10 not parsed (n={te['questions'] - te['parsed']})",
            ],
            trows,
            title="== questions with a time expression parsed into a filter (RecallResponse.time_range) ==",
        )
    )
    examples = list(te["parsed_questions"].values())[:5]
    for ex in examples:
        out.append(f"  e.g. {ex['question']!r} -> {ex['expression']!r} [{ex['since']} .. {ex['until']}]")
    out.append("")
    out.append(audited_table(results["audited_evidence"]))
    if results["ablations"]:
        out.append("")
        out.append(ablation_table(results["ablations"]))
    if results["folds"]["k"]:
        out.append("")
        out.append(folds_report(results["folds"]))
    return "\n".join(out)


def folds_report(figures: dict[str, Any]) -> str:
    """The --folds tables (see bench/folds.py), from the per-question figures kept in the results."""

    def rows(kept: list[list[Any]]) -> list[folds.Row]:
        return [folds.Row(qid, conv, float(value)) for qid, conv, value in kept]

    variants = {name: rows(kept) for name, kept in figures["variants"].items()}
    baselines = {name: rows(kept) for name, kept in figures["baselines"].items()}
    return folds.report(variants, figures["convs"], figures["k"], baselines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="directory with locomo10_turns/gold.jsonl")
    parser.add_argument("--embedder", choices=["minilm", "e5", "bge-en", "bge-zh", "hashing"], default="e5")
    parser.add_argument(
        "--reranker",
        choices=["none", "bedrock", "onnx"],
        default="none",
        help="re-order recall's best candidates with a rerank model (bedrock: AWS credentials and --region; "
        "onnx: a cross-encoder file, --rerank-model-path)",
    )
    parser.add_argument("--rerank-model", default="amazon.rerank-v1:0", help="the Bedrock rerank model id or ARN")
    parser.add_argument("--region", default=None, help="the AWS region of the rerank model")
    parser.add_argument("--rerank-model-path", type=Path, default=None, help="a cross-encoder ONNX file")
    parser.add_argument(
        "--rerank-tokenizer-path", type=Path, default=None, help="its tokenizer.json (default MiniLM's)"
    )
    parser.add_argument("--limit-convs", type=int, default=None, help="only the first N conversations")
    add_param_argument(parser)
    parser.add_argument(
        "--questions",
        choices=["all", "thirds", "others"],
        default="all",
        help="every question, or a tuning split: every third of the gold file (thirds) or the rest (others)",
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="where the SQLite file goes (default a temp dir)")
    parser.add_argument("--json-out", type=Path, default=None, help="write every figure as JSON here")
    parser.add_argument(
        "--ablations", action="store_true", help="also run recall once per ablation (ABLATIONS) and print their table"
    )
    parser.add_argument(
        "--skip-ablation",
        action="append",
        default=[],
        help="leave out the ablations whose name holds this (repeatable): where a run's namespaces open every "
        "structure gate (LoCoMo), the rows that open them change nothing",
    )
    parser.add_argument(
        "--folds",
        type=int,
        default=0,
        help="K: run the ablations and choose each default by K-fold cross-validation over conversations "
        "(bench/folds.py), with the per-conversation spread",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.data_dir is not None:
        if (args.data_dir / "rearview.db").exists():
            log(
                f"{args.data_dir / 'rearview.db'} exists: give an empty --data-dir "
                "(ids already written would come back as duplicates)"
            )
            return 2
        results = run(args, args.data_dir, log)
    else:
        with tempfile.TemporaryDirectory(prefix="rearview-locomo-") as tmp:
            results = run(args, Path(tmp), log)
    print(report(results))
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
        log(f"wrote {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
