"""The schema of `<data_dir>/rearview.db`, and the migrations that build it.

- `meta`: schema version, and the embedder name and dimension the stored vectors were made with.
- `working`: working memory, one row per (namespace, session, key), with an absolute expiry.
- `episodes`, `facts`: one row per memory, integer `ref` (rowid, AUTOINCREMENT so refs only grow) plus a
  unique (namespace, id); lists as JSON, datetimes as UTC epoch seconds (REAL), vectors as float32 BLOBs, and
  `search_text`, the analysed text (`text_analysis.index_text`) that FTS5 indexes.
- `fts_episodes`, `fts_facts`: external-content FTS5 tables over (`ns_token`, `search_text`, and for episodes
  `context_text`, the analysed `context`), kept in sync in the writer's transaction: by triggers, except for the
  episodes inserted, which the store indexes with one statement per change set (migration 11). `ns_token` is the
  namespace as one safe token. Each FTS table's `usermerge` is `FTS_USERMERGE` (migration 14): the store merges
  the segments of the tables a change set wrote (`namespace_fts.merge_segments`).
- `memory_tags`, `fact_sources`: tags and fact provenance exploded by triggers (the tags of episodes inserted by
  the store, one statement per change set: migration 13), so "any of these tags" and "facts citing these
  episodes" are index lookups instead of JSON scans.
- `fts_namespaces`: the namespaces whose episodes have a full-text table of their own (`namespace_fts`,
  migration 9), created with its triggers when the namespace grows past a threshold; the shared table's triggers
  skip them.
- `namespace_state`: per-namespace write generation (bumped by every `apply`), last write time, recall
  counters; `recall_days` the recall counters per UTC day (migration 15, for the stats' chart).
- `api_keys`: the key store's table.
- `hindsight_leases`, `hindsight_runs`, `hindsight_spend`, `hindsight_totals`, `hindsight_induced`,
  `hindsight_feedback`: consolidation's ledger (`hindsight_ledger`): the run lease per namespace, the runs, the
  spend per UTC day, and the running totals.
- `memory_versions`: the archived earlier versions of each memory (see `rearview.domain.history`).
- `request_quota`: per-key request counters, one row per key and window (`quota`, migration 10), and the keys'
  own limits (`api_keys.requests_per_minute`).
- `memory_metadata`: the metadata terms of each memory (`rearview.domain.metadata`, migration 15), as
  `memory_tags` holds its tags, so a metadata filter is an index lookup.
- `access_log`: the accesses recalls counted and the memories do not hold yet, a row per recall (migration 17),
  folded into the memories in batches (`access_log`).

`MIGRATIONS[i]` takes the schema from version i to i + 1, each in its own transaction (`SqliteDatabase` runs
them). Append only.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from rearview.errors import ConfigurationError


def script_statements(script: str) -> list[str]:
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


META_DDL = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
# The fewest segments on one level that FTS5's `merge` command merges (its `usermerge` option, default 4): with 2,
# a table keeps about one segment per level (namespace_fts.merge_segments).
FTS_USERMERGE = 2


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
  ns_token, search_text, content='episodes', content_rowid='ref', tokenize='{FTS_TOKENIZER}'
);
CREATE VIRTUAL TABLE fts_facts USING fts5(
  ns_token, search_text, content='facts', content_rowid='ref', tokenize='{FTS_TOKENIZER}'
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

# API keys (rearview.adapters.sqlite.key_store): only a hash of each secret; scope and permissions in the clear.
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
  ns_token, search_text, context_text, content='episodes', content_rowid='ref', tokenize='{FTS_TOKENIZER}'
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

# Scheduled consolidation asks which namespaces hold unconsolidated episodes: a partial index holds just those rows.
_MIGRATION_5 = "CREATE INDEX episodes_unconsolidated ON episodes(namespace) WHERE consolidated = 0;"

# Hindsight: an episode's outcome status and its merged repeats (when the last happened, in which sessions); a
# fact's kind (preference, fact, lesson), facets, evidence, who induced it and when it was first seen. Recall
# filters episodes by outcome and facts by kind.
_MIGRATION_6 = """
ALTER TABLE episodes ADD COLUMN outcome_status TEXT;
ALTER TABLE episodes ADD COLUMN last_occurred_at REAL;
ALTER TABLE episodes ADD COLUMN session_ids_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE facts ADD COLUMN kind TEXT NOT NULL DEFAULT 'fact';
ALTER TABLE facts ADD COLUMN facets_json TEXT NOT NULL DEFAULT '{}';
ALTER TABLE facts ADD COLUMN evidence_json TEXT;
ALTER TABLE facts ADD COLUMN induced_by TEXT;
ALTER TABLE facts ADD COLUMN first_seen_at REAL;
CREATE INDEX episodes_by_outcome ON episodes(namespace, outcome_status) WHERE outcome_status IS NOT NULL;
CREATE INDEX facts_by_kind ON facts(namespace, kind, status);
"""

# Hindsight II: consolidation's ledger. A lease per namespace (never two runs at once), each run as JSON (read back
# whole, so a field added to ConsolidationRun needs no migration), the spend per UTC day (`YYYY-MM-DD`), and the
# running totals, with the counts by kind in rows of their own so that any kind of memory can be counted.
_MIGRATION_7 = """
CREATE TABLE hindsight_leases (
  namespace TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  lease_until REAL NOT NULL
) WITHOUT ROWID;

