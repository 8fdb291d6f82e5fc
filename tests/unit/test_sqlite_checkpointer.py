"""A large commit's WAL checkpoint runs on the checkpointer's thread, not in the committing thread's COMMIT: the
commit leaves its pages in the WAL, the checkpointer copies them into the database file, the WAL starts over instead
of growing, a reader's snapshot stays whole, and close() stops the thread. Small commits checkpoint as before."""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

import pytest

from rearview.adapters.sqlite import SqliteDatabase
from rearview.adapters.sqlite.checkpointer import AUTOCHECKPOINT_PAGES, CHECKPOINT_ROWS, WalCheckpointer

pytestmark = pytest.mark.unit

PAGE = 4096


def _database(tmp_path: Path) -> SqliteDatabase:
    db = SqliteDatabase(tmp_path / "r.db", embedder_name="hashing", dim=8)
    with db.transaction() as conn:
        conn.execute("CREATE TABLE filler (n INTEGER, payload BLOB)")
    db.checkpointer.wait_idle()
    return db


def _write(db: SqliteDatabase, rows: int, start: int = 0) -> None:
    """`rows` rows of 2 KB each (two to a page): a transaction of about rows / 2 pages."""
    with db.transaction() as conn:
        conn.executemany(
            "INSERT INTO filler (n, payload) VALUES (?, zeroblob(2000))", [(start + i,) for i in range(rows)]
        )


def _wal_pages(db: SqliteDatabase) -> int:
    wal = db.path.with_name(db.path.name + "-wal")
    return wal.stat().st_size // PAGE if wal.exists() else 0


def test_a_large_commit_leaves_its_pages_in_the_wal_for_the_checkpointer(tmp_path: Path) -> None:
    db = _database(tmp_path)
    try:
        db.checkpointer.close()  # no background checkpoint from here: what the commit itself does
        size = db.path.stat().st_size
        _write(db, 3_000)  # ~1,500 pages: past the automatic checkpoint of 1,000, which copied them in COMMIT
        assert db.path.stat().st_size == size
        assert _wal_pages(db) >= 1_500
        assert db.connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == AUTOCHECKPOINT_PAGES
    finally:
        db.close()


def test_small_commits_checkpoint_in_their_own_commit_as_before(tmp_path: Path) -> None:
    db = _database(tmp_path)
    try:
        db.checkpointer.close()
        size = db.path.stat().st_size
        for i in range(4):  # together well past 1,000 pages of WAL
            _write(db, CHECKPOINT_ROWS - 100, start=i * CHECKPOINT_ROWS)
        assert db.path.stat().st_size >= size + 500 * PAGE  # copied by a COMMIT: no checkpointer ran
        assert db.checkpointer.checkpoints == 0
    finally:
        db.close()


def test_the_checkpointer_copies_a_large_commit_into_the_database_file(tmp_path: Path) -> None:
    db = _database(tmp_path)
    try:
        before = db.checkpointer.checkpoints
        _write(db, CHECKPOINT_ROWS * 3)
        db.checkpointer.wait_idle()
        assert db.checkpointer.checkpoints > before
        assert db.checkpointer.last_result is not None
        busy, frames, copied = db.checkpointer.last_result
        assert (busy, copied) == (0, frames) and frames >= 1_500
        assert db.path.stat().st_size >= 1_500 * PAGE
    finally:
        db.close()


def test_the_wal_starts_over_instead_of_growing_across_commits(tmp_path: Path) -> None:
    db = _database(tmp_path)
    try:
        for i in range(20):
            _write(db, CHECKPOINT_ROWS * 2, start=i * CHECKPOINT_ROWS * 2)  # ~1,000 pages each, 20,000 in all
            db.checkpointer.wait_idle()  # the pause between two change sets of a load
        # Without the checkpointer the WAL would grow to the safety net's 10,000 pages.
        assert _wal_pages(db) < 3_000
        assert db.connection().execute("SELECT count(*) FROM filler").fetchone()[0] == 40 * CHECKPOINT_ROWS
        assert db.connection().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()


def test_a_reader_keeps_its_snapshot_while_the_checkpointer_runs(tmp_path: Path) -> None:
    db = _database(tmp_path)
    reader = sqlite3.connect(db.path, isolation_level=None, check_same_thread=False)
    try:
        _write(db, 10)
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM filler").fetchone()[0] == 10
        _write(db, CHECKPOINT_ROWS * 2, start=10)
        db.checkpointer.wait_idle()
        # Nothing the reader's snapshot still needs was overwritten: it reads what it read.
        assert reader.execute("SELECT count(*) FROM filler").fetchone()[0] == 10
        assert db.checkpointer.last_result is not None
        busy, frames, copied = db.checkpointer.last_result
        assert copied < frames  # the frames past the reader's snapshot wait for it
        reader.execute("COMMIT")
        _write(db, CHECKPOINT_ROWS, start=10 + CHECKPOINT_ROWS * 2)
        db.checkpointer.wait_idle()
        busy, frames, copied = db.checkpointer.last_result
        assert (busy, copied) == (0, frames)
        assert reader.execute("SELECT count(*) FROM filler").fetchone()[0] == 10 + CHECKPOINT_ROWS * 3
    finally:
        reader.close()
        db.close()


def test_close_stops_the_thread_and_later_requests_start_nothing(tmp_path: Path) -> None:
    db = _database(tmp_path)
    _write(db, CHECKPOINT_ROWS)
    thread = db.checkpointer._thread
    assert thread is not None and thread.is_alive()
    db.close()
    assert not thread.is_alive()
    checkpointer = WalCheckpointer(tmp_path / "r.db")
    checkpointer.close()
    checkpointer.request()  # after close: ignored, no thread started
    assert checkpointer._thread is None and checkpointer.checkpoints == 0


def test_a_database_collected_without_close_stops_its_checkpointer(tmp_path: Path) -> None:
    db = _database(tmp_path)
    _write(db, CHECKPOINT_ROWS)
    checkpointer = db.checkpointer
    db.checkpointer.wait_idle()
    thread = checkpointer._thread
    assert thread is not None and thread.is_alive()
    del db
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()
