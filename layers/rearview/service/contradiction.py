"""Judging a new memory against an active one, in free text, English and Chinese, with or without a `dimension`:
it confirms it (the same thing again), refines it (says more about the same thing), contradicts it (the old one
no longer holds) or is unrelated.

Offline, by meaning rather than by a list of topics: the two are about the same subject (the user, or someone
else: a colleague's habit is not the user's) and the same attribute (their vectors are close, or they share what
they are about); then polarity decides (a term one asserts and the other negates or gives up: "drinks coffee" /
"quit coffee", "用表情" / "不想再看到表情"), and change words ("no longer", "moved to", "now", 不再, 戒, 改, 搬到)
say that a different value replaces the old one. Sentence embeddings put a statement and its negation very close
together, which is why polarity is checked before anything is merged as a repeat.

`Verdict` words that a model's judge (`ports.ContradictionJudge`) answers with are the same four.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from rearview.domain.embedding import CosineScale
from rearview.service.voice import frame_terms, negated_terms, units_of_text
from rearview.text_analysis import CJK_FUNCTION_CHARS, is_cjk, query_terms

Verdict = Literal["confirms", "refines", "contradicts", "unrelated"]
VERDICTS: tuple[Verdict, ...] = ("confirms", "refines", "contradicts", "unrelated")

# Words that say a state changed: the old value gave way to the new one. The definition of a change, in both
# languages, small on purpose (negation is read by `voice.negated_terms`).
_CHANGE = re.compile(
    r"\b(?:no longer|not any ?more|any ?more|from now on|now|nowadays|these days|switched|switching|moved|"
    r"relocated|changed|became|become|has become|started|starting|quit|stopped|gave up|left|joined|instead|"
    r"new|since)\b|不再|戒|改|换|搬到|搬去|搬家|开始|现在|以后|离开|已经|不想再",
    re.IGNORECASE,
)
# Words of a statement's frame, never what it is about.
_FRAME = frozenset({"user", "user's", "用户", "prefer", "prefers", "preference", "regularly", "about"})

_EN_NEGATIONS = re.compile(
    r"\b(not|no|never|none|nobody|nothing|neither|nor|cannot|can't|don't|doesn't|didn't|won't|isn't|aren't|"
    r"wasn't|weren't|haven't|hasn't|hadn't|shouldn't|wouldn't|couldn't|mustn't|no\s+longer|any\s+more|anymore|"
    r"stopped|quit|gave\s+up|dislikes?|hates?)\b",
    re.IGNORECASE,
)
_ZH_NEGATIONS = re.compile(r"不|没|沒|别|無|无|未|讨厌|戒了|不再")


@dataclass(frozen=True)
class Scale:
    """The similarities that matter for one embedder: at or above `related` two statements may be about the same
    attribute; at or above `same` they say the same thing (the write path's near-duplicate threshold)."""

    related: float
    same: float


# Where between an embedder's topic floor (`CosineScale.topic_floor`) and 1 two statements are about the same
# attribute: MiniLM's floor is 0.25, and its statements of one attribute with different values sit at 0.55-0.9,
# different attributes below 0.55.
RELATED_SHARE_ABOVE_FLOOR = 0.4


def related_similarity(scale: CosineScale) -> float:
    """The similarity at which two statements may be about the same attribute, on an embedder's own scale."""
    return scale.topic_floor + RELATED_SHARE_ABOVE_FLOOR * (1.0 - scale.topic_floor)


@dataclass(frozen=True)
class _Reading:
    """What a statement is about: its holder, its content terms, the ones it negates, and its CJK characters."""

    holder: str
    terms: frozenset[str]
    negated: frozenset[str]
    chars: frozenset[str]
    negated_chars: frozenset[str]
    change: bool
    # What the clauses that say a change are about ("the car is sold, now takes the metro to work": car, work):
    # an old memory about one of them is the value that gave way, however the new memory is worded.
    changed_terms: frozenset[str] = frozenset()
    changed_chars: frozenset[str] = frozenset()


def judge(new: str, old: str, cosine: float, scale: Scale, *, evidence: Sequence[str] = (),
          same_dimension: bool = False) -> Verdict:  # fmt: skip
    """The verdict on `new` against `old`. `evidence` is what `new` was learned from (its episodes): a change or a
    negation said there counts as said by `new`."""
    a, b = _read(new, tuple(evidence)), _read(old, ())
    if a.holder != b.holder:
        return "unrelated"
    substantive, flipped, changed_about = _ties(a, b)
    if not (same_dimension or flipped or substantive or changed_about or cosine >= scale.related):
        return "unrelated"
    only_new = (a.terms | a.negated) - (b.terms | b.negated)
    only_old = (b.terms | b.negated) - (a.terms | a.negated)
    distinct = bool(only_new) and bool(only_old)
    if flipped:
        # "quit coffee" against "drinks coffee"; but "not allergic to shellfish" says nothing of peanuts.
        return "contradicts" if not distinct or a.change or same_dimension else "unrelated"
    close = cosine >= scale.related or same_dimension or substantive or changed_about
    rules: tuple[tuple[bool, Verdict], ...] = (
        # A change said of the same attribute: the old value gave way.
        (a.change and bool(only_old or same_dimension) and close, "contradicts"),
        (cosine >= scale.same or (not only_new and not only_old and substantive), "confirms"),
        (not only_old and bool(only_new) and substantive, "refines"),
        # One attribute, two values: the caller said they are one attribute.
        (same_dimension and distinct, "contradicts"),
        (substantive and cosine >= (scale.same + scale.related) / 2, "confirms"),
    )
    return next((verdict for holds, verdict in rules if holds), "unrelated")


def says_change(text: str) -> bool:
    """Whether the text says that a state changed (a change word, English or Chinese)."""
    return bool(_CHANGE.search(text))


def anchored(new: str, old: str, *, evidence: Sequence[str] = ()) -> bool:
    """Whether `new` (learned from `evidence`) and `old` share what they are about in words, not only by vector: a
    term or two CJK characters, negated on either side or not, or a change said of one of the old one's terms."""
    return any(_ties(_read(new, tuple(evidence)), _read(old, ())))


def _ties(a: _Reading, b: _Reading) -> tuple[bool, bool, bool]:
    """What ties a new statement `a` to an old one `b` in words: a shared term or two shared CJK characters
    (substantive); a term one asserts and the other negates (flipped); a change said of what `b` is about, in the
    clause that says it (the old value gave way)."""
    shared = (a.terms | a.negated) & (b.terms | b.negated)
    shared_chars = (a.chars | a.negated_chars) & (b.chars | b.negated_chars)
    changed_about = bool(a.changed_terms & b.terms) or len(a.changed_chars & b.chars) >= 2
    return bool(shared) or len(shared_chars) >= 2, _flipped(a, b), changed_about


@lru_cache(maxsize=4096)
def _read(text: str, evidence: tuple[str, ...]) -> _Reading:
    """What `text` (learned from `evidence`) is about; remembered, as a run judges one memory against many."""
    units = units_of_text(text)
    holder = "other" if units and all(u.holder == "other" for u in units) else "user"
    terms = {t for u in units for t in u.terms} - frame_terms() - _FRAME
    negated = {t for u in units for t in u.negated} - frame_terms() - _FRAME
    for said in evidence:
        negated |= negated_terms(said) - frame_terms() - _FRAME
    chars, negated_chars = _cjk_chars(text), _negated_chars(text)
    for said in evidence:
        negated_chars |= _negated_chars(said)
    change = bool(_CHANGE.search(text)) or any(_CHANGE.search(said) for said in evidence)
    changing = [
        u for said in (text, *evidence) for u in units_of_text(said) if u.holder == "user" and _CHANGE.search(u.text)
    ]
    changed_terms = frozenset(t for u in changing for t in u.terms) - frame_terms() - _FRAME
    changed_chars = frozenset(ch for u in changing for ch in _cjk_chars(u.text))
    return _Reading(
        holder,
        frozenset(terms - negated),
        frozenset(negated),
        chars,
        negated_chars,
        change,
        changed_terms,
        changed_chars,
    )


def _flipped(a: _Reading, b: _Reading) -> bool:
    """A term (or, in Chinese, a character) one asserts and the other negates."""
    if (a.negated & b.terms) or (b.negated & a.terms):
        return True
    return bool((a.negated_chars & (b.chars - b.negated_chars)) or (b.negated_chars & (a.chars - a.negated_chars)))


def _cjk_chars(text: str) -> frozenset[str]:
    return frozenset(ch for ch in text if is_cjk(ch) and ch not in CJK_FUNCTION_CHARS and ch not in "用户")


def _negated_chars(text: str) -> frozenset[str]:
    """The CJK characters in the scope of a negation (the clause after 不, 没, 别, 戒, 不再 ...)."""
    found: set[str] = set()
    for m in re.finditer(r"不再|不想再?|不要|不用|不|没有|没|别|戒|停|离开|放弃", text):
        scope = re.split(r"[，,。；;！!？?]|而|改|换|去了|现在", text[m.end() :], maxsplit=1)[0][:8]
        found |= {ch for ch in scope if is_cjk(ch) and ch not in CJK_FUNCTION_CHARS and ch not in "用户想再要"}
    return frozenset(found)


# --- the polarity test the write path's near-duplicate check keeps -----------------------------------------------


def negation_count(text: str) -> int:
    """How many negation markers the text holds (English and Chinese)."""
    return len(_EN_NEGATIONS.findall(text)) + len(_ZH_NEGATIONS.findall(text))


def opposite_polarity(a: str, b: str) -> bool:
    """True when exactly one of the two statements is negated (odd vs even number of negations)."""
    return (negation_count(a) % 2) != (negation_count(b) % 2)


def contradicts(new: str, old: str, cosine: float, threshold: float) -> bool:
    """Whether `new` contradicts `old` (the verdict of `judge` on a scale whose "related" is `threshold`)."""
    return judge(new, old, cosine, Scale(related=threshold, same=1.01)) == "contradicts"


def content_terms(text: str) -> frozenset[str]:
    """The statement's content words (for tests and reports): its terms without the frame's."""
    return frozenset(query_terms(text)) - _FRAME
