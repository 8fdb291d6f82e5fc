"""A new SQLite database given today's schema by copying it, not by running every migration again.

Thousands of tests open a new embedded store; each ran the 16 migrations step by step (about 190 statements, a
transaction each: ~90% of building the services). This runs them once per process, on a database of its own, and
gives every later new database that schema with SQLite's backup API: the same pages, so the same tables, indexes,
triggers, full-text tables and `meta` rows. A database opened with other migrations than `MIGRATIONS` (the
migration tests' older or broken schemas), or one that already holds anything, takes the real path.
`tests/unit/test_sqlite_schema_template.py` holds the copy to the migrated schema, statement for statement.

`install()` is idempotent; tests/conftest.py calls it once per process.
"""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from rearview.adapters.sqlite import MIGRATIONS, SqliteDatabase

_ORIGINAL_MIGRATE = SqliteDatabase._migrate
# Set on the thread making the template, whose own database takes the real path.
_MAKING = threading.local()
_INSTALLED = False


@contextmanager
def real_migrations() -> Iterator[None]:
    """Databases this thread opens meanwhile are migrated step by step (how the template is made)."""
    before = getattr(_MAKING, "active", False)
    _MAKING.active = True
    try:
        yield
    finally:
        _MAKING.active = before


@cache
def template_path() -> Path:
    """This process's database migrated by the real migrations (made on first use), holding nothing else."""
    directory = tempfile.mkdtemp(prefix="rearview-schema-template-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = Path(directory) / "template.db"
    with real_migrations():
        SqliteDatabase(path, embedder_name=None, dim=None).close()
    return path


def is_new(conn: sqlite3.Connection) -> bool:
    """True for a database holding no table yet (a file just created)."""
    return bool(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0)


def _migrate(self: SqliteDatabase, conn: sqlite3.Connection) -> None:
    if getattr(_MAKING, "active", False) or self._migrations != tuple(MIGRATIONS) or not is_new(conn):
        _ORIGINAL_MIGRATE(self, conn)
        return
    source = sqlite3.connect(template_path())
    try:
        source.backup(conn)
    finally:
        source.close()
    # The real path then finds the schema at today's version, and does nothing.
    _ORIGINAL_MIGRATE(self, conn)


def install() -> None:
    global _INSTALLED
    if _INSTALLED:
        return
    SqliteDatabase._migrate = _migrate  # type: ignore[method-assign]
    _INSTALLED = True
