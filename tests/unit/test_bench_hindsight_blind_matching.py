"""The blind hindsight suite's matching and scoring (bench/hindsight_blind_spec.py, hindsight_blind_run.py), on
hand-made memories, and the suite's shape."""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import pytest

from rearview.domain.memory import Fact
from support.modules import REPO, load_module

pytestmark = pytest.mark.unit

NOW = datetime(2026, 3, 2, tzinfo=UTC)


@pytest.fixture(scope="module")
def bench() -> Iterator[dict[str, ModuleType]]:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        names = ("spec", "run", "scenarios", "contradictions")
        yield {
            f"hindsight_blind_{n}": load_module(f"bench/hindsight_blind_{n}.py", f"hindsight_blind_{n}") for n in names
        }
    finally:
        sys.path.remove(str(REPO / "bench"))


def _fact(content: str, kind: Any = "preference", status: Any = "active") -> Fact:
    return Fact(id=content[:20], namespace="t", content=content, created_at=NOW, last_confirmed_at=NOW, kind=kind,
                status=status)  # fmt: skip


def test_a_group_splits_at_bars_outside_a_regex_brackets(bench: dict[str, ModuleType]) -> None:
    spec = bench["hindsight_blind_spec"]
    assert spec.terms("a|re:(x|y) z|b") == ["a", "re:(x|y) z", "b"]
    assert spec.terms(r"re:[|]\(|c") == [r"re:[|]\(", "c"]


def test_a_want_needs_every_concept_no_forbidden_term_and_its_kind(bench: dict[str, ModuleType]) -> None:
    spec = bench["hindsight_blind_spec"]
    want = spec.held("preference", "emoji|表情", "no |n't|不", forbid=("re:(prefers|likes) emoji(?!-free)",))
    assert spec.states(want, "preference", "The user doesn't want emoji in replies")
    assert spec.states(want, "preference", "Ｎｏ  Emoji, please")  # full-width and spacing folded
    assert spec.states(want, "preference", "用户不要表情符号")
    assert not spec.states(want, "preference", "The user likes emoji, no doubt")
    assert not spec.states(want, "preference", "The user wants emoji")  # the negation is missing
    assert not spec.states(want, "fact", "The user doesn't want emoji")
    assert "lacks" in spec.judge(want, "preference", "The user wants emoji").reason
    also = spec.held("preference", "halal", also=("fact",))
    assert spec.states(also, "fact", "The user eats halal food")


def test_a_lesson_names_its_failure_by_its_error_or_as_a_failure(bench: dict[str, ModuleType]) -> None:
    spec = bench["hindsight_blind_spec"]
    want = spec.lesson("upload", "timeout", fix=("chunk|分片",))
    assert spec.states(want, "lesson", "drive upload: failed 3 times; chunked upload worked")
    assert spec.says_fix(want, "drive upload: failed 3 times; chunked upload worked")
    assert not spec.says_fix(want, "drive upload timed out 3 times")
    assert not spec.states(want, "lesson", "drive upload worked")


def test_a_scenario_scores_held_superseded_and_forbidden_memories(bench: dict[str, ModuleType]) -> None:
    spec, run = bench["hindsight_blind_spec"], bench["hindsight_blind_run"]
    scenario = spec.Scenario("t", "change", "en", ((spec.Ep("x", 0, "s"),),), (
        spec.held("preference", "tea"),
        spec.old("preference", "coffee", forbid=("quit",)),
        spec.maybe("fact", "green"),
        spec.never("sugar"),
    ))  # fmt: skip
    memories = [
        _fact("The user drinks tea and quit coffee"),
        _fact("The user drinks coffee", status="superseded"),
        _fact("The user likes green things", kind="fact"),
        _fact("The user takes sugar"),
    ]
    result = run.ScenarioResult("t", "change", "en")
    run.score_scenario(scenario, memories, {}, result)
    assert [w.ok for w in result.wants] == [True, True, True, False]
    assert [m.right for m in result.memories] == [True, None, True, False]
    assert not result.right
    stale = run.ScenarioResult("t", "change", "en")
    run.score_scenario(scenario, [_fact("The user drinks coffee"), _fact("tea")], {}, stale)
    assert not stale.wants[1].ok and stale.wants[1].why.startswith("still active")


@pytest.mark.parametrize(
    ("label", "held_status", "later_active", "caught", "false_supersede", "right"),
    [
        ("contradicts", "superseded", True, True, False, True),
        ("contradicts", "active", True, False, False, False),
        ("confirms", "superseded", True, False, True, False),
        ("unrelated", "active", True, False, False, True),
        ("refines", "superseded", True, False, False, True),  # merged: the held meaning is still active
    ],
)
def test_a_pair_scores_by_its_label(
    bench: dict[str, ModuleType],
    label: str,
    held_status: str,
    later_active: bool,
    caught: bool,
    false_supersede: bool,
    right: bool,
) -> None:
    spec, run = bench["hindsight_blind_spec"], bench["hindsight_blind_run"]
    held_means = spec.held("fact", "leeds")
    case = spec.ContradictionCase("p", "en", label, "The user lives in Leeds", "fact", held_means,
                                  "later", "fact", spec.held("fact", "york"))  # fmt: skip
    old = _fact("The user lives in Leeds", kind="fact", status=held_status)
    later = _fact("The user lives in York, not Leeds" if label != "unrelated" else "Her sister lives in York", "fact")
    result = run.PairResult("p", "en", label, "statement", "-", False, False)
    run.score_pair(case, old.id, [old, later] if later_active else [old], {}, result)
    assert (result.caught, result.false_supersede, result.right) == (caught, false_supersede, right)


def test_the_suite_has_its_size_languages_and_valid_rules(bench: dict[str, ModuleType]) -> None:
    spec = bench["hindsight_blind_spec"]
    scenarios = bench["hindsight_blind_scenarios"].SCENARIOS
    pairs = bench["hindsight_blind_contradictions"].CONTRADICTIONS
    assert len(scenarios) >= 60 and sum(s.language == "zh" for s in scenarios) * 3 >= len(scenarios)
    assert {s.category for s in scenarios} == {"preference", "fact", "lesson", "change", "negative"}
    assert len(pairs) >= 30
    assert Counter(p.label for p in pairs).keys() == {"contradicts", "confirms", "refines", "unrelated"}
    ids = [s.id for s in scenarios] + [p.id for p in pairs]
    assert len(ids) == len(set(ids))
    wants = [w for s in scenarios for w in s.wants] + [w for p in pairs for w in (p.held_means, p.later_means)]
    for want in wants:
        for term in (t for g in (*want.concepts, *want.forbid, *want.fix) for t in spec.terms(g)):
            assert term and (not term.startswith("re:") or re.compile(term[3:]))
