"""The embedded backend: one SQLite file (WAL, FTS5) as MemoryStore and SearchIndex; exact vectors in numpy.

Layout of `<data_dir>/rearview.db`:

- `meta`: schema version, and the embedder name and dimension the stored vectors were made with.
- `working`: working memory, one row per (namespace, session, key), with an absolute expiry.
- `episodes`, `facts`: one row per memory, integer `ref` (rowid, AUTOINCREMENT so refs only grow) plus a
  unique (namespace, id); lists as JSON, datetimes as UTC epoch seconds (REAL), vectors as float32 BLOBs, and
  `search_text`, the analysed text (`text_analysis.index_text`) that FTS5 indexes.
- `fts_episodes`, `fts_facts`: external-content FTS5 tables over (`ns_token`, `search_text`, and for episodes
  `context_text`, the analysed `context`), kept in sync by triggers, so a write is indexed in the same
  transaction. `ns_token` is the namespace as one safe token.
- `memory_tags`, `fact_sources`: tags and fact provenance exploded by triggers, so "any of these tags" and
  "facts citing these episodes" are index lookups instead of JSON scans.
- `namespace_state`: per-namespace write generation (bumped by every `apply`), last write time, recall
  counters.

Time filters are half-open: `since <= t < until`, t being the episode's occurred_at or the fact's
last_confirmed_at.
A fact never matches a filter on `session_id` or `event_types` (facts have neither); `consolidated` only
constrains episodes. BM25 statistics (IDF, average length) are those of the whole table, not of one namespace:
scores are comparable within a query, which is all fusion needs.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from rearview.clock import SystemClock
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact, Memory, StoredLayer
from rearview.domain.search import Candidate, EntityShares, MemoryFilter, SearchTraits
from rearview.domain.stats import NamespaceUsage
from rearview.domain.timestamps import as_utc, utc_from_epoch
from rearview.domain.working import WorkingEntry
from rearview.errors import ConcurrentUpdate, ConfigurationError, EmbeddingMismatch, InvalidInput
from rearview.ports import Clock, SearchIndex
from rearview.text_analysis import index_text, query_terms

DB_FILENAME = "rearview.db"
_LAYERS: tuple[StoredLayer, ...] = ("episodic", "semantic")

# --- schema -------------------------------------------------------------------------------------------------

_META_DDL = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"

_FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"


def _fts_triggers(table: str, layer: str) -> str:
    fts = f"fts_{table}"
    return f"""
CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN
  INSERT INTO {fts}(rowid, ns_token, search_text) VALUES (new.ref, new.ns_token, new.search_text);
  INSERT OR IGNORE INTO memory_tags(namespace, tag, layer, ref)
    SELECT new.namespace, value, '{layer}', new.ref FROM json_each(new.tags_json);
END;
CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN
  INSERT INTO {fts}({fts}, rowid, ns_token, search_text)
    VALUES ('delete', old.ref, old.ns_token, old.search_text);
  DELETE FROM memory_tags WHERE namespace = old.namespace AND layer = '{layer}' AND ref = old.ref
    AND tag IN (SELECT value FROM json_each(old.tags_json));
END;
CREATE TRIGGER {table}_au_text AFTER UPDATE OF search_text ON {table}
WHEN old.search_text IS NOT new.search_text BEGIN
  INSERT INTO {fts}({fts}, rowid, ns_token, search_text)
    VALUES ('delete', old.ref, old.ns_token, old.search_text);
  INSERT INTO {fts}(rowid, ns_token, search_text) VALUES (new.ref, new.ns_token, new.search_text);
END;
CREATE TRIGGER {table}_au_tags AFTER UPDATE OF tags_json ON {table}
WHEN old.tags_json IS NOT new.tags_json BEGIN
  DELETE FROM memory_tags WHERE namespace = old.namespace AND layer = '{layer}' AND ref = old.ref
    AND tag IN (SELECT value FROM json_each(old.tags_json));
  INSERT OR IGNORE INTO memory_tags(namespace, tag, layer, ref)
    SELECT new.namespace, value, '{layer}', new.ref FROM json_each(new.tags_json);
END;
"""


_MIGRATION_1 = f"""
CREATE TABLE working (
  namespace TEXT NOT NULL,
  session_id TEXT NOT NULL,
  key TEXT NOT NULL,
  value_json TEXT NOT NULL,
  updated_at REAL NOT NULL,
  expires_at REAL NOT NULL,
  PRIMARY KEY (namespace, session_id, key)
) WITHOUT ROWID;

CREATE TABLE episodes (
  ref INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace TEXT NOT NULL,
  id TEXT NOT NULL,
  ns_token TEXT NOT NULL,
  content TEXT NOT NULL,
  tags_json TEXT NOT NULL,
  importance REAL NOT NULL,
  access_count INTEGER NOT NULL,
  last_accessed_at REAL,
  created_at REAL NOT NULL,
  confirmations INTEGER NOT NULL,
  redacted INTEGER NOT NULL,
  version INTEGER NOT NULL,
  occurred_at REAL NOT NULL,
  event_type TEXT,
  entities_json TEXT NOT NULL,
  outcome TEXT,
  session_id TEXT,
  consolidated INTEGER NOT NULL,
  vector BLOB,
  search_text TEXT NOT NULL,
  UNIQUE (namespace, id)
);
CREATE INDEX episodes_by_time ON episodes(namespace, occurred_at);
CREATE INDEX episodes_by_session ON episodes(namespace, session_id);
CREATE INDEX episodes_by_event_type ON episodes(namespace, event_type);

CREATE TABLE facts (
  ref INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace TEXT NOT NULL,
  id TEXT NOT NULL,
  ns_token TEXT NOT NULL,
  content TEXT NOT NULL,
  tags_json TEXT NOT NULL,
  importance REAL NOT NULL,
  access_count INTEGER NOT NULL,
  last_accessed_at REAL,
  created_at REAL NOT NULL,
  confirmations INTEGER NOT NULL,
  redacted INTEGER NOT NULL,
  version INTEGER NOT NULL,
  dimension TEXT,
  confidence REAL NOT NULL,
  provenance_json TEXT NOT NULL,
  last_confirmed_at REAL NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'superseded')),
  superseded_by TEXT,
  superseded_at REAL,
  vector BLOB,
  search_text TEXT NOT NULL,
  UNIQUE (namespace, id)
);
CREATE INDEX facts_by_time ON facts(namespace, last_confirmed_at);
CREATE INDEX facts_by_dimension ON facts(namespace, dimension, status);

CREATE TABLE memory_tags (
  namespace TEXT NOT NULL,
  tag TEXT NOT NULL,
  layer TEXT NOT NULL,
  ref INTEGER NOT NULL,
  PRIMARY KEY (namespace, tag, layer, ref)
) WITHOUT ROWID;

CREATE TABLE fact_sources (
  namespace TEXT NOT NULL,
  episode_id TEXT NOT NULL,
  ref INTEGER NOT NULL,
  PRIMARY KEY (namespace, episode_id, ref)
) WITHOUT ROWID;

