"""Compact text answers of the MCP tools a model reads most (`recall`, `brief`): what a model needs of each memory,
one line each, instead of the full model as JSON.

A line holds the memory's text, when it happened (or was last confirmed), its kind (episode, preference, fact,
lesson, working), a semantic memory's confidence, and its id (what `feedback`, `edit_memory` and `memory_sources`
take); a chunk of a long text says whose part it is. The verdicts (`no_relevant_memory`, `truncated`, `timed_out`)
are a sentence each, said only when they hold. `format: "json"` gives the full model instead
(`bench/mcp_answer_tokens.py` measures the two on a realistic recall).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from rearview.domain.brief import BriefResponse
from rearview.domain.recall import RecallHit, RecallResponse


def _when(value: datetime) -> str:
    """A time to the minute, UTC (a model needs no microseconds)."""
    return value.strftime("%Y-%m-%d %H:%M")


def _kind(hit: RecallHit) -> str:
    if hit.layer == "semantic":
        return hit.kind or "fact"
    return "working" if hit.layer == "working" else "episode"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def hit_line(hit: RecallHit, confidence: float | None = None) -> str:
    """One memory as a line: `- text (when, kind[, confidence 0.82][, part of <id>]; id <id>)`."""
    facts = [_when(hit.occurred_at), _kind(hit)]
    shown = confidence if confidence is not None else hit.confidence
    if shown is not None:
        facts.append(f"confidence {shown:.2f}")
    if hit.stale:
        facts.append("stale")
    if hit.parent_id is not None and hit.parent_id != hit.id:
        facts.append(f"part of {hit.parent_id}")
    return f"- {_one_line(hit.content)} ({', '.join(facts)}; id {hit.id})"


def _working_lines(working: Mapping[str, Any] | None) -> list[str]:
    if not working:
        return []
    shown = [f"{key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
             for key, value in working.items()]  # fmt: skip
    return ["Working memory of the session:", *(f"- {_one_line(line)}" for line in shown)]


def _verdicts(truncated: bool, timed_out: bool = False) -> list[str]:
    said = []
    if truncated:
        said.append("More matched than the token budget holds.")
    if timed_out:
        said.append("The time budget ran out: these are less refined.")
    return said


def recall_text(response: RecallResponse) -> str:
    """A recall's answer as compact text."""
    if response.no_relevant_memory or not response.results:
        lines = ["No relevant memory: nothing stored answers this; say so rather than guess."]
    else:
        lines = [hit_line(hit) for hit in response.results]
    lines += _verdicts(response.truncated, response.timed_out)
    if response.query_form is not None:
        left_out = [e.phrase for e in response.query_form.exclusions]
        if left_out:
            lines.append("Left out: " + "; ".join(left_out) + ".")
    return "\n".join([*lines, *_working_lines(response.working)])


def brief_text(response: BriefResponse) -> str:
    """A brief's answer as compact text: each preference or lesson with why it applies."""
    if response.no_relevant_memory or not response.items:
        lines = ["No preference or lesson applies to this task."]
    else:
        lines = [f"{hit_line(item.memory, item.confidence)} Why: {_one_line(item.why)}" for item in response.items]
    lines += _verdicts(response.truncated)
    return "\n".join([*lines, *_working_lines(response.working)])


# The text of each answer a tool may give as text, by the answer's model.
RENDERERS: dict[type[BaseModel], Callable[[Any], str]] = {RecallResponse: recall_text, BriefResponse: brief_text}
