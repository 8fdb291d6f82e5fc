"""API keys in the embedded backend's SQLite file (table `api_keys`, created by migration 2 of `schema`).

The keys live in the data directory next to the memories, so a server started on that directory enforces them,
and `rearview keys ...` can manage them without loading an embedder.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from rearview.adapters.sqlite.connection import DB_FILENAME, SqliteDatabase
from rearview.domain.access import ApiKey
from rearview.domain.permissions import parse_permissions
from rearview.domain.timestamps import utc_from_epoch
from rearview.errors import ConcurrentUpdate

_COLUMNS = (
    "key_id, scope, permissions, secret_hash, created_at, expires_at, revoked_at, description, requests_per_minute"
)


def _key_from_row(row: tuple[Any, ...]) -> ApiKey:
    key_id, scope, permissions, secret_hash, created_at, expires_at, revoked_at, description, limit = row
    return ApiKey(
        key_id=key_id,
        scope=scope,
        permissions=parse_permissions(permissions),
        secret_hash=secret_hash,
        created_at=utc_from_epoch(created_at),
        expires_at=None if expires_at is None else utc_from_epoch(expires_at),
        revoked_at=None if revoked_at is None else utc_from_epoch(revoked_at),
        description=description,
        requests_per_minute=limit,
    )


class SqliteKeyStore:
    """KeyStore over the `api_keys` table of a SqliteDatabase."""

    def __init__(self, db: SqliteDatabase, *, owns_db: bool = False) -> None:
        self.db = db
        self._owns_db = owns_db

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> SqliteKeyStore:
        """Open `<data_dir>/rearview.db` for the keys alone (migrated, embedder left unchecked and unset)."""
        db = SqliteDatabase(Path(data_dir) / DB_FILENAME, embedder_name=None, dim=None)
        return cls(db, owns_db=True)

    def put(self, key: ApiKey) -> None:
        try:
            with self.db.transaction() as conn:
                conn.execute(
                    f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key.key_id,
                        key.scope,
                        ",".join(p.value for p in key.permissions),
                        key.secret_hash,
                        key.created_at.timestamp(),
                        None if key.expires_at is None else key.expires_at.timestamp(),
                        None if key.revoked_at is None else key.revoked_at.timestamp(),
                        key.description,
                        key.requests_per_minute,
                    ),
                )
        except sqlite3.IntegrityError:
            raise ConcurrentUpdate(f"key_id: {key.key_id} already exists") from None

    def get(self, key_id: str) -> ApiKey | None:
        # fetchall, not fetchone: an unfinished SELECT would hold this thread's read snapshot open (autocommit mode),
        # and later reads on the connection would miss newer commits.
        rows = self.db.connection().execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchall()
        return _key_from_row(rows[0]) if rows else None

    def list(self) -> list[ApiKey]:
        rows = self.db.connection().execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id")
        return [_key_from_row(row) for row in rows.fetchall()]

    def revoke(self, key_id: str, at: datetime) -> ApiKey | None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", (at.timestamp(), key_id)
            )
            rows = conn.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchall()
        return _key_from_row(rows[0]) if rows else None

    def set_requests_per_minute(self, key_id: str, requests_per_minute: int | None) -> ApiKey | None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE api_keys SET requests_per_minute = ? WHERE key_id = ?", (requests_per_minute, key_id))
            rows = conn.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchall()
        return _key_from_row(rows[0]) if rows else None

    def has_any(self) -> bool:
        return bool(self.db.connection().execute("SELECT 1 FROM api_keys LIMIT 1").fetchall())

    def close(self) -> None:
        """Close the database if this store opened it (`in_data_dir`)."""
        if self._owns_db:
            self.db.close()