CREATE TABLE namespace_state (
  namespace TEXT PRIMARY KEY,
  generation INTEGER NOT NULL DEFAULT 0,
  last_write_at REAL,
  recall_count INTEGER NOT NULL DEFAULT 0,
  recall_hits INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE VIRTUAL TABLE fts_episodes USING fts5(
  ns_token, search_text, content='episodes', content_rowid='ref', tokenize='{_FTS_TOKENIZER}'
);
CREATE VIRTUAL TABLE fts_facts USING fts5(
  ns_token, search_text, content='facts', content_rowid='ref', tokenize='{_FTS_TOKENIZER}'
);
{_fts_triggers("episodes", "episodic")}
{_fts_triggers("facts", "semantic")}
CREATE TRIGGER facts_sources_ai AFTER INSERT ON facts BEGIN
  INSERT OR IGNORE INTO fact_sources(namespace, episode_id, ref)
    SELECT new.namespace, value, new.ref FROM json_each(new.provenance_json);
END;
CREATE TRIGGER facts_sources_ad AFTER DELETE ON facts BEGIN
  DELETE FROM fact_sources WHERE namespace = old.namespace AND ref = old.ref
    AND episode_id IN (SELECT value FROM json_each(old.provenance_json));
END;
CREATE TRIGGER facts_sources_au AFTER UPDATE OF provenance_json ON facts
WHEN old.provenance_json IS NOT new.provenance_json BEGIN
  DELETE FROM fact_sources WHERE namespace = old.namespace AND ref = old.ref
    AND episode_id IN (SELECT value FROM json_each(old.provenance_json));
  INSERT OR IGNORE INTO fact_sources(namespace, episode_id, ref)
    SELECT new.namespace, value, new.ref FROM json_each(new.provenance_json);
END;
"""

# API keys (rearview.adapters.sqlite_key_store): only a hash of each secret; scope and permissions in the clear.
_MIGRATION_2 = """
CREATE TABLE api_keys (
  key_id TEXT PRIMARY KEY,
  scope TEXT NOT NULL,
  permissions TEXT NOT NULL,
  secret_hash TEXT NOT NULL,
  created_at REAL NOT NULL,
  expires_at REAL,
  revoked_at REAL,
  description TEXT
) WITHOUT ROWID;
"""

# recent_episodes() reads by creation time (read-your-writes in recall); without this it scans the namespace.
_MIGRATION_3 = "CREATE INDEX episodes_by_created ON episodes(namespace, created_at);"

# Contextual keyword search: an episode's `context` (the turn before it in its session) and its analysed form,
# indexed by FTS5 as a third column that keyword search weighs by `recall.context_weight`. The episodes' FTS table
# and the triggers that feed it are rebuilt with the new column (the tag triggers stay as they were).
_MIGRATION_4 = f"""
ALTER TABLE episodes ADD COLUMN context TEXT NOT NULL DEFAULT '';
ALTER TABLE episodes ADD COLUMN context_text TEXT NOT NULL DEFAULT '';
DROP TRIGGER episodes_ai;
DROP TRIGGER episodes_ad;
DROP TRIGGER episodes_au_text;
DROP TABLE fts_episodes;
CREATE VIRTUAL TABLE fts_episodes USING fts5(
  ns_token, search_text, context_text, content='episodes', content_rowid='ref', tokenize='{_FTS_TOKENIZER}'
);
INSERT INTO fts_episodes(fts_episodes) VALUES ('rebuild');
CREATE TRIGGER episodes_ai AFTER INSERT ON episodes BEGIN
  INSERT INTO fts_episodes(rowid, ns_token, search_text, context_text)
    VALUES (new.ref, new.ns_token, new.search_text, new.context_text);
  INSERT OR IGNORE INTO memory_tags(namespace, tag, layer, ref)
    SELECT new.namespace, value, 'episodic', new.ref FROM json_each(new.tags_json);
END;
CREATE TRIGGER episodes_ad AFTER DELETE ON episodes BEGIN
  INSERT INTO fts_episodes(fts_episodes, rowid, ns_token, search_text, context_text)
    VALUES ('delete', old.ref, old.ns_token, old.search_text, old.context_text);
  DELETE FROM memory_tags WHERE namespace = old.namespace AND layer = 'episodic' AND ref = old.ref
    AND tag IN (SELECT value FROM json_each(old.tags_json));
END;
CREATE TRIGGER episodes_au_text AFTER UPDATE OF search_text, context_text ON episodes
WHEN old.search_text IS NOT new.search_text OR old.context_text IS NOT new.context_text BEGIN
  INSERT INTO fts_episodes(fts_episodes, rowid, ns_token, search_text, context_text)
    VALUES ('delete', old.ref, old.ns_token, old.search_text, old.context_text);
  INSERT INTO fts_episodes(rowid, ns_token, search_text, context_text)
    VALUES (new.ref, new.ns_token, new.search_text, new.context_text);
END;
"""

# The FTS5 columns keyword search matches in an episode when it weighs the context (facts have no context).
_TEXT_AND_CONTEXT = "{search_text context_text}"

# Ordered: MIGRATIONS[i] takes the schema from version i to i + 1, each in its own transaction. Append only.
# Scheduled consolidation asks which namespaces hold unconsolidated episodes: a partial index holds just those rows.
_MIGRATION_5 = "CREATE INDEX episodes_unconsolidated ON episodes(namespace) WHERE consolidated = 0;"

MIGRATIONS: tuple[str, ...] = (_MIGRATION_1, _MIGRATION_2, _MIGRATION_3, _MIGRATION_4, _MIGRATION_5)
SCHEMA_VERSION = len(MIGRATIONS)


def _statements(script: str) -> list[str]:
    """Split a script into statements (trigger bodies included) so they run inside one explicit transaction.

    `executescript` would commit first, which would break the one-transaction-per-migration rule.
    """
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        raise ConfigurationError(f"incomplete SQL statement in migration: {current.strip()[:80]!r}")
    return statements


def _meta_value(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


# --- the database -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CachedRow:
    """What a vector cache needs to know of one upserted memory."""

    layer: StoredLayer
    ref: int
    id: str
    time: float
    active: bool
    consolidated: bool
    session_id: str | None
    event_type: str | None
    vector: np.ndarray | None  # None keeps the cached vector


@dataclass(frozen=True)
class AppliedChanges:
    """Published by SqliteMemoryStore.apply after commit, so caches in this process can update in place."""

    namespace: str
    generation_before: int
    generation_after: int
    upserted: tuple[CachedRow, ...]
    deleted: tuple[tuple[StoredLayer, str], ...]


class _Handle:
    """One thread's connection; weak-referenceable (sqlite3.Connection is not) so close() can find it."""

    __slots__ = ("conn", "depth", "__weakref__")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.depth = 0


class SqliteDatabase:
    """The SQLite file: connections, schema migrations, the embedder check, transactions and change notices.

    Thread-safety: one connection per thread (threading.local). In WAL mode readers never wait for the writer,
    so a recall does not queue behind a consolidation that holds the write lock for a while, which one shared
    connection behind a lock would force; and a transaction belongs to its thread's connection, so no lock has
    to be held across the caller's code. Writers serialise on SQLite's own lock (BEGIN IMMEDIATE and
    busy_timeout).
    A finished thread's connection closes when its thread-local handle is collected; close() closes the rest.
    """

    def __init__(
        self, path: Path, *, embedder_name: str | None, dim: int | None, migrations: Sequence[str] = MIGRATIONS
    ) -> None:
        self.path = Path(path)
        # Injectable so tests can exercise a later or a failing migration; production uses MIGRATIONS.
        self._migrations = tuple(migrations)
        # None for both: opened for the API keys alone (`rearview keys`), which must not pin the embedder.
        self.embedder_name = embedder_name or ""
        self.dim = int(dim or 0)
        self._local = threading.local()
        self._handles: weakref.WeakSet[_Handle] = weakref.WeakSet()
        self._handles_lock = threading.Lock()
        self._listeners: list[Callable[[AppliedChanges], None]] = []
        self._closed = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = self.connection()
            conn.execute("PRAGMA journal_mode=WAL")
            self._migrate(conn)
            if embedder_name is not None:
                self._check_embedder(conn)
        except BaseException:
            self.close()
            raise

    @classmethod
    def in_data_dir(cls, data_dir: Path, *, embedder_name: str, dim: int) -> SqliteDatabase:
        """Open `<data_dir>/rearview.db`."""
        return cls(Path(data_dir) / DB_FILENAME, embedder_name=embedder_name, dim=dim)

    # connections

    def _handle(self) -> _Handle:
        handle: _Handle | None = getattr(self._local, "handle", None)
        if handle is not None:
            return handle
        if self._closed:
            raise ConfigurationError(f"database {self.path} is closed")
        # check_same_thread=False only so that close() may close every thread's connection; each connection
        # is otherwise used by its own thread alone. isolation_level=None: transactions are explicit.
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5.0)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=5000")
        handle = _Handle(conn)
        self._local.handle = handle
        with self._handles_lock:
            self._handles.add(handle)
        return handle

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit outside `transaction()`)."""
        return self._handle().conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception; a nested call joins the outer one."""
        handle = self._handle()
        conn = handle.conn
        if handle.depth:
            handle.depth += 1
            try:
                yield conn
            finally:
                handle.depth -= 1
            return
        conn.execute("BEGIN IMMEDIATE")
        handle.depth = 1
        try:
            yield conn
        except BaseException:
            handle.depth = 0
            conn.execute("ROLLBACK")
            raise
        handle.depth = 0
        conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the same committed state."""
        handle = self._handle()
        conn = handle.conn
        if handle.depth:
            yield conn
            return
        conn.execute("BEGIN")
        handle.depth = 1
        try:
            yield conn
        finally:
            handle.depth = 0
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close every thread's connection. The object is unusable afterwards."""
        self._closed = True
        with self._handles_lock:
            handles = list(self._handles)
            self._handles = weakref.WeakSet()
        for handle in handles:
            handle.conn.close()
        self._local = threading.local()

    def __enter__(self) -> SqliteDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # change notices

    def subscribe(self, listener: Callable[[AppliedChanges], None]) -> None:
        """Call `listener` after every committed `apply` made through this object."""
        self._listeners.append(listener)

    def publish(self, changes: AppliedChanges) -> None:
        for listener in list(self._listeners):
            listener(changes)

    # schema

    @property
    def schema_version(self) -> int:
        value = _meta_value(self.connection(), "schema_version")
        return int(value) if value is not None else 0

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute(_META_DDL)
        while True:
            with self.transaction():
                # Re-read inside the write lock: another process may have migrated meanwhile.
                stored = _meta_value(conn, "schema_version")
                version = int(stored) if stored is not None else 0
                target = len(self._migrations)
                if version > target:
                    raise ConfigurationError(
                        f"{self.path} has schema version {version}, newer than this Rearview "
                        f"({target}); upgrade Rearview or use another data directory"
                    )
                if version == target:
                    return
                for statement in _statements(self._migrations[version]):
                    conn.execute(statement)
                _set_meta(conn, "schema_version", str(version + 1))

    def _check_embedder(self, conn: sqlite3.Connection) -> None:
        with self.transaction():
            stored_name = _meta_value(conn, "embedder_name")
            stored_dim = _meta_value(conn, "embedding_dim")
            if stored_name is None or stored_dim is None:
                _set_meta(conn, "embedder_name", self.embedder_name)
                _set_meta(conn, "embedding_dim", str(self.dim))
                return
        if stored_name != self.embedder_name or int(stored_dim) != self.dim:
            raise EmbeddingMismatch(
                f"{self.path} holds vectors made by embedder {stored_name!r} (dim {stored_dim}), but the "
                f"configured embedder is {self.embedder_name!r} (dim {self.dim}). Configure the original "
                "embedder, use another data directory, or rebuild the vectors with `rearview reindex`.",
                field="embedder",
            )


