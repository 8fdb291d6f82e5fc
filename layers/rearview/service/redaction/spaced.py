"""Secrets split by spaces ("AKIA IOSF ODNN 7EXA MPLE", "sk_live_4eC3 9HqL yjWD arjt T1zd p7dc"): read again with
the single spaces after a keyword removed, for the rules whose secrets start with a prefix no sentence has
(`PatternRule.splittable`).

Only the characters from a keyword on are joined (what comes before stays apart, so a prefix is still at the start of
a word), within a window of WINDOW_AFTER characters; a window starts only past the end of the one before, so every
character is read at most twice whatever the text. A finding counts only if it spans a removed space: one without
is the plain pass's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rearview.service.redaction.rules import Finding, PatternRule

# Characters kept before a keyword (a Telegram bot token's digits come before ":AA"), and read after it: the longest
# splittable secret with a space after every character still fits.
WINDOW_BEFORE = 16
WINDOW_AFTER = 256
_BLANK = frozenset(" \t\r\n")


class SplitRules:
    """The splittable rules among some, by keyword (each rule under every keyword of its own): built once, since the
    rules are fixed and every text asks for them."""

    def __init__(self, rules: Sequence[PatternRule]) -> None:
        self.by_keyword: dict[str, list[PatternRule]] = {}
        for each in rules:
            if each.splittable:
                for keyword in each.keywords:
                    self.by_keyword.setdefault(keyword, []).append(each)
        self.keywords = list(self.by_keyword)


def _occurrences(lowered: str, keywords: Sequence[str]) -> list[int]:
    positions: list[int] = []
    for keyword in keywords:
        at = lowered.find(keyword)
        while at != -1:
            positions.append(at)
            at = lowered.find(keyword, at + len(keyword))
    return sorted(positions)


def _joined(text: str, start: int, end: int) -> tuple[str, list[int]]:
    """`text[start:end]` without the single spaces between two other characters, and where each kept character
    was."""
    kept: list[int] = []
    for i in range(start, end):
        ch = text[i]
        if ch == " " and start < i < len(text) - 1 and text[i - 1] not in _BLANK and text[i + 1] not in _BLANK:
            continue
        kept.append(i)
    return "".join(text[i] for i in kept), kept


def windows(text: str, keywords: Sequence[str]) -> Iterator[tuple[int, int, int]]:
    """(start, keyword, end) of each window read: from a keyword's occurrence past the end of the window before,
    WINDOW_BEFORE characters before it to WINDOW_AFTER after it; only windows with a space after the keyword."""
    window_end = 0
    for at in _occurrences(text.lower(), keywords):
        if at < window_end:
            continue
        window_end = min(len(text), at + WINDOW_AFTER)
        if " " in text[at:window_end]:
            yield max(0, at - WINDOW_BEFORE), at, window_end


def spaced_findings(text: str, rules: SplitRules) -> Iterator[Finding]:
    """The secrets of the splittable `rules` that `text` (normalised) holds split by single spaces."""
    by_keyword = rules.by_keyword
    if not by_keyword or " " not in text:
        return
    for before, at, window_end in windows(text, rules.keywords):
        joined, kept = _joined(text, at, window_end)
        window = text[before:at] + joined
        origins = [*range(before, at), *kept]
        held = window.lower()
        for each in {id(r): r for k, rs in by_keyword.items() if k in held for r in rs}.values():
            for finding in each.findings(window):
                start, end = origins[finding.start], origins[finding.end - 1] + 1
                if end - start > finding.end - finding.start:  # a space was removed inside it
                    yield Finding(start, end, finding.kind)
