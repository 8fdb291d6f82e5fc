"""Running one scenario or one contradiction pair of the blind hindsight suite through the public API, and scoring
what is held afterwards against what a correct system holds (hindsight_blind_spec).

Every scenario and every pair gets a fresh namespace. Episodes are written one by one through the write path with
the clock set to their time; consolidation runs after each phase, two hours after its last episode. What is held is
read back through the listing (semantic layer, superseded history included), as a user of the API would.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hindsight_blind_scenarios import FILLERS_EN, FILLERS_ZH
from hindsight_blind_spec import ContradictionCase, Ep, Scenario, Want, judge, says_fix, states
from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.listing import ListQuery
from rearview.domain.memory import Fact, Kind
from rearview.domain.write import MemoryWrite

T0 = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
# One-off errands woven into every scenario: what an agent's log holds between the episodes that matter.
FILLERS_PER_SCENARIO = 3
# Consolidation runs this long after a phase's last episode (as a session-end or schedule trigger would).
SETTLE = timedelta(hours=2)
# When the later statement of a contradiction pair written directly comes, after the held memory.
LATER_DAY = 10.0
# How much of each source episode the results show beside a memory.
SOURCE_CHARS = 80


@dataclass
class Held:
    """A semantic memory held afterwards, and how it scored."""

    kind: str
    status: str
    content: str
    right: bool | None = None
    sources: list[str] = field(default_factory=list)


@dataclass
class WantResult:
    label: str
    role: str
    kind: str
    ok: bool
    says_fix: bool | None = None
    why: str = ""


@dataclass
class ScenarioResult:
    id: str
    category: str
    language: str
    wants: list[WantResult] = field(default_factory=list)
    memories: list[Held] = field(default_factory=list)
    seconds: float = 0.0
    tokens: int = 0
    fallbacks: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def right(self) -> bool:
        """Everything a correct system holds is held, and nothing wrong is."""
        wants_ok = all(w.ok for w in self.wants if w.role != "optional")
        return self.error is None and wants_ok and not any(m.right is False for m in self.memories)


@dataclass
class PairResult:
    id: str
    language: str
    label: str
    mode: str
    held_status: str
    held_meaning_active: bool
    later_meaning_active: bool
    caught: bool = False
    false_supersede: bool = False
    right: bool = False
    memories: list[Held] = field(default_factory=list)
    seconds: float = 0.0
    tokens: int = 0
    error: str | None = None


# --- reading what is held ---------------------------------------------------------------------------------------


def read_namespace(services: Services, namespace: str) -> tuple[list[Fact], dict[str, str]]:
    """Every semantic memory of the namespace (superseded ones included) and the text of every episode by id,
    through the listing."""
    facts: list[Fact] = []
    texts: dict[str, str] = {}
    cursor: str | None = None
    while True:
        page = services.listing.page(namespace, ListQuery(include_superseded=True, limit=500, cursor=cursor))
        facts += [m for m in page.items if isinstance(m, Fact)]
        texts.update({m.id: m.content for m in page.items if not isinstance(m, Fact)})
        cursor = page.next_cursor
        if cursor is None:
            return facts, texts


def as_held(memory: Fact, texts: dict[str, str]) -> Held:
    """A memory as the results show it, with the episodes it was learnt from."""
    sources = [texts.get(i, i)[:SOURCE_CHARS] for i in memory.provenance]
    return Held(memory.kind, memory.status, memory.content, sources=sources)


def _states_any(want: Want, memories: list[Fact]) -> bool:
    return any(states(want, m.kind, m.content) for m in memories)


def _closest(want: Want, memories: list[Fact]) -> str:
    """Why no memory states `want`: the verdict on the memory that came closest (fewest concepts missing)."""
    if not memories:
        return "nothing held"
    verdicts = [(judge(want, m.kind, m.content), m) for m in memories]
    verdict, memory = min(verdicts, key=lambda pair: len(pair[0].missing))
    return f"closest [{memory.kind}/{memory.status}] {memory.content[:120]!r} {verdict.reason}"


# --- one scenario -----------------------------------------------------------------------------------------------


def _ep_time(day: float) -> datetime:
    return T0 + timedelta(days=day)


def write_episode(services: Services, clock: ManualClock, namespace: str, ep: Ep) -> None:
    when = _ep_time(ep.day)
    clock.set(when)
    services.writer.write(
        namespace,
        MemoryWrite(
            content=ep.text,
            occurred_at=when,
            session_id=ep.session,
            event_type=ep.event_type,
            entities=list(ep.entities),
            outcome=ep.outcome,
            outcome_status=ep.outcome_status,
        ),
    )


def fillers_for(scenario: Scenario) -> list[Ep]:
    """A few one-off errands in the scenario's language, on days within its span (the same ones every run)."""
    rng = random.Random(scenario.id)
    pool = FILLERS_ZH if scenario.language == "zh" else FILLERS_EN
    days = [e.day for e in scenario.episodes]
    out = []
    for i, text in enumerate(rng.sample(pool, FILLERS_PER_SCENARIO)):
        event = "agent_action" if text.startswith(("Agent", "助手")) else "user_request"
        out.append(Ep(text, round(rng.uniform(min(days), max(days)), 3), f"misc-{i}", event_type=event))
    return out


def phases_with_fillers(scenario: Scenario) -> list[list[Ep]]:
    """The scenario's phases, each with the fillers that fall on its days, in time order."""
    fillers = fillers_for(scenario)
    out = []
    start = float("-inf")
    for phase in scenario.phases:
        end = max(e.day for e in phase)
        mine = [f for f in fillers if start < f.day <= end]
        out.append(sorted([*phase, *mine], key=lambda e: e.day))
        start = end
    return out