# --- row mapping --------------------------------------------------------------------------------------------


def namespace_token(namespace: str) -> str:
    """The namespace as one FTS5 token: letters and digits only, so no tokenizer can split or merge it."""
    return "ns" + hashlib.blake2b(namespace.encode("utf-8"), digest_size=16).hexdigest()


def _epoch(value: datetime) -> float:
    return as_utc(value).timestamp()


def _epoch_or_none(value: datetime | None) -> float | None:
    return None if value is None else as_utc(value).timestamp()


def _dt_or_none(value: float | None) -> datetime | None:
    return None if value is None else utc_from_epoch(value)


def _json_list(values: Iterable[str]) -> str:
    return json.dumps(list(values), ensure_ascii=False)


_TIME_COLUMN: dict[str, str] = {"episodic": "occurred_at", "semantic": "last_confirmed_at"}
_TABLE: dict[str, str] = {"episodic": "episodes", "semantic": "facts"}

_COMMON_COLUMNS = (
    "id, namespace, content, tags_json, importance, access_count, last_accessed_at, created_at, "
    "confirmations, redacted, version"
)
_EPISODE_COLUMNS = (
    _COMMON_COLUMNS + ", occurred_at, event_type, entities_json, outcome, session_id, consolidated, context"
)
_FACT_COLUMNS = (
    _COMMON_COLUMNS
    + ", dimension, confidence, provenance_json, last_confirmed_at, status, superseded_by, superseded_at"
)
_SELECT_COLUMNS: dict[str, str] = {"episodic": _EPISODE_COLUMNS, "semantic": _FACT_COLUMNS}


def _common_fields(row: Sequence[Any]) -> dict[str, Any]:
    return {
        "id": row[0],
        "namespace": row[1],
        "content": row[2],
        "tags": json.loads(row[3]),
        "importance": row[4],
        "access_count": row[5],
        "last_accessed_at": _dt_or_none(row[6]),
        "created_at": utc_from_epoch(row[7]),
        "confirmations": row[8],
        "redacted": bool(row[9]),
        "version": row[10],
    }


def _episode_from_row(row: Sequence[Any]) -> Episode:
    # model_construct: the values come from our own columns, already of the right types (UTC-aware datetimes).
    return Episode.model_construct(
        **_common_fields(row),
        layer="episodic",
        occurred_at=utc_from_epoch(row[11]),
        event_type=row[12],
        entities=json.loads(row[13]),
        outcome=row[14],
        session_id=row[15],
        consolidated=bool(row[16]),
        context=row[17],
    )


def _fact_from_row(row: Sequence[Any]) -> Fact:
    return Fact.model_construct(
        **_common_fields(row),
        layer="semantic",
        dimension=row[11],
        confidence=row[12],
        provenance=json.loads(row[13]),
        last_confirmed_at=utc_from_epoch(row[14]),
        status=row[15],
        superseded_by=row[16],
        superseded_at=_dt_or_none(row[17]),
    )


def _memory_from_row(layer: str, row: Sequence[Any]) -> Memory:
    return _episode_from_row(row) if layer == "episodic" else _fact_from_row(row)


def _search_text(memory: Memory) -> str:
    words = [memory.content, *memory.tags]
    if isinstance(memory, Episode):
        words.extend(memory.entities)
    return index_text(" ".join(words))


def _episode_values(e: Episode) -> tuple[Any, ...]:
    return (
        e.content,
        _json_list(e.tags),
        e.importance,
        e.access_count,
        _epoch_or_none(e.last_accessed_at),
        _epoch(e.created_at),
        e.confirmations,
        int(e.redacted),
        e.version,
        _epoch(e.occurred_at),
        e.event_type,
        _json_list(e.entities),
        e.outcome,
        e.session_id,
        int(e.consolidated),
        _search_text(e),
        e.context,
        index_text(e.context),
    )


def _fact_values(f: Fact) -> tuple[Any, ...]:
    return (
        f.content,
        _json_list(f.tags),
        f.importance,
        f.access_count,
        _epoch_or_none(f.last_accessed_at),
        _epoch(f.created_at),
        f.confirmations,
        int(f.redacted),
        f.version,
        f.dimension,
        f.confidence,
        _json_list(f.provenance),
        _epoch(f.last_confirmed_at),
        f.status,
        f.superseded_by,
        _epoch_or_none(f.superseded_at),
        _search_text(f),
    )


_VALUE_COLUMNS: dict[str, tuple[str, ...]] = {
    "episodic": (
        "content", "tags_json", "importance", "access_count", "last_accessed_at", "created_at",
        "confirmations", "redacted", "version", "occurred_at", "event_type", "entities_json", "outcome",
        "session_id", "consolidated", "search_text", "context", "context_text",
    ),
    "semantic": (
        "content", "tags_json", "importance", "access_count", "last_accessed_at", "created_at",
        "confirmations", "redacted", "version", "dimension", "confidence", "provenance_json",
        "last_confirmed_at", "status", "superseded_by", "superseded_at", "search_text",
    ),
}  # fmt: skip


