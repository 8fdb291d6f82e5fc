"""Recall on one ingested LoCoMo-shaped store, this tree against a baseline commit in the same run.

`bench/locomo.py` writes every turn again for each run (minutes on this machine); a change to recall alone needs
only the questions asked again. This script ingests the data once into `--store` (kept for the next run), then asks
every question with this tree's recall and, with `--baseline <commit>`, with that commit's (its `layers`, in a process
of its own), both with the access counts the ingest left frozen, so neither run changes what the other ranks.

    .venv/bin/python bench/locomo_ask.py --data ../shared/benchmarks/locomo --store .bench/locomo-e5 \\
        --baseline main [--embedder e5] [--rerank-embedder bge-en] [--param feedback_weight=0]

`--param NAME=VALUE` (repeatable) asks once more with that value of a recall setting or constant, beside the
defaults, and counts the conversations whose R@10 it raises and lowers (as `bench/folds.py` counts them).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import locomo
from baseline import extract_layers
from folds import Row, per_conversation, ups_and_downs
from metrics import dedup_ids, format_table
from recall_params import add_param_argument, with_params

STATES = "states.pkl"


def ingest(data: Path, store: Path, embedder: str) -> None:
    """Every turn written once into `store`, with the scorer's view of merged turns beside it."""
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.settings import Settings

    clock = ManualClock()
    services = build(Settings(embedder=embedder, data_dir=store), clock=clock)
    bench = locomo.Bench(services, clock)
    states = {}
    try:
        for conv, turns in locomo.load_turns(data / "locomo10_turns.jsonl").items():
            states[conv] = bench.ingest(locomo.namespace_of(conv), turns)
    finally:
        services.close()
    with (store / STATES).open("wb") as f:
        pickle.dump(states, f)


class EmbedderReranker:
    """A second embedder as the rerank stage (issue 35's "second opinion"): each candidate scored by its cosine with
    the query in that model's space. A memory's vector is embedded once and kept, as an index of the second model
    would keep it, so the figure is what a deployment holding both vectors would rank."""

    def __init__(self, name: str) -> None:
        from rearview.bootstrap import build_embedder
        from rearview.settings import Settings

        self._embedder = build_embedder(Settings(embedder=name))
        self.name = f"second opinion: {self._embedder.name}"
        self._kept: dict[str, Any] = {}

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        missing = [d for d in dict.fromkeys(documents) if d not in self._kept]
        if missing:
            self._kept.update(zip(missing, self._embedder.embed(missing), strict=True))
        vector = self._embedder.embed_queries([query])[0]
        return [float(self._kept[d] @ vector) for d in documents]


def frozen_recall(services: Any, clock: Any, reranker: Any = None) -> Any:
    """The store's recall with its access counts frozen (recording none), so that asking again ranks alike."""
    from rearview.ports import MemoryStore
    from rearview.service.recall import RecallService

    frozen = cast(MemoryStore, locomo._AccessNotRecorded(services.store))
    tuning, floor = services.recaller.tuning, services.recaller.relevance_floor
    return RecallService(frozen, services.index, services.embedder, clock, tuning, floor, reranker=reranker)


