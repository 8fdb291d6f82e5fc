"""Retrieval metrics for the benchmarks: recall@k, recall_all@k, binary nDCG@k, session recall_any@k.

A ranked list is a list of ids, best first, with duplicates already removed (`dedup_ids`). Gold ids may be
`resolved` through an alias map first: a LoCoMo turn that the write path merged into another memory counts as
found when that memory is returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence


def dedup_ids(groups: Iterable[Iterable[str]]) -> list[str]:
    """Flatten groups of ids (a result's id, provenance, folded near-duplicates), first occurrences kept."""
    return list(dict.fromkeys(i for group in groups for i in group))


def resolve_gold(gold: Sequence[str], alias: Mapping[str, str] | None = None) -> list[str]:
    """Gold ids, deduplicated in order, each replaced by the id it survives as (itself if not aliased)."""
    alias = alias or {}
    return [alias.get(g, g) for g in dict.fromkeys(gold)]


def recall_at_k(ranked: Sequence[str], gold: Sequence[str], k: int, alias: Mapping[str, str] | None = None) -> float:
    """Share of the (distinct) gold ids found in the first k ranked ids."""
    targets = resolve_gold(gold, alias)
    if not targets:
        raise ValueError("recall is undefined without gold ids")
    top = set(ranked[:k])
    return sum(1 for t in targets if t in top) / len(targets)


def recall_all_at_k(
    ranked: Sequence[str], gold: Sequence[str], k: int, alias: Mapping[str, str] | None = None
) -> float:
    """1.0 if every gold id is in the first k ranked ids, else 0.0."""
    return 1.0 if recall_at_k(ranked, gold, k, alias) == 1.0 else 0.0


def ndcg_at_k(ranked: Sequence[str], gold: Sequence[str], k: int, alias: Mapping[str, str] | None = None) -> float:
    """Binary-relevance nDCG@k: DCG = sum of 1/log2(rank+1) over relevant ranked ids, over the ideal DCG."""
    relevant = set(resolve_gold(gold, alias))
    if not relevant:
        raise ValueError("nDCG is undefined without gold ids")
    dcg = sum(1.0 / math.log2(rank + 1) for rank, rid in enumerate(ranked[:k], start=1) if rid in relevant)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
    return dcg / ideal


def session_recall_any_at_k(
    ranked: Sequence[str], gold_sessions: Iterable[int], k: int, sessions_of: Callable[[str], Iterable[int]]
) -> float:
    """1.0 if a gold session is among the sessions of the first k ranked ids, else 0.0.

    `sessions_of` gives the sessions a returned id stands for (its own, plus those of turns merged into it).
    """
    wanted = set(gold_sessions)
    return 1.0 if any(not wanted.isdisjoint(sessions_of(rid)) for rid in ranked[:k]) else 0.0


def percentile(values: Sequence[float], pct: float) -> float:
    """The pct-th percentile (0..100) with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean; NaN for no values (an empty category prints as such rather than as 0)."""
    return sum(values) / len(values) if values else float("nan")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned; floats with 3 decimals."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return "-" if math.isnan(value) else f"{value:.3f}"
        return str(value)

    text_rows = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in text_rows]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        rest = [v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True)]
        parts = [values[0].ljust(widths[0]), *rest]
        return "  ".join(parts).rstrip()

    out = []
    if title:
        out.append(title)
    out.append(line(list(headers)))
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(r) for r in text_rows)
    return "\n".join(out)
