"""The working-memory part of the SQLite store (the `WorkingMemoryStore` port): a session's keys with their JSON
values and expiry, in the `working` table, each query restricted by `namespace = ?`."""

from __future__ import annotations

import json
from datetime import datetime

from rearview.adapters.sqlite.connection import SqliteDatabase
from rearview.adapters.sqlite.rows import epoch
from rearview.domain.timestamps import utc_from_epoch
from rearview.domain.working import WorkingEntry


class SqliteWorkingMemory:
    """Working memory over a SqliteDatabase (`db`, set by the store that inherits it)."""

    db: SqliteDatabase

    def put_working(self, entry: WorkingEntry) -> None:
        """Insert or replace one entry; the session's expired rows are removed on the way."""
        updated_at = epoch(entry.updated_at)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO working(namespace, session_id, key, value_json, updated_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(namespace, session_id, key) DO UPDATE SET "
                "value_json = excluded.value_json, updated_at = excluded.updated_at, "
                "expires_at = excluded.expires_at",
                (
                    entry.namespace,
                    entry.session_id,
                    entry.key,
                    json.dumps(entry.value, ensure_ascii=False),
                    updated_at,
                    epoch(entry.expires_at),
                ),
            )
            conn.execute(
                "DELETE FROM working WHERE namespace = ? AND session_id = ? AND expires_at <= ?",
                (entry.namespace, entry.session_id, updated_at),
            )

    def get_working(self, namespace: str, session_id: str, now: datetime) -> list[WorkingEntry]:
        """Unexpired entries of the session, by key."""
        rows = self.db.connection().execute(
            "SELECT key, value_json, updated_at, expires_at FROM working "
            "WHERE namespace = ? AND session_id = ? AND expires_at > ? ORDER BY key",
            (namespace, session_id, epoch(now)),
        )
        return [
            WorkingEntry.model_construct(
                namespace=namespace,
                session_id=session_id,
                key=key,
                value=json.loads(value_json),
                updated_at=utc_from_epoch(updated_at),
                expires_at=utc_from_epoch(expires_at),
            )
            for key, value_json, updated_at, expires_at in rows
        ]

    def clear_working(self, namespace: str, session_id: str | None = None) -> int:
        """Delete the session's entries (every session's with None); return how many rows went."""
        with self.db.transaction() as conn:
            if session_id is None:
                cursor = conn.execute("DELETE FROM working WHERE namespace = ?", (namespace,))
            else:
                cursor = conn.execute(
                    "DELETE FROM working WHERE namespace = ? AND session_id = ?", (namespace, session_id)
                )
            return cursor.rowcount

    def purge_expired_working(self, now: datetime) -> int:
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM working WHERE expires_at <= ?", (epoch(now),)).rowcount