def _insert_sql(layer: str) -> str:
    columns = ("namespace", "id", "ns_token", *_VALUE_COLUMNS[layer], "vector")
    return f"INSERT INTO {_TABLE[layer]} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def _update_sql(layer: str) -> str:
    assignments = ", ".join(f"{c} = ?" for c in _VALUE_COLUMNS[layer])
    # COALESCE: an upsert without a vector keeps the stored one. The version predicate re-checks the lock.
    return (
        f"UPDATE {_TABLE[layer]} SET {assignments}, vector = COALESCE(?, vector) "
        "WHERE namespace = ? AND id = ? AND version = ?"
    )


def _filter_clause(layer: str, namespace: str, flt: MemoryFilter, alias: str) -> tuple[str, list[Any]] | None:
    """The WHERE clause of `flt` on one layer's table (aliased); None if nothing of that layer can match."""
    if flt.ids is not None and not flt.ids:
        return None
    if layer == "semantic" and (flt.event_types or flt.session_id is not None):
        return None
    clauses = [f"{alias}.namespace = ?"]
    params: list[Any] = [namespace]
    time_column = f"{alias}.{_TIME_COLUMN[layer]}"
    if flt.since is not None:
        clauses.append(f"{time_column} >= ?")
        params.append(_epoch(flt.since))
    if flt.until is not None:
        clauses.append(f"{time_column} < ?")
        params.append(_epoch(flt.until))
    if flt.tags:
        clauses.append(
            f"{alias}.ref IN (SELECT ref FROM memory_tags WHERE namespace = ? AND layer = ? "
            "AND tag IN (SELECT value FROM json_each(?)))"
        )
        params.extend([namespace, layer, _json_list(flt.tags)])
    if flt.ids is not None:
        clauses.append(f"{alias}.id IN (SELECT value FROM json_each(?))")
        params.append(_json_list(flt.ids))
    if layer == "episodic":
        if flt.event_types:
            clauses.append(f"{alias}.event_type IN (SELECT value FROM json_each(?))")
            params.append(_json_list(flt.event_types))
        if flt.session_id is not None:
            clauses.append(f"{alias}.session_id = ?")
            params.append(flt.session_id)
        if flt.consolidated is not None:
            clauses.append(f"{alias}.consolidated = ?")
            params.append(int(flt.consolidated))
    elif not flt.include_superseded:
        clauses.append(f"{alias}.status = 'active'")
    return " AND ".join(clauses), params


def _fts_match(token: str, terms: Sequence[str], columns: str = "search_text") -> str:
    """An FTS5 query: the namespace token AND any of the terms in `columns`, each term a quoted string (so no
    operator syntax)."""
    quoted = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return f'ns_token : "{token}" AND {columns} : ({quoted})'


def _unique_layers(layers: Iterable[StoredLayer]) -> list[StoredLayer]:
    return list(dict.fromkeys(layers))


# --- the store ----------------------------------------------------------------------------------------------


@dataclass
class _PendingUpsert:
    memory: Memory
    vector: bytes | None
    first_version: int


