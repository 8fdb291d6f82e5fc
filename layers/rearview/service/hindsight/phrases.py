"""Shared phrases: the words several texts have in common, found in the texts themselves (not in a model), so an
induced memory can name what a cluster is about without copying any one of its episodes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from rearview.service.voice import normalise
from rearview.text_analysis import query_terms

_EDGE_WORDS = re.compile(
    r"^(?:(?:and|also|so|but|then|just|please|pls|again|always|btw|fyi|ok|okay|hey|hi|to|of|for|that|"
    r"can you|could you|remember that|note that|i|we|it|is|as)\s+)+"
    r"|(?:\s+(?:and|also|so|but|then|please|pls|again|the|a|an|to|of|"
    r"for|that|with|in|on|at|is|are|was|i|we))+$",
    re.IGNORECASE,
)
_PUNCT_EDGES = " \t\n,.;:!?，。；：！？、\"'()[]{}-–—"


# Chat filler that says nothing about what a request is about (on top of the search stop words).
FILLER = frozenset(
    [
        "pls",
        "plz",
        "please",
        "thanks",
        "thank",
        "thx",
        "like",
        "anyway",
        "stuff",
        "thing",
        "things",
        "instead",
        "same",
        "last",
        "time",
        "just",
        "really",
        "kinda",
        "sorta",
        "lol",
        "tbh",
        "btw",
        "ok",
        "okay",
        "yeah",
        "hey",
        "hi",
        "hmm",
        "also",
        "actually",
        "maybe",
        "probably",
        "basically",
        "literally",
        "again",
        "always",
        "never",
        "still",
        "even",
        "new",
        "way",
        "lot",
        "bit",
    ]
)


# Social talk: thanks, praise, farewells and cheering that carry no preference or fact, however often repeated
# ("Take care!", "Thanks, your support means a lot", "Wow, that's amazing"). Not counted as a phrase's content.
PHATIC = frozenset(
    [
        "appreciate",
        "appreciated",
        "awesome",
        "amazing",
        "beautiful",
        "bye",
        "care",
        "cheers",
        "congrats",
        "congratulations",
        "cool",
        "definitely",
        "excited",
        "exciting",
        "fantastic",
        "glad",
        "good",
        "goodbye",
        "great",
        "haha",
        "happy",
        "hear",
        "hello",
        "hope",
        "hug",
        "hugs",
        "incredible",
        "inspiring",
        "keep",
        "going",
        "lovely",
        "luck",
        "means",
        "nice",
        "omg",
        "proud",
        "reach",
        "sorry",
        "sounds",
        "support",
        "sure",
        "take",
        "totally",
        "welcome",
        "wonderful",
        "wow",
        "yep",
        "yes",
        "谢谢",
        "感谢",
        "哈哈",
        "加油",
        "辛苦",
    ]
)


def content_terms(text: str) -> list[str]:
    """The words that say what a text is about: query terms without chat filler."""
    return [t for t in query_terms(text) if t not in FILLER]


def substantive_terms(text: str) -> list[str]:
    """Content terms that are not social talk: what a phrase must have enough of to be worth stating."""
    return [t for t in content_terms(text) if t not in PHATIC]


def tidy_phrase(phrase: str) -> str:
    """A phrase without the filler words and punctuation at its edges ("and please use tabs," -> "use tabs");
    a closing bracket stays when its opening one is kept."""
    phrase = phrase.strip(_PUNCT_EDGES)
    previous = None
    while previous != phrase:
        previous = phrase
        phrase = _EDGE_WORDS.sub("", phrase).strip(_PUNCT_EDGES)
    for opening, closing in ("()", "[]"):
        if phrase.count(opening) > phrase.count(closing):
            phrase += closing
    return phrase


def _word_aligned(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to whole words (CJK characters are words of their own)."""
    while start > 0 and text[start - 1].isalnum() and text[start].isalnum() and text[start].isascii():
        start -= 1
    while end < len(text) and text[end - 1].isalnum() and text[end].isalnum() and text[end].isascii():
        end += 1
    return start, end


def shared_phrase(texts: Sequence[str], *, min_terms: int = 2, min_share: float = 0.6) -> str | None:
    """The longest phrase (as written in the texts) that at least `min_share` of them contain, with at least
    `min_terms` content words that are not social talk; None when there is none. Case-insensitive; word-aligned."""
    normalised = [normalise(t) for t in texts if t.strip()]
    if not normalised:
        return None
    if len(normalised) == 1:
        phrase = tidy_phrase(normalised[0])
        return phrase if len(substantive_terms(phrase)) >= min_terms else None
    lowered = [t.lower() for t in normalised]
    needed = max(2, int(round(min_share * len(lowered) + 1e-9)))
    best: tuple[int, int, int, str] | None = None
    for key, piece in _common_pieces(normalised, lowered).items():
        terms = len(substantive_terms(piece))
        share = sum(1 for t in lowered if key in t)
        if terms >= min_terms and share >= needed:
            rank = (share, terms, len(piece), piece)
            best = rank if best is None or rank[:3] > best[:3] else best
    return best[3] if best else None


def _common_pieces(normalised: Sequence[str], lowered: Sequence[str]) -> dict[str, str]:
    """Every word-aligned run of at least three characters two of the texts share, keyed by its lowercase form."""
    pieces: dict[str, str] = {}
    for i in range(len(lowered)):
        for j in range(i + 1, len(lowered)):
            a, b = lowered[i], lowered[j]
            for block in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
                if block.size < 3:
                    continue
                start, end = _word_aligned(a, block.a, block.a + block.size)
                piece = tidy_phrase(normalised[i][start:end])
                if piece and piece.lower() in b:
                    pieces.setdefault(piece.lower(), piece)
    return pieces


def inserted_phrase(before: str, after: str) -> str | None:
    """What `after` says that `before` does not: the longest run of words added or replaced, tidied."""
    a, b = normalise(before), normalise(after)
    best = ""
    for tag, _i1, _i2, j1, j2 in SequenceMatcher(None, a.lower(), b.lower(), autojunk=False).get_opcodes():
        if tag in ("insert", "replace"):
            start, end = _word_aligned(b, j1, j2)
            piece = tidy_phrase(b[start:end])
            if len(piece) > len(best):
                best = piece
    return best or None
