"""Counting accesses (every recall does it) on the SQLite backend: a recall logs one row (`access_log`), and the
log is folded into the memories' two access columns in batches, one UPDATE per table, no full-text, tag or
provenance trigger, no version or generation; `get` counts what is not folded yet, a write never lowers what was
folded, an erase takes the log with it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import MIGRATIONS, SqliteDatabase, SqliteMemoryStore
from rearview.adapters.sqlite.access_log import FOLD_ROWS, FOLD_SECONDS
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


def _counts(store: SqliteMemoryStore, ids: list[str]) -> dict[str, tuple[int, int]]:
    return {k: (m.access_count, m.version) for k, m in store.get_many("acme", ids).items()}


def _logged(store: SqliteMemoryStore, namespace: str = "acme") -> int:
    (rows,) = (
        store.db.connection().execute("SELECT COUNT(*) FROM access_log WHERE namespace = ?", (namespace,)).fetchone()
    )
    return int(rows)


def test_record_access_logs_one_row_and_the_fold_runs_one_update_per_table_and_no_trigger(
    store: SqliteMemoryStore,
) -> None:
    before = _side_tables(store)
    generation = store.db.generation("acme")
    ids = ["e0", "e1", "e2", "e3", "e1", "f1", "missing"]
    at = T0 + timedelta(hours=1)

    statements = traced(store.db, lambda: store.record_access("acme", ids, at))

    assert [s.split()[0] for s in statements] == ["BEGIN", "INSERT", "COMMIT"]
    assert _counts(store, ["e0", "f1"]) == {"e0": (0, 1), "f1": (0, 1)}, "not folded yet"
    e1 = store.get("acme", "e1")
    assert e1 is not None and (e1.access_count, e1.last_accessed_at) == (1, at), "get counts what is not folded"

    folded = traced(store.db, lambda: store.settle_access("acme", at))

    # BEGIN IMMEDIATE, the look for a log, the two UPDATEs, the DELETE of the log, COMMIT: a trigger's statements
    # would show up here too (see the control below).
    assert [s.split()[0] for s in folded] == ["BEGIN", "SELECT", "UPDATE", "UPDATE", "DELETE", "COMMIT"]
    assert _side_tables(store) == before
    assert store.db.generation("acme") == generation
    assert _counts(store, ["e0", "e1", "e4", "f1"]) == {"e0": (1, 1), "e1": (1, 1), "e4": (0, 1), "f1": (1, 1)}
    loaded = store.get_many("acme", ["e1", "e4"])
    assert loaded["e1"].last_accessed_at == at and loaded["e4"].last_accessed_at is None
    assert store.get("acme", "e1") == loaded["e1"], "folded once, counted once"
    assert _logged(store) == 0 and store.settle_access("acme", at) == 0


def test_a_fold_adds_every_logged_access_and_keeps_the_latest_time(store: SqliteMemoryStore) -> None:
    store.record_access("acme", ["e1"], T0 + timedelta(hours=3))
    store.settle_access("acme", T0)
    for hours in (1, 5, 2):  # logged out of order: the latest time wins, the folded one included
        store.record_access("acme", ["e1", "e2"], T0 + timedelta(hours=hours))

    assert store.settle_access("acme", T0) == 2
    loaded = store.get_many("acme", ["e1", "e2"])
    assert (loaded["e1"].access_count, loaded["e1"].last_accessed_at) == (4, T0 + timedelta(hours=5))
    assert (loaded["e2"].access_count, loaded["e2"].last_accessed_at) == (3, T0 + timedelta(hours=5))


def test_a_recall_folds_its_namespaces_log_when_due(store: SqliteMemoryStore) -> None:
    for i in range(FOLD_ROWS - 1):
        store.record_recall("acme", True, T0 + timedelta(seconds=i / 10), accessed=["e1"])
    assert _logged(store) == FOLD_ROWS - 1 and _counts(store, ["e1"]) == {"e1": (0, 1)}

    store.record_recall("acme", True, T0 + timedelta(seconds=7), accessed=["e1"])  # the FOLD_ROWS-th

    assert _logged(store) == 0 and _counts(store, ["e1"]) == {"e1": (FOLD_ROWS, 1)}
    # Or once the first row logged since the fold is FOLD_SECONDS old, however few there are.
    store.record_recall("acme", True, T0 + timedelta(seconds=10), accessed=["e2"])
    store.record_recall("acme", True, T0 + timedelta(seconds=10 + FOLD_SECONDS - 1), accessed=["e2"])
    assert _logged(store) == 2
    store.record_recall("acme", True, T0 + timedelta(seconds=10 + FOLD_SECONDS), accessed=["e3"])
    assert _logged(store) == 0
    assert _counts(store, ["e2", "e3"]) == {"e2": (2, 1), "e3": (1, 1)}


def test_a_write_folds_the_log_first_and_never_lowers_the_access_columns(store: SqliteMemoryStore) -> None:
    at = T0 + timedelta(hours=1)
    stale = store.get_many("acme", ["e1"])["e1"]  # read before any access
    store.record_access("acme", ["e1", "e2"], at)
    store.record_access("acme", ["e1"], at)
    counted = store.get("acme", "e2")  # counts the logged access
    assert counted is not None and counted.access_count == 1

    # One write from `get` (the accesses in it), one from a read before them: neither counts twice or loses one.
    store.apply(
        "acme",
        ChangeSet(
            upserts=[
                (counted.model_copy(update={"content": "violin lesson two", "version": 2}), None),
                (stale.model_copy(update={"content": "violin lesson one", "version": 2}), None),
            ]
        ),
    )

    assert _logged(store) == 0
    loaded = store.get_many("acme", ["e1", "e2"])
    assert {k: (m.content, m.access_count, m.last_accessed_at) for k, m in loaded.items()} == {
        "e1": ("violin lesson one", 2, at),
        "e2": ("violin lesson two", 1, at),
    }


def test_a_deleted_memory_takes_its_logged_accesses_and_an_erase_the_log(store: SqliteMemoryStore) -> None:
    store.record_access("acme", ["e1", "e2"], T0)
    store.apply("acme", ChangeSet(deletes=["e1"]))
    store.apply(
        "acme",
        ChangeSet(upserts=[(Episode(id="e1", namespace="acme", content="again", occurred_at=T0, created_at=T0), None)]),
    )
    assert _counts(store, ["e1", "e2"]) == {"e1": (0, 1), "e2": (1, 1)}, "the new e1 is not counted for the old"

    store.record_access("acme", ["e2"], T0)
    store.record_access("other", ["e2"], T0)
    store.erase_namespace("acme")
    assert _logged(store) == 0 and _logged(store, "other") == 1


def test_recall_days_are_pruned_on_a_namespaces_first_recall_of_a_day(store: SqliteMemoryStore) -> None:
    def deletes(at: datetime) -> int:
        statements = traced(store.db, lambda: store.record_recall("acme", True, at, accessed=["e1"]))
        return sum(s.startswith("DELETE FROM recall_days") for s in statements)

    assert [deletes(T0), deletes(T0 + timedelta(hours=2)), deletes(T0 + timedelta(days=1))] == [1, 0, 1]
    assert [deletes(T0 + timedelta(days=1, hours=1))] == [0]


def test_a_store_on_a_schema_before_the_log_counts_on_the_rows(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "old.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim, migrations=MIGRATIONS[:16])
    store = SqliteMemoryStore(db)
    e = Episode(id="e1", namespace="acme", content="violin", occurred_at=T0, created_at=T0)
    store.apply("acme", ChangeSet(upserts=[(e, EMBEDDER.embed([e.content])[0])]))

    statements = traced(db, lambda: store.record_access("acme", ["e1"], T0))

    assert [s.split()[0] for s in statements] == ["BEGIN", "UPDATE", "UPDATE", "COMMIT"]
    assert store.get_many("acme", ["e1"])["e1"].access_count == 1 and store.settle_access("acme", T0) == 0


def test_the_trace_shows_a_trigger_when_one_fires(store: SqliteMemoryStore) -> None:
    """The control for the test above: an update of a watched column does show its trigger's statements."""
    conn = store.db.connection()

    statements = traced(store.db, lambda: conn.execute("UPDATE episodes SET tags_json = '[]' WHERE id = 'e0'"))

    assert len(statements) > 1
