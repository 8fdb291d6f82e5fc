"""A screen in front of the pattern rules: a rule runs only on a text it can match.

Two sieves, each exact:
- **Keywords.** Most texts hold none of what the ~110 rules look for ("password", "sk-", "akia", "hooks.slack.com",
  a digit ...). Every match of a rule holds one of its keywords (`rearview.service.redaction.rules`; the tests check
  it rule by rule), so a rule whose keywords are all absent cannot match. Keywords are compared with the text
  lower-cased; `DIGIT` is held by a text with a decimal digit. A rule that declares no keyword always passes.
- **One pass of every pattern.** A digit lets a score of number rules through on ordinary prose ("price 803 euros",
  an id such as "e1042"), and running each of them cost a call into RE2 apiece, most of redaction's time on the write
  path. An RE2 set of every rule's pattern says, in one pass over the text, which patterns match anywhere in it
  (`RE2::Set`, a DFA of all of them at once, linear in the text); a rule whose pattern matches nowhere yields no
  finding, whatever its checks. The set's first pattern is empty and matches every text, so a pass that failed
  (RE2 reports a DFA out of memory as no match at all) is told from a text that matches nothing: the keywords alone
  decide then.

The findings, and their order, are exactly those of running every rule (tests/unit/test_redaction_screen.py compares
both on the corpora).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from functools import cached_property
from typing import Generic, Protocol, TypeVar

import re2

from rearview.service.redaction.rules import DIGIT, engine_options

logger = logging.getLogger(__name__)

_DIGIT = re.compile(r"[0-9]")
_KEPT_SETS = 4096  # sets of held keywords remembered per screen (cleared when full)


class ScreenedRule(Protocol):
    @property
    def keywords(self) -> tuple[str, ...]: ...

    @property
    def pattern(self) -> str: ...


R = TypeVar("R", bound=ScreenedRule)


class Screen(Generic[R]):
    """Rules in their order; `candidates(text)` leaves out the ones `text` cannot match."""

    def __init__(self, rules: Sequence[R]) -> None:
        self.rules = tuple(rules)
        self.keywords = sorted({k for rule in self.rules for k in rule.keywords if k != DIGIT})
        # The rules left for each set of held keywords: texts hold few distinct sets.
        self._kept: dict[frozenset[str], list[R]] = {}
        self._index = {id(rule): i + 1 for i, rule in enumerate(self.rules)}  # a rule's pattern in the set

    @cached_property
    def _patterns(self) -> re2.Set | None:
        """The rules' patterns as one RE2 set, compiled by the first text screened (about 10 ms for the credential
        rules): not at import, where a process that never redacts (a recall function's cold start) would pay it."""
        return _pattern_set(self.rules)

    def present(self, text: str) -> frozenset[str]:
        """The keywords `text` holds."""
        lowered = text.lower()
        held = [k for k in self.keywords if k in lowered]
        if _DIGIT.search(text) is not None:
            held.append(DIGIT)
        return frozenset(held)

    def by_keywords(self, text: str) -> list[R]:
        """The rules, in order, less those none of whose keywords `text` holds."""
        held = self.present(text)
        kept = self._kept.get(held)
        if kept is None:
            if len(self._kept) >= _KEPT_SETS:
                self._kept.clear()
            kept = self._kept[held] = [r for r in self.rules if not r.keywords or not held.isdisjoint(r.keywords)]
        return kept

    def candidates(self, text: str, data: bytes | None = None) -> list[R]:
        """The rules, in order, that `text` (`data`: its UTF-8 bytes, as the rules read it) can match: those whose
        keywords it holds and whose pattern matches somewhere in it."""
        kept = self.by_keywords(text)
        if not kept or self._patterns is None:
            return kept
        matched = self._patterns.Match(text.encode("utf-8", "surrogatepass") if data is None else data)
        if not matched or 0 not in matched:  # the empty pattern did not match: the pass failed, not the rules
            return kept
        if len(matched) == 1:
            return []
        indices = set(matched)
        return [rule for rule in kept if self._index[id(rule)] in indices]


def _pattern_set(rules: Sequence[ScreenedRule]) -> re2.Set | None:
    """An RE2 set of the empty pattern, then each rule's, in order; None if RE2 refuses it (the keywords alone screen
    then, as before the set)."""
    patterns = re2.Set.SearchSet(engine_options())
    try:
        patterns.Add("")
        for rule in rules:
            patterns.Add(rule.pattern)
        patterns.Compile()
    except re2.error as exc:
        logger.warning("redaction: the rules' one-pass screen is off (%s); keywords alone screen them", exc)
        return None
    return patterns
