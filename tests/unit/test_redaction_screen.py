"""Redaction's rules and the screen in front of them (rearview.service.redaction): every rule runs on RE2, so its
time is linear in the text by construction; the keywords each rule declares are in every text it matches, so the
screen skips only rules that cannot match and redaction with it finds exactly what running every rule finds; and the
work around the rules is bounded by the text (the split-by-spaces windows, the overlap bookkeeping)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rearview.service.redaction import find_secrets, redact_text
from rearview.service.redaction.credentials import OUR_RULES, credential_screen, library_rules
from rearview.service.redaction.normalise import normalise
from rearview.service.redaction.personal import PERSONAL_SCREEN
from rearview.service.redaction.rules import DIGIT, Finding, PatternRule, Subject
from rearview.service.redaction.screen import Screen
from rearview.service.redaction.spaced import WINDOW_AFTER, WINDOW_BEFORE, windows
from rearview.service.redaction.text import _chosen
from support.modules import load_module

pytestmark = pytest.mark.unit

SCREENS: tuple[Screen[Any], ...] = (credential_screen(), PERSONAL_SCREEN)  # the screens redaction uses
RULES: list[PatternRule] = [rule for screen in SCREENS for rule in screen.rules]
ADVERSARIAL = load_module("bench/redaction_adversarial.py", "redaction_adversarial")
BENCH = load_module("bench/redaction_corpus.py", "redaction_corpus")

# Prose around a secret, with the characters keywords hinge on: case, digits, punctuation, non-ASCII text, full-width
# forms, zero-width spaces, Cyrillic look-alikes.
AROUND = st.text(
    alphabet=st.sampled_from(list("aAsSkK09 :=_-./@'\"\nſ\u212a\u200bｓｋ密码是号АКр")) | st.characters(codec="utf-8"),
    max_size=24,
)


def _held(rule: PatternRule, text: str) -> bool:
    """Whether `text` holds one of the rule's keywords, as the screen reads it."""
    return not rule.keywords or not Screen([rule]).present(text).isdisjoint(rule.keywords)


def _python_syntax(pattern: str) -> str:
    """An RE2 pattern in Python's syntax, for hypothesis to draw examples from (`\\z` is Python's `\\Z`)."""
    return pattern.replace(r"\z", r"\Z")


def test_every_rule_runs_on_re2_the_linear_time_engine() -> None:
    assert len(RULES) > 100
    for rule in RULES:
        assert isinstance(rule, PatternRule), rule
        assert isinstance(rule.compiled, re2._Regexp), rule.kind
        assert not isinstance(rule.compiled, re.Pattern), rule.kind


def test_every_library_pattern_is_taken() -> None:
    """detect-secrets' patterns that RE2 cannot read as written are rewritten, none left out: a library update
    that brings a pattern the rewriting does not cover fails here, not silently in production."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    plugins = get_mapping_from_secret_type_to_class()
    expected = sum(
        len(vars(plugin)["denylist"])
        for secret_type, plugin in plugins.items()
        if secret_type != "Public IP (ipv4)" and issubclass(plugin, RegexBasedDetector)
    )
    assert len(library_rules()) == expected


@pytest.mark.slow  # every rule's drawn examples: about 14 s of the fast tier
@pytest.mark.parametrize("index", range(len(RULES)), ids=[f"{i}-{rule.kind}" for i, rule in enumerate(RULES)])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data(), before=AROUND, after=AROUND)
def test_a_rule_s_keywords_are_in_every_text_it_matches(
    index: int, data: st.DataObject, before: str, after: str
) -> None:
    """Every rule's own examples (drawn from its pattern), alone and in context, upper- and lower-cased."""
    rule = RULES[index]
    example = data.draw(st.from_regex(_python_syntax(rule.pattern)))
    for text in (example, before + example + after):
        for variant in (text, text.upper(), text.lower()):
            norm = normalise(variant).text
            if list(rule.findings(norm)):  # what it finds (a match its check refuses is no finding)
                assert _held(rule, norm), (rule.kind, variant)
            assert find_secrets(variant) == find_secrets(variant, screened=False)


def _texts() -> list[str]:
    """The labelled corpus (its 54 types, obfuscated forms included), issue 40's forms and clean sentences, the
    examples the redaction tests use, and the adversarial corpus at 2 KiB."""
    texts = [item.text for item in (*BENCH.corpus(), *BENCH.hardening_corpus(), *BENCH.clean_corpus())]
    tests = load_module("tests/unit/test_redaction.py", "test_redaction_for_screen")
    for mark in tests.test_what_the_issue_found_passing_through_is_redacted.pytestmark:
        if mark.name == "parametrize":
            texts += [case[0] for case in mark.args[1]]
    keywords = {f"{i}": rule.keywords for i, rule in enumerate(RULES)}
    texts += [text.text for text in ADVERSARIAL.corpus(keywords, size=2048)]
    return texts