CREATE TABLE hindsight_runs (
  namespace TEXT NOT NULL,
  run_id TEXT NOT NULL,
  started_at REAL NOT NULL,
  run_json TEXT NOT NULL,
  PRIMARY KEY (namespace, run_id)
) WITHOUT ROWID;
CREATE INDEX hindsight_runs_by_time ON hindsight_runs(namespace, started_at);

CREATE TABLE hindsight_spend (
  namespace TEXT NOT NULL,
  day TEXT NOT NULL,
  runs INTEGER NOT NULL DEFAULT 0,
  clusters INTEGER NOT NULL DEFAULT 0,
  tokens INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, day)
) WITHOUT ROWID;

CREATE TABLE hindsight_totals (
  namespace TEXT PRIMARY KEY,
  runs INTEGER NOT NULL DEFAULT 0,
  runs_failed INTEGER NOT NULL DEFAULT 0,
  tokens INTEGER NOT NULL DEFAULT 0,
  last_run_at REAL,
  last_run_reason TEXT
) WITHOUT ROWID;

CREATE TABLE hindsight_induced (
  namespace TEXT NOT NULL,
  kind TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, kind)
) WITHOUT ROWID;

CREATE TABLE hindsight_feedback (
  namespace TEXT NOT NULL,
  kind TEXT NOT NULL,
  useful INTEGER NOT NULL DEFAULT 0,
  not_useful INTEGER NOT NULL DEFAULT 0,
  wrong INTEGER NOT NULL DEFAULT 0,
  adopted INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, kind)
) WITHOUT ROWID;
"""

# Memory management: the archived earlier versions of each memory (an `ArchivedVersion` as JSON, read back whole),
# and the facts a fact superseded, for a memory's history.
_MIGRATION_8 = """
CREATE TABLE memory_versions (
  namespace TEXT NOT NULL,
  memory_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  archive_json TEXT NOT NULL,
  PRIMARY KEY (namespace, memory_id, version)
) WITHOUT ROWID;
CREATE INDEX facts_by_superseded_by ON facts(namespace, superseded_by) WHERE superseded_by IS NOT NULL;
"""

# Keyword search that reads one namespace (adapters.sqlite.namespace_fts): `fts_namespaces` registers the namespaces
# whose episodes have a full-text table of their own, and the shared table's triggers skip those. The tag triggers
# are split from the full-text ones, and skip the (common) episodes without tags.
_SHARED_EPISODES = "NOT EXISTS (SELECT 1 FROM fts_namespaces WHERE namespace = {row}.namespace)"
_MIGRATION_9 = f"""
CREATE TABLE fts_namespaces (namespace TEXT PRIMARY KEY, fts TEXT NOT NULL) WITHOUT ROWID;
DROP TRIGGER episodes_ai;
DROP TRIGGER episodes_ad;
DROP TRIGGER episodes_au_text;
CREATE TRIGGER episodes_ai AFTER INSERT ON episodes WHEN new.tags_json <> '[]' BEGIN
  INSERT OR IGNORE INTO memory_tags(namespace, tag, layer, ref)
    SELECT new.namespace, value, 'episodic', new.ref FROM json_each(new.tags_json);
