"""EpisodeColumns: a bulk load's columns validated once, each refusal naming the column, the row and the limit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rearview.domain.episode_columns import MAX_LOAD_EPISODES, EpisodeColumns, checked_vectors
from rearview.domain.timestamps import utc_from_epoch
from rearview.errors import InvalidInput


def _base(**more: Any) -> dict[str, Any]:
    return {"id": ["a", "b"], "content": ["one", "two"], "occurred_at": [1.7e9, 1.7e9 + 1]} | more


@pytest.mark.parametrize(
    ("columns", "field", "words"),
    [
        (_base(content=["one"]), "content", "1 values for 2 ids"),
        (_base(id=["a", "a"]), "id.1", "appears twice"),
        (_base(content=["one", "  "]), "content.1", "pattern"),
        (_base(content=["one", "x" * 2001]), "content.1", "2000"),
        (_base(occurred_at=[1.7e9, float("nan")]), "occurred_at.1", "finite"),
        (_base(occurred_at=[1.7e9, 1e12]), "occurred_at.1", "less than or equal"),
        (_base(id=["a", "b c"]), "id.1", "pattern"),
        (_base(entities=[["ok"], ["x" * 129]]), "entities.1.0", "128"),
        (_base(tags=[[], ["t"] * 33]), "tags.1", "32"),
        (_base(importance=[0.5, 1.5]), "importance.1", "less than or equal to 1"),
        (_base(outcome_status=["success", "won"]), "outcome_status.1", "success"),
        (_base(session_id=[None, "bad session"]), "session_id.1", "pattern"),
        (_base(colour=["red", "blue"]), "colour", "Extra inputs"),
        ({"id": [], "content": [], "occurred_at": []}, "id", "at least 1"),
    ],
)
def test_a_bad_column_is_refused_naming_it(columns: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        EpisodeColumns.of(**columns)

    assert refused.value.field == field
    assert words in str(refused.value)


def test_more_than_a_load_holds_is_refused() -> None:
    count = MAX_LOAD_EPISODES + 1
    with pytest.raises(InvalidInput) as refused:
        EpisodeColumns.of(id=[f"e{i}" for i in range(count)], content=["x"] * count, occurred_at=[1.7e9] * count)
    assert refused.value.field == "id"
    assert str(MAX_LOAD_EPISODES) in str(refused.value)


def test_episodes_take_the_defaults_of_the_columns_not_given() -> None:
    rows = EpisodeColumns.of(**_base(entities=[["Dana"], []], created_at=[1.8e9, 1.8e9]))

    first, second = rows.episodes("acme")

    assert (first.id, first.namespace, first.content, first.entities) == ("a", "acme", "one", ["Dana"])
    assert first.occurred_at == utc_from_epoch(1.7e9) and first.created_at == utc_from_epoch(1.8e9)
    assert (second.importance, second.tags, second.event_type, second.version) == (0.5, [], None, 1)
    assert rows.given("entities") == [["Dana"], []] and rows.given("tags") is None and rows.given("version") is None
    without = EpisodeColumns.of(**_base()).episodes("acme")
    assert without[1].created_at == without[1].occurred_at


def test_vectors_are_checked_for_shape_and_finiteness() -> None:
    rows = EpisodeColumns.of(**_base())

    assert checked_vectors(rows, None, 4) is None
    checked = checked_vectors(rows, np.ones((2, 4), dtype=np.float64), 4)
    assert checked is not None and checked.dtype == np.float32
    for bad in (np.ones((3, 4)), np.ones((2, 5)), np.ones(4), np.array([[1, 2, 3, np.inf]] * 2)):
        with pytest.raises(InvalidInput) as refused:
            checked_vectors(rows, bad, 4)
        assert refused.value.field == "vectors"
