"""A bulk change set's rows are made a chunk ahead on a helper thread and inserted a chunk per statement
(`rearview.adapters.sqlite.bulk_insert`): the rows stored, their refs, their full-text entries and their tags are
exactly what the same memories inserted row by row store, and a failure part-way stores nothing. A chunk's
statement writes NULL columns as NULL and binds a column of one value once: what it stores is what binding every
value stores, type for type."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore, bulk_insert, memory_store
from rearview.adapters.sqlite.bulk_insert import (
    CHUNK_ROWS,
    NULL,
    ONCE,
    PER_ROW,
    PIPELINED_FROM,
    made_ahead,
    statement,
    values_sql,
)
from rearview.adapters.sqlite.rows import insert_sql
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=16)
# Two full chunks and a part of one: both statements, the chunk's and the remainder's executemany.
COUNT = PIPELINED_FROM + CHUNK_ROWS // 2 + 3


def _episodes(namespace: str, count: int) -> list[Episode]:
    return [
        Episode(
            id=f"e{i}", namespace=namespace, content=f"note {i} about the {('garden', 'invoice', 'deploy')[i % 3]}",
            occurred_at=T0 + timedelta(minutes=i), created_at=T0, tags=["billing"] if i % 7 == 0 else [],
            entities=["Ana"] if i % 5 == 0 else [], session_id=f"s{i % 4}", context="Ana's café" if i % 9 else "",
        )
        for i in range(count)
    ]  # fmt: skip


def _changes(episodes: list[Episode]) -> ChangeSet:
    vectors = EMBEDDER.embed([e.content for e in episodes])
    # Those of session s0 without a vector: the blob column holds NULL for those.
    return ChangeSet(upserts=[(e, None if e.session_id == "s0" else v) for e, v in zip(episodes, vectors, strict=True)])


def _dump(db: SqliteDatabase) -> dict[str, list[tuple[Any, ...]]]:
    conn = db.connection()
    return {
        "episodes": conn.execute("SELECT * FROM episodes ORDER BY ref").fetchall(),
        "fts": conn.execute(
            "SELECT rowid, ns_token, search_text, context_text FROM fts_episodes ORDER BY rowid"
        ).fetchall(),
        "tags": conn.execute("SELECT * FROM memory_tags ORDER BY ref, tag").fetchall(),
        "matches": conn.execute(
            "SELECT rowid FROM fts_episodes WHERE fts_episodes MATCH 'garden' ORDER BY rowid"
        ).fetchall(),
    }


def _store(path: Path) -> tuple[SqliteDatabase, SqliteMemoryStore]:
    db = SqliteDatabase(path, embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    return db, SqliteMemoryStore(db, own_fts_episodes=0)


def test_a_bulk_insert_stores_what_row_by_row_inserts_store(tmp_path: Path) -> None:
    episodes = _episodes("acme", COUNT)
    bulk_db, bulk = _store(tmp_path / "bulk.db")
    bulk.apply("acme", _changes(episodes))
    rows_db, by_rows = _store(tmp_path / "rows.db")
    for start in range(0, COUNT, PIPELINED_FROM - 1):  # each change set below the pipelined size
        by_rows.apply("acme", _changes(episodes[start : start + PIPELINED_FROM - 1]))
    bulk_dump, rows_dump = _dump(bulk_db), _dump(rows_db)
    assert len(bulk_dump["episodes"]) == COUNT
    assert bulk_dump["tags"] and bulk_dump["matches"]
    # The vector column (last but one before the later migrations' columns) round-trips: compare every column.
    assert bulk_dump == rows_dump
    stored = bulk.get_vectors("acme", ["e1", "e4"])
    assert set(stored) == {"e1"}  # e4 is of session s0
    assert stored["e1"].tolist() == pytest.approx(EMBEDDER.embed([episodes[1].content])[0].tolist())
    bulk_db.close()
    rows_db.close()


def test_a_bulk_insert_beside_facts_and_a_second_namespace_keeps_each_ref(tmp_path: Path) -> None:
    db, store = _store(tmp_path / "r.db")
    store.apply("umbrella", _changes(_episodes("umbrella", 3)))
    fact = Fact(id="f1", namespace="acme", content="likes tea", created_at=T0, last_confirmed_at=T0)
    episodes = _episodes("acme", COUNT)
    store.apply("acme", ChangeSet(upserts=[(fact, None), *_changes(episodes).upserts]))
    conn = db.connection()
    refs = dict(conn.execute("SELECT id, ref FROM episodes WHERE namespace = 'acme'").fetchall())
    assert [refs[e.id] for e in episodes] == list(range(4, 4 + COUNT))
    assert store.get("acme", "f1") is not None
    assert store.get("umbrella", "e0") is not None and store.get("acme", f"e{COUNT - 1}") is not None
    db.close()


def test_a_row_that_fails_part_way_through_a_bulk_insert_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, store = _store(tmp_path / "r.db")
    store.apply("acme", _changes(_episodes("acme", 5)))
    before = _dump(db)
    made = memory_store.episode_columns

    def failing(episodes: Sequence[Episode]) -> list[list[Any]]:
        if any(e.id == f"e{PIPELINED_FROM + 10}" for e in episodes):  # in the third chunk, made on the helper thread
            raise RuntimeError("no row for this one")
        return made(episodes)

    monkeypatch.setattr(memory_store, "episode_columns", failing)
    more = [e.model_copy(update={"id": f"n{e.id}"}) for e in _episodes("acme", COUNT)]
    more[PIPELINED_FROM + 10] = more[PIPELINED_FROM + 10].model_copy(update={"id": f"e{PIPELINED_FROM + 10}"})
    with pytest.raises(RuntimeError, match="no row for this one"):
        store.apply("acme", _changes(more))
    assert _dump(db) == before
    db.close()


def test_rows_are_made_on_the_helper_thread_a_chunk_ahead_in_order() -> None:
    made: list[tuple[int, str]] = []
    second_started = threading.Event()
    items = list(range(3 * CHUNK_ROWS + 5))

    def make(part: Sequence[int]) -> list[tuple[Any, ...]]:
        made.append((part[0], threading.current_thread().name))
        if part[0] == CHUNK_ROWS:
            second_started.set()
        return [(i,) for i in part]

    out: list[tuple[Any, ...]] = []
    for chunk in made_ahead(items, make):
        if not out:
            # The caller holds the first chunk while the second is made (made in turn, it never would be).
            assert second_started.wait(timeout=30)
        out.extend(chunk)
    assert out == [(i,) for i in items]
    assert [start for start, _ in made] == [0, CHUNK_ROWS, 2 * CHUNK_ROWS, 3 * CHUNK_ROWS]
    assert all(name.startswith("rearview-rows") for _, name in made)


def test_a_failed_chunk_reaches_the_caller_at_that_chunk() -> None:
    def make(part: Sequence[int]) -> list[tuple[Any, ...]]:
        if part[0] == CHUNK_ROWS:
            raise ValueError("chunk two")
        return [(i,) for i in part]

    chunks = made_ahead(list(range(3 * CHUNK_ROWS)), make)
    assert len(next(chunks)) == CHUNK_ROWS
    with pytest.raises(ValueError, match="chunk two"):
        next(chunks)


def test_a_full_chunk_is_one_statement(tmp_path: Path) -> None:
    sql = insert_sql("episodic")
    many = values_sql(sql, 3)
    assert many.count("(?") == 3 and many.startswith(sql.partition(" VALUES ")[0])
    with pytest.raises(ValueError, match="single-row"):
        values_sql("DELETE FROM episodes", 2)
    with pytest.raises(ValueError, match="layout"):
        values_sql("INSERT INTO t (a, b) VALUES (?, ?)", 2, (ONCE,))
    db, store = _store(tmp_path / "r.db")
    statements: list[str] = []
    db.connection().set_trace_callback(statements.append)
    store.apply("acme", _changes(_episodes("acme", COUNT)))
    inserts = [s for s in statements if s.startswith("INSERT INTO episodes")]
    # Two chunk statements, then the remainder row by row.
    assert len(inserts) == 2 + (COUNT - 2 * CHUNK_ROWS)
    db.close()


def test_a_forked_child_starts_a_helper_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child forked after the helper started inherits the pool but not its thread: it must not send work there."""
    parent = bulk_insert._pool()
    assert bulk_insert._pool() is parent
    monkeypatch.setattr(bulk_insert.os, "getpid", lambda: -1)
    child = bulk_insert._pool()
    assert child is not parent
    assert next(made_ahead([1, 2], lambda part: [(i,) for i in part])) == [(1,), (2,)]