class SqliteMemoryStore:
    """MemoryStore over SqliteDatabase. Every query is restricted by `namespace = ?`."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock | None = None) -> None:
        self.db = db
        self.embedder_name = db.embedder_name
        self.dim = db.dim
        # Only for namespace_state.last_write_at: apply() carries no time of its own.
        self._clock: Clock = clock or SystemClock()

    # working memory

    def put_working(self, entry: WorkingEntry) -> None:
        """Insert or replace one entry; the session's expired rows are removed on the way."""
        updated_at = _epoch(entry.updated_at)
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
                    _epoch(entry.expires_at),
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
            (namespace, session_id, _epoch(now)),
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

    # writes

    def _vector_blob(self, vector: np.ndarray) -> bytes:
        array = np.asarray(vector, dtype="<f4").reshape(-1)
        if array.shape[0] != self.dim:
            raise InvalidInput(f"vector: expected dimension {self.dim}, got {array.shape[0]}", field="vector")
        return array.tobytes()

    def _collapse(self, namespace: str, changes: ChangeSet) -> dict[str, _PendingUpsert]:
        """The change set's net upserts, vectors encoded for storage."""
        return {
            memory_id: _PendingUpsert(
                p.memory, self._vector_blob(p.vector) if p.vector is not None else None, p.first_version
            )
            for memory_id, p in changes.collapsed(namespace).items()
        }

    def apply(self, namespace: str, changes: ChangeSet) -> None:
        """Apply every upsert, then every delete, in one transaction; ConcurrentUpdate rolls back all."""
        if not changes:
            return
        pending = self._collapse(namespace, changes)
        deletes = list(dict.fromkeys(changes.deletes))
        with self.db.transaction() as conn:
            stored = self._stored_versions(conn, namespace, list(pending))
            inserts: dict[str, list[tuple[Any, ...]]] = {"episodic": [], "semantic": []}
            updates: dict[str, list[tuple[Any, ...]]] = {"episodic": [], "semantic": []}
            token = namespace_token(namespace)
            for memory_id, item in pending.items():
                memory = item.memory
                current = stored.get(memory_id)
                values = _episode_values(memory) if isinstance(memory, Episode) else _fact_values(memory)
                if item.first_version <= 1:
                    if current is not None:
                        raise ConcurrentUpdate(f"memory {memory_id} already exists; version 1 is an insert")
                    inserts[memory.layer].append((namespace, memory_id, token, *values, item.vector))
                else:
                    expected = item.first_version - 1
                    if current is None or current != (memory.layer, expected):
                        found = "nothing" if current is None else f"{current[0]} version {current[1]}"
                        raise ConcurrentUpdate(
                            f"memory {memory_id}: expected stored {memory.layer} version {expected}, found {found}"
                        )
                    updates[memory.layer].append((*values, item.vector, namespace, memory_id, expected))
            for layer in _LAYERS:
                if inserts[layer]:
                    conn.executemany(_insert_sql(layer), inserts[layer])
                if updates[layer]:
                    cursor = conn.executemany(_update_sql(layer), updates[layer])
                    if cursor.rowcount != len(updates[layer]):
                        raise ConcurrentUpdate("a memory changed while this change set was applied")
            deleted: list[tuple[StoredLayer, str]] = []
            if deletes:
                ids_json = _json_list(deletes)
                for layer in _LAYERS:
                    rows = conn.execute(
                        f"DELETE FROM {_TABLE[layer]} WHERE namespace = ? "
                        "AND id IN (SELECT value FROM json_each(?)) RETURNING id",
                        (namespace, ids_json),
                    ).fetchall()
                    deleted.extend((layer, row[0]) for row in rows)
            (generation,) = conn.execute(
                "INSERT INTO namespace_state(namespace, generation, last_write_at) VALUES (?, 1, ?) "
                "ON CONFLICT(namespace) DO UPDATE SET generation = generation + 1, "
                "last_write_at = excluded.last_write_at RETURNING generation",
                (namespace, _epoch(self._clock.now())),
            ).fetchone()
            refs = self._refs(conn, namespace, list(pending))
        upserted = tuple(
            _cached_row(item.memory, refs[memory_id], item.vector)
            for memory_id, item in pending.items()
            if memory_id in refs
        )
        self.db.publish(AppliedChanges(namespace, generation - 1, generation, upserted, tuple(deleted)))

    def _stored_versions(self, conn: sqlite3.Connection, namespace: str, ids: list[str]) -> dict[str, tuple[str, int]]:
        if not ids:
            return {}
        ids_json = _json_list(ids)
        found: dict[str, tuple[str, int]] = {}
        for layer in _LAYERS:
            for memory_id, version in conn.execute(
                f"SELECT id, version FROM {_TABLE[layer]} WHERE namespace = ? "
                "AND id IN (SELECT value FROM json_each(?))",
                (namespace, ids_json),
            ):
                found[memory_id] = (layer, version)
        return found

    def _refs(self, conn: sqlite3.Connection, namespace: str, ids: list[str]) -> dict[str, int]:
        if not ids:
            return {}
        ids_json = _json_list(ids)
        refs: dict[str, int] = {}
        for layer in _LAYERS:
            refs.update(
                conn.execute(
                    f"SELECT id, ref FROM {_TABLE[layer]} WHERE namespace = ? "
                    "AND id IN (SELECT value FROM json_each(?))",
                    (namespace, ids_json),
                ).fetchall()
            )
        return refs

    # reads

    def get(self, namespace: str, memory_id: str) -> Memory | None:
        """The memory with this id in this namespace, of either layer."""
        conn = self.db.connection()
        for layer in _LAYERS:
            row = conn.execute(
                f"SELECT {_SELECT_COLUMNS[layer]} FROM {_TABLE[layer]} WHERE namespace = ? AND id = ?",
                (namespace, memory_id),
            ).fetchone()
            if row is not None:
                return _memory_from_row(layer, row)
        return None

    def get_many(self, namespace: str, ids: Sequence[str]) -> dict[str, Memory]:
        """The memories found among `ids`, by id (missing ids are absent)."""
        if not ids:
            return {}
        ids_json = _json_list(ids)
        found: dict[str, Memory] = {}
        with self.db.snapshot() as conn:
            for layer in _LAYERS:
                for row in conn.execute(
                    f"SELECT {_SELECT_COLUMNS[layer]} FROM {_TABLE[layer]} WHERE namespace = ? "
                    "AND id IN (SELECT value FROM json_each(?))",
                    (namespace, ids_json),
                ):
                    found[row[0]] = _memory_from_row(layer, row)
        return found

    def get_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors (float32) of those of `ids` that have one."""
        if not ids:
            return {}
        ids_json = _json_list(ids)
        vectors: dict[str, np.ndarray] = {}
        with self.db.snapshot() as conn:
            for layer in _LAYERS:
                for memory_id, blob in conn.execute(
                    f"SELECT id, vector FROM {_TABLE[layer]} WHERE namespace = ? "
                    "AND id IN (SELECT value FROM json_each(?)) AND vector IS NOT NULL",
                    (namespace, ids_json),
                ):
                    vectors[memory_id] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        return vectors

    def list_memories(self, namespace: str, flt: MemoryFilter, limit: int | None = None) -> list[Memory]:
        """Matching memories, oldest first (episodes by occurred_at, facts by last_confirmed_at)."""
        per_layer: list[list[tuple[float, int, Memory]]] = []
        with self.db.snapshot() as conn:
            for layer in _unique_layers(flt.layers):
                clause = _filter_clause(layer, namespace, flt, "m")
                if clause is None:
                    continue
                where, params = clause
                time_column = _TIME_COLUMN[layer]
                rows = conn.execute(
                    f"SELECT {_SELECT_COLUMNS[layer]}, m.{time_column}, m.ref FROM {_TABLE[layer]} AS m "
                    f"WHERE {where} ORDER BY m.{time_column}, m.ref LIMIT ?",
                    (*params, -1 if limit is None else limit),
                )
                per_layer.append([(row[-2], row[-1], _memory_from_row(layer, row)) for row in rows])
        merged = [memory for _, _, memory in heapq.merge(*per_layer, key=lambda item: (item[0], item[1]))]
        return merged if limit is None else merged[:limit]

    def active_fact_for_dimension(self, namespace: str, dimension: str) -> Fact | None:
        """The active fact on this dimension (the latest confirmed if, against the rules, several are)."""
        row = (
            self.db.connection()
            .execute(
                f"SELECT {_FACT_COLUMNS} FROM facts WHERE namespace = ? AND dimension = ? "
                "AND status = 'active' "
                "ORDER BY last_confirmed_at DESC, ref DESC LIMIT 1",
                (namespace, dimension),
            )
            .fetchone()
        )
        return None if row is None else _fact_from_row(row)

    def facts_citing(self, namespace: str, episode_ids: Iterable[str]) -> list[Fact]:
        """Facts (active or superseded) whose provenance names any of the episodes, oldest first."""
        ids = list(episode_ids)
        if not ids:
            return []
        rows = self.db.connection().execute(
            f"SELECT {_FACT_COLUMNS} FROM facts WHERE namespace = ? AND ref IN ("
            "SELECT ref FROM fact_sources WHERE namespace = ? "
            "AND episode_id IN (SELECT value FROM json_each(?))"
            ") ORDER BY last_confirmed_at, ref",
            (namespace, namespace, _json_list(ids)),
        )
        return [_fact_from_row(row) for row in rows]

    def record_access(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """Count one access of each memory; neither the version nor the namespace generation changes."""
        unique = list(dict.fromkeys(ids))
        if not unique:
            return
        params = [(_epoch(at), namespace, memory_id) for memory_id in unique]
        with self.db.transaction() as conn:
            for table in ("episodes", "facts"):
                conn.executemany(
                    f"UPDATE {table} SET access_count = access_count + 1, last_accessed_at = ? "
                    "WHERE namespace = ? AND id = ?",
                    params,
                )

    def record_recall(self, namespace: str, hit: bool, at: datetime) -> None:
        """Count one recall (and whether it found anything) for the namespace's hit rate."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO namespace_state(namespace, recall_count, recall_hits) VALUES (?, 1, ?) "
                "ON CONFLICT(namespace) DO UPDATE SET recall_count = recall_count + 1, "
                "recall_hits = recall_hits + excluded.recall_hits",
                (namespace, int(hit)),
            )

    def recent_episodes(self, namespace: str, since: datetime, limit: int = 200) -> list[Episode]:
        """Episodes created at or after `since`, newest first. (Recall does not need it here: this index is
        written in the store's own transaction, so it is never behind.)"""
        rows = self.db.connection().execute(
            f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE namespace = ? AND created_at >= ? "
            "ORDER BY created_at DESC, ref DESC LIMIT ?",
            (namespace, _epoch(since), limit),
        )
        return [_episode_from_row(row) for row in rows]

    def list_namespaces(self) -> list[str]:
        """Every namespace that has ever been written (for `rearview reindex` of everything)."""
        rows = self.db.connection().execute("SELECT namespace FROM namespace_state ORDER BY namespace").fetchall()
        return [row[0] for row in rows]

    def namespaces_with_unconsolidated(self) -> list[str]:
        """Every namespace holding an unconsolidated episode (a partial index holds only those rows)."""
        rows = (
            self.db.connection()
            .execute("SELECT DISTINCT namespace FROM episodes WHERE consolidated = 0 ORDER BY namespace")
            .fetchall()
        )
        return [row[0] for row in rows]

    def close(self) -> None:
        """Close the database (idempotent)."""
        self.db.close()

    def usage(self, namespace: str, now: datetime) -> NamespaceUsage:
        """Counts: working (unexpired), episodic, semantic (active), semantic_superseded; recall counters."""
        with self.db.snapshot() as conn:
            (working,) = conn.execute(
                "SELECT COUNT(*) FROM working WHERE namespace = ? AND expires_at > ?",
                (namespace, _epoch(now)),
            ).fetchone()
            (episodic,) = conn.execute("SELECT COUNT(*) FROM episodes WHERE namespace = ?", (namespace,)).fetchone()
            by_status = dict(
                conn.execute(
                    "SELECT status, COUNT(*) FROM facts WHERE namespace = ? GROUP BY status", (namespace,)
                ).fetchall()
            )
            state = conn.execute(
                "SELECT last_write_at, recall_count, recall_hits FROM namespace_state WHERE namespace = ?",
                (namespace,),
            ).fetchone()
        last_write_at, recall_count, recall_hits = state if state is not None else (None, 0, 0)
        return NamespaceUsage(
            working=working,
            episodic=episodic,
            semantic_active=by_status.get("active", 0),
            semantic_superseded=by_status.get("superseded", 0),
            last_write_at=_dt_or_none(last_write_at),
            recall_count=recall_count,
            recall_hits=recall_hits,
        )


