"""What a redaction rule is: a pattern run by RE2, the keywords one of which every match holds, the characters that
may not stand beside a match, and a check of what it matched.

RE2 (Google's regular-expression engine, `google-re2`) matches in time linear in the text by construction: it
simulates an automaton instead of backtracking, so no pattern and no input can make a rule take quadratic or
exponential time. What RE2 does not offer, the rule adds around it, each step bounded by the match it checks:
- lookbehind and lookahead become `not_before` / `not_after`, character sets that may not stand just before or
  just after a match (a leftmost match that fails them is dropped; the patterns are written so that no later start
  within it could pass);
- backreferences and conditions on what was matched become `accept`, a check of the matched text (a checksum, the
  mix of characters a password has).
`keywords` let a screen (`rearview.service.redaction.screen`) skip a rule whose keywords a text lacks: each is
lower-case, and every match of the rule holds one of them (`DIGIT`: a decimal digit), which the tests check rule by
rule on the labelled and the adversarial corpora.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass, field

import numpy as np
import re2

DIGIT = "#digit"  # the keyword of a rule whose every match holds a decimal digit
ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
WORD = ALNUM | {"_"}

Accept = Callable[[str], bool]


@dataclass(frozen=True)
class Finding:
    """A span of the normalised text to replace, and what it holds."""

    start: int
    end: int
    kind: str


class Subject:
    """A text as the rules read it: RE2 runs over its UTF-8 bytes, encoded once for every rule, and each span is
    mapped back to characters (for ASCII, bytes and characters are one)."""

    __slots__ = ("_chars", "data", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self._chars: np.ndarray | None = None
        if len(self.data) != len(text):
            starts = np.flatnonzero((np.frombuffer(self.data, np.uint8) & 0xC0) != 0x80)
            chars = np.zeros(len(self.data) + 1, np.int64)
            chars[starts] = np.arange(len(starts))
            chars[len(self.data)] = len(text)
            self._chars = chars

    def char(self, offset: int) -> int:
        """The character index of a byte offset at a character's start (or the end)."""
        return offset if self._chars is None else int(self._chars[offset])

    def span(self, match: re2._Match, group: int = 0) -> tuple[int, int]:
        start, end = match.span(group)
        return self.char(start), self.char(end)


def engine_options() -> re2.Options:
    options = re2.Options()
    # Enough for the largest rule's automaton; past it RE2 falls back to its (still linear) NFA, never to
    # backtracking.
    options.max_mem = 32 << 20
    return options


@dataclass(frozen=True)
class PatternRule:
    """One kind of secret: `pattern` (RE2 syntax; `(?i)` for case-insensitive), the group holding the secret, and
    the checks around a match. `splittable`: the secret has a prefix distinctive enough to be looked for with the
    spaces inside it removed (`rearview.service.redaction.spaced`)."""

    kind: str
    pattern: str
    keywords: tuple[str, ...]
    _: KW_ONLY
    group: int = 0
    accept: Accept | None = None
    not_before: frozenset[str] = frozenset()
    not_after: frozenset[str] = frozenset()
    splittable: bool = False
    # Where a secret ends inside the group: trailing characters cut off it (sentence punctuation after a password).
    trim: str = ""
    compiled: re2._Regexp = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if any(k != k.lower() for k in self.keywords):
            raise ValueError(f"rule {self.kind}: keywords are lower-case ({self.keywords})")
        object.__setattr__(self, "compiled", re2.compile(self.pattern, engine_options()))

    def findings(self, subject: Subject | str) -> Iterator[Finding]:
        """The secrets this rule finds in a text (normalised), left to right, never overlapping one another."""
        if isinstance(subject, str):
            subject = Subject(subject)
        text = subject.text
        for match in self.compiled.finditer(subject.data):
            start, end = subject.span(match)
            if self.not_before and start > 0 and text[start - 1] in self.not_before:
                continue
            if self.not_after and end < len(text) and text[end] in self.not_after:
                continue
            first, last = subject.span(match, self.group) if self.group else (start, end)
            if self.trim:
                last = first + len(text[first:last].rstrip(self.trim))
            if last <= first:
                continue
            if self.accept is not None and not self.accept(text[first:last]):
                continue
            yield Finding(first, last, self.kind)