def ask(
    data: Path, store: Path, embedder: str, rerank_embedder: str | None = None, params: Sequence[str] = ()
) -> dict[str, Any]:
    """Every question through the recall of the `rearview` on the path, the counts frozen: R@k per category."""
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.domain.recall import RecallQuery
    from rearview.settings import Settings

    with (store / STATES).open("rb") as f:
        states = pickle.load(f)  # noqa: S301 - our own file
    questions, _ = locomo.load_questions(data / "locomo10_gold.jsonl")
    clock = ManualClock()
    services = build(with_params(Settings(embedder=embedder, data_dir=store), params), clock=clock)
    reranker = EmbedderReranker(rerank_embedder) if rerank_embedder else None
    recaller = frozen_recall(services, clock, reranker)
    scored, no_memory = [], 0
    try:
        for q in questions:
            clock.set(q.ask_ts)
            started = time.perf_counter()
            query = RecallQuery(query=q.question, top_k=locomo.TOP_K, as_of=q.ask_ts, token_budget=locomo.TOKEN_BUDGET)
            resp = recaller.recall(locomo.namespace_of(q.conv), query)
            millis = (time.perf_counter() - started) * 1000
            # A baseline's hits may lack the fields this tree added.
            ranked = dedup_ids(
                [h.id, *h.provenance, *h.collapsed, *getattr(h, "folded_sources", [])] for h in resp.results
            )
            scored.append(locomo.Scored(q.qid, q.category, locomo.score(ranked, q, states[q.conv]), millis))
            no_memory += int(resp.no_relevant_memory)
    finally:
        services.close()
    rows = [Row(s.qid, q.conv, s.metrics["R@10"]) for q, s in zip(questions, scored, strict=True)]
    return {
        "by_category": locomo.aggregate(scored, locomo.category_names(data / "locomo10_gold.jsonl")),
        "latency_ms": locomo.latency(scored),
        "no_memory": no_memory,
        "conversations": per_conversation(rows),
    }


def _in_baseline(commit: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rearview-baseline-") as tmp:
        layers = extract_layers(commit, Path(tmp))
        command = [sys.executable, __file__, "--data", str(args.data), "--store", str(args.store)]
        command += ["--embedder", args.embedder, "--ask-only"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(layers), str(Path(__file__).parent)])}
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return cast(dict[str, Any], json.loads(done.stdout))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True, help="the ingested store, made on the first run")
    parser.add_argument("--embedder", default="e5", choices=["minilm", "e5", "bge-en", "bge-zh", "hashing"])
    parser.add_argument("--baseline", default=None, help="a commit whose recall asks the same store too")
    parser.add_argument(
        "--rerank-embedder",
        default=None,
        choices=["minilm", "e5", "bge-en", "bge-zh"],
        help="also ask with this embedder's cosine as the rerank stage (a second opinion), beside the plain run",
    )
    parser.add_argument("--ask-only", action="store_true", help=argparse.SUPPRESS)  # a baseline's process
    add_param_argument(parser)
    args = parser.parse_args(argv)
    if args.ask_only:
        print(json.dumps(ask(args.data, args.store, args.embedder)))
        return 0
    if not (args.store / STATES).exists():
        args.store.mkdir(parents=True, exist_ok=True)
        ingest(args.data, args.store, args.embedder)
    runs = {"this tree": ask(args.data, args.store, args.embedder)}
    if args.rerank_embedder:
        runs[f"this tree, rerank by {args.rerank_embedder}"] = ask(
            args.data, args.store, args.embedder, args.rerank_embedder
        )
    if args.param:
        runs[f"this tree, {' '.join(args.param)}"] = ask(args.data, args.store, args.embedder, params=args.param)
    if args.baseline:
        runs[f"baseline {args.baseline}"] = _in_baseline(args.baseline, args)
    labels = [label for label in next(iter(runs.values()))["by_category"] if not label.startswith("overall")]
    rows = []
    for name, run in runs.items():
        agg = run["by_category"]
        rows.append(
            [name, agg["overall 1-5"]["R@10"], agg["overall 1-5"]["R@25"], agg["overall 1-5"]["nDCG@10"],
             *(agg[label]["R@10"] for label in labels), run["no_memory"], run["latency_ms"]["p50"]]
        )  # fmt: skip
    print(
        format_table(
            [
                "recall",
                "R@10",
                "R@25",
                "nDCG@10",
                *(f"R@10 {label.split(' ', 1)[1]}" for label in labels),
                "no memory",
                "p50 ms",
            ],
            rows,
            title=f"== {args.data.name} on one store ({args.embedder}), access counts frozen ==",
        )  # fmt: skip
    )
    plain = runs["this tree"]["conversations"]
    for name, run in list(runs.items())[1:]:
        up, down = ups_and_downs(plain, run["conversations"])
        print(f"  {name}: R@10 of {up} conversations higher than this tree's defaults, {down} lower")
    print(f"  load average at the end (1/5/15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