def _cached_row(memory: Memory, ref: int, vector: bytes | None) -> CachedRow:
    array = None if vector is None else np.frombuffer(vector, dtype="<f4")
    if isinstance(memory, Episode):
        return CachedRow(
            "episodic", ref, memory.id, _epoch(memory.occurred_at), True, memory.consolidated,
            memory.session_id, memory.event_type, array,
        )  # fmt: skip
    return CachedRow(
        "semantic", ref, memory.id, _epoch(memory.last_confirmed_at), memory.status == "active", False,
        None, None, array,
    )  # fmt: skip


# --- the search index ---------------------------------------------------------------------------------------


def _normalised_rows(matrix: np.ndarray) -> np.ndarray:
    # einsum: several times faster than np.linalg.norm(axis=1) on a large float32 matrix.
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


class _VectorCache:
    """The vectors of one (namespace, layer) with the columns filters need, as parallel arrays.

    Rows are ordered by `ref` (AUTOINCREMENT, so appends keep the order and searchsorted works). Deleted rows
    are tombstoned (`alive` False) rather than removed, so an in-place update never copies the matrix.
    """

    def __init__(self, layer: StoredLayer, dim: int, generation: int, capacity: int) -> None:
        self.layer = layer
        self.generation = generation
        self.lock = threading.Lock()
        self.size = 0
        self.dead = 0
        # Headroom, so the writes that follow a load append in place instead of copying the matrix at once.
        capacity = capacity + max(1024, capacity // 8)
        self.vectors = np.empty((capacity, dim), dtype=np.float32)
        self.refs = np.zeros(capacity, dtype=np.int64)
        self.times = np.zeros(capacity, dtype=np.float64)
        self.alive = np.zeros(capacity, dtype=bool)
        self.active = np.zeros(capacity, dtype=bool)
        self.consolidated = np.zeros(capacity, dtype=bool)
        self.sessions = np.full(capacity, -1, dtype=np.int32)
        self.event_types = np.full(capacity, -1, dtype=np.int32)
        self.ids: list[str] = []
        self.position: dict[str, int] = {}
        self.session_codes: dict[str, int] = {}
        self.event_type_codes: dict[str, int] = {}

    @staticmethod
    def _code(codes: dict[str, int], value: str | None) -> int:
        if value is None:
            return -1
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(codes)
        return code

    def _grow(self, needed: int) -> None:
        capacity = self.vectors.shape[0]
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity + capacity // 2)
        for name in (
            "vectors",
            "refs",
            "times",
            "alive",
            "active",
            "consolidated",
            "sessions",
            "event_types",
        ):
            old = getattr(self, name)
            fill = -1 if name in ("sessions", "event_types") else 0
            new = (
                np.empty((new_capacity, *old.shape[1:]), dtype=old.dtype)
                if name == "vectors"
                else np.full(new_capacity, fill, dtype=old.dtype)
            )
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def load(self, rows: list[tuple[Any, ...]]) -> None:
        """Fill from (ref, id, time, active, consolidated, session_id, event_type, vector blob) rows."""
        rows.sort(key=lambda row: row[0])
        n = len(rows)
        self._grow(n)
        if n:
            matrix = np.frombuffer(b"".join(row[7] for row in rows), dtype="<f4").reshape(n, -1)
            self.vectors[:n] = _normalised_rows(matrix)
            self.refs[:n] = [row[0] for row in rows]
            self.times[:n] = [row[2] for row in rows]
            self.active[:n] = [bool(row[3]) for row in rows]
            self.consolidated[:n] = [bool(row[4]) for row in rows]
            self.sessions[:n] = [self._code(self.session_codes, row[5]) for row in rows]
            self.event_types[:n] = [self._code(self.event_type_codes, row[6]) for row in rows]
            self.alive[:n] = True
        self.ids = [row[1] for row in rows]
        self.position = {memory_id: i for i, memory_id in enumerate(self.ids)}
        self.size = n

    def upsert(self, row: CachedRow) -> bool:
        """Apply one written row; False if it cannot be applied in place (the caller then reloads)."""
        position = self.position.get(row.id)
        if position is None:
            if row.vector is None:
                return True  # a memory without a vector is not vector-searchable
            if self.size and row.ref <= self.refs[self.size - 1]:
                return False  # an old row gaining its first vector: appending would break the ref order
            position = self.size
            self._grow(position + 1)
            self.size += 1
            self.ids.append(row.id)
            self.position[row.id] = position
            self.refs[position] = row.ref
        if row.vector is not None:
            self.vectors[position] = _normalised_rows(row.vector.reshape(1, -1))[0]
        self.times[position] = row.time
        self.active[position] = row.active
        self.consolidated[position] = row.consolidated
        self.sessions[position] = self._code(self.session_codes, row.session_id)
        self.event_types[position] = self._code(self.event_type_codes, row.event_type)
        self.alive[position] = True
        return True

    def delete(self, memory_id: str) -> None:
        position = self.position.pop(memory_id, None)
        if position is not None:
            self.alive[position] = False
            self.dead += 1

    def mask(self, flt: MemoryFilter, tagged_refs: np.ndarray | None) -> np.ndarray:
        """The rows (of the first `size`) that pass the filter, as a boolean array."""
        n = self.size
        mask = self.alive[:n].copy()
        if self.layer == "semantic":
            if flt.event_types or flt.session_id is not None:
                return np.zeros(n, dtype=bool)
            if not flt.include_superseded:
                mask &= self.active[:n]
        else:
            if flt.session_id is not None:
                code = self.session_codes.get(flt.session_id)
                if code is None:
                    return np.zeros(n, dtype=bool)
                mask &= self.sessions[:n] == code
            if flt.event_types:
                codes = [self.event_type_codes[e] for e in flt.event_types if e in self.event_type_codes]
                mask &= np.isin(self.event_types[:n], np.asarray(codes, dtype=np.int32))
            if flt.consolidated is not None:
                mask &= self.consolidated[:n] == flt.consolidated
        if flt.since is not None:
            mask &= self.times[:n] >= _epoch(flt.since)
        if flt.until is not None:
            mask &= self.times[:n] < _epoch(flt.until)
        if flt.ids is not None:
            wanted = [self.position[i] for i in flt.ids if i in self.position]
            chosen = np.zeros(n, dtype=bool)
            chosen[wanted] = True
            mask &= chosen
        if tagged_refs is not None:
            mask &= _positions_mask(self.refs[:n], tagged_refs)
        return mask

    def search(self, query: np.ndarray, mask: np.ndarray, limit: int) -> list[tuple[float, str]]:
        """Top `limit` (cosine, id) among the masked rows, best first."""
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        # When most rows pass, one product over the contiguous block beats gathering the rows first.
        dense = rows.size * 2 >= self.size
        scores = (self.vectors[: self.size] @ query)[rows] if dense else self.vectors[rows] @ query
        k = min(limit, scores.size)
        top = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(float(scores[i]), self.ids[int(rows[i])]) for i in top]

    def search_many(self, queries: np.ndarray, mask: np.ndarray, limit: int) -> list[list[tuple[float, str]]]:
        """`search` for each row of `queries`, with one matrix product for all of them."""
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return [[] for _ in range(queries.shape[0])]
        scores = self.vectors[rows] @ queries.T  # (rows, queries)
        k = min(limit, rows.size)
        if k < rows.size:
            top = np.argpartition(-scores, k - 1, axis=0)[:k]  # (k, queries), unordered
        else:
            top = np.broadcast_to(np.arange(rows.size)[:, None], (rows.size, scores.shape[1]))
        top_scores = np.take_along_axis(scores, top, axis=0)
        order = np.argsort(-top_scores, axis=0, kind="stable")
        top = np.take_along_axis(top, order, axis=0)
        top_scores = np.take_along_axis(top_scores, order, axis=0)
        return [
            [(float(top_scores[r, q]), self.ids[int(rows[top[r, q]])]) for r in range(k)]
            for q in range(scores.shape[1])
        ]


