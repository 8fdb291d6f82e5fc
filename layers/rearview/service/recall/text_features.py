"""What recall's stages ask of a candidate's text, remembered per text: the same memories come back query after
query, and their analysis (a tokenisation for the length prior, a large regular expression for time answers) was
most of the rank stage's own time. Pure functions of the text, so a remembered answer is the answer.

Texts longer than `_CACHED_CHARS` are analysed every time: they are rare, and a bounded number of short texts
bounds what the caches hold (about 12 MB at most)."""

from __future__ import annotations

from functools import lru_cache

from rearview.stemming import index_terms
from rearview.text_analysis import mentions_time, tokens

_CACHED_CHARS = 1_000
_CACHED_TEXTS = 8_192


@lru_cache(maxsize=_CACHED_TEXTS)
def _cached_word_count(text: str) -> int:
    return len(tokens(text))


@lru_cache(maxsize=_CACHED_TEXTS)
def _cached_says_when(text: str) -> bool:
    return mentions_time(text)


# Only the results' texts are checked this way (ten a query, not a hundred), and a set holds every word.
@lru_cache(maxsize=_CACHED_TEXTS // 4)
def _cached_stem_set(text: str) -> frozenset[str]:
    return frozenset(index_terms(text))


@lru_cache(maxsize=_CACHED_TEXTS)
def term_stems(term: str) -> frozenset[str]:
    """The stems keyword search matches a query term by: checked against every result's `stem_set`."""
    return frozenset(index_terms(term))


@lru_cache(maxsize=_CACHED_TEXTS)
def entity_words(entity: str) -> frozenset[str]:
    """The words of an entity's name (its tokens): what a query must say to name it. Names are short."""
    return frozenset(tokens(entity))


def word_count(text: str) -> int:
    """How many word tokens the text has (`len(tokens(text))`)."""
    return _cached_word_count(text) if len(text) <= _CACHED_CHARS else len(tokens(text))


def says_when(text: str) -> bool:
    """Whether the text says when or for how long (`mentions_time`)."""
    return _cached_says_when(text) if len(text) <= _CACHED_CHARS else mentions_time(text)


def stem_set(text: str) -> frozenset[str]:
    """The terms keyword search indexes for the text (stemmed), as a set: what the relevance verdict checks the
    query's terms against."""
    return _cached_stem_set(text) if len(text) <= _CACHED_CHARS else frozenset(index_terms(text))
