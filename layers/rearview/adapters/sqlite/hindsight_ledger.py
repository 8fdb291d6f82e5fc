"""SqliteHindsightLedger: consolidation's ledger in the embedded backend's file (the `hindsight_*` tables of
migration 7 in `schema`), beside the memories and over the same SqliteDatabase.

The lease is one upsert whose update is conditioned on the lease having expired or being the caller's own, so two
processes (or two connections) on the same file never both hold it: SQLite serialises the writers, and `changes()`
says whether this one took it. A run's record, its totals and its day's spend are written in one transaction.
"""

from __future__ import annotations

import sqlite3
from datetime import date, datetime

from rearview.adapters.sqlite.connection import SqliteDatabase
from rearview.adapters.sqlite.rows import datetime_or_none, epoch
from rearview.domain.hindsight_runs import (
    RUN_RETENTION,
    SPEND_RETENTION,
    ConsolidationRun,
    FeedbackCounts,
    FeedbackVerdict,
    LedgerTotals,
    Spend,
)
from rearview.domain.timestamps import as_utc
from rearview.errors import InvalidInput

# The four counters of a kind's feedback row, in the order of the columns `record_feedback` adds to.
_FEEDBACK_COLUMNS = ("useful", "not_useful", "wrong", "adopted")


class SqliteHindsightLedger:
    """HindsightLedger over the `hindsight_*` tables of a SqliteDatabase. Every query is restricted by
    `namespace = ?`."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    # the lease

    def acquire_lease(self, namespace: str, owner: str, now: datetime, ttl_seconds: float) -> bool:
        """Take the lease unless another owner holds one that has not expired (`lease_until < now` frees it)."""
        at = epoch(now)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO hindsight_leases(namespace, owner, lease_until) VALUES (?, ?, ?) "
                "ON CONFLICT(namespace) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until "
                "WHERE hindsight_leases.lease_until < ? OR hindsight_leases.owner = excluded.owner",
                (namespace, owner, at + ttl_seconds, at),
            )
            return _changes(conn) == 1

    def release_lease(self, namespace: str, owner: str) -> None:
        """Give the lease back, if `owner` still holds it."""
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM hindsight_leases WHERE namespace = ? AND owner = ?", (namespace, owner))

    # runs and spend

    def record_run(self, run: ConsolidationRun) -> None:
        """Keep the run and add it to the totals and its day's spend, at once; a run recorded again (same id) is
        counted once. Runs and spend past their retention are dropped on the way."""
        namespace = run.namespace
        started = epoch(run.started_at)
        day = as_utc(run.started_at).date()
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO hindsight_runs(namespace, run_id, started_at, run_json) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(namespace, run_id) DO NOTHING",
                (namespace, run.run_id, started, run.model_dump_json()),
            )
            if _changes(conn) == 0:
                return
            conn.execute(
                "INSERT INTO hindsight_totals(namespace, runs, runs_failed, tokens, last_run_at, last_run_reason) "
                "VALUES (?, 1, ?, ?, ?, ?) ON CONFLICT(namespace) DO UPDATE SET runs = runs + 1, "
                "runs_failed = runs_failed + excluded.runs_failed, tokens = tokens + excluded.tokens, "
                "last_run_at = excluded.last_run_at, last_run_reason = excluded.last_run_reason",
                (namespace, int(run.error is not None), run.tokens, started, run.reason),
            )
            conn.executemany(
                "INSERT INTO hindsight_induced(namespace, kind, count) VALUES (?, ?, ?) "
                "ON CONFLICT(namespace, kind) DO UPDATE SET count = count + excluded.count",
                [(namespace, kind, count) for kind, count in run.induced.items() if count],
            )
            conn.execute(
                "INSERT INTO hindsight_spend(namespace, day, runs, clusters, tokens) VALUES (?, ?, 1, ?, ?) "
                "ON CONFLICT(namespace, day) DO UPDATE SET runs = runs + 1, "
                "clusters = clusters + excluded.clusters, tokens = tokens + excluded.tokens",
                (namespace, day.isoformat(), run.clusters, run.tokens),
            )
            conn.execute(
                "DELETE FROM hindsight_runs WHERE namespace = ? AND started_at < ?",
                (namespace, started - RUN_RETENTION.total_seconds()),
            )
            conn.execute(
                "DELETE FROM hindsight_spend WHERE namespace = ? AND day < ?",
                (namespace, (day - SPEND_RETENTION).isoformat()),
            )

    def runs(self, namespace: str, limit: int = 20) -> list[ConsolidationRun]:
        """The namespace's latest runs, newest first (by start, then id)."""
        if limit <= 0:
            return []
        rows = (
            self.db.connection()
            .execute(
                "SELECT run_json FROM hindsight_runs WHERE namespace = ? ORDER BY started_at DESC, run_id DESC LIMIT ?",
                (namespace, limit),
            )
            .fetchall()
        )
        return [ConsolidationRun.model_validate_json(row[0]) for row in rows]

    def spend(self, namespace: str, day: date) -> Spend:
        """What the namespace's runs spent on that UTC day (zeros when nothing ran)."""
        rows = (
            self.db.connection()
            .execute(
                "SELECT runs, clusters, tokens FROM hindsight_spend WHERE namespace = ? AND day = ?",
                (namespace, day.isoformat()),
            )
            .fetchall()
        )
        if not rows:
            return Spend(day=day)
        runs, clusters, tokens = rows[0]
        return Spend(day=day, runs=runs, clusters=clusters, tokens=tokens)

    # totals and feedback

    def totals(self, namespace: str) -> LedgerTotals:
        """The namespace's running totals (zeros when nothing ran), read in one snapshot."""
        with self.db.snapshot() as conn:
            totals = conn.execute(
                "SELECT runs, runs_failed, tokens, last_run_at, last_run_reason FROM hindsight_totals "
                "WHERE namespace = ?",
                (namespace,),
            ).fetchall()
            induced = conn.execute(
                "SELECT kind, count FROM hindsight_induced WHERE namespace = ? ORDER BY kind", (namespace,)
            ).fetchall()
            feedback = conn.execute(
                f"SELECT kind, {', '.join(_FEEDBACK_COLUMNS)} FROM hindsight_feedback WHERE namespace = ? "
                "ORDER BY kind",
                (namespace,),
            ).fetchall()
        runs, runs_failed, tokens, last_run_at, last_run_reason = totals[0] if totals else (0, 0, 0, None, None)
        return LedgerTotals(
            runs=runs,
            runs_failed=runs_failed,
            induced=dict(induced),
            tokens=tokens,
            last_run_at=datetime_or_none(last_run_at),
            last_run_reason=last_run_reason,
            feedback={
                kind: FeedbackCounts(**dict(zip(_FEEDBACK_COLUMNS, counts, strict=True))) for kind, *counts in feedback
            },
        )

    def record_feedback(self, namespace: str, kind: str, verdict: FeedbackVerdict, adopted: bool) -> None:
        """Count one feedback on a memory of `kind` (any short name), and one adoption when `adopted`."""
        increments = tuple(int(column == verdict) for column in _FEEDBACK_COLUMNS[:3]) + (int(adopted),)
        if not any(increments[:3]):
            raise InvalidInput(f"verdict: unknown feedback verdict {verdict!r}", field="verdict")
        updates = ", ".join(f"{column} = {column} + excluded.{column}" for column in _FEEDBACK_COLUMNS)
        with self.db.transaction() as conn:
            conn.execute(
                f"INSERT INTO hindsight_feedback(namespace, kind, {', '.join(_FEEDBACK_COLUMNS)}) "
                f"VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(namespace, kind) DO UPDATE SET {updates}",
                (namespace, kind, *increments),
            )

    def erase_namespace(self, namespace: str) -> int:
        """Delete every row of the namespace from the ledger's tables; how many went."""
        erased = 0
        with self.db.transaction() as conn:
            for table in _LEDGER_TABLES:
                erased += conn.execute(f"DELETE FROM {table} WHERE namespace = ?", (namespace,)).rowcount
        return erased


_LEDGER_TABLES = (
    "hindsight_leases",
    "hindsight_runs",
    "hindsight_spend",
    "hindsight_totals",
    "hindsight_induced",
    "hindsight_feedback",
)


def _changes(conn: sqlite3.Connection) -> int:
    """How many rows the connection's last statement inserted, updated or deleted."""
    return int(conn.execute("SELECT changes()").fetchone()[0])
