"""A new database given today's schema by the suite's copy (support/sqlite_schema_template) is the one the
migrations make, step by step."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rearview.adapters.sqlite import MIGRATIONS, SqliteDatabase
from support import sqlite_schema_template

pytestmark = pytest.mark.unit


def _contents(path: Path) -> dict[str, object]:
    """The schema, every ordinary table's rows (the full-text tables' shadow tables, their settings, and `meta`
    included) and the journal mode."""
    conn = sqlite3.connect(path)
    try:
        schema = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        tables = [name for kind, name, _, sql in schema if kind == "table" and "VIRTUAL" not in (sql or "")]
        rows = {name: sorted(conn.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr) for name in tables}
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    return {"schema": schema, "rows": rows, "journal_mode": mode}


def test_a_copied_schema_is_the_migrated_one(tmp_path: Path) -> None:
    assert SqliteDatabase._migrate is sqlite_schema_template._migrate, "installed by tests/conftest.py"
    with sqlite_schema_template.real_migrations():
        SqliteDatabase(tmp_path / "migrated.db", embedder_name="hashing-512", dim=512).close()
    copied = SqliteDatabase(tmp_path / "copied.db", embedder_name="hashing-512", dim=512)
    assert copied.schema_version == len(MIGRATIONS)
    copied.close()
    assert sqlite_schema_template.template_path().is_file(), "the copy's source was made"

    migrated, made = _contents(tmp_path / "migrated.db"), _contents(tmp_path / "copied.db")
    assert made == migrated
    assert made["journal_mode"] == "wal" and len(made["schema"]) > 20  # type: ignore[arg-type]


def test_other_migrations_and_a_database_holding_anything_take_the_real_path(tmp_path: Path) -> None:
    older = SqliteDatabase(tmp_path / "older.db", embedder_name="hashing-512", dim=512, migrations=MIGRATIONS[:3])
    assert older.schema_version == 3
    with older.transaction() as conn:
        conn.execute("INSERT INTO meta (key, value) VALUES ('written', 'at version 3')")
    older.close()
    # Opened again with every migration: a copy would lose what it holds, so the rest are applied one by one.
    reopened = SqliteDatabase(tmp_path / "older.db", embedder_name="hashing-512", dim=512)
    assert reopened.schema_version == len(MIGRATIONS)
    reopened.close()
    assert ("written", "at version 3") in _contents(tmp_path / "older.db")["rows"]["meta"]  # type: ignore[index]
