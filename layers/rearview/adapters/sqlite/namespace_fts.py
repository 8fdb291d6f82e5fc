"""Keyword search that reads one namespace's postings: a large namespace's episodes get a full-text table of their
own; the others share `fts_episodes` (and every namespace's facts share `fts_facts`).

In the shared table a query ANDs the namespace's token into its match, so FTS5 walks every namespace's postings of
each term and of the token (and bm25() reads each term's whole doclist for its IDF): at 1M episodes a ranked query
costs twice what it costs over a table holding one namespace. A table per namespace for all of them would put
10,000 namespaces' 60,000 shadow tables into the schema every connection parses, so only namespaces of at least
`own_fts_episodes` episodes get one (`promote`, run by the store after a write that crosses the threshold): there
are at most total / threshold of them. Their rows leave the shared table in the same transaction, and triggers
(one set per such namespace, each guarded by `WHEN namespace = ...`) keep the table in step from then on, in the
writer's transaction, as the shared table's triggers do for the rest (those now skip the registered namespaces).
Episodes inserted are not indexed by a trigger but by the store, one statement per change set (`index_inserted`,
schema migration 11): a trigger makes FTS5 flush its pending terms at every row.
An own table's BM25 statistics (IDF, average length) are its namespace's own.

Every statement that writes to an FTS5 table leaves a segment (a b-tree of its terms), and a query walks every
segment for every term. FTS5's own automerge paces its work by pages written (64 at a time), so small change sets
(a write path's hundred episodes, about three pages) pile up to 16 segments before a merge. The store therefore
merges each table it wrote after every change set (`merge_segments`, in the change set's transaction): FTS5's
`merge` command, at most `MERGE_PAGES` pages of output a call, merging any level that holds `FTS_USERMERGE` (2)
segments: a log-structured merge that keeps about one segment per level (bench/RESULTS.md, "Bulk load").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rearview.adapters.sqlite.connection import stored_schema_version
from rearview.adapters.sqlite.rows import TABLE, namespace_token
from rearview.adapters.sqlite.schema import FTS_TOKENIZER, STORE_INDEXES_INSERTS, set_usermerge

SHARED = {"episodic": "fts_episodes", "semantic": "fts_facts"}
# A merge after each change set: at most this many pages written (a 100-episode change set writes about 3; a merge
# in progress goes on at the next change set), of any level holding at least `FTS_USERMERGE` segments (FTS5's
# `usermerge` option, stored in each table's config: schema migration 14 and `promote`; FTS5's default is 4).
# Merging costs by the pages it writes, and small segments are what pile up: 16 pages merge a 1,000-episode table
# to 2 segments, while merging two large segments of a 100k table (left by a bulk load) goes on a step per change
# set. 64 pages cost a 100-episode change set into a 100k namespace ~10 ms under load, 16 pages ~4 (~5% of it).
MERGE_PAGES = 16
_SHARED_TABLES = frozenset(SHARED.values())


def quoted_terms(terms: Sequence[str]) -> str:
    """Each term a quoted FTS5 string (so no operator syntax), ORed."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


@dataclass(frozen=True)
class FtsTable:
    """Where a namespace's memories of one layer are indexed, and how a query names them there."""

    name: str
    # The namespace's token, ANDed into every match of a shared table; None for a namespace's own table.
    token: str | None

    @property
    def shared(self) -> bool:
        """A shared table (with the leading ns_token column), which `unrestricted` matches without the token."""
        return self.name in _SHARED_TABLES

    def match(self, terms: Sequence[str], columns: str) -> str:
        """Any of the terms in `columns`, within the namespace."""
        matched = f"{columns} : ({quoted_terms(terms)})"
        return matched if self.token is None else f'ns_token : "{self.token}" AND {matched}'

    def weights(self, layer: str, context_weight: float) -> str:
        """bm25()'s column weights: the shared tables' leading ns_token column counts for nothing."""
        own = "1.0, " + str(float(context_weight)) if layer == "episodic" else "1.0"
        return "0.0, " + own if self.shared else own

    def unrestricted(self) -> FtsTable:
        """The same table matched without the namespace's token: for a namespace that holds every row of a shared
        table (`alone_in`), where the token restricts nothing but still costs a pass over its whole doclist (bm25()
        weighs every phrase of the match). The scores are the same: the token's phrase, in a column weighted 0.0,
        adds exactly 0.0 to each, and the other terms' statistics are the table's either way."""
        return replace(self, token=None)


def own_table_name(namespace: str) -> str:
    return "fts_ep_" + namespace_token(namespace)


def fts_table(conn: sqlite3.Connection, layer: str, namespace: str) -> FtsTable:
    """The table that indexes the namespace's memories of `layer`."""
    if layer == "episodic":
        row = conn.execute("SELECT fts FROM fts_namespaces WHERE namespace = ?", (namespace,)).fetchone()
        if row is not None:
            return FtsTable(str(row[0]), None)
    return FtsTable(SHARED[layer], namespace_token(namespace))


