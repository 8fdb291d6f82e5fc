"""RequestQuota in the embedded backend's SQLite file (table `request_quota`, migration 10): the counters every
process serving the data directory shares (the local server, another server on the same directory).

One statement counts requests: an upsert whose update only happens while the new count stays within the limit,
returning it, so racing callers (threads or processes, serialised by SQLite's write lock) never count past it.
"""

from __future__ import annotations

from rearview.adapters.sqlite.connection import SqliteDatabase
from rearview.domain.quota import QuotaWindow

_TAKE = """
INSERT INTO request_quota (key_id, window_start, requests, expires_at) VALUES (?, ?, ?, ?)
ON CONFLICT (key_id, window_start) DO UPDATE SET requests = requests + excluded.requests
WHERE requests + excluded.requests <= ?
RETURNING requests
"""


class SqliteRequestQuota:
    """RequestQuota over the `request_quota` table of a SqliteDatabase."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def take(self, key_id: str, window: QuotaWindow, limit: int, count: int = 1) -> bool:
        if count < 1 or count > limit:
            return False
        expires = int(window.expires_at.timestamp())
        with self.db.transaction() as conn:
            rows = conn.execute(_TAKE, (key_id, window.epoch, count, expires, limit)).fetchall()
            if rows and rows[0][0] == count:
                # The key's first request of a window: drop the counters that have expired (few rows: keys x hour).
                conn.execute("DELETE FROM request_quota WHERE expires_at <= ?", (window.epoch,))
        return bool(rows)

    def counted(self, key_id: str, window: QuotaWindow) -> int:
        """How many requests of the key the window counted (0 once dropped)."""
        rows = (
            self.db.connection()
            .execute("SELECT requests FROM request_quota WHERE key_id = ? AND window_start = ?", (key_id, window.epoch))
            .fetchall()
        )
        return int(rows[0][0]) if rows else 0
