"""The forms of a recall query beyond its topic and time words, read from its wording (English and Chinese; other
languages pass through untouched):

- **last time**: "what happened last time I deployed the billing service", "the most recent outage", "上次部署账单
  服务的时候出了什么问题": the most recent occurrence of what the rest of the query names. "last week" / "上周" is a
  time range (see `time_expressions`); "at last", "last name", "the last step of the recipe" are no form at all.
- **exclusion**: "other than the retry approach", "except X", "besides X", "apart from X", "anything but X", "除了重试
  之外", "不要重试那个": leave out the memories about X. "not X" counts only as "anything but X"; "instead of X" and
  "rather than X" ask what replaced X, whose memory names X, so they are no exclusion. A phrase that names nothing
  but points back ("the previous approach", "what you suggested before", "之前那个方法") *refers back*: recall
  leaves out the most recent matching episode or lesson (see `form_stages`). A bare "that" / "这个" ("other than
  that, ...") is a turn of speech, not an exclusion.

Recognition is by pattern and conservative: a form it misses is searched as plain words, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from rearview.stemming import index_terms
from rearview.text_analysis import query_terms

Source = Literal["query", "request"]


@dataclass(frozen=True)
class Excluded:
    """One thing to leave out: the phrase as written, and the content terms (stemmed as the index stems them) a
    memory must hold to be about it; no terms when the phrase refers back to the latest match instead."""

    phrase: str
    terms: tuple[str, ...]
    source: Source

    @property
    def refers_back(self) -> bool:
        return not self.terms


@dataclass(frozen=True)
class QueryForms:
    """What `read_query_forms` found: the query without the forms' words, and the forms."""

    text: str
    last_time: str | None = None
    exclusions: tuple[Excluded, ...] = ()


# --- last time ---

_EN_LAST_TIME = re.compile(
    r"(?<![A-Za-z])(?:the\s+)?(?:(?:very\s+)?last|previous)\s+time(?![A-Za-z'])"
    # "last time step", "previous time zone": a compound noun, not an occasion.
    r"(?!\s+(?:steps?|zones?|slots?|frames?|stamps?|series|lines?|limits?|windows?|periods?|outs?|units?)\b)"
    r"|(?<![A-Za-z])(?:the\s+)?most\s+recent(?:ly)?(?![A-Za-z])",
    re.IGNORECASE,
)
# 以上 / 之上 + 次 ("三次以上次数") is not 上次; 上周 / 上个月 are time ranges and never match.
_ZH_LAST_TIME = re.compile(r"(?<![以之向往])(?:上一?次|上一?回|最近一次|最后一次)(?!数)")


# --- exclusions ---

_EN_EXCLUDE = re.compile(
    r"(?<![A-Za-z])(?P<marker>other\s+than|apart\s+from|aside\s+from|except(?:\s+for)?|excluding|besides"
    r"|(?:any|every)thing\s+(?:but|except)|not\s+including)\s+",
    re.IGNORECASE,
)
# In a memory's own text these also set a thing apart from what it is about ("instead of my usual shooters").
_EN_SET_APART = re.compile(_EN_EXCLUDE.pattern + r"|(?<![A-Za-z])(?:instead\s+of|rather\s+than)\s+", re.IGNORECASE)
# "none other than X" / "no other than X" means X itself.
_NONE_BEFORE = re.compile(r"(?<![A-Za-z])(?:none|no)\s+$", re.IGNORECASE)
# Words that end an English excluded phrase once it has one word: what follows is the rest of the question.
_EN_AUXILIARIES = frozenset((
    "is", "are", "was", "were", "do", "does", "did", "can", "could", "should", "would", "will", "has", "have", "had",
))  # fmt: skip
_EN_PHRASE_END = _EN_AUXILIARIES | frozenset((
    "for", "in", "on", "at", "with", "when", "while", "that", "which", "who", "whom", "whose", "because", "since",
    "if", "so", "what", "how", "where", "why", "or",
))  # fmt: skip
# A phrase that opens with one of these is a clause ("what we did last time"): its verb does not end it.
_EN_CLAUSE_OPENERS = frozenset(["what", "whatever"])
_EN_PHRASE_WORDS = 8
# Punctuation that ends a clause: ASCII only before a space or the end ("CS:GO", "v1.2" are words).
_CLAUSE_END = re.compile(r"[,.;:!?](?=\s|$)|[，。；：！？]")
_WORD = re.compile(r"\S+")

