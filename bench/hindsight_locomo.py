"""Consolidation over LoCoMo's conversations: what it learns from real, long chats, and that recall holds.

Each conversation is ingested as bench/locomo.py does (one namespace, every turn through the write path), its
questions asked once (the baseline), then the conversation is consolidated as of its last turn and the questions
asked again. A semantic memory in the results counts as its provenance turns (`ask_recall`), so a memory that
stands for the evidence finds it, and one that displaces it costs recall. Access counts are frozen for both passes.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from locomo import (
    Bench,
    ConvState,
    Question,
    _AccessNotRecorded,
    ask_recall,
    load_questions,
    load_turns,
    namespace_of,
    score,
)
from metrics import format_table, mean
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.memory import Fact
from rearview.domain.search import MemoryFilter
from rearview.ports import MemoryStore
from rearview.service.recall import RecallService
from rearview.settings import Settings


def frozen_services(work: Path, embedder: str, start: datetime) -> tuple[Services, ManualClock, RecallService]:
    """The services on a store in `work`, their clock at `start`, and a recall that records no access (so that
    asking twice ranks alike)."""
    clock = ManualClock(start)
    services = build(Settings(data_dir=work, embedder=embedder), clock=clock)
    frozen = cast(MemoryStore, _AccessNotRecorded(services.store))
    recaller = RecallService(
        frozen, services.index, services.embedder, clock, services.recaller.tuning, services.recaller.relevance_floor
    )
    return services, clock, recaller


def run_locomo(data: Path, work: Path, embedder: str) -> dict[str, Any]:
    turns_by_conv = load_turns(data / "locomo10_turns.jsonl")
    questions, _ = load_questions(data / "locomo10_gold.jsonl")
    services, clock, recaller = frozen_services(work, embedder, next(iter(turns_by_conv.values()))[0].ts)
    bench = Bench(services, clock)
    per_conv: dict[str, dict[str, Any]] = {}
    before: list[dict[str, float]] = []
    after: list[dict[str, float]] = []
    kinds: Counter[str] = Counter()
    for conv, turns in turns_by_conv.items():
        namespace = namespace_of(conv)
        state = bench.ingest(namespace, turns)
        asked = [q for q in questions if q.conv == conv and 1 <= q.category <= 5]
        before += _ask(recaller, clock, asked, state)
        clock.set(turns[-1].ts)
        started = time.perf_counter()
        result = services.consolidator.consolidate(namespace, ConsolidateRequest(max_clusters=1000))
        seconds = time.perf_counter() - started
        after += _ask(recaller, clock, asked, state)
        facts = [
            m
            for m in services.store.list_memories(namespace, MemoryFilter(layers=("semantic",)))
            if isinstance(m, Fact)
        ]
        counted = Counter(f.kind for f in facts)
        kinds.update(counted)
        per_conv[conv] = {
            "turns": len(turns),
            "counts": dict(counted),
            "seconds": seconds,
            "examples": [f.content for f in facts[:3]],
            "superseded": result.superseded,
        }
    services.close()
    return {"per_conv": per_conv, "kinds": dict(kinds), "before": before, "after": after}


def _ask(
    recaller: RecallService, clock: ManualClock, questions: list[Question], state: ConvState
) -> list[dict[str, float]]:
    out = []
    for q in questions:
        clock.set(q.ask_ts)
        _, ranked, _ = ask_recall(recaller, q)
        out.append(score(ranked, q, state))
    return out


def locomo_summary(results: dict[str, Any]) -> dict[str, Any]:
    """The figures a comparison needs: recall before and after consolidation, and how many memories it made."""
    return {
        "before_R@10": mean([s["R@10"] for s in results["before"]]),
        "after_R@10": mean([s["R@10"] for s in results["after"]]),
        "before_R@25": mean([s["R@25"] for s in results["before"]]),
        "after_R@25": mean([s["R@25"] for s in results["after"]]),
        "memories": sum(results["kinds"].values()),
        "kinds": results["kinds"],
    }


def locomo_report(results: dict[str, Any]) -> str:
    rows = []
    for conv, row in results["per_conv"].items():
        counts = row["counts"]
        rows.append([
            conv, row["turns"], counts.get("preference", 0), counts.get("fact", 0), counts.get("lesson", 0),
            row["superseded"], f"{row['seconds']:.2f}",
        ])  # fmt: skip
    kinds = results["kinds"]
    every = results["per_conv"].values()
    rows.append([
        "all", sum(r["turns"] for r in every), kinds.get("preference", 0), kinds.get("fact", 0),
        kinds.get("lesson", 0), sum(r["superseded"] for r in every), f"{sum(r['seconds'] for r in every):.2f}",
    ])  # fmt: skip
    table = format_table(
        ["conversation", "turns", "preferences", "facts", "lessons", "superseded", "consolidation s"],
        rows,
        title="== LoCoMo: what consolidation induces per conversation ==",
    )
    recall_rows = []
    for name, scored in (("before consolidation", results["before"]), ("after consolidation", results["after"])):
        recall_rows.append([
            name, len(scored), f"{mean([s['R@10'] for s in scored]):.3f}", f"{mean([s['R@25'] for s in scored]):.3f}",
            f"{mean([s['nDCG@10'] for s in scored]):.3f}",
        ])  # fmt: skip
    recall_table = format_table(
        ["LoCoMo recall", "questions", "R@10", "R@25", "nDCG@10"],
        recall_rows,
        title="== LoCoMo recall, categories 1-5 (a semantic memory counts as its provenance turns) ==",
    )
    examples = [f"  {conv}: {ex}" for conv, row in results["per_conv"].items() for ex in row["examples"][:2]]
    return "\n".join([table, "", recall_table, "", "examples:", *examples[:20]])
