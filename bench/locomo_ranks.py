"""Where recall ranks the evidence it misses: for each LoCoMo category, the share of evidence turns in recall's first
10, at 11-25, 26-50, 51-100, or not in the first 100 (the most a query returns), on one ingested store (see
`locomo_ask.py`; access counts frozen). A miss at rank 11-50 is the ranking's to mend; one past 100 is candidate
generation's (the turn is not found at all).

    .venv/bin/python bench/locomo_ranks.py --data ../shared/benchmarks/locomo --store .bench/locomo-e5
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import locomo
from locomo_ask import STATES, frozen_recall, ingest
from metrics import dedup_ids, format_table

BUCKETS = [(1, 10, "1-10"), (11, 25, "11-25"), (26, 50, "26-50"), (51, 100, "51-100")]
PAST = "past 100"


def bucket(rank: int | None) -> str:
    for low, high, name in BUCKETS:
        if rank is not None and low <= rank <= high:
            return name
    return PAST


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--embedder", default="e5")
    args = parser.parse_args(argv)

    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.domain.recall import RecallQuery
    from rearview.settings import Settings

    if not (args.store / STATES).exists():
        ingest(args.data, args.store, args.embedder)
    with (args.store / STATES).open("rb") as f:
        states = pickle.load(f)  # noqa: S301 - our own file
    questions, _ = locomo.load_questions(args.data / "locomo10_gold.jsonl")
    names = locomo.category_names(args.data / "locomo10_gold.jsonl")
    clock = ManualClock()
    services = build(Settings(embedder=args.embedder, data_dir=args.store), clock=clock)
    recaller = frozen_recall(services, clock)
    counts: dict[str, Counter[str]] = {name: Counter() for name in names.values()}
    try:
        for q in questions:
            clock.set(q.ask_ts)
            query = RecallQuery(query=q.question, top_k=100, as_of=q.ask_ts, token_budget=32_000)
            resp = recaller.recall(locomo.namespace_of(q.conv), query)
            state = states[q.conv]
            ranked = [
                state.alias.get(i, i) for i in dedup_ids([h.id, *h.provenance, *h.collapsed] for h in resp.results)
            ]
            for gold in q.gold:
                wanted = state.alias.get(gold, gold)
                counts[names[q.category]][bucket(ranked.index(wanted) + 1 if wanted in ranked else None)] += 1
    finally:
        services.close()
    columns = [name for _, _, name in BUCKETS] + [PAST]
    rows = []
    for name, counted in counts.items():
        total = sum(counted.values())
        rows.append([name, f"{total:,}", *(f"{counted[c] / max(total, 1):.3f}" for c in columns)])
    title = f"== where recall ranks each evidence turn ({args.embedder}, first 100 asked) =="
    print(format_table(["category", "evidence turns", *columns], rows, title=title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