_SQL = "INSERT INTO t (a, b, c, d, e) VALUES (?, ?, ?, ?, ?)"


def _columns(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    return [list(column) for column in zip(*rows, strict=True)]


def _stored(rows: list[tuple[Any, ...]], bulk: bool) -> list[tuple[Any, ...]]:
    """The rows as SQLite holds them (each value with its storage class), inserted by the chunk's statement or one
    by one."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a, b, c, d, e)")
    if bulk:
        statement(_SQL, _columns(rows)).run(conn)
    else:
        conn.executemany(_SQL, rows)
    cells = ", ".join(f"typeof({c}), {c}" for c in "abcde")
    return conn.execute(f"SELECT {cells} FROM t ORDER BY rowid").fetchall()


def test_a_chunk_binds_a_column_of_one_value_once_and_writes_null_columns_as_null() -> None:
    rows = [("acme", i, None, f"text {i}", b"\x00\x01" * (i % 3 + 1)) for i in range(CHUNK_ROWS)]
    made = statement(_SQL, _columns(rows))
    assert not made.many
    assert made.sql == values_sql(_SQL, CHUNK_ROWS, (ONCE, PER_ROW, NULL, PER_ROW, PER_ROW))
    assert made.sql.startswith("INSERT INTO t (a, b, c, d, e) VALUES (?1, ?2, NULL, ?3, ?4), (?1, ?5, NULL, ?6, ?7)")
    # "acme" once, then three per row; the blobs bound as bytearray (no adapter lookup), stored as the same BLOB.
    assert len(made.params) == 1 + 3 * CHUNK_ROWS
    assert made.params[0] == "acme" and type(made.params[3]) is bytearray
    assert _stored(rows, bulk=True) == _stored(rows, bulk=False)


@pytest.mark.parametrize(
    ("column", "layout"),
    [
        ([7] * CHUNK_ROWS, ONCE),
        ([7] * (CHUNK_ROWS - 1) + [7.0], PER_ROW),  # equal in Python, INTEGER and REAL in SQLite
        ([1] * (CHUNK_ROWS - 1) + [True], PER_ROW),
        ([0.0] * (CHUNK_ROWS - 1) + [-0.0], PER_ROW),  # equal, of opposite signs
        ([-0.0] * CHUNK_ROWS, ONCE),
        ([math.nan] * CHUNK_ROWS, ONCE),  # one object: count() finds it by identity
        ([None] * CHUNK_ROWS, NULL),
        ([None] * (CHUNK_ROWS - 1) + [b"x"], PER_ROW),
        (["[]"] * CHUNK_ROWS, ONCE),
        ([b"v"] * CHUNK_ROWS, ONCE),
    ],
)
def test_a_column_is_bound_once_only_when_sqlite_would_store_one_value(column: list[Any], layout: str) -> None:
    rows = [("acme", i, value, "x", None) for i, value in enumerate(column)]
    made = statement(_SQL, _columns(rows))
    assert made.sql == values_sql(_SQL, CHUNK_ROWS, (ONCE, PER_ROW, layout, ONCE, NULL))
    stored, one_by_one = _stored(rows, bulk=True), _stored(rows, bulk=False)
    assert [row[:5] + row[6:] for row in stored] == [row[:5] + row[6:] for row in one_by_one]
    # -0.0 and 0.0 compare equal: their signs, as stored, must too.
    signs = [math.copysign(1.0, row[5]) if isinstance(row[5], float) else row[5] for row in stored]
    assert signs == [math.copysign(1.0, row[5]) if isinstance(row[5], float) else row[5] for row in one_by_one]


def test_fewer_rows_than_a_chunk_are_left_to_executemany() -> None:
    rows = [("acme", i, None, "x", None) for i in range(CHUNK_ROWS - 1)]
    made = statement(_SQL, _columns(rows))
    assert made.many and made.sql == _SQL and made.params == rows
    assert _stored(rows, bulk=True) == _stored(rows, bulk=False)


def test_every_field_of_an_episode_inserted_in_bulk_reads_back_as_it_was(tmp_path: Path) -> None:
    """Each value column made column by column (`rows.episode_columns`) lands in its own column: every field set,
    varied from row to row, reads back equal."""
    statuses = ("success", "failure", "partial", "unknown", None)
    episodes = [
        Episode(
            id=f"e{i}", namespace="acme", content=f"步骤 {i}: don't retry the {('garden', 'invoice')[i % 2]} job",
            occurred_at=T0 + timedelta(minutes=i), created_at=T0 + timedelta(seconds=i % 5),
            tags=[f"t{i % 3}"] * (i % 2),
            importance=0.25 * (i % 4), access_count=i % 3, last_accessed_at=T0 + timedelta(hours=i) if i % 4 else None,
            confirmations=1 + i % 2, redacted=i % 6 == 0, event_type=("tool_call", None)[i % 2],
            entities=["Ana", "Bo"][: i % 3], outcome="it worked" if i % 5 == 0 else None,
            outcome_status=statuses[i % 5], session_id=f"s{i % 4}" if i % 7 else None,
            last_occurred_at=T0 + timedelta(days=1, minutes=i) if i % 3 == 0 else None,
            session_ids=[f"s{i % 4}", "s9"][: i % 3], consolidated=i % 2 == 1, context="Ana asked" if i % 9 else "",
        )
        for i in range(COUNT)
    ]  # fmt: skip
    db, store = _store(tmp_path / "r.db")
    store.apply("acme", _changes(episodes))
    stored = store.get_many("acme", [e.id for e in episodes])
    assert [stored[e.id] for e in episodes] == episodes
    db.close()