def run_scenario(services: Services, clock: ManualClock, scenario: Scenario) -> ScenarioResult:
    result = ScenarioResult(scenario.id, scenario.category, scenario.language)
    namespace = f"blind:{scenario.id}"
    started = time.perf_counter()
    try:
        for phase in phases_with_fillers(scenario):
            for ep in phase:
                write_episode(services, clock, namespace, ep)
            _consolidate(services, clock, namespace, max(e.day for e in phase), result)
        score_scenario(scenario, *read_namespace(services, namespace), result)
    except Exception as exc:  # a crash is a result too: the scenario scores as wrong, the suite goes on
        result.error = f"{type(exc).__name__}: {exc}"[:500]
    result.seconds = time.perf_counter() - started
    return result


def _consolidate(
    services: Services, clock: ManualClock, namespace: str, last_day: float, result: ScenarioResult | PairResult
) -> None:
    clock.set(_ep_time(last_day) + SETTLE)
    outcome = services.consolidator.consolidate(namespace, ConsolidateRequest())
    result.tokens += getattr(outcome, "tokens", 0) or 0
    fallback = getattr(outcome, "fallback", None)
    if fallback and isinstance(result, ScenarioResult):
        result.fallbacks.append(str(fallback)[:200])


def score_scenario(scenario: Scenario, memories: list[Fact], texts: dict[str, str], result: ScenarioResult) -> None:
    active = [m for m in memories if m.status == "active"]
    history = [m for m in memories if m.status != "active"]
    for want in scenario.wants:
        result.wants.append(_score_want(want, active, history))
    scored = [w for w in scenario.wants if w.role in ("active", "optional")]
    forbidden = [w for w in scenario.wants if w.role == "absent"]
    for memory in memories:
        held = as_held(memory, texts)
        if memory.status == "active":
            good = any(states(w, memory.kind, memory.content) for w in scored)
            bad = any(states(w, memory.kind, memory.content) for w in forbidden)
            held.right = good and not bad
        result.memories.append(held)


def _score_want(want: Want, active: list[Fact], history: list[Fact]) -> WantResult:
    out = WantResult(want.label(), want.role, want.kind, ok=False)
    if want.role in ("active", "optional"):
        out.ok = _states_any(want, active)
        if want.fix:
            out.says_fix = any(states(want, m.kind, m.content) and says_fix(want, m.content) for m in active)
        if not out.ok:
            out.why = _closest(want, active + history)
        elif want.fix and not out.says_fix:
            out.why = "held, but does not say what worked"
    elif want.role == "superseded":
        in_history, still_active = _states_any(want, history), _states_any(want, active)
        out.ok = in_history and not still_active
        if still_active:
            out.why = "still active: " + next(m.content for m in active if states(want, m.kind, m.content))[:120]
        elif not in_history:
            out.why = "not in the superseded history; " + _closest(want, history)
    else:
        violators = [m for m in active if states(want, m.kind, m.content)]
        out.ok = not violators
        if violators:
            out.why = f"held: [{violators[0].kind}] {violators[0].content[:120]!r}"
    return out


# --- one contradiction pair ---------------------------------------------------------------------------------------


def run_pair(services: Services, clock: ManualClock, case: ContradictionCase) -> PairResult:
    namespace = f"blind-c:{case.id}"
    mode = "statement" if isinstance(case.later, str) else "episodes"
    result = PairResult(case.id, case.language, case.label, mode, "-", False, False)
    started = time.perf_counter()
    try:
        clock.set(T0)
        held_id = services.writer.write(namespace, _semantic(case.held, case.held_kind)).id
        last_day = _write_later(services, clock, namespace, case)
        _consolidate(services, clock, namespace, last_day, result)
        score_pair(case, held_id, *read_namespace(services, namespace), result)
    except Exception as exc:  # a crash is a result too: the pair scores as wrong, the suite goes on
        result.error = f"{type(exc).__name__}: {exc}"[:500]
    result.seconds = time.perf_counter() - started
    return result


def _semantic(content: str, kind: Kind) -> MemoryWrite:
    return MemoryWrite(layer="semantic", content=content, kind=kind)


def _write_later(services: Services, clock: ManualClock, namespace: str, case: ContradictionCase) -> float:
    """Write the later statement; returns its (last) day."""
    if isinstance(case.later, str):
        clock.set(_ep_time(LATER_DAY))
        services.writer.write(namespace, _semantic(case.later, case.later_kind))
        return LATER_DAY
    for ep in case.later:
        write_episode(services, clock, namespace, ep)
    return max(e.day for e in case.later)


def score_pair(
    case: ContradictionCase, held_id: str, memories: list[Fact], texts: dict[str, str], result: PairResult
) -> None:
    active = [m for m in memories if m.status == "active"]
    held = next((m for m in memories if m.id == held_id), None)
    result.held_status = held.status if held is not None else "gone"
    result.held_meaning_active = _states_any(case.held_means, active)
    result.later_meaning_active = _states_any(case.later_means, active)
    superseded = result.held_status != "active"
    if case.label == "contradicts":
        result.caught = superseded and result.later_meaning_active
        result.right = result.caught
    elif case.label == "refines":
        result.false_supersede = superseded and not result.held_meaning_active
        result.right = result.held_meaning_active and result.later_meaning_active
    else:
        result.false_supersede = superseded
        result.right = not superseded and (case.label == "confirms" or result.later_meaning_active)
    result.memories = [as_held(m, texts) for m in memories]


def as_json(result: ScenarioResult | PairResult) -> dict[str, Any]:
    data = asdict(result)
    if isinstance(result, ScenarioResult):
        data["right"] = result.right
    return data
