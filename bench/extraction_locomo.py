"""Extraction at write over LoCoMo: what `extract: true` on every turn learns from real, long chats, and that recall
holds.

Each conversation is ingested twice through the write path, as bench/locomo.py ingests it, into namespaces of its
own: as is (the baseline, in the same run), and with `extract: true` on every turn (no job queue is attached, so each
batch's extraction runs as the batch is stored). Both are asked the conversation's questions (categories 1-5) as of
their time; a semantic memory in the results counts as its provenance turns, so a memory that stands for its turn
finds it and one that displaces evidence costs recall. Access counts are frozen for both.

Printed: what extraction made (by kind and dimension, with examples), recall with and without, and the time the
ingest took with and without. LoCoMo is two people talking, not a user and an assistant: each speaker's "I" reads
as the user's, which is what a deployment extracting from such transcripts gets.

    python bench/extraction_locomo.py --data ../shared/benchmarks/locomo [--embedder e5] [--conversations 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hindsight_locomo import _ask, frozen_services
from locomo import Bench, load_questions, load_turns, namespace_of
from metrics import format_table, mean
from rearview.domain.memory import Fact
from rearview.domain.search import MemoryFilter

ARMS = (("as is", False), ("extract", True))


def run(data: Path, work: Path, embedder: str, conversations: int) -> dict[str, Any]:
    turns_by_conv = load_turns(data / "locomo10_turns.jsonl")
    questions, _ = load_questions(data / "locomo10_gold.jsonl")
    services, clock, recaller = frozen_services(work, embedder, next(iter(turns_by_conv.values()))[0].ts)
    bench = Bench(services, clock)
    scores: dict[str, list[dict[str, float]]] = {arm: [] for arm, _ in ARMS}
    seconds: dict[str, float] = dict.fromkeys((arm for arm, _ in ARMS), 0.0)
    kinds: Counter[str] = Counter()
    dimensions: Counter[str] = Counter()
    examples: list[str] = []
    turns_total = 0
    for conv, turns in list(turns_by_conv.items())[:conversations]:
        asked = [q for q in questions if q.conv == conv and 1 <= q.category <= 5]
        turns_total += len(turns)
        for arm, extract in ARMS:
            namespace = namespace_of(conv) + ("-x" if extract else "")
            started = time.perf_counter()
            state = bench.ingest(namespace, turns, extract=extract)
            seconds[arm] += time.perf_counter() - started
            scores[arm] += _ask(recaller, clock, asked, state)
            if extract:
                facts = [
                    m
                    for m in services.store.list_memories(namespace, MemoryFilter(layers=("semantic",)))
                    if isinstance(m, Fact)
                ]
                kinds.update(f.kind for f in facts)
                dimensions.update(f.dimension or "-" for f in facts)
                sources = services.store.get_many(namespace, [f.provenance[0] for f in facts])
                examples += [
                    f"  {conv}: {f.content}  <- {sources[f.provenance[0]].content[:90]!r}"
                    for f in facts
                    if f.provenance[0] in sources
                ]
        print(f"{conv}: {len(turns)} turns, {len(asked)} questions", file=sys.stderr)
    services.close()
    return {
        "turns": turns_total,
        "scores": scores,
        "seconds": seconds,
        "kinds": dict(kinds),
        "dimensions": dict(dimensions),
        "examples": examples,
    }


def report(results: dict[str, Any]) -> str:
    turns = results["turns"]
    kinds = results["kinds"]
    made = format_table(
        ["turns", "memories", "preferences", "facts", "lessons", "per 100 turns"],
        [
            [
                turns,
                sum(kinds.values()),
                kinds.get("preference", 0),
                kinds.get("fact", 0),
                kinds.get("lesson", 0),
                f"{100 * sum(kinds.values()) / max(turns, 1):.1f}",
            ]
        ],  # fmt: skip
        title="== LoCoMo: what extraction at write made ==",
    )
    by_dimension = ", ".join(f"{d} {n}" for d, n in Counter(results["dimensions"]).most_common(12))
    rows = []
    for arm, _ in ARMS:
        scored = results["scores"][arm]
        rows.append([
            arm, len(scored), f"{mean([s['R@10'] for s in scored]):.3f}", f"{mean([s['R@25'] for s in scored]):.3f}",
            f"{mean([s['nDCG@10'] for s in scored]):.3f}", f"{results['seconds'][arm]:.1f}",
            f"{turns / max(results['seconds'][arm], 1e-9):.0f}",
        ])  # fmt: skip
    recall = format_table(
        ["LoCoMo, categories 1-5", "questions", "R@10", "R@25", "nDCG@10", "ingest s", "turns/s"],
        rows,
        title="== recall without extraction (baseline) and with it, same run ==",
    )
    return "\n".join(
        [
            made,
            f"by dimension: {by_dimension}",
            "",
            recall,
            "",
            "every memory, with the turn it cites:",
            *results["examples"],
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/benchmarks/locomo"))
    parser.add_argument("--embedder", choices=["minilm", "e5", "bge-en", "bge-zh", "hashing"], default="e5")
    parser.add_argument("--conversations", type=int, default=10, help="the first N conversations (10: all)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rearview-extraction-") as tmp:
        results = run(args.data, Path(tmp), args.embedder, args.conversations)
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
