"""Databases of an older schema written by today's store: the migration tests write an old schema through the
store as it is now, which writes the columns of migration 15 (`schema.add_agent_fields`); an old schema is given
them first (that migration is idempotent, so it finds them there when the database is migrated)."""

from __future__ import annotations

from rearview.adapters.sqlite import SqliteDatabase
from rearview.adapters.sqlite.schema import add_agent_fields


def give_todays_columns(db: SqliteDatabase) -> None:
    """The columns, table, indexes and triggers of migration 15 added to `db`'s older schema."""
    with db.transaction() as conn:
        add_agent_fields(conn)
