"""Rich renderings of the service results: one function per result model, each returning a renderable."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rearview.domain.consolidate import ConsolidateResult
from rearview.domain.forget import ForgetReceipt
from rearview.domain.recall import RecallResponse, RecallTrace
from rearview.domain.stats import Stats
from rearview.domain.write import WriteResult

# Candidates shown per stage of an explain trace; the trace itself carries up to 25.
TRACE_CANDIDATES_SHOWN = 10
# A stage's detail summary is cut to this many characters per value so the table stays readable.
_DETAIL_VALUE_CHARS = 60


def when(value: datetime | None) -> str:
    """A UTC timestamp to the minute, the resolution a person reads a memory's date at."""
    if value is None:
        return "-"
    return value.strftime("%Y-%m-%d %H:%M")


def _fields(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for name, value in rows:
        table.add_row(name, value)
    return table


def write_result(result: WriteResult) -> RenderableType:
    rows = [
        ("status", result.status),
        ("id", result.id),
        ("reason", result.reason or "-"),
        ("redacted", "yes" if result.redacted else "no"),
    ]
    if result.importance is not None:
        rows.append(("importance", f"{result.importance:.2f}"))
    if result.merged_into:
        rows.append(("merged into", result.merged_into))
    if result.superseded:
        rows.append(("superseded", ", ".join(result.superseded)))
    return _fields("Write", rows)


def recall_response(response: RecallResponse) -> RenderableType:
    parts: list[RenderableType] = []
    if response.time_range:
        rng = response.time_range
        parts.append(Text(f"time filter: {rng.get('expression')} -> {rng.get('since')} .. {rng.get('until')}"))
    parts.extend(_query_form(response))
    if response.no_relevant_memory or not response.results:
        parts.append(Text("No relevant memory.", style="yellow"))
    else:
        table = Table(title="Recall", title_justify="left")
        table.add_column("rank", justify="right")
        table.add_column("score", justify="right")
        table.add_column("layer")
        table.add_column("when", no_wrap=True)
        table.add_column("content", overflow="fold", ratio=1)
        table.add_column("id", overflow="fold")
        for rank, hit in enumerate(response.results, start=1):
            table.add_row(str(rank), f"{hit.score:.3f}", hit.layer, when(hit.occurred_at), hit.content, hit.id)
        parts.append(table)
    if response.truncated:
        parts.append(Text("(truncated to token budget)", style="yellow"))
    if response.timed_out:
        parts.append(Text("(time budget spent: refinements skipped)", style="yellow"))
    if response.working:
        parts.append(_fields("Working memory", [(k, _short(v, 200)) for k, v in response.working.items()]))
    return Group(*parts)


def _query_form(response: RecallResponse) -> list[RenderableType]:
    """A line per form the query used: the latest first, and each exclusion with how many memories it left out."""
    form = response.query_form
    if form is None:
        return []
    lines: list[RenderableType] = []
    if form.last_time:
        lines.append(Text(f"'{form.last_time}': the most recent relevant episode first"))
    for exclusion in form.exclusions:
        what = "the latest match" if exclusion.refers_back else "memories about it"
        lines.append(Text(f"excluded '{exclusion.phrase}' ({what}): {len(exclusion.left_out)} left out"))
    return lines


def _short(value: Any, limit: int = _DETAIL_VALUE_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _detail_summary(detail: dict[str, Any]) -> str:
    return "\n".join(f"{key}={_short(value)}" for key, value in detail.items() if value not in (None, {}, []))


def trace(trace: RecallTrace) -> RenderableType:
    """The stage table (stage, ms, detail, candidates count) and then each stage's top candidates."""
    summary = Table(title=f"Trace (as of {trace.as_of.isoformat()}, {trace.total_millis:.1f} ms)", title_justify="left")
    summary.add_column("stage")
    summary.add_column("ms", justify="right")
    summary.add_column("detail", overflow="fold", ratio=1)
    summary.add_column("candidates", justify="right")
    for stage in trace.stages:
        summary.add_row(stage.stage, f"{stage.millis:.2f}", _detail_summary(stage.detail), str(len(stage.candidates)))
    parts: list[RenderableType] = [summary]
    for stage in trace.stages:
        if not stage.candidates:
            continue
        shown = stage.candidates[:TRACE_CANDIDATES_SHOWN]
        columns = list(dict.fromkeys(key for row in shown for key in row))
        table = Table(title=f"{stage.stage}: top {len(shown)} of {len(stage.candidates)}", title_justify="left")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in shown:
            table.add_row(*(_cell(row.get(column)) for column in columns))
        parts.append(table)
    return Group(*parts)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        # Scores span BM25 values near zero and cosines near one: significant digits, not decimals.
        return f"{value:.4g}"
    return _short(value)


def forget_receipt(receipt: ForgetReceipt) -> RenderableType:
    total = sum(receipt.deleted.values())
    table = Table(title=f"Forgot {total} in {receipt.namespace}", title_justify="left")
    table.add_column("layer")
    table.add_column("deleted", justify="right")
    for layer, count in receipt.deleted.items():
        table.add_row(layer, str(count))
    parts: list[RenderableType] = [table]
    if receipt.ids:
        parts.append(Text("ids: " + ", ".join(receipt.ids)))
    if receipt.facts_updated:
        parts.append(Text("facts updated (provenance trimmed): " + ", ".join(receipt.facts_updated)))
    return Group(*parts)


def consolidate_result(result: ConsolidateResult) -> RenderableType:
    rows = [
        ("episodes considered", str(result.episodes_considered)),
        ("clusters", str(result.clusters)),
        ("facts created", str(result.facts_created)),
        ("facts confirmed", str(result.facts_confirmed)),
        ("episodes consolidated", str(result.episodes_consolidated)),
    ]
    if result.fact_ids:
        rows.append(("fact ids", ", ".join(result.fact_ids)))
    return _fields(f"Consolidated {result.namespace}", rows)


def stats(stats: Stats) -> RenderableType:
    rows = [(f"{layer.replace('_', ' ')} memories", str(count)) for layer, count in stats.counts.items()]
    rows += [
        ("last write", when(stats.last_write_at)),
        ("recalls", str(stats.recall_count)),
        ("recalls with hits", str(stats.recall_hits)),
        ("hit rate", "-" if stats.hit_rate is None else f"{stats.hit_rate:.0%}"),
    ]
    return _fields(f"Stats of {stats.namespace}", rows)