@pytest.mark.slow  # thousands of texts
def test_every_match_in_the_corpora_holds_its_rule_s_keyword() -> None:
    texts = list(dict.fromkeys(normalise(text).text for text in _texts()))
    assert len(texts) > 2000, len(texts)
    missing = [
        (rule.kind, text[:80])
        for text in texts
        for rule in RULES
        if list(rule.findings(text)) and not _held(rule, text)
    ]
    assert missing == []


@pytest.mark.slow  # thousands of texts, redacted twice
def test_the_corpora_are_redacted_identically_with_and_without_the_screen() -> None:
    texts = _texts()
    differ = [t[:80] for t in texts if find_secrets(t) != find_secrets(t, screened=False)]
    assert differ == []
    assert sum(bool(find_secrets(t)) for t in texts) > 400  # the corpora hold secrets: the lists compared are not empty


def test_the_screen_skips_rules_whose_keywords_a_text_lacks() -> None:
    text = "I went hiking with my sister on Saturday, the weather was lovely."
    kept = [rule for screen in SCREENS for rule in screen.candidates(text)]
    assert len(kept) < len(RULES) // 4
    assert find_secrets(text) == [] and redact_text(text).text == text


def test_a_digit_is_a_keyword_of_its_own() -> None:
    screen = Screen([r for r in PERSONAL_SCREEN.rules if r.kind == "payment_card"])
    assert screen.candidates("no numbers here") == []
    assert screen.candidates("card 4111 1111 1111 1111") != [] and DIGIT in screen.present("a 1")


def test_the_one_pass_leaves_out_the_rules_whose_pattern_matches_nowhere() -> None:
    """A digit lets every number rule past the keywords; the pass over all patterns keeps only those that match
    somewhere in the text, and each it leaves out finds nothing there."""
    texts = [
        "Lena recommended Dunwickka Foods for the phone; price 803 euros, delivery in 13 days.",
        "e104233",
        "Paid with card 4111 1111 1111 1111 on 2024-03-05, ticket 88231.",
    ]
    for text in texts:
        subject = Subject(normalise(text).text)
        for screen in SCREENS:
            by_keywords, kept = screen.by_keywords(subject.text), screen.candidates(subject.text, subject.data)
            assert [rule for rule in by_keywords if rule in kept] == kept  # a subset, in the rules' order
            assert all(list(rule.findings(subject)) == [] for rule in by_keywords if rule not in kept), text
        assert find_secrets(text) == find_secrets(text, screened=False)
    digits = Subject("price 803 euros, delivery in 13 days")
    assert len(PERSONAL_SCREEN.by_keywords(digits.text)) >= 10  # every number rule holds a digit
    assert PERSONAL_SCREEN.candidates(digits.text, digits.data) == []
    card = Subject("card 4111 1111 1111 1111")
    kinds = [rule.kind for rule in PERSONAL_SCREEN.candidates(card.text, card.data)]
    assert "payment_card" in kinds and len(kinds) <= 3, kinds  # its 12 last digits are an Aadhaar's shape too


class _FailedPass:
    """What RE2 answers when a set's automaton runs out of memory: no pattern matched, not even the empty one."""

    def Match(self, text: bytes) -> list[int] | None:  # noqa: N802 - RE2's name
        return None


def test_a_failed_pass_leaves_the_keywords_to_screen() -> None:
    screen = Screen(PERSONAL_SCREEN.rules)
    screen._patterns = _FailedPass()
    text = "price 803 euros, delivery in 13 days"
    assert screen.candidates(text) == screen.by_keywords(text) != []


@pytest.mark.parametrize("size", [4096, pytest.param(65536, marks=pytest.mark.slow)])
def test_split_by_spaces_reads_each_character_at_most_about_twice(size: int) -> None:
    """The windows of the split-by-spaces view never overlap past WINDOW_BEFORE characters, whatever the density of
    keywords: the characters read are bounded by the text's length, not by the number of keywords in it."""
    keywords = sorted({k for rule in OUR_RULES if rule.splittable for k in rule.keywords})
    texts = [t.text for t in ADVERSARIAL.corpus({"all": tuple(keywords)}, size=size)]
    texts.append(" ".join(keywords) * (size // 200))
    for text in texts:
        read = sum(end - start for start, _, end in windows(text, keywords))
        assert read <= len(text) + WINDOW_BEFORE * (len(text) // WINDOW_AFTER + 1), read


def test_overlaps_are_resolved_without_comparing_findings_pairwise() -> None:
    """Thousands of findings, every one overlapping the marker or an earlier finding: each costs its own length."""
    length = 40_000
    findings = [Finding(i, i + 8, "x") for i in range(0, length - 8, 4)]
    kept = _chosen(findings, [(0, 4)], length)
    assert kept == [f for f in findings if f.start % 8 == 4]


def test_spans_map_back_to_characters_in_any_script() -> None:
    text = "密码是 Abc12345，卡号 4111 1111 1111 1111 ok"
    subject = Subject(text)
    assert len(subject.data) > len(text)
    spans = [(f.start, f.end) for f in find_secrets(text)]
    assert [text[s:e] for s, e in spans] == ["Abc12345", "4111 1111 1111 1111"]
