"""The offline embedders side by side, MiniLM (the baseline) first, in one run: load time, throughput on memories
(texts a second, in the write path's batches), the latency of one query, and the memory each takes.

Each embedder runs in a process of its own, one after the other (the resident set of a process holds one model);
every one embeds the same texts: LoCoMo's first turns as memories ("speaker: text", as the benchmark writes them) and
its first questions as queries, or, with `--chinese`, MemoryBank's Chinese messages and probing questions. Retrieval
quality is measured by `bench/locomo.py --embedder NAME` (every figure of recall with that embedder).

    .venv/bin/python bench/embedders.py [--embedders minilm,e5,bge-en,bge-zh] [--texts 1000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metrics import format_table

LOCOMO = Path("../shared/benchmarks/locomo")
MEMORYBANK = Path("../shared/benchmarks/memorybank")
BATCH = 100  # the LoCoMo bench's write_batch size


def texts_and_queries(chinese: bool, n_texts: int, n_queries: int) -> tuple[list[str], list[str]]:
    """What every embedder embeds: memories and queries, the same for all."""
    if chinese:
        return _memorybank(n_texts, n_queries)
    turns = [json.loads(line) for line in (LOCOMO / "locomo10_turns.jsonl").open(encoding="utf-8")]
    questions = [json.loads(line) for line in (LOCOMO / "locomo10_gold.jsonl").open(encoding="utf-8")]
    return [f"{t['speaker']}: {t['text']}" for t in turns[:n_texts]], [q["question"] for q in questions[:n_queries]]


def _memorybank(n_texts: int, n_queries: int) -> tuple[list[str], list[str]]:
    history = json.loads((MEMORYBANK / "cn" / "memory_bank_cn.json").read_text(encoding="utf-8"))
    texts: list[str] = []
    for user in history.values():
        for day in user.get("history", {}).values():
            texts += [turn[key] for turn in day for key in ("query", "response") if turn.get(key)]
    queries: list[str] = []
    for line in (MEMORYBANK / "cn" / "probing_questions_cn.jsonl").open(encoding="utf-8"):
        for asked in json.loads(line).values():
            queries += [str(q) for q in asked]
    return texts[:n_texts], queries[:n_queries]


def measure(name: str, texts: list[str], queries: list[str]) -> dict[str, Any]:
    """One embedder's figures (run in a process of its own)."""
    from rearview.bootstrap import build_embedder
    from rearview.settings import Settings

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    embedder = build_embedder(Settings(embedder=name))
    embedder.embed(["load the model"])
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        embedder.embed(texts[start : start + BATCH])
    seconds = time.perf_counter() - started
    millis = []
    for query in queries:  # each once: the query cache never answers
        began = time.perf_counter()
        embedder.embed_queries([query])
        millis.append((time.perf_counter() - began) * 1000)
    return {
        "embedder": embedder.name,
        "dim": embedder.dim,
        "load_s": loaded,
        "texts_per_s": len(texts) / seconds,
        "query_ms_p50": statistics.median(millis),
        "query_ms_p95": statistics.quantiles(millis, n=20)[-1],
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_model_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--embedders", default="minilm,e5,bge-en,bge-zh", help="comma-separated; the first is the baseline"
    )
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--chinese", action="store_true", help="MemoryBank's Chinese messages and questions")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child process: measure this one
    args = parser.parse_args(argv)
    texts, queries = texts_and_queries(args.chinese, args.texts, args.queries)
    if args.one:
        print(json.dumps(measure(args.one, texts, queries)))
        return 0
    rows: list[list[object]] = []
    base: dict[str, Any] | None = None
    for name in args.embedders.split(","):
        command = [sys.executable, __file__, "--one", name, "--texts", str(args.texts), "--queries", str(args.queries)]
        done = subprocess.run(command + (["--chinese"] if args.chinese else []), capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{name}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
            continue
        got = json.loads(done.stdout.strip().splitlines()[-1])
        base = base or got
        rows.append(
            [name, got["dim"], got["load_s"], got["texts_per_s"], got["texts_per_s"] / base["texts_per_s"],
             got["query_ms_p50"], got["query_ms_p95"], got["rss_mb"], got["rss_model_mb"]]
        )  # fmt: skip
    corpus = "MemoryBank cn" if args.chinese else "LoCoMo"
    print(
        format_table(
            ["embedder", "dim", "load s", "texts/s", "x base", "query p50 ms", "query p95 ms", "RSS MB", "model MB"],
            rows,
            title=f"== embedders on {len(texts)} {corpus} texts and {len(queries)} queries, one thread each ==",
        )
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"  load average at the end (1/5/15 min): {load} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