_ZH_PUNCTUATION = "，,。？?！!；;：:"
_ZH_EXCLUDE = re.compile(
    rf"(?:除了|除开|除去)\s*(?P<x>[^{_ZH_PUNCTUATION}]{{1,24}}?)\s*"
    rf"(?:之外|以外|(?=[{_ZH_PUNCTUATION}]|还|都|也|就|$))"
)
# "不要重试那个", "别再用之前那个方法": only with the demonstrative that makes it point at a thing. 要不要 / 用不用 ask
# whether; 区别 / 特别 / 分别 are no "don't".
_ZH_DONT = re.compile(
    rf"(?:(?<!要)不要|(?<!用)不用|(?<![区分特告识辨类级派性个])别)\s*再?\s*(?:用|试|提|推荐)?"
    rf"(?P<x>[^{_ZH_PUNCTUATION}]{{1,16}}?)(?:那个|这个|那种|这种|那套|这套)(?:方法|办法|方案|做法|思路)?"
)

# Words that point back at something said or done before, and nouns that only say "a way of doing it": a phrase
# made of these names nothing itself.
_EN_POINTERS = frozenset((
    "previous", "previously", "earlier", "before", "last", "prior", "former", "above", "same", "again", "already",
))  # fmt: skip
_EN_GENERIC = frozenset((
    "approach", "approaches", "method", "methods", "way", "ways", "solution", "solutions", "fix", "fixes", "idea",
    "ideas", "option", "options", "plan", "plans", "attempt", "attempts", "suggestion", "suggestions", "answer",
    "answers", "workaround", "workarounds", "strategy", "strategies", "thing", "things", "one", "ones", "time",
    "times", "try", "tried", "suggest", "suggested", "use", "used", "mention", "mentioned", "propose", "proposed",
    "recommend", "recommended", "give", "gave", "given", "say", "said", "tell", "told",
))  # fmt: skip
_ZH_POINTERS = re.compile(r"之前|以前|上一?次|上一?回|刚才|刚刚|前面|先前|原来|原先|最近")
_ZH_GENERIC_NOUNS = re.compile(r"方法|办法|方案|做法|思路|建议|主意|法子")
_ZH_FILLER = re.compile(r"那个|这个|那种|这种|那套|这套|那些|这些|用过|试过|说过|提过|用的|说的|提的|给的|的")


def read_query_forms(text: str) -> QueryForms:
    """The forms `text` uses: exclusions first (their words are not searched, so a "last time" inside one, as in
    "other than what we did last time", belongs to the exclusion), then "last time" in what is left."""
    spans: list[tuple[int, int]] = []
    exclusions: list[Excluded] = []
    for start, end, phrase in _exclusion_spans(text):
        excluded = _excluded(phrase, "query")
        if excluded is not None:
            spans.append((start, end))
            exclusions.append(excluded)
    rest = _cut(text, spans)
    marker = _EN_LAST_TIME.search(rest) or _ZH_LAST_TIME.search(rest)
    if marker is None:
        return QueryForms(text=rest, exclusions=tuple(exclusions))
    return QueryForms(
        text=_cut(rest, [marker.span()]), last_time=" ".join(marker.group(0).split()), exclusions=tuple(exclusions)
    )


def requested_exclusion(phrase: str) -> Excluded:
    """A phrase given in `RecallQuery.exclude`: excluded by its words, or, naming nothing, referring back."""
    return _excluded(phrase, "request") or Excluded(phrase=phrase.strip(), terms=(), source="request")


def holds_terms(text: str, terms: Iterable[str]) -> bool:
    """Whether `text` holds every one of `terms` (stemmed as the index stems)."""
    return set(terms) <= set(index_terms(text))


