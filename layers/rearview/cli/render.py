"""Rich renderings of the service results: one function per result model, each returning a renderable."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rearview.domain.brief import BriefResponse, FeedbackResult
from rearview.domain.consolidate import ConsolidateResult
from rearview.domain.forget import ForgetReceipt
from rearview.domain.hindsight_runs import HindsightStats
from rearview.domain.recall import RecallResponse, RecallTrace
from rearview.domain.stats import Stats
from rearview.domain.working import SessionEnded
from rearview.domain.write import WriteResult
from rearview.errors import RunInProgress

# Candidates shown per stage of an explain trace; the trace itself carries up to 25.
TRACE_CANDIDATES_SHOWN = 10
# A stage's detail summary is cut to this many characters per value so the table stays readable.
_DETAIL_VALUE_CHARS = 60
# Ids listed in full without --verbose: as many as a person reads at a glance; more are counted.
IDS_SHOWN = 5


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
        table = memory_table("Recall", ("#", "score"))
        for rank, hit in enumerate(response.results, start=1):
            what = " · ".join(part for part in (hit.kind or hit.layer, when(hit.occurred_at), hit.id) if part)
            table.add_row(str(rank), f"{hit.score:.3f}", described_memory(hit.content, what))
        parts.append(table)
    if response.truncated:
        parts.append(Text("(truncated to token budget)", style="yellow"))
    if response.timed_out:
        parts.append(Text("(time budget spent: refinements skipped)", style="yellow"))
    if response.working:
        parts.append(_fields("Working memory", [(k, _short(v, 200)) for k, v in response.working.items()]))
    return Group(*parts)


def memory_table(title: str, columns: tuple[str, ...]) -> Table:
    """A table whose last column, `memory`, takes the width the others leave: a memory's text, and under it a dim
    line of what it is, when, and its id (so the text keeps its width at 80 columns)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in columns:
        table.add_column(column, justify="right" if column in ("#", "score") else "left", no_wrap=True)
    table.add_column("memory", overflow="fold", ratio=1)
    return table


def described_memory(content: str, what: str) -> Text:
    """A memory's text, with what it is on a dim line of its own beneath."""
    text = Text(content)
    text.append("\n" + what, style="dim")
    return text