END;
CREATE TRIGGER episodes_ad AFTER DELETE ON episodes WHEN old.tags_json <> '[]' BEGIN
  DELETE FROM memory_tags WHERE namespace = old.namespace AND layer = 'episodic' AND ref = old.ref
    AND tag IN (SELECT value FROM json_each(old.tags_json));
END;
CREATE TRIGGER episodes_fts_ai AFTER INSERT ON episodes WHEN {_SHARED_EPISODES.format(row="new")} BEGIN
  INSERT INTO fts_episodes(rowid, ns_token, search_text, context_text)
    VALUES (new.ref, new.ns_token, new.search_text, new.context_text);
END;
CREATE TRIGGER episodes_fts_ad AFTER DELETE ON episodes WHEN {_SHARED_EPISODES.format(row="old")} BEGIN
  INSERT INTO fts_episodes(fts_episodes, rowid, ns_token, search_text, context_text)
    VALUES ('delete', old.ref, old.ns_token, old.search_text, old.context_text);
END;
CREATE TRIGGER episodes_fts_au AFTER UPDATE OF search_text, context_text ON episodes
WHEN (old.search_text IS NOT new.search_text OR old.context_text IS NOT new.context_text)
  AND {_SHARED_EPISODES.format(row="new")} BEGIN
  INSERT INTO fts_episodes(fts_episodes, rowid, ns_token, search_text, context_text)
    VALUES ('delete', old.ref, old.ns_token, old.search_text, old.context_text);
  INSERT INTO fts_episodes(rowid, ns_token, search_text, context_text)
    VALUES (new.ref, new.ns_token, new.search_text, new.context_text);
