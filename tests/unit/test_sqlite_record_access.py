"""Counting accesses (every recall does it) touches the two access columns and nothing else (SQLite backend): one
UPDATE per table whatever the number of ids, no full-text, tag or provenance trigger, no version or generation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact
from support.sqlite_trace import traced

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=32)


@pytest.fixture
def store(tmp_path: Path) -> SqliteMemoryStore:
    db = SqliteDatabase(tmp_path / "m.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store = SqliteMemoryStore(db)
    memories: list[Episode | Fact] = [
        *(
            Episode(
                id=f"e{i}",
                namespace="acme",
                content=f"violin lesson {i}",
                tags=["weekly"],
                occurred_at=T0,
                created_at=T0,
            )
            for i in range(5)
        ),
        Fact(
            id="f1",
            namespace="acme",
            content="plays the violin",
            provenance=["e1"],
            last_confirmed_at=T0,
            created_at=T0,
        ),
    ]
    store.apply("acme", ChangeSet(upserts=[(m, EMBEDDER.embed([m.content])[0]) for m in memories]))
    return store


def _side_tables(store: SqliteMemoryStore) -> list[object]:
    conn = store.db.connection()
    return [
        conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
        for table in ("memory_tags", "fact_sources", "namespace_state")
    ] + [conn.execute("SELECT rowid FROM fts_episodes WHERE fts_episodes MATCH 'violin' ORDER BY rowid").fetchall()]


def test_record_access_runs_one_update_per_table_and_no_trigger(store: SqliteMemoryStore) -> None:
    before = _side_tables(store)
    generation = store.db.generation("acme")
    ids = ["e0", "e1", "e2", "e3", "e1", "f1", "missing"]

    statements = traced(store.db, lambda: store.record_access("acme", ids, T0 + timedelta(hours=1)))

    # BEGIN IMMEDIATE, the two UPDATEs, COMMIT: a trigger's statements would show up here too (see the control).
    assert [s.split()[0] for s in statements] == ["BEGIN", "UPDATE", "UPDATE", "COMMIT"]
    assert _side_tables(store) == before
    assert store.db.generation("acme") == generation
    loaded = store.get_many("acme", ["e0", "e1", "e4", "f1"])
    assert {k: (m.access_count, m.version) for k, m in loaded.items()} == {
        "e0": (1, 1),
        "e1": (1, 1),
        "e4": (0, 1),
        "f1": (1, 1),
    }
    assert loaded["e1"].last_accessed_at == T0 + timedelta(hours=1) and loaded["e4"].last_accessed_at is None


def test_the_trace_shows_a_trigger_when_one_fires(store: SqliteMemoryStore) -> None:
    """The control for the test above: an update of a watched column does show its trigger's statements."""
    conn = store.db.connection()

    statements = traced(store.db, lambda: conn.execute("UPDATE episodes SET tags_json = '[]' WHERE id = 'e0'"))

    assert len(statements) > 1
