"""Rows read back as memories: the fast construction gives what pydantic's model_construct gives, field for field,
in the same order, with the same fields set; the store round-trips every field through it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore
from rearview.adapters.sqlite.rows import episode_from_row, fact_from_row, json_list
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Evidence, Fact

T0 = 1_700_000_000.0

EPISODE_ROWS = [
    # id, namespace, content, tags, importance, access_count, last_accessed_at, created_at, confirmations,
    # redacted, version, occurred_at, event_type, entities, outcome, session_id, consolidated, context,
    # outcome_status, last_occurred_at, session_ids, metadata, source, expires_at, parent_id, chunk_index,
    # chunk_count
    ("e1", "ns", "plain", "[]", 0.5, 0, None, T0, 1, 0, 1, T0, None, "[]", None, None, 0, "", None, None, "[]",
     "{}", None, None, None, None, None),
    (
        "e2", "ns", "Caroline: the 会议 moved?", '["work", "会议"]', 0.9, 3, T0 + 5, T0, 2, 1, 4, T0 - 86400,
        "meeting", '["Caroline", "Mel"]', "went well", "s1", 1, "Mel: when?", "success", T0 + 60, '["s0", "s1"]',
        '{"project":"apollo","n":[1,2.5]}', "https://example.org/notes", T0 + 3600, "e0", 2, 3,
    ),
]  # fmt: skip

EVIDENCE = Evidence(episodes=2, occurrences=3, sessions=1, first_at=datetime(2024, 1, 1, tzinfo=UTC))
FACT_ROWS = [
    # id, namespace, content, tags, importance, access_count, last_accessed_at, created_at, confirmations,
    # redacted, version, dimension, confidence, provenance, last_confirmed_at, status, superseded_by,
    # superseded_at, kind, facets, evidence, induced_by, first_seen_at, metadata, source, expires_at, entities
    ("f1", "ns", "likes tea", "[]", 0.5, 0, None, T0, 1, 0, 1, None, 0.8, "[]", T0, "active", None, None, "fact",
     "{}", None, None, None, "{}", None, None, "[]"),
    ("f2", "ns", "replies in Chinese", '["lang"]', 0.7, 1, T0, T0, 3, 0, 2, "language", 0.6, '["e1", "e2"]', T0 + 9,
     "superseded", "f3", T0 + 10, "preference", '{"replies": "Chinese"}',
     EVIDENCE.model_dump_json(), "rules", T0 - 100, '{"team":{"id":7}}', "user said", T0 + 99, '["Ana"]'),
]  # fmt: skip


def _reference(cls: type[Episode] | type[Fact], built: Episode | Fact) -> Episode | Fact:
    """What model_construct makes of the same values (the construction the fast path replaces)."""
    return cls.model_construct(**dict(built.__dict__))


def _state(model: Episode | Fact) -> tuple[Any, ...]:
    return (
        type(model),
        list(model.__dict__.items()),
        model.model_fields_set,
        model.__pydantic_extra__,
        model.__pydantic_private__,
    )


@pytest.mark.parametrize("row", EPISODE_ROWS, ids=lambda r: r[0])
def test_an_episode_row_is_built_as_model_construct_builds_it(row: tuple[Any, ...]) -> None:
    built = episode_from_row(row)
    assert _state(built) == _state(_reference(Episode, built))
    assert list(built.__dict__) == list(Episode.model_fields)
    assert built.model_dump() == Episode.model_validate(built.model_dump()).model_dump()
    assert built.occurred_at.tzinfo is UTC


@pytest.mark.parametrize("row", FACT_ROWS, ids=lambda r: r[0])
def test_a_fact_row_is_built_as_model_construct_builds_it(row: tuple[Any, ...]) -> None:
    built = fact_from_row(row)
    assert _state(built) == _state(_reference(Fact, built))
    assert list(built.__dict__) == list(Fact.model_fields)
    assert built.model_dump() == Fact.model_validate(built.model_dump()).model_dump()


def test_empty_lists_read_back_as_distinct_lists() -> None:
    """The "[]" shortcut hands out a new list per memory: appending to one memory's tags changes no other."""
    a, b = episode_from_row(EPISODE_ROWS[0]), episode_from_row(EPISODE_ROWS[0])
    a.tags.append("x")
    assert b.tags == []
    assert a.entities is not b.entities


def test_the_store_round_trips_every_field(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "rows.db", embedder_name="test", dim=4)
    store = SqliteMemoryStore(db)
    at = datetime(2024, 5, 1, 12, tzinfo=UTC)
    episode = Episode(
        id="e1",
        namespace="ns",
        content="Met Caroline at the 咖啡店?",
        tags=["coffee"],
        importance=0.7,
        created_at=at,
        occurred_at=at,
        event_type="meeting",
        entities=["Caroline"],
        outcome="fine",
        outcome_status="success",
        session_id="s1",
        last_occurred_at=at,
        session_ids=["s0"],
        context="Mel: where?",
    )
    fact = Fact(
        id="f1",
        namespace="ns",
        content="prefers tea",
        created_at=at,
        last_confirmed_at=at,
        kind="preference",
        dimension="drink",
        facets={"drink": "tea"},
        provenance=["e1"],
        evidence=Evidence(episodes=1, sessions=1, days=1, last_at=at),
        first_seen_at=at,
    )
    vector = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    store.apply("ns", ChangeSet(upserts=[(episode, vector), (fact, vector)]))
    found = store.get_many("ns", ["e1", "f1"])
    assert found["e1"] == episode
    assert found["f1"] == fact
    assert found["e1"].model_fields_set == set(Episode.model_fields)
    db.close()


def test_rows_skip_model_construct(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every field is read in declaration order, so the fast path is the one taken (a field added to the model
    but not to the row falls back to model_construct: correct, but slow, and this test says so)."""

    def refuse(cls: type, *args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"{cls.__name__}.model_construct called: the row's fields are not the model's")

    monkeypatch.setattr(Episode, "model_construct", classmethod(refuse))
    monkeypatch.setattr(Fact, "model_construct", classmethod(refuse))
    for episode_row in EPISODE_ROWS:
        episode_from_row(episode_row)
    for fact_row in FACT_ROWS:
        fact_from_row(fact_row)


@pytest.mark.parametrize("seconds", [T0, T0 + 0.000017, -86_400.5, 0.0, 1_700_000_000])
def test_remembered_times_read_back_as_fromtimestamp_gives_them(seconds: float) -> None:
    """Rows' times come through a cache: the first read and a repeated one both give the exact UTC datetime."""
    row = ("e1", "ns", "x", "[]", 0.5, 0, seconds, seconds, 1, 0, 1, seconds, None, "[]", None, None, 0, "", None,
           seconds, "[]", "{}", None, None, None, None, None)  # fmt: skip
    expected = datetime.fromtimestamp(seconds, UTC)
    for _ in range(2):
        built = episode_from_row(row)
        times = (built.created_at, built.occurred_at, built.last_accessed_at, built.last_occurred_at)
        assert times == (expected,) * 4
        assert all(t is not None and t.tzinfo is UTC and t.microsecond == expected.microsecond for t in times)


@given(st.lists(st.text(), max_size=6))
@settings(deadline=None, max_examples=300)
def test_json_list_is_what_json_dumps_gives(values: list[str]) -> None:
    assert json_list(values) == json.dumps(values, ensure_ascii=False)
    assert json_list(iter(values)) == json.dumps(values, ensure_ascii=False)
    assert json.loads(json_list(values)) == values