def alone_in(conn: sqlite3.Connection, layer: str, namespace: str) -> bool:
    """True if no other namespace has a memory of `layer` in the shared table: a store of one namespace (and any
    with their own tables). Index seeks, both neighbouring namespaces in one statement, skipping those with an
    own table (at most total / own_fts_episodes of them), read only once a neighbour is found: a store of one
    namespace, the case this serves on every keyword search, has none."""
    table = TABLE[layer]
    neighbours = (
        f"SELECT (SELECT namespace FROM {table} WHERE namespace > ? ORDER BY namespace ASC LIMIT 1), "
        f"(SELECT namespace FROM {table} WHERE namespace < ? ORDER BY namespace DESC LIMIT 1)"
    )
    own: set[str] | None = None
    bounds = [namespace, namespace]  # above, below: the nearest namespaces not yet passed by
    while True:
        found = conn.execute(neighbours, bounds).fetchone()
        if found[0] is None and found[1] is None:
            return True
        if layer != "episodic":
            return False
        if own is None:
            own = {str(name) for (name,) in conn.execute("SELECT namespace FROM fts_namespaces")}
        for side, neighbour in enumerate(found):
            if neighbour is not None:
                if neighbour not in own:
                    return False
                bounds[side] = neighbour


def store_indexes_inserts(conn: sqlite3.Connection) -> bool:
    """Whether the store indexes the episodes it inserts (`index_inserted`, from schema version
    `STORE_INDEXES_INSERTS` on); before that, triggers do."""
    return stored_schema_version(conn) >= STORE_INDEXES_INSERTS


def index_inserted(conn: sqlite3.Connection, namespace: str, refs: range) -> None:
    """Index the namespace's episodes just inserted (`refs`, in the caller's write transaction) in its full-text
    table: one statement for the change set. Through a trigger, FTS5 flushed its pending terms at every row."""
    if not refs:
        return
    conn.execute(inserted_rows_statement(fts_table(conn, "episodic", namespace)), (refs[0], refs[-1], namespace))


def inserted_rows_statement(table: FtsTable) -> str:
    """The statement `index_inserted` runs: the episodes of refs ?1..?2 of namespace ?3 into `table`.

    `+namespace` keeps SQLite from reading the rows through the namespace's index (an equality, which it prefers
    to the range of refs): that walked every episode of the namespace, 0.120 ms a write against 0.009 at 100,000
    (`bench/write_profile.py --size 100000`, its full-text insert). The refs are the change set's own, so the
    range holds only them."""
    columns = "ns_token, search_text, context_text" if table.shared else "search_text, context_text"
    return (
        f"INSERT INTO {table.name}(rowid, {columns}) SELECT ref, {columns} FROM episodes "
        "WHERE ref BETWEEN ? AND ? AND +namespace = ?"
    )


def merge_segments(conn: sqlite3.Connection, table: str) -> None:
    """Merge the table's segments, at most `MERGE_PAGES` pages of output, where a level holds `FTS_USERMERGE` or more
    (nothing to do costs one read of the table's structure record)."""
    conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)", (MERGE_PAGES,))


def _own_table_ddl(namespace: str, table: str, index_inserts: bool) -> list[str]:
    literal = "'" + namespace.replace("'", "''") + "'"
    delete_old = (
        f"INSERT INTO {table}({table}, rowid, search_text, context_text) "
        "VALUES ('delete', old.ref, old.search_text, old.context_text);"
    )
    insert_new = (
        f"INSERT INTO {table}(rowid, search_text, context_text) VALUES (new.ref, new.search_text, new.context_text);"
    )
    inserts = (
        f"CREATE TRIGGER {table}_ai AFTER INSERT ON episodes WHEN new.namespace = {literal} BEGIN {insert_new} END"
    )
    return [
        f"CREATE VIRTUAL TABLE {table} USING fts5(search_text, context_text, content='episodes', "
        f"content_rowid='ref', tokenize='{FTS_TOKENIZER}')",
        *([inserts] if index_inserts else []),
        f"CREATE TRIGGER {table}_ad AFTER DELETE ON episodes WHEN old.namespace = {literal} BEGIN {delete_old} END",
        f"CREATE TRIGGER {table}_au AFTER UPDATE OF search_text, context_text ON episodes "
        f"WHEN new.namespace = {literal} AND (old.search_text IS NOT new.search_text "
        f"OR old.context_text IS NOT new.context_text) BEGIN {delete_old} {insert_new} END",
    ]


def promote(conn: sqlite3.Connection, namespace: str) -> str:
    """Give the namespace's episodes a full-text table of their own, moving them out of the shared one (inside the
    caller's write transaction). Idempotent: the table's name."""
    found = fts_table(conn, "episodic", namespace)
    if found.token is None:
        return found.name
    table = own_table_name(namespace)
    for statement in _own_table_ddl(namespace, table, index_inserts=not store_indexes_inserts(conn)):
        conn.execute(statement)
    set_usermerge(conn, table)
    conn.execute(
        f"INSERT INTO {table}(rowid, search_text, context_text) "
        "SELECT ref, search_text, context_text FROM episodes WHERE namespace = ?",
        (namespace,),
    )
    if alone_in(conn, "episodic", namespace):
        # Every row of the shared table is this namespace's (a store of one namespace, say): FTS5 empties the
        # table at once, instead of deleting its rows one by one.
        conn.execute("INSERT INTO fts_episodes(fts_episodes) VALUES ('delete-all')")
    else:
        conn.execute(
            "INSERT INTO fts_episodes(fts_episodes, rowid, ns_token, search_text, context_text) "
            "SELECT 'delete', ref, ns_token, search_text, context_text FROM episodes WHERE namespace = ?",
            (namespace,),
        )
    conn.execute("INSERT INTO fts_namespaces(namespace, fts) VALUES (?, ?)", (namespace, table))
    return table


def episodes_at_least(conn: sqlite3.Connection, namespace: str, count: int) -> bool:
    """True if the namespace holds at least `count` episodes (counting no further)."""
    (found,) = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM episodes WHERE namespace = ? LIMIT ?)", (namespace, count)
    ).fetchone()
    return int(found) >= count
