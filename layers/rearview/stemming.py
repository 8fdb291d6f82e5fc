"""The terms SQLite's FTS5 indexes for analysed text, computed in Python: `index_terms(text)` equals what the
tokenizer `porter unicode61 remove_diacritics 2` makes of `text_analysis.index_text(text)`.

An index that scores keywords in Python (the in-memory backend) matches and counts the same terms as the
embedded backend this way: "hiking" finds "hike", "cafés" finds "cafe". Standard library only.

unicode61 splits on everything but letters, digits, private-use characters and the common Latin diacritical marks
(so a Devanagari vowel sign separates), and folds those diacritics away, from Latin letters too; the
Porter stemmer (Porter 1980, with the departures of its author's reference code that FTS5 keeps: `bli` -> `ble`,
`logi` -> `log`) then works on the token's UTF-8 bytes, every byte outside ASCII counting as a consonant, and
leaves tokens of under 3 or over 64 bytes alone. (A character that Unicode assigned or re-classified after
the version of SQLite's tables, a rare mark of a few scripts, may split differently.)
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from rearview.text_analysis import tokens

_MIN_STEMMED_BYTES = 3
_MAX_STEMMED_BYTES = 64
# The combining marks unicode61 takes for diacritics (of U+0300-U+0331: grave, acute, circumflex, tilde,
# macron, breve, dot, diaeresis, ring, caron, cedilla, ogonek ...); every other mark separates tokens.
_DIACRITICS = frozenset(
    (*range(0x300, 0x305), *range(0x306, 0x30D), 0x30F, 0x311, 0x31B, *range(0x323, 0x329), 0x32D, 0x32E, 0x330, 0x331)
)

# Latin letters with diacritics that unicode61's folding table leaves as they are.
_UNFOLDED = frozenset("ǡǣǯǽǿ")

# (suffix, replacement), first match wins; a longer suffix precedes any shorter one it ends with.
_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"), ("bli", "ble"),
    ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"),
    ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"),
    ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"),
)  # fmt: skip
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""),
)  # fmt: skip
_STEP4 = tuple(
    (suffix, "")
    for suffix in (
        "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism", "ate",
        "iti", "ous", "ive", "ize",
    )
)  # fmt: skip


def index_terms(text: str) -> list[str]:
    """The terms FTS5 indexes for `text_analysis.index_text(text)`, in order."""
    return [_stemmed(piece) for token in tokens(text) for piece in _unicode61_pieces(token)]


def _unicode61_pieces(token: str) -> list[str]:
    """The token split where unicode61 splits it, its diacritics folded away (a piece left empty is no token)."""
    pieces: list[str] = []
    current: list[str] = []
    for ch in [*token, " "]:
        folded = _folded(ch)
        if folded is not None:
            current.append(folded)
            continue
        if piece := "".join(current):
            pieces.append(piece)
        current = []
    return pieces


@lru_cache(maxsize=4096)
def _folded(ch: str) -> str | None:
    """The character as unicode61 keeps it: a Latin letter without its diacritics, '' for a diacritic mark, None
    for a separator."""
    category = unicodedata.category(ch)
    if category[0] == "M":
        return "" if ord(ch) in _DIACRITICS else None
    if category[0] not in "LN" and category != "Co":
        return None
    if ch == "ς":  # unicode61 folds the final sigma, which lowercasing keeps
        return "σ"
    base = unicodedata.normalize("NFD", ch)[0]
    if base != ch and ch not in _UNFOLDED and unicodedata.name(base, "").startswith("LATIN"):
        return base
    return ch


@lru_cache(maxsize=65536)
def _stemmed(token: str) -> str:
    data = token.encode("utf-8")
    if not _MIN_STEMMED_BYTES <= len(data) <= _MAX_STEMMED_BYTES:
        return token
    # One character per byte, so that lengths and positions are those FTS5 sees.
    word = _step1(data.decode("latin-1"))
    word = _replace_suffix(word, _STEP2, 0)
    word = _replace_suffix(word, _STEP3, 0)
    word = _replace_suffix(word, _STEP4, 1)
    word = _step5(word)
    return word.encode("latin-1").decode("utf-8", errors="ignore")


def _step1(word: str) -> str:
    word, removed = _step1b(_step1a(word))
    if removed:
        word = _after_step1b(word)
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _step1a(word: str) -> str:
    if not word.endswith("s"):
        return word
    if word[-2] == "e":
        if (len(word) > 4 and word[-4:-2] == "ss") or (len(word) > 3 and word[-3] == "i"):
            return word[:-2]
        return word[:-1]
    return word if word[-2] == "s" else word[:-1]


def _step1b(word: str) -> tuple[str, bool]:
    """The word with `eed` made `ee`, or with `ed` or `ing` removed (then True)."""
    if len(word) > 3 and word.endswith("eed"):
        return (word[:-1] if _measure(word[:-3]) > 0 else word), False
    for suffix in ("ed", "ing"):
        if len(word) > len(suffix) and word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
            return word[: -len(suffix)], True
    return word, False


def _after_step1b(stem: str) -> str:
    for suffix in ("at", "bl", "iz"):
        if len(stem) > 2 and stem.endswith(suffix):
            return stem + "e"
    last = stem[-1]
    if _is_consonant(last, False) and last not in "lsz" and len(stem) > 1 and last == stem[-2]:
        return stem[:-1]
    if _measure(stem) == 1 and _ends_cvc(stem):
        return stem + "e"
    return stem


def _replace_suffix(word: str, rules: tuple[tuple[str, str], ...], above: int) -> str:
    """The first rule whose suffix ends the word applies if the stem's measure exceeds `above`; `ion` also wants
    the stem to end in `s` or `t`."""
    for suffix, replacement in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return word
            return stem + replacement if _measure(stem) > above else word
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        if _measure(stem) > 1 or (_measure(stem) == 1 and not _ends_cvc(stem)):
            word = stem
    if len(word) > 1 and word.endswith("ll") and _measure(word[:-1]) > 1:
        word = word[:-1]
    return word


def _is_consonant(ch: str, after_consonant: bool) -> bool:
    """`y` is a vowel after a consonant, a consonant elsewhere."""
    return ch not in "aeiou" and not (ch == "y" and after_consonant)


def _consonant_flags(stem: str) -> list[bool]:
    flags: list[bool] = []
    previous = False
    for ch in stem:
        previous = _is_consonant(ch, previous)
        flags.append(previous)
    return flags


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]: how many vowel-consonant sequences the stem has."""
    flags = _consonant_flags(stem)
    return sum(1 for i in range(1, len(flags)) if flags[i] and not flags[i - 1])


def _has_vowel(stem: str) -> bool:
    # FTS5 counts a `y` after the first letter as a vowel here, whatever precedes it.
    return any(ch in "aeiou" or (ch == "y" and i > 0) for i, ch in enumerate(stem))


def _ends_cvc(stem: str) -> bool:
    """consonant-vowel-consonant, the last not w, x or y."""
    if not stem or stem[-1] in "wxy":
        return False
    flags = _consonant_flags(stem)
    return len(flags) >= 3 and flags[-3:] == [True, False, True]
