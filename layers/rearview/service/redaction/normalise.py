"""The text detectors read: NFKC-normalised, with invisible characters removed, Latin look-alikes read as Latin,
and a map back to the original.

A secret written in full-width characters (`ｓｋ－ｌｉｖｅ…`), split by zero-width spaces, or with Cyrillic or Greek
letters that look like Latin ones (`АКIA…` with a Cyrillic А and К) reads as the secret here; the detectors find it,
and the map says which characters of the original text to replace. The stored text keeps its own characters
everywhere else (NFKC would turn Chinese full-width punctuation into ASCII, which is not ours to change).

Each character is folded once per process (a table filled as characters are met), so a text costs one `translate`
and, only when some character folds to other than one character, one pass to build the map.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

# Format characters (category Cf: zero-width space, joiners, word joiner, BOM, bidi controls, soft hyphen ...) and
# the few invisible separators outside it: nothing a reader sees, so nothing a secret is made of.
_INVISIBLE_EXTRA = frozenset("\u115f\u1160\u3164\uffa0\u180e")

# The Cyrillic and Greek letters that Unicode's confusables list gives as look-alikes of a Latin letter (its
# "MA" table, restricted to single letters): the definition of what a reader takes for Latin.
LATIN_LOOKALIKES = dict(
    zip(
        "АВЕКМНОРСТХУЅІЈԚԜҮҺаеорсухѕіјԁԛԝһӏүΑΒΕΖΗΙΚΜΝΟΡΤΥΧαονριυ",
        "ABEKMHOPCTXYSIJQWYHaeopcyxsijdqwhlyABEZHIKMNOPTYXaovpiu",
        strict=True,
    )
)


def is_invisible(ch: str) -> bool:
    return unicodedata.category(ch) == "Cf" or ch in _INVISIBLE_EXTRA


# Characters whose reading is remembered: every script a text is likely to hold, never the whole of Unicode.
_FOLDS_KEPT = 1 << 16


class _FoldTable(dict[int, str]):
    """What each character reads as (`str.translate`'s table): filled on first sight of a character."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        if is_invisible(ch):
            folded = ""
        else:
            folded = "".join(c for c in unicodedata.normalize("NFKC", ch) if not is_invisible(c))
            folded = "".join(LATIN_LOOKALIKES.get(c, c) for c in folded)
        if len(self) < _FOLDS_KEPT:
            self[code] = folded
        return folded


_FOLD = _FoldTable()


@dataclass(frozen=True)
class NormalisedText:
    """`text` as detectors read it; `origins[i]` is the index in the original of the character `text[i]` came from
    (None: the identity, every character read as itself)."""

    text: str
    origins: tuple[int, ...] | None = None

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that `text[start:end]` came from."""
        if self.origins is None:
            return start, end
        return self.origins[start], self.origins[end - 1] + 1


def normalise(text: str) -> NormalisedText:
    """NFKC, character by character (so every character maps back), without invisible characters, look-alikes
    read as Latin."""
    if text.isascii():
        return NormalisedText(text)
    folded = text.translate(_FOLD)
    if len(folded) == len(text) and all(len(_FOLD[ord(c)]) == 1 for c in set(text)):
        return NormalisedText(folded)  # one character for one: the identity map
    origins: list[int] = []
    for index, ch in enumerate(text):
        origins.extend([index] * len(_FOLD[ord(ch)]))
    return NormalisedText(folded, tuple(origins))
