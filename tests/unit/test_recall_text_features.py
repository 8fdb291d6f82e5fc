"""What recall remembers of a candidate's text answers as the analysis it stands for, long texts included."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rearview.domain.memory import Episode
from rearview.service.recall import text_features
from rearview.service.recall.scoring import names_an_entity
from rearview.stemming import index_terms
from rearview.text_analysis import mentions_time, tokens

pytestmark = pytest.mark.unit

TEXTS = [
    "",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "We've had the turtles for 3 years now!",
    "我上周去了北京，见了王伟。",
    "Ａ１ full-width and o'brien's café",
    "no time words here at all",
]


@pytest.mark.parametrize("text", TEXTS)
def test_remembered_answers_are_the_analysis(text: str) -> None:
    for _ in range(2):  # the first call computes, the second remembers
        assert text_features.word_count(text) == len(tokens(text))
        assert text_features.says_when(text) is mentions_time(text)
        assert text_features.stem_set(text) == set(index_terms(text))


def test_long_texts_are_analysed_not_remembered() -> None:
    text_features._cached_word_count.cache_clear()
    long = "last week " * 200
    assert len(long) > text_features._CACHED_CHARS
    assert text_features.word_count(long) == 400
    assert text_features.says_when(long)
    assert text_features._cached_word_count.cache_info().currsize == 0
    text_features._cached_stem_set.cache_clear()
    assert text_features.stem_set(long + "in June") == {"last", "week", "in", "june"}
    assert text_features._cached_stem_set.cache_info().currsize == 0
    text_features.word_count("short text")
    assert text_features._cached_word_count.cache_info().currsize == 1


@pytest.mark.parametrize(
    ("entities", "query", "named"),
    [
        (["Caroline"], {"caroline", "support"}, True),
        (["Mary Anne"], {"anne"}, True),
        (["O'Brien"], {"o", "brien"}, True),
        (["王伟"], {"王伟"}, True),
        (["Caroline"], {"carol"}, False),
        ([], {"caroline"}, False),
    ],
)
def test_names_an_entity_reads_the_entity_words(entities: list[str], query: set[str], named: bool) -> None:
    at = datetime(2024, 1, 1, tzinfo=UTC)
    episode = Episode(id="e", namespace="n", content="x", created_at=at, occurred_at=at, entities=entities)
    assert names_an_entity(episode, query) is named
    assert names_an_entity(episode, query) is bool(any(query & set(tokens(e)) for e in entities))
