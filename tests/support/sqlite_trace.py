"""The SQL statements a SQLite database runs on this thread's connection while a callable runs."""

from __future__ import annotations

from collections.abc import Callable

from rearview.adapters.sqlite import SqliteDatabase


def traced(db: SqliteDatabase, run: Callable[[], object]) -> list[str]:
    """Every statement `run()` executed on `db`'s connection of this thread, in order (as SQLite expands them)."""
    conn = db.connection()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return seen
