"""A screen in front of the pattern rules: what every match of a rule must contain, derived from the rule's own
parsed pattern, checked once per text with `in` before the rule's regular expression runs.

Most texts hold none of what the ~110 rules look for ("password", "sk-", "AKIA", "hooks.slack.com", a digit ...);
running each rule's scan over them is most of redaction's cost. A rule is skipped only when the text lacks every
one of its required strings, so no rule that could match is ever skipped and the findings, and their order, are
exactly those of running every rule (tests/unit/test_redaction_screen.py checks both paths against each other).

What counts as required, from the parse tree (`re._parser`, the parser `re.compile` itself uses):
- a run of literal characters in sequence; under IGNORECASE only ASCII ones, compared with the lower-cased text,
  and only when the text is ASCII (the Unicode case rules match `ſ` to `s` and `K` to `k`; an ASCII text has none);
- one of a group's alternatives (each alternative's own requirement), a repeat of at least one, a group;
- a decimal digit, for a character set made only of digits (checked with `\\d`, which holds every digit any such set
  can match).
A match holds every requirement of the pattern's top-level sequence, so a rule runs only when the text meets all of
them. Lookarounds, anchors, other character sets and backreferences require nothing. A rule with no requirement
always runs.
"""

from __future__ import annotations

import _sre
import re
from collections.abc import Sequence
from re import _constants as sre  # type: ignore[attr-defined]  # the stdlib's own parser, stable since 3.11
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any, Generic, Protocol, TypeVar

_DIGIT = re.compile(r"\d")
_DIGIT_CODES = range(ord("0"), ord("9") + 1)

# A requirement is a set of keys, one of which every match holds: "=" + a string as written, "~" + a lower-cased
# ASCII string to find in the lower-cased (ASCII) text, or DIGIT.
CASED, CASELESS, DIGIT = "=", "~", "#digit"
Requirement = frozenset[str]
_KEPT_SETS = 4096  # sets of held keys remembered per screen (cleared when full)


def _key_score(key: str) -> int:
    """Selectivity: longer required strings are rarer; a digit beats a single character."""
    if key == DIGIT:
        return 2
    return 2 * len(key) - 3 if len(key) > 2 else 1


def score(need: Requirement) -> int:
    return min(_key_score(key) for key in need)


def _best(found: list[Requirement]) -> Requirement | None:
    return max(found, key=score) if found else None


def _literal(code: int, caseless: bool) -> str | None:
    """The key prefix and character a literal adds to a run; None when it cannot be compared by `in`."""
    ch = chr(code)
    if not caseless or not _sre.unicode_iscased(code):
        return CASED + ch  # matched exactly, IGNORECASE or not (re compiles an uncased literal as is)
    return CASELESS + ch.lower() if ch.isascii() else None


def _digit_set(items: Any) -> bool:
    if not items:
        return False
    for op, av in items:
        if op is sre.LITERAL and av in _DIGIT_CODES:
            continue
        if op is sre.RANGE and av[0] in _DIGIT_CODES and av[1] in _DIGIT_CODES:
            continue
        if op is sre.CATEGORY and av is sre.CATEGORY_DIGIT:
            continue
        return False
    return True


def _union(parts: list[Requirement | None]) -> Requirement | None:
    """One of the alternatives matched, so one of their requirements holds (if each has one)."""
    if not parts or any(p is None for p in parts):
        return None
    return frozenset(key for p in parts if p is not None for key in p)


def _element(op: Any, av: Any, caseless: bool) -> Requirement | None:
    """The requirement of one non-literal element of a sequence."""
    if op is sre.IN:
        return frozenset({DIGIT}) if _digit_set(av) else None
    if op is sre.BRANCH:
        return _union([_sequence(branch, caseless) for branch in av[1]])
    if op is sre.SUBPATTERN:
        _group, add_flags, del_flags, body = av
        inner = (caseless or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE
        return _sequence(body, inner)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, _high, body = av
        return _sequence(body, caseless) if low >= 1 else None
    if op is sre.ATOMIC_GROUP:
        return _sequence(av, caseless)
    return None  # anchors, lookarounds, ANY, NOT_LITERAL, backreferences, conditionals


def _sequence(items: Any, caseless: bool) -> Requirement | None:
    """The most selective requirement of a sequence: every element's requirement holds, so any one will do."""
    return _best(_found(items, caseless))


def _found(items: Any, caseless: bool) -> list[Requirement]:
    """The requirements of a sequence's elements; a match holds all of them. Consecutive literals of one kind
    (exact, or caseless ASCII) make one string."""
    found: list[Requirement] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            found.append(frozenset({run[0][0] + "".join(key[1:] for key in run)}))
            run.clear()

    for op, av in items:
        if op is sre.LITERAL:
            key = _literal(av, caseless)
            if key is not None and run and run[0][0] != key[0]:
                flush()
            if key is not None:
                run.append(key)
                continue
        flush()
        element = _element(op, av, caseless) if op is not sre.LITERAL else None
        if element is not None:
            found.append(element)
    flush()
    return found


def requirements(pattern: re.Pattern[str]) -> tuple[Requirement, ...]:
    """What every match of `pattern` holds (all of them; none when nothing is derived), most selective first."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    found = set(_found(parsed, bool(parsed.state.flags & re.IGNORECASE)))
    return tuple(sorted(found, key=lambda need: (-score(need), sorted(need))))


class HasPattern(Protocol):
    @property
    def pattern(self) -> re.Pattern[str]: ...


R = TypeVar("R", bound=HasPattern)


class Screen(Generic[R]):
    """Rules in their order, each with its requirements; `candidates(text)` leaves out the ones that cannot match."""

    def __init__(self, rules: Sequence[R]) -> None:
        self.rules = tuple(rules)
        self.requirements = tuple(requirements(rule.pattern) for rule in self.rules)
        keys = {key for needs in self.requirements for need in needs for key in need}
        self._cased = [(k, k[1:]) for k in sorted(keys) if k[0] == CASED]
        self._caseless = [(k, k[1:]) for k in sorted(keys) if k[0] == CASELESS]
        self._all_caseless = {k for k, _ in self._caseless}
        self._plan = tuple(zip(self.rules, self.requirements, strict=True))
        # The rules left for each set of held keys: texts hold few distinct sets (the common short strings).
        self._kept: dict[frozenset[str], list[R]] = {}

    def present(self, text: str) -> set[str]:
        """The keys `text` holds (every caseless key, when the text is not ASCII: no `in` decides those)."""
        held = {key for key, string in self._cased if string in text}
        if text.isascii():
            lowered = text.lower()
            held.update([key for key, string in self._caseless if string in lowered])
        else:
            held.update(self._all_caseless)
        if _DIGIT.search(text) is not None:
            held.add(DIGIT)
        return held

    def candidates(self, text: str) -> list[R]:
        """The rules, in order, less those whose requirements `text` does not meet."""
        held = frozenset(self.present(text))
        kept = self._kept.get(held)
        if kept is None:
            if len(self._kept) >= _KEPT_SETS:
                self._kept.clear()
            kept = self._kept[held] = self._meeting(held)
        return kept

    def _meeting(self, held: frozenset[str]) -> list[R]:
        out: list[R] = []
        for rule, needs in self._plan:
            for need in needs:
                if held.isdisjoint(need):
                    break
            else:
                out.append(rule)
        return out
