"""Deciding whether a new fact contradicts an active one, without an LLM.

Two facts contradict when they are about the same thing (high cosine) but one negates what the other asserts
("I drink coffee" / "I no longer drink coffee", "我喜欢咖啡" / "我不喜欢咖啡"). Sentence embeddings put such pairs
very close together, which is why polarity must be checked before near-duplicate merging.
"""

from __future__ import annotations

import re

from rearview.text_analysis import query_terms

_EN_NEGATIONS = re.compile(
    r"\b(not|no|never|none|nobody|nothing|neither|nor|cannot|can't|don't|doesn't|didn't|won't|isn't|aren't|"
    r"wasn't|weren't|haven't|hasn't|hadn't|shouldn't|wouldn't|couldn't|mustn't|no\s+longer|any\s+more|anymore|"
    r"stopped|quit|gave\s+up|dislikes?|hates?)\b",
    re.IGNORECASE,
)
_ZH_NEGATIONS = re.compile(r"不|没|沒|别|無|无|未|讨厌|戒了|不再")


def negation_count(text: str) -> int:
    """How many negation markers the text holds (English and Chinese)."""
    return len(_EN_NEGATIONS.findall(text)) + len(_ZH_NEGATIONS.findall(text))


def opposite_polarity(a: str, b: str) -> bool:
    """True when exactly one of the two statements is negated (odd vs even number of negations)."""
    return (negation_count(a) % 2) != (negation_count(b) % 2)


# Share of words two statements must have in common, negations aside, to be the same statement negated.
_SAME_STATEMENT_OVERLAP = 0.7


def _content_words(text: str) -> set[str]:
    """Content words without negations, crudely singularised so that "likes" and "like" meet."""
    words = query_terms(_EN_NEGATIONS.sub(" ", _ZH_NEGATIONS.sub("", text)))
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words}


def statement_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two statements' words once negation markers are removed."""
    words_a = _content_words(a)
    words_b = _content_words(b)
    if not words_a or not words_b:
        return 0.0
    return len(words_a & words_b) / len(words_a | words_b)


def contradicts(new: str, old: str, cosine: float, threshold: float) -> bool:
    """A new fact contradicts an old one: opposite polarity, and the same statement (cosine >= threshold, or the
    same words once negations are removed; the lexical test keeps this independent of the embedder's scale)."""
    if not opposite_polarity(new, old):
        return False
    return cosine >= threshold or statement_overlap(new, old) >= _SAME_STATEMENT_OVERLAP
