"""The text detectors read: NFKC-normalised, with invisible characters removed, and a map back to the original.

A secret written in full-width characters (`ｓｋ－ｌｉｖｅ…`) or split by zero-width spaces reads as the secret after
NFKC and removal; the detectors find it there, and the map says which characters of the original text to replace.
The stored text keeps its own characters everywhere else (NFKC would turn Chinese full-width punctuation into
ASCII, which is not ours to change).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

# Format characters (category Cf: zero-width space, joiners, word joiner, BOM, bidi controls, soft hyphen ...) and
# the few invisible separators outside it: nothing a reader sees, so nothing a secret is made of.
_INVISIBLE_EXTRA = frozenset("\u115f\u1160\u3164\uffa0\u180e")


def is_invisible(ch: str) -> bool:
    return unicodedata.category(ch) == "Cf" or ch in _INVISIBLE_EXTRA


@dataclass(frozen=True)
class NormalisedText:
    """`text` as detectors read it; `origins[i]` is the index in the original of the character `text[i]` came from."""

    text: str
    origins: tuple[int, ...]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that `text[start:end]` came from."""
        return self.origins[start], self.origins[end - 1] + 1


def normalise(text: str) -> NormalisedText:
    """NFKC, character by character (so every character maps back), without invisible characters."""
    if text.isascii():
        return NormalisedText(text, tuple(range(len(text))))
    parts: list[str] = []
    origins: list[int] = []
    for index, ch in enumerate(text):
        if is_invisible(ch):
            continue
        folded = unicodedata.normalize("NFKC", ch) if not ch.isascii() else ch
        folded = "".join(c for c in folded if not is_invisible(c))
        parts.append(folded)
        origins.extend([index] * len(folded))
    return NormalisedText("".join(parts), tuple(origins))
