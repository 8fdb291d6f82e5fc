"""The embedded backend's management queries: pages of memories newest first, version history, the facts a fact
superseded, a namespace's usage counts, and erasing a namespace. SqliteMemoryStore calls them on its connection."""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import date, datetime

from rearview.adapters.sqlite.rows import (
    LAYERS,
    SELECT_COLUMNS,
    TABLE,
    TIME_COLUMN,
    datetime_or_none,
    epoch,
    fact_from_row,
    filter_clause,
    json_list,
    memory_from_row,
    unique_layers,
)
from rearview.domain.erase import ErasedCounts
from rearview.domain.history import ArchivedVersion
from rearview.domain.listing import PagePosition, sort_key
from rearview.domain.memory import Fact, Memory, StoredLayer
from rearview.domain.search import MemoryFilter
from rearview.domain.stats import RECALL_DAY_RETENTION, NamespaceUsage, RecallDay
from rearview.domain.timestamps import as_utc


def page(
    conn: sqlite3.Connection, namespace: str, flt: MemoryFilter, limit: int, after: PagePosition | None
) -> list[Memory]:
    """At most `limit` matching memories, newest first, strictly after `after`: one ordered query per layer on its
    time index, merged."""
    per_layer: list[list[Memory]] = []
    for layer in unique_layers(flt.layers):
        clause = filter_clause(layer, namespace, flt, "m")
        if clause is None:
            continue
        where, params = clause
        time_column = TIME_COLUMN[layer]
        if after is not None:
            at = epoch(after.time)
            where += f" AND (m.{time_column} < ? OR (m.{time_column} = ? AND m.id < ?))"
            params = [*params, at, at, after.id]
        rows = conn.execute(
            f"SELECT {SELECT_COLUMNS[layer]} FROM {TABLE[layer]} AS m WHERE {where} "
            f"ORDER BY m.{time_column} DESC, m.id DESC LIMIT ?",
            (*params, max(limit, 0)),
        )
        per_layer.append([memory_from_row(layer, row) for row in rows])
    merged = heapq.merge(*per_layer, key=sort_key, reverse=True)
    return list(merged)[: max(limit, 0)]


def stored_memories(conn: sqlite3.Connection, namespace: str, ids: Sequence[str]) -> dict[str, Memory]:
    """The stored memories among `ids`, read on this connection (inside a write's transaction)."""
    if not ids:
        return {}
    found: dict[str, Memory] = {}
    for layer in LAYERS:
        for row in conn.execute(
            f"SELECT {SELECT_COLUMNS[layer]} FROM {TABLE[layer]} WHERE namespace = ? "
            "AND id IN (SELECT value FROM json_each(?))",
            (namespace, json_list(ids)),
        ):
            found[row[0]] = memory_from_row(layer, row)
    return found


def write_history(
    conn: sqlite3.Connection, namespace: str, archives: Sequence[ArchivedVersion], purged: Sequence[str]
) -> None:
    """Drop the history of the purged ids, then keep the archives (one row per memory and version)."""
    if purged:
        conn.execute(
            "DELETE FROM memory_versions WHERE namespace = ? AND memory_id IN (SELECT value FROM json_each(?))",
            (namespace, json_list(purged)),
        )
    if archives:
        conn.executemany(
            "INSERT OR REPLACE INTO memory_versions(namespace, memory_id, version, archive_json) VALUES (?, ?, ?, ?)",
            [(namespace, a.memory.id, a.version, a.model_dump_json()) for a in archives],
        )


def history(conn: sqlite3.Connection, namespace: str, memory_id: str) -> list[ArchivedVersion]:
    rows = conn.execute(
        "SELECT archive_json FROM memory_versions WHERE namespace = ? AND memory_id = ? ORDER BY version",
        (namespace, memory_id),
    )
    return [ArchivedVersion.model_validate_json(row[0]) for row in rows]


def superseded_by(conn: sqlite3.Connection, namespace: str, fact_id: str) -> list[Fact]:
    rows = conn.execute(
        f"SELECT {SELECT_COLUMNS['semantic']} FROM facts WHERE namespace = ? AND superseded_by = ? "
        "ORDER BY created_at, ref",
        (namespace, fact_id),
    )
    return [fact_from_row(row) for row in rows]


