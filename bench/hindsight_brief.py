"""Brief's part of bench/hindsight.py: after a scripted scenario's consolidation, each of its tasks
(`hindsight_brief_tasks`) is put to `brief`, and to plain recall of the semantic layer (the baseline: what an
agent that searches with the task's words gets); a task scores when a memory meeting its expectation is among the
first three. Latency is brief's whole call, in process, on the embedded backend."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hindsight_brief_tasks import BRIEF_FACT_TASKS, BRIEF_TASKS, BriefTask
from hindsight_scenarios import Expect
from metrics import format_table
from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.brief import BriefRequest
from rearview.domain.memory import Fact
from rearview.domain.recall import RecallQuery

TOP = 3


@dataclass
class BriefScore:
    scenario: str
    task: str
    kind: str
    brief_rank: int | None
    recall_rank: int | None
    millis: float
    offered: list[str] = field(default_factory=list)


def tasks_of(scenario_name: str) -> list[BriefTask]:
    return [*BRIEF_TASKS.get(scenario_name, []), *BRIEF_FACT_TASKS.get(scenario_name, [])]


def score_tasks(
    services: Services,
    clock: ManualClock,
    namespace: str,
    scenario_name: str,
    matches: Callable[[Fact, Expect], bool],
) -> list[BriefScore]:
    """Each task of the scenario through brief and through plain recall; the rank of the first memory that
    meets the task's expectation (1-based), or None."""
    scores = []
    for task in tasks_of(scenario_name):
        started = time.perf_counter()
        response = services.briefer.brief(
            namespace, BriefRequest(task=task.task, tool=task.tool, entities=list(task.entities), as_of=clock.now())
        )
        millis = (time.perf_counter() - started) * 1000
        briefed = [services.store.get(namespace, item.memory.id) for item in response.items]
        recalled_hits = services.recaller.recall(
            namespace, RecallQuery(query=task.task, layers=["semantic"], top_k=10, as_of=clock.now()), record=False
        ).results
        recalled = [services.store.get(namespace, hit.id) for hit in recalled_hits]
        scores.append(
            BriefScore(
                scenario=scenario_name,
                task=task.task,
                kind=task.expect.kind,
                brief_rank=_rank(briefed, task.expect, matches),
                recall_rank=_rank(recalled, task.expect, matches),
                millis=millis,
                offered=[item.memory.content for item in response.items[:TOP]],
            )
        )
    return scores


def _rank(memories: Sequence[object], expect: Expect, matches: Callable[[Fact, Expect], bool]) -> int | None:
    for rank, memory in enumerate(memories, start=1):
        if isinstance(memory, Fact) and matches(memory, expect):
            return rank
    return None


def brief_summary(scores: Sequence[BriefScore]) -> dict[str, float | int]:
    main = [s for s in scores if s.kind in ("preference", "lesson")]
    facts = [s for s in scores if s.kind == "fact"]
    latencies = sorted(s.millis for s in scores)
    return {
        "tasks": len(main),
        "brief_top3": _share(main, lambda s: s.brief_rank),
        "recall_top3": _share(main, lambda s: s.recall_rank),
        "brief_top1": sum(1 for s in main if s.brief_rank == 1) / len(main) if main else 0.0,
        "fact_tasks": len(facts),
        "fact_brief_top3": _share(facts, lambda s: s.brief_rank),
        "p50_ms": statistics.median(latencies) if latencies else 0.0,
        "p95_ms": latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))] if latencies else 0.0,
    }


def _share(scores: Sequence[BriefScore], rank: Callable[[BriefScore], int | None]) -> float:
    if not scores:
        return 0.0
    return sum(1 for s in scores if (r := rank(s)) is not None and r <= TOP) / len(scores)


def brief_report(by_inducer: dict[str, Sequence[BriefScore]]) -> str:
    rows = []
    for name, scores in by_inducer.items():
        figures = brief_summary(scores)
        rows.append([
            name, figures["tasks"], f"{figures['brief_top3']:.3f}", f"{figures['brief_top1']:.3f}",
            f"{figures['recall_top3']:.3f}", f"{figures['fact_brief_top3']:.3f} of {figures['fact_tasks']}",
            f"{figures['p50_ms']:.1f}", f"{figures['p95_ms']:.1f}",
        ])  # fmt: skip
    out = [
        format_table(
            [
                "inducer",
                "tasks",
                "brief top-3",
                "brief top-1",
                "recall top-3 (baseline)",
                "facts by topic top-3",
                "p50 ms",
                "p95 ms",
            ],
            rows,
            title="== brief: the applicable preference or lesson among the first three, scripted scenarios ==",
        )  # fmt: skip
    ]
    out.append("target: brief top-3 >= 0.9")
    for name, scores in by_inducer.items():
        misses = [s for s in scores if s.brief_rank is None or s.brief_rank > TOP]
        for s in misses:
            out.append(f"  {name} miss [{s.scenario}] {s.task!r} (rank {s.brief_rank}): {s.offered}")
    return "\n".join(out)
