"""`SqliteRetentionPolicies`: each namespace's retention policy, in the same file as its memories.

Policies are few (one per namespace that sets one) and read whole by the sweep, so they live as rows of the
`meta` key-value table (`retention:<namespace>` -> JSON) rather than a table and a migration of their own.
"""

from __future__ import annotations

import json
from datetime import datetime

from rearview.adapters.sqlite.connection import SqliteDatabase
from rearview.domain.retention import RetentionPolicy
from rearview.domain.timestamps import as_utc

_PREFIX = "retention:"


def _row(value: str) -> tuple[RetentionPolicy, datetime]:
    stored = json.loads(value)
    return RetentionPolicy.model_validate(stored["policy"]), as_utc(datetime.fromisoformat(stored["updated_at"]))


class SqliteRetentionPolicies:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def get(self, namespace: str) -> tuple[RetentionPolicy, datetime] | None:
        rows = self.db.connection().execute("SELECT value FROM meta WHERE key = ?", (_PREFIX + namespace,)).fetchall()
        return _row(rows[0][0]) if rows else None

    def put(self, namespace: str, policy: RetentionPolicy, at: datetime) -> None:
        value = json.dumps({"policy": policy.model_dump(mode="json"), "updated_at": as_utc(at).isoformat()})
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (_PREFIX + namespace, value),
            )

    def delete(self, namespace: str) -> bool:
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM meta WHERE key = ?", (_PREFIX + namespace,)).rowcount > 0

    def all(self) -> dict[str, tuple[RetentionPolicy, datetime]]:
        # `retention;` is the first key after every `retention:...` one (';' follows ':'): a range, not a LIKE scan.
        rows = self.db.connection().execute(
            "SELECT key, value FROM meta WHERE key >= ? AND key < ?", (_PREFIX, "retention;")
        )
        return {key.removeprefix(_PREFIX): _row(value) for key, value in rows.fetchall()}