def erase(conn: sqlite3.Connection, namespace: str) -> tuple[ErasedCounts, list[tuple[StoredLayer, str]], int]:
    """Delete the namespace's rows (the FTS, tag and source triggers follow); the counts, the (layer, id) of each
    memory deleted, and the namespace's new generation (kept, and moved on, so that no cache mistakes an erased
    namespace for a fresh one; its counters are reset, and `list_namespaces` passes it by until it is used again)."""
    deleted: list[tuple[StoredLayer, str]] = []
    counts: Mapping[StoredLayer, int] = {}
    for layer in LAYERS:
        rows = conn.execute(f"DELETE FROM {TABLE[layer]} WHERE namespace = ? RETURNING id", (namespace,)).fetchall()
        deleted.extend((layer, row[0]) for row in rows)
        counts = {**counts, layer: len(rows)}
    working = conn.execute("DELETE FROM working WHERE namespace = ?", (namespace,)).rowcount
    versions = conn.execute("DELETE FROM memory_versions WHERE namespace = ?", (namespace,)).rowcount
    conn.execute("DELETE FROM recall_days WHERE namespace = ?", (namespace,))
    found = conn.execute(
        "UPDATE namespace_state SET generation = generation + 1, last_write_at = NULL, recall_count = 0, "
        "recall_hits = 0 WHERE namespace = ? RETURNING generation",
        (namespace,),
    ).fetchone()
    erased = ErasedCounts(
        working=working, episodic=counts.get("episodic", 0), semantic=counts.get("semantic", 0), versions=versions
    )
    return erased, deleted, int(found[0]) if found is not None else 0


def record_recall(conn: sqlite3.Connection, namespace: str, hit: bool, at: datetime, *, prune: bool = True) -> None:
    """Count one recall in the namespace's totals and in its UTC day's counters; with `prune`, the days past the
    retention go."""
    conn.execute(
        "INSERT INTO namespace_state(namespace, recall_count, recall_hits) VALUES (?, 1, ?) "
        "ON CONFLICT(namespace) DO UPDATE SET recall_count = recall_count + 1, "
        "recall_hits = recall_hits + excluded.recall_hits",
        (namespace, int(hit)),
    )
    day = as_utc(at).date()
    conn.execute(
        "INSERT INTO recall_days(namespace, day, recalls, hits) VALUES (?, ?, 1, ?) "
        "ON CONFLICT(namespace, day) DO UPDATE SET recalls = recalls + 1, hits = hits + excluded.hits",
        (namespace, day.isoformat(), int(hit)),
    )
    if prune:
        oldest = (day - RECALL_DAY_RETENTION).isoformat()
        conn.execute("DELETE FROM recall_days WHERE namespace = ? AND day < ?", (namespace, oldest))


def recall_days(conn: sqlite3.Connection, namespace: str, since: date) -> list[RecallDay]:
    """The namespace's recall counters per UTC day from `since` on, oldest first."""
    rows = conn.execute(
        "SELECT day, recalls, hits FROM recall_days WHERE namespace = ? AND day >= ? ORDER BY day",
        (namespace, since.isoformat()),
    )
    return [RecallDay(day=date.fromisoformat(day), recalls=recalls, hits=hits) for day, recalls, hits in rows]


def usage(conn: sqlite3.Connection, namespace: str, now: datetime) -> NamespaceUsage:
    """Counts: working (unexpired), episodic, semantic (active), semantic_superseded; recall counters."""
    (working,) = conn.execute(
        "SELECT COUNT(*) FROM working WHERE namespace = ? AND expires_at > ?", (namespace, epoch(now))
    ).fetchone()
    (episodic,) = conn.execute("SELECT COUNT(*) FROM episodes WHERE namespace = ?", (namespace,)).fetchone()
    by_status = dict(
        conn.execute("SELECT status, COUNT(*) FROM facts WHERE namespace = ? GROUP BY status", (namespace,)).fetchall()
    )
    state = conn.execute(
        "SELECT last_write_at, recall_count, recall_hits FROM namespace_state WHERE namespace = ?", (namespace,)
    ).fetchone()
    last_write_at, recall_count, recall_hits = state if state is not None else (None, 0, 0)
    return NamespaceUsage(
        working=working,
        episodic=episodic,
        semantic_active=by_status.get("active", 0),
        semantic_superseded=by_status.get("superseded", 0),
        last_write_at=datetime_or_none(last_write_at),
        recall_count=recall_count,
        recall_hits=recall_hits,
    )


def expired(conn: sqlite3.Connection, now: datetime, limit: int) -> list[tuple[str, str]]:
    """(namespace, id) of at most `limit` memories of any namespace that expired by `now`, soonest expired first:
    the partial indexes `episodes_expiring` and `facts_expiring` hold only the memories that expire."""
    found: list[tuple[float, str, str]] = []
    for table in ("episodes", "facts"):
        found.extend(
            conn.execute(
                f"SELECT expires_at, namespace, id FROM {table} WHERE expires_at <= ? ORDER BY expires_at LIMIT ?",
                (epoch(now), max(limit, 0)),
            ).fetchall()
        )
    return [(namespace, memory_id) for _, namespace, memory_id in sorted(found)[: max(limit, 0)]]