def sets_apart(text: str, terms: Iterable[str]) -> bool:
    """Whether `text` names the terms only to set them apart from what it is about ("besides pottery we paint",
    "instead of my usual shooters", "除了重试还试了…"): every term lies in such a phrase of its own."""
    wanted = set(terms)
    apart: set[str] = set()
    for _, _, phrase in _exclusion_spans(text, _EN_SET_APART):
        apart.update(index_terms(phrase))
    return bool(wanted) and wanted <= apart


def _exclusion_spans(text: str, english: re.Pattern[str] = _EN_EXCLUDE) -> Iterator[tuple[int, int, str]]:
    """(start, end, excluded phrase) of each exclusion in `text`, in order, none overlapping."""
    found = [*_english_exclusions(text, english), *_chinese_exclusions(text)]
    last_end = -1
    for start, end, phrase in sorted(found):
        if start >= last_end:
            last_end = end
            yield start, end, phrase


def _english_exclusions(text: str, pattern: re.Pattern[str]) -> Iterator[tuple[int, int, str]]:
    for m in pattern.finditer(text):
        if _NONE_BEFORE.search(text[: m.start()]):
            continue
        phrase_end = _english_phrase_end(text, m.end())
        if phrase_end > m.end():
            yield m.start(), phrase_end, text[m.end() : phrase_end]


def _english_phrase_end(text: str, start: int) -> int:
    """Where the phrase starting at `start` ends: at the clause's end, at a word that starts the rest of the
    question (after the phrase's first word), or after `_EN_PHRASE_WORDS` words."""
    clause = _CLAUSE_END.search(text, start)
    limit = clause.start() if clause else len(text)
    end, ends = start, _EN_PHRASE_END
    for count, word in enumerate(_WORD.finditer(text, start, limit)):
        lowered = word.group(0).lower()
        if count >= _EN_PHRASE_WORDS or (count > 0 and lowered in ends):
            break
        if count == 0 and lowered in _EN_CLAUSE_OPENERS:
            ends = _EN_PHRASE_END - _EN_AUXILIARIES
        end = word.end()
    return end


def _chinese_exclusions(text: str) -> Iterator[tuple[int, int, str]]:
    for pattern in (_ZH_EXCLUDE, _ZH_DONT):
        for m in pattern.finditer(text):
            yield m.start(), m.end(), m.group("x").strip()


def _excluded(phrase: str, source: Source) -> Excluded | None:
    """The phrase as a thing to leave out: its content terms once the pointing and generic words are gone; None
    for a phrase that neither names anything nor points back ("that", "这个")."""
    phrase = " ".join(phrase.split())
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]*", phrase)]
    core = " ".join(w for w in re.split(r"\s+", phrase) if w.lower().strip(",.") not in _EN_POINTERS | _EN_GENERIC)
    core = _ZH_FILLER.sub(" ", _ZH_GENERIC_NOUNS.sub(" ", _ZH_POINTERS.sub(" ", core)))
    terms = tuple(dict.fromkeys(piece for term in query_terms(core) for piece in index_terms(term)))
    if terms:
        return Excluded(phrase=phrase, terms=terms, source=source)
    points_back = any(w in _EN_POINTERS | _EN_GENERIC for w in words) or bool(
        _ZH_POINTERS.search(phrase) or _ZH_GENERIC_NOUNS.search(phrase)
    )
    return Excluded(phrase=phrase, terms=(), source=source) if points_back else None


_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.;:!?，。；：！？])")
_LEADING_LEFTOVER = " \t\n,;:，；：、的"


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without the spans, its spaces and punctuation tidied."""
    if not spans:
        return text
    kept, at = [], 0
    for start, end in sorted(spans):
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    joined = " ".join("".join(kept).split())
    joined = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", joined)
    joined = re.sub(r"([,，;；:：])(?=\s*[,，.。?？!！;；]|$)", "", joined)
    return joined.lstrip(_LEADING_LEFTOVER).strip()
