"""The screen in front of redaction's pattern rules (rearview.service.redaction.screen): it skips only rules that
cannot match, so redaction with it finds exactly what running every rule finds."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rearview.service.redaction import find_secrets, redact_text
from rearview.service.redaction.credentials import credential_screen
from rearview.service.redaction.personal import PERSONAL_SCREEN
from rearview.service.redaction.screen import DIGIT, Screen, requirements
from support.modules import load_module

pytestmark = pytest.mark.unit

SCREENS: tuple[Screen[Any], ...] = (credential_screen(), PERSONAL_SCREEN)  # the screens redaction uses
RULES = [rule for screen in SCREENS for rule in screen.rules]

# Prose around a secret, with the characters the requirements hinge on: case, digits, punctuation, non-ASCII text
# (the long s and the Kelvin sign match "s" and "k" under IGNORECASE), full-width forms, zero-width spaces.
AROUND = st.text(
    alphabet=st.sampled_from(list("aAsSkK09 :=_-./@'\"\nſ\u212a\u200bｓｋ密码是号")) | st.characters(codec="utf-8"),
    max_size=24,
)


def _missed(text: str) -> list[str]:
    """The rules that match `text` but that the screen left out."""
    missed = []
    for screen in SCREENS:
        kept = {id(rule) for rule in screen.candidates(text)}
        missed += [rule.pattern.pattern for rule in screen.rules if id(rule) not in kept and rule.pattern.search(text)]
    return missed


@pytest.mark.parametrize("index", range(len(RULES)), ids=[f"{i}-{rule.kind}" for i, rule in enumerate(RULES)])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data(), before=AROUND, after=AROUND)
def test_a_rule_that_matches_a_text_is_never_screened_out(
    index: int, data: st.DataObject, before: str, after: str
) -> None:
    """Every rule's own examples (drawn from its pattern), alone and in context, upper- and lower-cased."""
    example = data.draw(st.from_regex(RULES[index].pattern))
    text = before + example + after  # the context may stop the rule matching: no rule that matches may be missed
    assert RULES[index].pattern.search(example)
    assert _missed(example) == [] and _missed(text) == []
    assert _missed(text.upper()) == [] and _missed(text.lower()) == []
    assert find_secrets(text) == find_secrets(text, screened=False)


def _corpus() -> list[str]:
    """Every item of the redaction benchmark's labelled corpus (54 types, obfuscated forms included), with the
    examples the redaction tests use."""
    bench = load_module("bench/redaction_corpus.py", "redaction_corpus")
    texts = [item.text for item in bench.corpus()]
    tests = load_module("tests/unit/test_redaction.py", "test_redaction_for_screen")
    for mark in tests.test_what_the_issue_found_passing_through_is_redacted.pytestmark:
        if mark.name == "parametrize":
            texts += [case[0] for case in mark.args[1]]
    return texts


def test_the_corpus_and_every_rule_s_examples_are_redacted_identically_with_and_without_the_screen() -> None:
    texts = _corpus()
    assert len(texts) > 300, len(texts)
    differ = [t for t in texts if find_secrets(t) != find_secrets(t, screened=False)]
    assert differ == []
    found = [t for t in texts if find_secrets(t)]
    assert len(found) > len(texts) // 2  # the corpus holds secrets: the comparison is not of empty lists


def test_the_screen_skips_rules_whose_required_strings_a_text_lacks() -> None:
    text = "I went hiking with my sister on Saturday, the weather was lovely."
    kept = [rule for screen in SCREENS for rule in screen.candidates(text)]
    assert len(kept) < len(RULES) // 4
    assert find_secrets(text) == [] and redact_text(text).text == text


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (re.compile(r"secret_key=\w+", re.I), "ſecret_key=abc"),  # the long s is an "s" under IGNORECASE
        (re.compile(r"\bkey-\d+", re.I), "\u212aey-42"),  # the Kelvin sign is a "k"
        (re.compile(r"(?i:token)\s*=\s*(\w+)"), "TOKEN = x"),
        (re.compile(r"pin\s+(\d{4})"), "pin 4821"),
        (re.compile(r"密码是(\S+)", re.I), "密码是abc"),
        (re.compile(r"(?:ab|cd)+-[0-9]{2}"), "cdab-12"),
    ],
)
def test_caseless_and_digit_requirements_keep_a_rule_that_matches(pattern: re.Pattern[str], text: str) -> None:
    assert pattern.search(text)
    assert Screen([_Rule(pattern)]).candidates(text) != []


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), ({"=AIza"},)),
        (re.compile(r"\bbearer\s+\S+", re.I), ({"~bearer"},)),
        (re.compile(r"(?:ssn|социальный)\s*\d{9}", re.I), ({DIGIT},)),  # a cased non-ASCII word: no string
        (re.compile(r"x?y*(?=abc)"), ()),
    ],
)
def test_requirements_derived_from_the_parse(pattern: re.Pattern[str], expected: tuple[set[str], ...]) -> None:
    assert [set(need) for need in requirements(pattern)] == list(expected)


class _Rule:
    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
