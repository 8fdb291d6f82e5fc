"""What the chat model doubles answer (tests/support/fake_openai_server.py, tests/support/bedrock_converse_double.py),
whatever their wire format: a script of `Step`s, one a request, and once the script is spent, answers *as a model
would*, from the cluster in the prompt, with faults injected at given rates.

TEST DOUBLE, NOT A MODEL. The answers "as a model would" are the rule inducer's: the double reads the episodes back
out of the prompt's JSON layout (`induction_prompt.user_message`), rebuilds the `Episode`s and the cluster, and
answers with the memory `RuleInducer` states for them (null where it states none). Figures measured through it
(how many memories a benchmark's consolidation induces, how often it falls back) measure the plumbing (prompt,
transport, parsing, retry, fallback) and the rules, never a model's judgement.
"""

from __future__ import annotations

import json
import random
from collections import deque
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, Literal

from rearview.domain.hindsight import EvidenceCluster, Signal
from rearview.domain.memory import Episode
from rearview.service.hindsight.rule_inducer import induce_one

RECORDED_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "induction"

# How an answer ended: normally, at the token limit, or stopped by a content filter or guardrail.
Finish = Literal["stop", "length", "filtered"]


@dataclass(frozen=True)
class Step:
    """What a double does with one request: answer `text` (None: what the rules state), or fail with an HTTP
    `status`, or send a `recorded` response body (tests/fixtures/induction/<name>.json) or a `raw` one that is not
    JSON as is; after `delay` seconds."""

    text: str | None = None
    finish: Finish = "stop"
    status: int = 200
    delay: float = 0.0
    recorded: str | None = None
    raw: str | None = None


def answer(memory: dict[str, Any] | None, reason: str = "scripted") -> Step:
    """A well-formed answer stating `memory` (None: the cluster supports nothing)."""
    return Step(text=json.dumps({"memory": memory, "reason": reason}, ensure_ascii=False))


def fenced(memory: dict[str, Any] | None, reason: str = "scripted") -> Step:
    """The same answer inside a ```json code fence, after a sentence, as many chat models write it."""
    body = json.dumps({"memory": memory, "reason": reason}, ensure_ascii=False, indent=2)
    return Step(text=f"Here is the memory:\n```json\n{body}\n```")


def invalid_json() -> Step:
    """An answer cut off in the middle of its JSON."""
    return Step(text='{"memory": {"kind": "preference", "statement": "The user prefers')


def refusal() -> Step:
    return Step(text="I'm sorry, but I can't help with that request.")


def filtered() -> Step:
    """A content filter (or Bedrock guardrail) stopped the answer."""
    return Step(text="", finish="filtered")


def slow(seconds: float) -> Step:
    """The rules' answer after `seconds` (longer than the client's timeout: the client times out)."""
    return Step(delay=seconds)


def failing(status: int) -> Step:
    return Step(status=status)


def recorded(name: str) -> Step:
    return Step(recorded=name)


def not_json() -> Step:
    """A 200 whose body is a web page, as a proxy or a base URL that is not the API's answers."""
    return Step(raw="<html><body>Bad gateway</body></html>")


@dataclass(frozen=True)
class Faults:
    """Rates (0 to 1) at which an answer from the rules is replaced by a fault, drawn per request with `seed`: an
    answer cut off in its JSON, a delay of `timeout_seconds` (set it above the client's timeout), a refusal."""

    invalid_json: float = 0.0
    timeout: float = 0.0
    refusal: float = 0.0
    seed: int = 0
    timeout_seconds: float = 2.0


@cache
def load_recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDED_DIR / f"{name}.json").read_text(encoding="utf-8"))
    return data


class ScriptedModel:
    """The scripted steps first (`script` adds more), then the rules' answers with the faults."""

    def __init__(self, *steps: Step, faults: Faults | None = None) -> None:
        self._steps: deque[Step] = deque(steps)
        self.faults = faults or Faults()
        self._rng = random.Random(self.faults.seed)

    def script(self, *steps: Step) -> None:
        self._steps.extend(steps)

    def next_step(self, prompt: str) -> Step:
        """The step for a request whose first user message is `prompt`, its text resolved."""
        step = self._steps.popleft() if self._steps else self._drawn()
        if step.text is None and step.status == 200 and step.recorded is None and step.raw is None:
            step = replace(step, text=rules_answer(prompt))
        return step

    def _drawn(self) -> Step:
        faults, roll = self.faults, self._rng.random()
        if roll < faults.invalid_json:
            return invalid_json()
        if roll < faults.invalid_json + faults.timeout:
            return slow(faults.timeout_seconds)
        if roll < faults.invalid_json + faults.timeout + faults.refusal:
            return refusal()
        return Step()


def rules_answer(prompt: str) -> str:
    """The answer of a model that states what the rule inducer states for the prompt's cluster."""
    memory = induce_one(cluster_from_prompt(prompt))
    if memory is None:
        return json.dumps({"memory": None, "reason": "the rules state nothing for this group"})
    return json.dumps({"memory": memory.model_dump(), "reason": "as the rules state it"}, ensure_ascii=False)


def cluster_from_prompt(prompt: str) -> EvidenceCluster:
    """The cluster laid out between the <group> tags of the prompt (its episodes as the prompt shows them)."""
    doc = json.loads(prompt.split("<group>", 1)[1].rsplit("</group>", 1)[0])
    recognised = doc.get("recognised")
    return EvidenceCluster(
        kind=doc["grouped_as"],
        episodes=[_episode(e) for e in doc["episodes"]],
        signal=Signal(doc["grouped_as"], **recognised) if recognised else None,
        subject=doc.get("subject"),
        key_phrase=doc.get("key_phrase"),
        shared=tuple(f"-{t[4:]}" if t.startswith("not ") else t for t in doc.get("shared") or ()),
        habit=bool(doc.get("habit")),
    )


def _episode(doc: dict[str, Any]) -> Episode:
    at = datetime.fromisoformat(doc["occurred_at"])
    last = doc.get("last_occurred_at")
    return Episode(
        id=doc["id"],
        namespace="double",
        content=doc["content"],
        created_at=at,
        occurred_at=at,
        last_occurred_at=datetime.fromisoformat(last) if last else None,
        session_id=doc.get("session"),
        session_ids=doc.get("sessions", []),
        event_type=doc.get("event_type"),
        entities=doc.get("entities", []),
        outcome=doc.get("outcome"),
        outcome_status=doc.get("outcome_status"),
        confirmations=doc.get("occurrences", 1),
    )


def usage_of(prompt_texts: list[str], answer_text: str) -> tuple[int, int]:
    """(prompt tokens, answer tokens), about four characters a token as tokenizers count English."""
    return sum(len(t) for t in prompt_texts) // 4 + 1, len(answer_text) // 4 + 1
