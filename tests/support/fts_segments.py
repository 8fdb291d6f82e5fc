"""How many segments (b-trees of terms, one per flush; merged by FTS5) an FTS5 table holds: the distinct segment
ids of its `<table>_idx` shadow table, which holds at least one row (a leaf page's first term) per segment."""

from __future__ import annotations

import sqlite3


def segment_count(conn: sqlite3.Connection, table: str) -> int:
    (count,) = conn.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()
    return int(count)
