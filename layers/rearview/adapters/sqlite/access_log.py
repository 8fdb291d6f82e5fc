"""Accesses counted apart from the memories, folded into them in batches (the embedded store's access windows).

Every recall counts an access of each memory it returns. Counted on the rows themselves, that rewrote each returned
row (its vector included) into the WAL, and changed the access columns that recall's read cache then read afresh:
with the recall counters, about a tenth of a small namespace's recall (bench/RESULTS.md, "Recall on a small
namespace"). So a recall appends one row here instead: the namespace, the time, the ids it returned (JSON). The
rows are folded into the memories' `access_count` and `last_accessed_at`, one UPDATE per table for all of them:

- when `AccessLog.note` says a namespace is due (this process logged `FOLD_ROWS` rows for it, or the first of them
  is `FOLD_SECONDS` old by the times logged), in the transaction of the recall that makes it due;
- in every change set of the namespace, first (`SqliteMemoryStore.apply`): a write that read a memory with `get`
  (which counts what is not folded yet) writes the counts as folded, and an id deleted takes its rows with it;
- when the retention sweep settles the namespace (`settle_access`).

What `MemoryUsage` says of a store that keeps counts apart holds: `get` counts what is not folded yet (`pending`),
the other reads count it once it is folded. An update through the write path never lowers the access columns
(`rows.update_sql`), so a writer that read a memory before a fold does not undo it."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime

from rearview.adapters.sqlite.rows import TABLE, epoch, json_list
from rearview.domain.timestamps import utc_from_epoch

# A namespace's log is folded once this process logged this many rows for it (a recall each), or once the first
# of them is this old: the access boost lags by at most a minute of recalls, and one fold rewrites each memory
# recalled meanwhile once instead of once a recall.
FOLD_ROWS = 64
FOLD_SECONDS = 60.0

_PENDING_OF = (
    "SELECT COUNT(*), MAX(l.at) FROM access_log AS l, json_each(l.ids_json) AS j WHERE l.namespace = ? AND j.value = ?"
)


def log(conn: sqlite3.Connection, namespace: str, ids: Sequence[str], at: datetime) -> None:
    """Count one access of each of `ids` (each once, however often it is named): one row."""
    conn.execute(
        "INSERT INTO access_log(namespace, at, ids_json) VALUES (?, ?, ?)",
        (namespace, epoch(at), json_list(list(dict.fromkeys(ids)))),
    )


def fold(conn: sqlite3.Connection, namespace: str) -> int:
    """Add the namespace's logged accesses to its memories and empty its log (inside the caller's write
    transaction); how many memories changed. An id no memory has any more (deleted since) changes nothing."""
    if conn.execute("SELECT 1 FROM access_log WHERE namespace = ? LIMIT 1", (namespace,)).fetchone() is None:
        return 0
    changed = 0
    for table in TABLE.values():
        # No trigger watches the access columns: the full-text, tag and provenance rows stay as they are.
        changed += conn.execute(
            f"UPDATE {table} SET access_count = access_count + p.n, "
            "last_accessed_at = CASE WHEN last_accessed_at > p.at THEN last_accessed_at ELSE p.at END "
            "FROM (SELECT j.value AS id, COUNT(*) AS n, MAX(l.at) AS at "
            "FROM access_log AS l, json_each(l.ids_json) AS j WHERE l.namespace = ? GROUP BY j.value) AS p "
            f"WHERE {table}.namespace = ? AND {table}.id = p.id",
            (namespace, namespace),
        ).rowcount
    conn.execute("DELETE FROM access_log WHERE namespace = ?", (namespace,))
    return changed


def pending(conn: sqlite3.Connection, namespace: str, memory_id: str) -> tuple[int, datetime] | None:
    """How many accesses of one memory are logged and not folded yet, and the last of them; None when none are."""
    count, last = conn.execute(_PENDING_OF, (namespace, memory_id)).fetchone()
    return (int(count), utc_from_epoch(last)) if count else None


class AccessLog:
    """Which namespaces this process logged accesses for since their last fold, and when each is due."""

    def __init__(self, fold_rows: int = FOLD_ROWS, fold_seconds: float = FOLD_SECONDS) -> None:
        self.fold_rows, self.fold_seconds = fold_rows, fold_seconds
        self._logged: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def note(self, namespace: str, at: datetime) -> bool:
        """One more row logged for the namespace at `at`; True when its log is due to be folded now."""
        when = epoch(at)
        with self._lock:
            rows, first = self._logged.get(namespace, (0, when))
            rows += 1
            if rows >= self.fold_rows or when - first >= self.fold_seconds:
                return True
            self._logged[namespace] = (rows, min(first, when))
            return False

    def folded(self, namespace: str) -> None:
        """The namespace's log is empty (folded, or erased with it)."""
        with self._lock:
            self._logged.pop(namespace, None)
