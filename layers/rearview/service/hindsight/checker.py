"""The checker: a statement is accepted only if the episodes it cites support it.

A model states memories well and sometimes wrongly: a small one copies its worked example, turns "stop using
emoji" into "prefers emoji", or gives a colleague's habit to the user. Three checks, each against the cited
episodes' own text:
- the subject is the user (a statement about someone else is not the user's memory);
- grounding: what the statement is about (its content terms, its numbers) is in the episodes;
- polarity: a term the statement asserts is not one the episodes negate or give up, and the other way round.
`problem` names what is wrong, or None; consolidation states a rejected model memory offline instead, and says so.
`facets_grounded` is the check of a rules' memory stated from one turn (extraction at write): its template's words
need no grounding, its slots and values do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rearview.domain.hindsight import InducedMemory
from rearview.domain.memory import Episode
from rearview.service.hindsight import lexicon
from rearview.service.voice import frame_terms, negated_terms, units_of_text
from rearview.stemming import index_terms
from rearview.text_analysis import CJK_FUNCTION_CHARS, is_cjk, query_terms

# Share of a statement's content terms that must be found in its episodes.
MIN_GROUNDED_SHARE = 0.6
# Words of a statement's frame ("The user prefers ..."), which no episode needs to say.
_STATEMENT_WORDS = frozenset(
    index_terms(
        "user user's users prefer prefers preference preferences like likes want wants regularly usually often "
        "always repeatedly asks asked keep keeps lesson worked works work failed fails failure times time"
    )
) | {"用户", "偏好", "喜欢", "希望", "经常", "总是", "失败", "成功", "关于"}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def problem(memory: InducedMemory, episodes: Sequence[Episode]) -> str | None:
    """What the cited episodes do not support in the memory's statement, or None when they support it."""
    cited = [e for e in episodes if e.id in set(memory.provenance)]
    if not cited:
        return "it cites none of the group's episodes"
    sources = [e.content + (" " + e.outcome if e.outcome else "") for e in cited]
    statement = memory.statement
    units = units_of_text(statement)
    if memory.kind != "lesson" and units and all(u.holder == "other" for u in units):
        return "its subject is someone other than the user"
    grounded, missing = _grounding(statement, sources)
    if missing and grounded < MIN_GROUNDED_SHARE:
        return f"its words are not in the episodes: {', '.join(sorted(missing)[:4])}"
    numbers = set(_NUMBER.findall(statement)) - {n for s in sources for n in _NUMBER.findall(s)}
    if numbers:
        return f"its numbers are not in the episodes: {', '.join(sorted(numbers)[:4])}"
    flipped = _polarity(statement, sources) if memory.kind != "lesson" else None
    if flipped:
        return f"it reverses what the episodes say about {flipped}"
    return None


# The Chinese names the rules' statements give a slot or a value ("Chinese" -> 中文): a Chinese turn names it so.
_ZH_NAMES = (lexicon.LANGUAGE_ZH, lexicon.TEXT_OBJECTS_ZH, lexicon.FORMATS_ZH, lexicon.ACTIVITIES_ZH, lexicon.DIETS_ZH)
# Share of a slot's or a value's terms a turn must hold to name it ("going to the gym": "gym").
MIN_NAMED_SHARE = 0.5


def facets_grounded(facets: Mapping[str, str], episodes: Sequence[Episode]) -> bool:
    """Whether the episodes name every facet of a memory, by its slot or its value (or their Chinese names). A name
    made only of a statement's own words ("user", "prefers") names nothing, so it grounds nothing."""
    sources = [e.content for e in episodes]
    for slot, value in facets.items():
        names = [slot, value, *(m[w] for m in _ZH_NAMES for w in (slot, value) if w in m)]
        if not any(_names_something(name) and _grounding(name, sources)[0] >= MIN_NAMED_SHARE for name in names):
            return False
    return bool(facets)


def _names_something(name: str) -> bool:
    """Whether a facet's name holds a word that is not a statement's own ("成都" does; "user", "偏好" do not)."""
    words = {(index_terms(t) or [t])[0] if not is_cjk(t[0]) else t for t in query_terms(name)}
    return bool(words - _STATEMENT_WORDS - frame_terms())


def _terms(text: str) -> set[str]:
    out = set()
    for token in query_terms(text):
        if is_cjk(token[0]):
            if not any(ch in CJK_FUNCTION_CHARS for ch in token):
                out.add(token)
            continue
        stemmed = index_terms(token)
        out.add(stemmed[0] if stemmed else token)
    return out - _STATEMENT_WORDS - frame_terms()


def _grounding(statement: str, sources: Sequence[str]) -> tuple[float, set[str]]:
    """The share of the statement's content terms found in the sources, and the ones not found."""
    wanted = _terms(statement)
    if not wanted:
        return 1.0, set()
    have = set().union(*(_terms(s) for s in sources)) if sources else set()
    chars = {ch for s in sources for ch in s if is_cjk(ch)}
    missing = {t for t in wanted if t not in have and not (is_cjk(t[0]) and set(t) <= chars)}
    return 1.0 - len(missing) / len(wanted), missing


def _polarity(statement: str, sources: Sequence[str]) -> str | None:
    """A term the statement asserts while most sources that name it negate it, or the other way round."""
    said = _terms(statement)
    negated = negated_terms(statement)
    for term in sorted(said):
        naming = [s for s in sources if term in _terms(s)]
        if not naming:
            continue
        against = sum(1 for s in naming if term in negated_terms(s))
        if term in negated and against * 2 < len(naming) and against == 0:
            return term
        if term not in negated and against * 2 > len(naming):
            return term
    return None