def _positions_mask(sorted_refs: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Boolean mask of the entries of `sorted_refs` that occur in `refs`."""
    chosen = np.zeros(sorted_refs.size, dtype=bool)
    if refs.size == 0 or sorted_refs.size == 0:
        return chosen
    positions = np.searchsorted(sorted_refs, refs)
    inside = positions < sorted_refs.size
    positions = positions[inside]
    hits = sorted_refs[positions] == refs[inside]
    chosen[positions[hits]] = True
    return chosen


# Entity shares are counted over the latest _ENTITY_SAMPLE episodes, again after 1/20 of that in change sets.
_ENTITY_SAMPLE = 5000
_ENTITY_RECOUNT_DIVISOR = 20
_ENTITY_SHARES_CACHED = 4096
# Term match counts are kept for this many namespaces, and at most this many counts in one (then counted afresh).
_TERM_COUNTS_NAMESPACES = 1024
_TERM_COUNTS_PER_NAMESPACE = 4096
# (fts table, columns, count cap, term or None for the whole namespace) -> matches, counted up to cap + 1.
_TermCounts = dict[tuple[str, str, int, str | None], int]

_CACHE_QUERY: dict[str, str] = {
    "episodic": (
        "SELECT ref, id, occurred_at, 1, consolidated, session_id, event_type, vector FROM episodes "
        "WHERE namespace = ? AND vector IS NOT NULL"
    ),
    "semantic": (
        "SELECT ref, id, last_confirmed_at, status = 'active', 0, NULL, NULL, vector FROM facts "
        "WHERE namespace = ? AND vector IS NOT NULL"
    ),
}


class SqliteSearchIndex(SearchIndex):
    """SearchIndex over SqliteDatabase: BM25 over FTS5, and exact cosine over cached vectors.

    The vector caches are per (namespace, layer), loaded on first use, and checked against the namespace's
    generation on every search (one indexed lookup), so writes by other processes are seen. Writes made
    through a SqliteMemoryStore on the same SqliteDatabase object update the caches in place, without reload.
    At most `max_cached_vectors` vectors stay cached, least recently used namespaces evicted first.
    """

    # Written in the store's own transaction, with vector search an exact scan of a cached matrix in this process.
    traits = SearchTraits(local_scan=True)

    def __init__(
        self,
        db: SqliteDatabase,
        *,
        max_cached_vectors: int = 600_000,
        common_term_matches: int = 2000,
        scored_matches_budget: int = 5000,
        recent_matches: int = 2000,
        max_query_terms: int = 32,
        term_count_commits: int = 32,
    ) -> None:
        self.db = db
        # 600k vectors are 1.2 GB of float32 at 512 dimensions (0.9 GB at MiniLM's 384): with the rest of the
        # process that keeps a server holding 1M memories under 2 GiB. Least recently used namespaces go first.
        self.max_cached_vectors = max_cached_vectors
        # FTS5's bm25() costs about 2.5 us per matching row plus a pass over each term's whole doclist (its
        # IDF), so one term found in most of a 100k-memory namespace costs a quarter of a second. Such a term
        # says little (its IDF is near zero) next to a rarer one: a term matching more than
        # `common_term_matches` memories of the namespace is left out of the scored query when rarer terms
        # exist, and the rarer terms are scored up to `scored_matches_budget` matches in all. When every term
        # is common, the rarest is scored over its `recent_matches` most recent matches only.
        self.common_term_matches = common_term_matches
        self.scored_matches_budget = scored_matches_budget
        self.recent_matches = recent_matches
        self.max_query_terms = max_query_terms
        # How many matches a term has in a namespace only decides which terms are scored (their scores come from
        # bm25() itself), so the counts are reused until the namespace has seen `term_count_commits` more commits:
        # counting one term costs up to `common_term_matches` rows of FTS5 doclist merging (about 1 ms each at
        # 100k memories in a namespace, several per query).
        self.term_count_commits = term_count_commits
        # namespace -> (generation counted at, its counts).
        self._term_counts: OrderedDict[str, tuple[int, _TermCounts]] = OrderedDict()
        self._caches: OrderedDict[tuple[str, str], _VectorCache] = OrderedDict()
        self._lock = threading.Lock()
        # namespace -> (generation counted at, shares); see entity_shares.
        self._entity_shares: OrderedDict[str, tuple[int, EntityShares]] = OrderedDict()
        db.subscribe(self._on_applied)

    # entity statistics

    def entity_shares(self, namespace: str) -> EntityShares:
        """Shares among the namespace's latest `_ENTITY_SAMPLE` episodes (one aggregate: 25 ms in a namespace of
        100k episodes, where counting all of them took 0.4 s), counted again once 1/20 of the sample's size in
        change sets has been committed since: shares move slowly."""
        generation = self._generation(namespace)
        with self._lock:
            cached = self._entity_shares.get(namespace)
            if cached is not None:
                sampled = min(cached[1].episodes, _ENTITY_SAMPLE)
                if 0 <= generation - cached[0] <= sampled // _ENTITY_RECOUNT_DIVISOR:
                    self._entity_shares.move_to_end(namespace)
                    return cached[1]
        with self.db.snapshot() as conn:
            row = conn.execute("SELECT generation FROM namespace_state WHERE namespace = ?", (namespace,)).fetchone()
            generation = 0 if row is None else int(row[0])
            count = conn.execute("SELECT count(*) FROM episodes WHERE namespace = ?", (namespace,)).fetchone()
            episodes = int(count[0])
            rows = conn.execute(
                "SELECT entity.value, count(DISTINCT e.ref) FROM (SELECT ref, entities_json FROM episodes "
                "WHERE namespace = ? ORDER BY created_at DESC LIMIT ?) AS e, json_each(e.entities_json) AS entity "
                "GROUP BY entity.value",
                (namespace, _ENTITY_SAMPLE),
            ).fetchall()
        sampled = min(episodes, _ENTITY_SAMPLE)
        shares = {str(name): n / sampled for name, n in rows} if sampled else {}
        counted = EntityShares(episodes=episodes, shares=shares)
        with self._lock:
            self._entity_shares[namespace] = (generation, counted)
            self._entity_shares.move_to_end(namespace)
            while len(self._entity_shares) > _ENTITY_SHARES_CACHED:
                self._entity_shares.popitem(last=False)
        return counted

    # keyword search

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]:
        """BM25 over the analysed text (and an episode's context column, weighted): any query term matches; best
        first. No terms (stop words only): []."""
        terms = query_terms(text)[: self.max_query_terms]
        if not terms or limit <= 0:
            return []
        token = namespace_token(namespace)
        found: list[Candidate] = []
        with self.db.snapshot() as conn:
            counts = self._term_counts_of(namespace)
            for layer in _unique_layers(flt.layers):
                clause = _filter_clause(layer, namespace, flt, "m")
                if clause is None:
                    continue
                where, params = clause
                fts = f"fts_{_TABLE[layer]}"
                with_context = layer == "episodic" and context_weight > 0
                columns = _TEXT_AND_CONTEXT if with_context else "search_text"
                weights = f"0.0, 1.0, {float(context_weight)}" if layer == "episodic" else "0.0, 1.0"
                scored, recent_only = self._scored_terms(conn, fts, token, terms, columns, counts)
                if not scored:
                    continue
                order = f"ORDER BY rowid DESC LIMIT {int(self.recent_matches)}" if recent_only else ""
                # CROSS JOIN pins the FTS table as the outer loop: the match is what narrows the rows.
                rows = conn.execute(
                    f"SELECT m.id, hits.score FROM (SELECT rowid AS ref, -bm25({fts}, {weights}) AS score "
                    f"FROM {fts} WHERE {fts} MATCH ? {order}) AS hits "
                    f"CROSS JOIN {_TABLE[layer]} AS m ON m.ref = hits.ref "
                    f"WHERE {where} ORDER BY hits.score DESC LIMIT ?",
                    (_fts_match(token, scored, columns), *params, limit),
                )
                found.extend(Candidate(memory_id, layer, float(score)) for memory_id, score in rows)
        found.sort(key=lambda c: c.score, reverse=True)
        return found[:limit]

    def _term_counts_of(self, namespace: str) -> _TermCounts:
        """The namespace's cached match counts, emptied once it has seen more than `term_count_commits` commits
        since they were counted (called inside the caller's snapshot, which this thread's connection holds)."""
        generation = self._generation(namespace)
        with self._lock:
            cached = self._term_counts.get(namespace)
            if cached is None or not 0 <= generation - cached[0] <= self.term_count_commits:
                cached = (generation, {})
            elif len(cached[1]) > _TERM_COUNTS_PER_NAMESPACE:
                cached = (cached[0], {})
            self._term_counts[namespace] = cached
            self._term_counts.move_to_end(namespace)
            while len(self._term_counts) > _TERM_COUNTS_NAMESPACES:
                self._term_counts.popitem(last=False)
            return cached[1]

    def _count_matches(self, conn: sqlite3.Connection, fts: str, match: str, cap: int) -> int:
        """How many rows match, counting no further than `cap` + 1 (so a common term costs no more)."""
        (count,) = conn.execute(
            f"SELECT count(*) FROM (SELECT rowid FROM {fts} WHERE {fts} MATCH ? LIMIT ?)", (match, cap + 1)
        ).fetchone()
        return int(count)

    def _scored_terms(
        self,
        conn: sqlite3.Connection,
        fts: str,
        token: str,
        terms: list[str],
        columns: str,
        counts: _TermCounts,
    ) -> tuple[list[str], bool]:
        """The terms to score and whether to score only the most recent matches (see __init__); `counts` caches
        the match counts (capped, as `_count_matches` returns them) across queries."""

        def count(term: str | None, cap: int) -> int:
            key = (fts, columns, cap, term)
            found = counts.get(key)
            if found is None:
                match = f'ns_token : "{token}"' if term is None else _fts_match(token, [term], columns)
                found = counts[key] = self._count_matches(conn, fts, match, cap)
            return found

        budget = self.scored_matches_budget
        if count(None, budget) <= budget:
            return terms, False  # a namespace this small is cheap to score whole
        cap = self.common_term_matches
        counted = sorted((n, position, term) for position, term in enumerate(terms) if (n := count(term, cap)))
        if not counted:
            return [], False
        if counted[0][0] > cap:
            return [counted[0][2]], True
        scored: list[str] = []
        total = 0
        for n, _, term in counted:
            if n > cap or (scored and total + n > budget):
                break
            scored.append(term)
            total += n
        return scored, False

    # vector search

    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]:
        """Exact cosine against every vector of the namespace that passes the filter; best first."""
        if limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.db.dim:
            raise InvalidInput(f"vector: expected dimension {self.db.dim}, got {query.shape[0]}", field="vector")
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            return []
        query = query / norm
        found: list[Candidate] = []
        for layer, cache, mask in self._searchable_caches(namespace, flt):
            found.extend(Candidate(memory_id, layer, score) for score, memory_id in cache.search(query, mask, limit))
        found.sort(key=lambda c: c.score, reverse=True)
        return found[:limit]

    def vector_search_many(
        self, namespace: str, vectors: np.ndarray, flt: MemoryFilter, limit: int
    ) -> list[list[Candidate]]:
        """`vector_search` for each row of `vectors` in one pass over the namespace (the write path's dedup check
        of a whole batch: one matrix product instead of one scan per item)."""
        queries = np.asarray(vectors, dtype=np.float32).reshape(-1, self.db.dim)
        results: list[list[Candidate]] = [[] for _ in range(queries.shape[0])]
        if limit <= 0 or queries.shape[0] == 0:
            return results
        queries = _normalised_rows(queries)
        for layer, cache, mask in self._searchable_caches(namespace, flt):
            per_query = cache.search_many(queries, mask, limit)
            for found, hits in zip(results, per_query, strict=True):
                found.extend(Candidate(memory_id, layer, score) for score, memory_id in hits)
        for found in results:
            found.sort(key=lambda c: c.score, reverse=True)
            del found[limit:]
        return results

    def _searchable_caches(
        self, namespace: str, flt: MemoryFilter
    ) -> Iterator[tuple[StoredLayer, _VectorCache, np.ndarray]]:
        """Each layer the filter can match, with its (current) vector cache and the filter's row mask; the cache
        stays locked while the caller searches it, until the next layer is asked for."""
        generation = self._generation(namespace)
        for layer in _unique_layers(flt.layers):
            if flt.ids is not None and not flt.ids:
                continue
            tagged = self._tagged_refs(namespace, layer, flt.tags) if flt.tags else None
            cache = self._cache(namespace, layer, generation)
            with cache.lock:
                yield layer, cache, cache.mask(flt, tagged)

    def _generation(self, namespace: str) -> int:
        row = (
            self.db.connection()
            .execute("SELECT generation FROM namespace_state WHERE namespace = ?", (namespace,))
            .fetchone()
        )
        return 0 if row is None else int(row[0])

    def _tagged_refs(self, namespace: str, layer: StoredLayer, tags: Sequence[str]) -> np.ndarray:
        rows = (
            self.db.connection()
            .execute(
                "SELECT DISTINCT ref FROM memory_tags WHERE namespace = ? AND layer = ? "
                "AND tag IN (SELECT value FROM json_each(?))",
                (namespace, layer, _json_list(tags)),
            )
            .fetchall()
        )
        return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))

    def _cache(self, namespace: str, layer: StoredLayer, generation: int) -> _VectorCache:
        key = (namespace, layer)
        with self._lock:
            cache = self._caches.get(key)
            if cache is not None and cache.generation >= generation:
                self._caches.move_to_end(key)
                return cache
            cache = self._load(namespace, layer)
            self._caches.pop(key, None)
            if cache.size <= self.max_cached_vectors:
                self._caches[key] = cache
                self._evict(keep=key)
            # else: larger than the whole budget; used for this search and dropped.
            return cache

    def _load(self, namespace: str, layer: StoredLayer) -> _VectorCache:
        with self.db.snapshot() as conn:
            row = conn.execute("SELECT generation FROM namespace_state WHERE namespace = ?", (namespace,)).fetchone()
            generation = 0 if row is None else int(row[0])
            rows = conn.execute(_CACHE_QUERY[layer], (namespace,)).fetchall()
        cache = _VectorCache(layer, self.db.dim, generation, capacity=len(rows))
        cache.load(rows)
        return cache

    def _evict(self, keep: tuple[str, str]) -> None:
        total = sum(cache.size for cache in self._caches.values())
        for key in list(self._caches):
            if total <= self.max_cached_vectors:
                break
            if key == keep:
                continue
            total -= self._caches.pop(key).size

    def cached_vector_count(self) -> int:
        """How many vectors the caches hold now (for tests and the stats page)."""
        with self._lock:
            return sum(cache.size for cache in self._caches.values())

    def _on_applied(self, changes: AppliedChanges) -> None:
        with self._lock:
            for layer in _LAYERS:
                key = (changes.namespace, layer)
                cache = self._caches.get(key)
                if cache is None:
                    continue
                with cache.lock:
                    if cache.generation >= changes.generation_after:
                        continue  # reloaded after the commit: already includes the change
                    if cache.generation != changes.generation_before:
                        del self._caches[key]  # missed another writer's change: reload on next use
                        continue
                    rows = sorted((r for r in changes.upserted if r.layer == layer), key=lambda r: r.ref)
                    if not all(cache.upsert(row) for row in rows):
                        del self._caches[key]
                        continue
                    for deleted_layer, memory_id in changes.deleted:
                        if deleted_layer == layer:
                            cache.delete(memory_id)
                    cache.generation = changes.generation_after
                    # Too many tombstones: a reload compacts them.
                    if cache.dead > max(1024, cache.size // 4):
                        del self._caches[key]
            if self._caches:
                self._evict(keep=next(reversed(self._caches)))