def listed_ids(ids: list[str], verbose: bool) -> str | None:
    """The ids, each once and in order, with --verbose or when they are few, else their count and how to list
    them; None for none."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return None
    if verbose or len(unique) <= IDS_SHOWN:
        return ", ".join(unique)
    return f"{len(unique)} (--verbose lists them)"


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


def forget_receipt(receipt: ForgetReceipt, verbose: bool = False) -> RenderableType:
    total = sum(receipt.deleted.values())
    counts = ", ".join(f"{count} {layer}" for layer, count in receipt.deleted.items() if count) or "nothing"
    parts: list[RenderableType] = [Text(f"Forgot {total} in {receipt.namespace}: {counts}")]
    for label, ids in (("ids", receipt.ids), ("facts updated (provenance trimmed)", receipt.facts_updated)):
        listed = listed_ids(ids, verbose)
        if listed is not None:
            parts.append(Text(f"{label}: {listed}"))
    return Group(*parts)


def _induced(induced: dict[str, int]) -> str:
    return ", ".join(f"{count} {kind}" for kind, count in induced.items())


def consolidate_result(result: ConsolidateResult, verbose: bool = False) -> RenderableType:
    """What a run did, each memory counted once however many clusters confirmed it; ids with --verbose."""
    created = [d.memory_id for d in result.decisions if d.action in ("created", "superseded")]
    confirmed = [d.memory_id for d in result.decisions if d.action in ("confirmed", "refined")]
    kinds = ", ".join(f"{count} {kind}" for kind, count in result.induced.items() if count)
    learned = f"{len(set(created))} new ({kinds})" if created else "nothing new"
    distinct = len(set(confirmed))
    times = f" ({len(confirmed)} times)" if len(confirmed) > distinct else ""
    rows = [
        ("reason", result.reason),
        ("episodes", f"{result.episodes_considered} considered, {result.new_episodes} new"),
        ("clusters", str(result.clusters)),
        ("learned", f"{learned}, {distinct} confirmed{times}, {result.superseded} superseded"),
    ]
    if result.clusters_deferred or result.capped_by:
        rows.append(("deferred", f"{result.clusters_deferred} clusters (capped by {result.capped_by or '-'})"))
    if result.tokens:
        rows.append(("model tokens", str(result.tokens)))
    ids = listed_ids(result.fact_ids, verbose)
    if ids is not None:
        rows.append(("memories", ids))
    if result.run_id and verbose:
        rows.append(("run", result.run_id))
    return _fields(f"Consolidated {result.namespace}", rows)


def consolidate_all(outcomes: dict[str, ConsolidateResult | str]) -> RenderableType:
    """One line per namespace of `consolidate --all`: what its run induced, or why it failed."""
    if not outcomes:
        return Text("Nothing to consolidate: no namespace holds unconsolidated episodes.")
    lines = []
    for namespace, outcome in outcomes.items():
        if isinstance(outcome, ConsolidateResult):
            deferred = f", {outcome.clusters_deferred} clusters deferred" if outcome.clusters_deferred else ""
            line = Text(f"{namespace}: ok, {outcome.new_episodes} new episodes, induced {_induced(outcome.induced)}")
            line.append(deferred)
        else:
            line = Text(f"{namespace}: failed, {outcome}", style="red")
        lines.append(line)
    return Group(*lines)


def stats(stats: Stats) -> RenderableType:
    rows = [(f"{layer.replace('_', ' ')} memories", str(count)) for layer, count in stats.counts.items()]
    rows += [
        ("last write", when(stats.last_write_at)),
        ("recalls", str(stats.recall_count)),
        ("recalls with hits", str(stats.recall_hits)),
        ("hit rate", "-" if stats.hit_rate is None else f"{stats.hit_rate:.0%}"),
    ]
    table = _fields(f"Stats of {stats.namespace}", rows)
    if stats.hindsight is None:
        return table
    return Group(table, hindsight(stats.hindsight))


def hindsight(h: HindsightStats) -> RenderableType:
    """The consolidation side of stats: runs, what they induced and spent, the next trigger, and feedback."""
    rows = [
        ("runs", f"{h.runs} ({h.runs_failed} failed)"),
        ("induced", _induced(h.induced)),
        ("model tokens", str(h.tokens)),
        ("today", f"{h.today.runs} runs, {h.today.clusters} clusters, {h.today.tokens} tokens" if h.today else "-"),
        ("last run", f"{when(h.last_run_at)} ({h.last_run_reason})" if h.last_run_at else "-"),
        ("unconsolidated", f"{h.unconsolidated} episodes"),
        ("next trigger", _next_trigger(h.next_trigger)),
    ]
    parts: list[RenderableType] = [_fields("Consolidation", rows)]
    if h.feedback:
        table = Table(title="Feedback", title_justify="left")
        for column in ("kind", "useful", "not useful", "wrong", "adopted"):
            table.add_column(column, justify="left" if column == "kind" else "right")
        for kind, counts in sorted(h.feedback.items()):
            table.add_row(kind, str(counts.useful), str(counts.not_useful), str(counts.wrong), str(counts.adopted))
        parts.append(table)
    return Group(*parts)


def _next_trigger(next_trigger: dict[str, str | int | None]) -> str:
    parts = []
    needed = next_trigger.get("count_episodes_needed")
    if needed is not None:
        parts.append(f"count: {needed} more episodes")
    schedule = next_trigger.get("schedule_at")
    if isinstance(schedule, str):
        parts.append(f"schedule: {when(datetime.fromisoformat(schedule))}")
    return "; ".join(parts) or "-"


def brief_response(response: BriefResponse) -> RenderableType:
    parts: list[RenderableType] = []
    if response.no_relevant_memory:
        parts.append(Text("No preference or lesson applies.", style="yellow"))
    else:
        table = memory_table("Brief", ("#", "conf"))
        for rank, item in enumerate(response.items, start=1):
            memory = item.memory
            what = f"{memory.kind or memory.layer} · why: {item.why} · {memory.id}"
            table.add_row(str(rank), f"{item.confidence:.2f}", described_memory(memory.content, what))
        parts.append(table)
    if response.truncated:
        parts.append(Text("(truncated to token budget)", style="yellow"))
    if response.working:
        parts.append(_fields("Working memory", [(k, _short(v, 200)) for k, v in response.working.items()]))
    return Group(*parts)


def feedback_result(result: FeedbackResult) -> RenderableType:
    rows = [
        ("memory", result.memory_id),
        ("verdict", result.verdict),
        ("confidence", f"{result.confidence_before:.2f} -> {result.confidence_after:.2f}"),
        ("adopted", "yes" if result.adopted else "no"),
    ]
    if result.corrected_by:
        rows.append(("corrected by", result.corrected_by))
    return _fields("Feedback", rows)


def session_ended(ended: SessionEnded, runs: list[ConsolidateResult | RunInProgress] | None = None) -> RenderableType:
    """The end of a session; with `runs`, the consolidation its trigger ran in this process."""
    rows = [("working keys cleared", str(ended.cleared))]
    if runs:
        for run in runs:
            if isinstance(run, ConsolidateResult):
                rows.append(("consolidation", f"ran: {run.new_episodes} new episodes, induced {_induced(run.induced)}"))
            else:
                rows.append(("consolidation", f"not now: {run.message}"))
    else:
        rows.append(("consolidation", "job sent" if ended.consolidation_job_sent else "no job (trigger off)"))
    return _fields(f"Ended session {ended.session_id} of {ended.namespace}", rows)
