"""Metadata's limits and terms (`rearview.domain.metadata`), and the rule that cuts a long text into chunks
(`rearview.service.chunking`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError

from rearview.domain.limits import MAX_CHUNKS, MAX_EPISODE_CHARS, MAX_WRITE_CHARS
from rearview.domain.metadata import (
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_METADATA_KEYS,
    Metadata,
    MetadataFilter,
    filter_terms,
    matches_terms,
    metadata_terms,
)
from rearview.service.chunking import CHUNK_CHARS, OVERLAP_CHARS, chunk_id, chunk_text

pytestmark = pytest.mark.unit


class _Takes(BaseModel):
    metadata: Metadata = Field(default_factory=dict)
    where: MetadataFilter | None = None


def _refusal(**fields: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        _Takes.model_validate(fields)
    return str(refused.value)


# --- limits ---------------------------------------------------------------------------------------------------------


def test_metadata_within_every_limit_is_kept_as_given() -> None:
    deepest: dict[str, Any] = {"a": {"b": {"c": [1, 2.5, None, True]}}}  # the object and three levels below
    keys = {f"k{i}": i for i in range(MAX_METADATA_KEYS - 1)}
    taken = _Takes(metadata={**keys, **deepest}).metadata

    assert taken == {**keys, **deepest}
    assert _Takes(metadata='{"project": "apollo"}').metadata == {"project": "apollo"}  # its JSON text, too


@pytest.mark.parametrize(
    ("metadata", "said"),
    [
        ({f"k{i}": 1 for i in range(MAX_METADATA_KEYS + 1)}, f"at most {MAX_METADATA_KEYS} keys (got 33)"),
        ({"a": {"b": {"c": {"d": {}}}}}, f"nested at most {MAX_METADATA_DEPTH} levels deep"),
        ({"a": [[[[1]]]]}, f"nested at most {MAX_METADATA_DEPTH} levels deep"),
        ({"text": "é" * (MAX_METADATA_BYTES // 2)}, f"at most {MAX_METADATA_BYTES} bytes as JSON"),
        ({"": 1}, "must be 1 to 64 characters"),
        ({"k" * 65: 1}, "must be 1 to 64 characters"),
        ({"tab\there": 1}, "must not hold control characters"),
        ({"x": float("inf")}, "JSON values only"),
        ([1], "must be a JSON object"),
        ("{not json", "must be a JSON object"),
    ],
)
def test_metadata_past_a_limit_is_refused_naming_it(metadata: Any, said: str) -> None:
    assert said in _refusal(metadata=metadata)


# --- terms: what every backend matches ------------------------------------------------------------------------------


def test_numbers_match_by_value_never_a_string_or_a_boolean() -> None:
    held = metadata_terms({"n": 2.0, "s": "2", "b": True, "one": 1})

    assert matches_terms(held, filter_terms({"n": 2}))
    assert not matches_terms(held, filter_terms({"s": 2}))
    assert matches_terms(held, filter_terms({"s": "2"}))
    assert not matches_terms(held, filter_terms({"b": 1}))
    assert not matches_terms(held, filter_terms({"one": True}))
    assert matches_terms(held, filter_terms({"one": 1.0, "b": True}))


def test_a_list_holding_a_value_matches_and_what_lies_deeper_does_not() -> None:
    held = metadata_terms({"labels": ["x", 3], "nested": {"project": "apollo"}, "nothing": None})

    assert matches_terms(held, filter_terms({"labels": "x"})) and matches_terms(held, filter_terms({"labels": 3}))
    assert not matches_terms(held, filter_terms({"project": "apollo"}))
    assert held == [t for t in held if not t.startswith(("nested", "nothing"))]


def test_conditions_are_anded_and_each_is_any_of_its_values() -> None:
    held = metadata_terms({"project": "apollo", "priority": 2})

    assert matches_terms(held, filter_terms({"project": ["gemini", "apollo"], "priority": 2}))
    assert not matches_terms(held, filter_terms({"project": "apollo", "priority": 3}))
    assert matches_terms(held, ())


def test_a_filter_takes_scalars_in_and_lists_and_refuses_the_rest() -> None:
    taken = _Takes(where={"a": 1, "b": {"in": ["x", False]}, "c": [2.5]}).where
    assert taken == {"a": 1, "b": ["x", False], "c": [2.5]}
    assert _Takes(where='{"a": "x"}').where == {"a": "x"}
    refused: list[dict[str, Any]] = [
        {"a": None},
        {"a": {"eq": 1}},
        {"a": {"in": [None]}},
        {"a": {"in": []}},
        {"a": [[1]]},
    ]
    for where in refused:
        assert "where.a" in _refusal(where=where)
    assert "at most 16 keys" in _refusal(where={f"k{i}": 1 for i in range(17)})


@given(st.dictionaries(st.text(min_size=1, max_size=8), st.one_of(st.integers(-(2**60), 2**60), st.booleans(),
                                                                    st.text(max_size=8)), max_size=6))  # fmt: skip
@settings(deadline=None, max_examples=200)
def test_every_scalar_matches_its_own_condition(metadata: dict[str, Any]) -> None:
    held = metadata_terms(metadata)
    for key, value in metadata.items():
        assert matches_terms(held, filter_terms({key: value}))


# --- chunking -------------------------------------------------------------------------------------------------------

PARAGRAPH = " ".join(f"Sentence {i} of the paragraph says something about shipping costs." for i in range(12))


def test_a_text_that_fits_one_episode_is_one_chunk() -> None:
    text = "x" * MAX_EPISODE_CHARS
    assert chunk_text(text) == [text]


def test_chunks_keep_to_the_limit_cut_at_paragraphs_first_and_repeat_the_end_of_the_one_before() -> None:
    paragraphs = [f"Paragraph {n}. {PARAGRAPH}" for n in range(10)]
    chunks = chunk_text("\n\n".join(paragraphs))

    assert all(len(chunk) <= MAX_EPISODE_CHARS for chunk in chunks)
    # Whole paragraphs where they fit: each chunk starts with a paragraph or with the overlap before one.
    assert chunks[0].startswith("Paragraph 0.") and chunks[0].endswith(paragraphs[1][-40:])
    for before, chunk in zip(chunks, chunks[1:], strict=False):
        assert chunk[:20] in before[-OVERLAP_CHARS:], (before[-OVERLAP_CHARS:], chunk[:40])
    joined = " ".join(chunks)
    assert all(paragraph[:60] in joined for paragraph in paragraphs)


def test_a_paragraph_too_long_is_cut_at_sentences_and_a_sentence_too_long_at_spaces() -> None:
    long_paragraph = " ".join([PARAGRAPH] * 5)
    chunks = chunk_text(long_paragraph)
    assert len(chunks) > 1 and all(len(c) <= MAX_EPISODE_CHARS for c in chunks)
    assert all(c.endswith(".") for c in chunks)  # every cut after a sentence

    words = " ".join(["word"] * 1000)
    assert all(len(c) <= MAX_EPISODE_CHARS and not c.startswith("ord") for c in chunk_text(words))
    assert "".join(chunk_text("x" * 5000)) == "x" * 5000  # no boundary at all: cut every CHUNK_CHARS


def test_cjk_sentences_are_boundaries_without_spaces() -> None:
    text = "这是一个关于运费的句子。" * 400
    chunks = chunk_text(text)
    assert len(chunks) > 1 and all(c.endswith("。") and len(c) <= MAX_EPISODE_CHARS for c in chunks)


@given(st.lists(st.integers(1, 2 * CHUNK_CHARS), min_size=1, max_size=60), st.sampled_from([". ", "\n\n", " "]))
@settings(deadline=None, max_examples=150)
def test_no_text_within_the_hard_limit_makes_more_chunks_than_allowed(sizes: list[int], separator: str) -> None:
    """Two chunks together always hold more than CHUNK_CHARS (each takes every whole unit that fits), so a text of
    n characters makes at most 2n / CHUNK_CHARS + 1 chunks, whatever its sentences' lengths."""
    text = separator.join("a" * size for size in sizes)[:MAX_WRITE_CHARS]
    chunks = chunk_text(text)

    assert len(chunks) <= min(MAX_CHUNKS, 2 * len(text) // CHUNK_CHARS + 1)
    assert all(0 < len(c) <= MAX_EPISODE_CHARS for c in chunks)


def test_chunk_ids_are_the_parent_then_numbered() -> None:
    assert [chunk_id("doc-7", i) for i in range(3)] == ["doc-7", "doc-7#1", "doc-7#2"]