END;
"""

# Per-key throttling: each key's own limit, and a counter per key and UTC minute (dropped an hour after it ends).
_MIGRATION_10 = """
ALTER TABLE api_keys ADD COLUMN requests_per_minute INTEGER;
CREATE TABLE request_quota (
  key_id TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (key_id, window_start)
) WITHOUT ROWID;
"""


def _migration_11(conn: sqlite3.Connection) -> None:
    """Episodes inserted are indexed by the store (`namespace_fts.index_inserted`: one `INSERT ... SELECT` per
    change set), not by a trigger per row: FTS5 flushes its pending terms at every statement a trigger runs, so a
    row inserted through the trigger cost about five times what the same row costs inserted with its change set
    (bench/RESULTS.md, "Bulk load"). The insert triggers of the shared table and of every namespace's own table go;
    the update and delete triggers stay."""
    conn.execute("DROP TRIGGER episodes_fts_ai")
    for (table,) in conn.execute("SELECT fts FROM fts_namespaces").fetchall():
        if not _OWN_FTS_TABLE.fullmatch(table):
            raise ConfigurationError(f"fts_namespaces names an unexpected table {table!r}")
        conn.execute(f"DROP TRIGGER IF EXISTS {table}_ai")


_OWN_FTS_TABLE = re.compile(r"fts_ep_ns[0-9a-f]{32}")

# Two indexes no query uses: every query that filters episodes by session or event type orders by time with a
# limit (list_memories, the management pages) or reads rows by ref (keyword search), and SQLite's planner takes
# (namespace, occurred_at) for those, with or without these two (no ANALYZE statistics are kept); the vector caches
# filter in memory. Each cost every insert an index entry (bench/RESULTS.md, "Bulk load"). Query plans before and
# after: tests/unit/test_sqlite_migrations.py.
_MIGRATION_12 = """
DROP INDEX episodes_by_session;
DROP INDEX episodes_by_event_type;
"""

# Tags of the episodes inserted are written by the store, one statement per change set (`SqliteMemoryStore._insert`),
# not by an insert trigger: SQLite runs an AFTER INSERT trigger's program at every row inserted, even when its WHEN
# is false (most episodes have no tags), and that cost half again the insert with its indexes (bench/RESULTS.md,
# "Bulk load"). The update and delete triggers of the tags stay.
_MIGRATION_13 = "DROP TRIGGER episodes_ai;"


def _migration_14(conn: sqlite3.Connection) -> None:
    """Every full-text table (the shared two and each namespace's own) merges any level of two segments or more
    when the store asks it to after a change set (`namespace_fts.merge_segments`): its `usermerge` option, kept in
    the table's config. Existing segments are merged by the change sets that follow, a bounded step each."""
    own = [table for (table,) in conn.execute("SELECT fts FROM fts_namespaces").fetchall()]
    for table in ("fts_episodes", "fts_facts", *own):
        if not _OWN_FTS_TABLE.fullmatch(table) and table not in ("fts_episodes", "fts_facts"):
            raise ConfigurationError(f"fts_namespaces names an unexpected table {table!r}")
        set_usermerge(conn, table)


def set_usermerge(conn: sqlite3.Connection, table: str) -> None:
    """Store `FTS_USERMERGE` in the table's config: the fewest segments on a level that `merge_segments` merges."""
    conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('usermerge', ?)", (FTS_USERMERGE,))


# What agents send with a memory (issue 37): its metadata (the JSON as given, and the terms a filter matches,
# `rearview.domain.metadata`), where it came from, when it expires, a fact's entities, and an episode's place among
# the chunks of a long text. `memory_metadata` holds the terms as `memory_tags` holds the tags: written by the store
# for the episodes it inserts (one statement per change set, as their tags), by triggers otherwise. The expiring
# rows (few) are indexed apart, for the sweep that deletes them and for the searches that leave them out.
_AGENT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("episodes", "metadata_json", "TEXT NOT NULL DEFAULT '{}'"),
    ("episodes", "metadata_terms", "TEXT NOT NULL DEFAULT '[]'"),
    ("episodes", "source", "TEXT"),
    ("episodes", "expires_at", "REAL"),
    ("episodes", "parent_id", "TEXT"),
    ("episodes", "chunk_index", "INTEGER"),
    ("episodes", "chunk_count", "INTEGER"),
    ("facts", "metadata_json", "TEXT NOT NULL DEFAULT '{}'"),
    ("facts", "metadata_terms", "TEXT NOT NULL DEFAULT '[]'"),
    ("facts", "source", "TEXT"),
    ("facts", "expires_at", "REAL"),
    ("facts", "entities_json", "TEXT NOT NULL DEFAULT '[]'"),
)


def _metadata_triggers(table: str, layer: str, *, on_insert: bool) -> str:
    inserted = f"""
CREATE TRIGGER IF NOT EXISTS {table}_metadata_ai AFTER INSERT ON {table} WHEN new.metadata_terms <> '[]' BEGIN
  INSERT OR IGNORE INTO memory_metadata(namespace, term, layer, ref)
    SELECT new.namespace, value, '{layer}', new.ref FROM json_each(new.metadata_terms);
END;"""
    return (
        (inserted if on_insert else "")
        + f"""
CREATE TRIGGER IF NOT EXISTS {table}_metadata_ad AFTER DELETE ON {table} WHEN old.metadata_terms <> '[]' BEGIN
  DELETE FROM memory_metadata WHERE namespace = old.namespace AND layer = '{layer}' AND ref = old.ref;
END;
CREATE TRIGGER IF NOT EXISTS {table}_metadata_au AFTER UPDATE OF metadata_terms ON {table}
WHEN old.metadata_terms IS NOT new.metadata_terms BEGIN
  DELETE FROM memory_metadata WHERE namespace = old.namespace AND layer = '{layer}' AND ref = old.ref;
  INSERT OR IGNORE INTO memory_metadata(namespace, term, layer, ref)
    SELECT new.namespace, value, '{layer}', new.ref FROM json_each(new.metadata_terms);
END;"""
    )


