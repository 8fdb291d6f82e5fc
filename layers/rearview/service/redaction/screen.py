"""A screen in front of the pattern rules: a rule runs only on a text that holds one of the keywords it declares.

Most texts hold none of what the ~110 rules look for ("password", "sk-", "akia", "hooks.slack.com", a digit ...);
running each rule over them would be most of redaction's cost. Every match of a rule holds one of its keywords
(`rearview.service.redaction.rules`; the tests check it rule by rule), so a rule whose keywords are all absent
cannot match, and the findings, and their order, are exactly those of running every rule
(tests/unit/test_redaction_screen.py compares both). Keywords are compared with the text lower-cased; `DIGIT` is
held by a text with a decimal digit. A rule that declares no keyword always runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

from rearview.service.redaction.rules import DIGIT

_DIGIT = re.compile(r"[0-9]")
_KEPT_SETS = 4096  # sets of held keywords remembered per screen (cleared when full)


class HasKeywords(Protocol):
    @property
    def keywords(self) -> tuple[str, ...]: ...


R = TypeVar("R", bound=HasKeywords)


class Screen(Generic[R]):
    """Rules in their order; `candidates(text)` leaves out the ones whose keywords `text` lacks."""

    def __init__(self, rules: Sequence[R]) -> None:
        self.rules = tuple(rules)
        self.keywords = sorted({k for rule in self.rules for k in rule.keywords if k != DIGIT})
        # The rules left for each set of held keywords: texts hold few distinct sets.
        self._kept: dict[frozenset[str], list[R]] = {}

    def present(self, text: str) -> frozenset[str]:
        """The keywords `text` holds."""
        lowered = text.lower()
        held = [k for k in self.keywords if k in lowered]
        if _DIGIT.search(text) is not None:
            held.append(DIGIT)
        return frozenset(held)

    def candidates(self, text: str) -> list[R]:
        """The rules, in order, less those none of whose keywords `text` holds."""
        held = self.present(text)
        kept = self._kept.get(held)
        if kept is None:
            if len(self._kept) >= _KEPT_SETS:
                self._kept.clear()
            kept = self._kept[held] = [r for r in self.rules if not r.keywords or not held.isdisjoint(r.keywords)]
        return kept