_AGENT_TABLES = f"""
CREATE TABLE IF NOT EXISTS memory_metadata (
  namespace TEXT NOT NULL,
  term TEXT NOT NULL,
  layer TEXT NOT NULL,
  ref INTEGER NOT NULL,
  PRIMARY KEY (namespace, term, layer, ref)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS episodes_expiring ON episodes(namespace, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS facts_expiring ON facts(namespace, expires_at) WHERE expires_at IS NOT NULL;
{_metadata_triggers("episodes", "episodic", on_insert=False)}
{_metadata_triggers("facts", "semantic", on_insert=True)}
"""


def add_agent_fields(conn: sqlite3.Connection) -> None:
    """Migration 15, what agents send with a memory (issue 37): its metadata (the JSON as given, and the terms a
    filter matches, `rearview.domain.metadata`), where it came from, when it expires, a fact's entities, and an
    episode's place among the chunks of a long text. `memory_metadata` holds the terms as `memory_tags` holds the
    tags: written by the store for the episodes it inserts (one statement per change set, as their tags), by
    triggers otherwise. The expiring rows (few) are indexed apart, for the sweep that deletes them and for the
    searches that leave them out. Idempotent (a column or object already there is kept): a test that writes an
    older schema through today's store gives it these first."""
    for table, column, declaration in _AGENT_COLUMNS:
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    for statement in script_statements(_AGENT_TABLES):
        conn.execute(statement)


# Recall counters per namespace and UTC day (`YYYY-MM-DD`), written in the same transaction as the totals in
# `namespace_state`; days older than the retention go as recalls come (`management.record_recall`).
_MIGRATION_16 = """
CREATE TABLE recall_days (
  namespace TEXT NOT NULL,
  day TEXT NOT NULL,
  recalls INTEGER NOT NULL DEFAULT 0,
  hits INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, day)
) WITHOUT ROWID;
"""

# Accesses counted apart from the memories until they are folded into them (`access_log`): one row per recall.
_MIGRATION_17 = """
CREATE TABLE access_log (
  seq INTEGER PRIMARY KEY,
  namespace TEXT NOT NULL,
  at REAL NOT NULL,
  ids_json TEXT NOT NULL
);
CREATE INDEX access_log_by_namespace ON access_log(namespace);
"""

# A migration is a script of statements, or (when what it changes is named by the data, as each namespace's own
# full-text table is) a function of the connection; either runs inside the migration's transaction.
Migration = str | Callable[[sqlite3.Connection], None]

MIGRATIONS: tuple[Migration, ...] = (
    _MIGRATION_1,
    _MIGRATION_2,
    _MIGRATION_3,
    _MIGRATION_4,
    _MIGRATION_5,
    _MIGRATION_6,
    _MIGRATION_7,
    _MIGRATION_8,
    _MIGRATION_9,
    _MIGRATION_10,
    _migration_11,
    _MIGRATION_12,
    _MIGRATION_13,
    _migration_14,
    add_agent_fields,
    _MIGRATION_16,
    _MIGRATION_17,
)
SCHEMA_VERSION = len(MIGRATIONS)
# From this schema version on, the store indexes the episodes it inserts (migration 11).
STORE_INDEXES_INSERTS = 11
# From this schema version on, the store writes the tags of the episodes it inserts (migration 13).
STORE_TAGS_INSERTS = 13
# From this one on, every full-text table has its `usermerge` and the store merges their segments (migration 14).
FTS_MERGED = 14
# From this one on, memories carry metadata, source and expiry, and the store writes the metadata terms of the
# episodes it inserts (migration 15).
AGENT_FIELDS = 15
# From this one on, recalls log their accesses and the store folds them into the memories (migration 17).
ACCESS_LOG = 17
