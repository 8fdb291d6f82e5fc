"""Keyword search that reads one namespace: a large namespace's episodes move to a full-text table of their own
(SQLite backend), which stays in step with every write, never sees another namespace, and survives migration."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import MIGRATIONS, Migration, SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
from rearview.adapters.sqlite.namespace_fts import own_table_name
from rearview.adapters.sqlite.schema import FTS_TOKENIZER
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact
from rearview.domain.search import MemoryFilter
from support.old_schemas import give_todays_columns

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=32)
TOPICS = ("violin lesson", "garden tomatoes", "flight to Lisbon", "tax refund", "chess club", "marathon training")


def _db(path: Path, migrations: tuple[Migration, ...] = MIGRATIONS) -> SqliteDatabase:
    return SqliteDatabase(path, embedder_name=EMBEDDER.name, dim=EMBEDDER.dim, migrations=migrations)


def _episodes(namespace: str, count: int, start: int = 0) -> list[Episode]:
    return [
        Episode(
            id=f"{namespace}-{i}",
            namespace=namespace,
            content=f"{TOPICS[i % len(TOPICS)]} number {i}",
            context=f"asked about {TOPICS[(i + 1) % len(TOPICS)]}",
            tags=["weekly"] if i % 5 == 0 else [],
            occurred_at=T0 + timedelta(minutes=i),
            created_at=T0,
        )
        for i in range(start, start + count)
    ]


def _write(store: SqliteMemoryStore, namespace: str, episodes: list[Episode]) -> None:
    store.apply(namespace, ChangeSet(upserts=[(e, EMBEDDER.embed([e.content])[0]) for e in episodes]))


def _found(index: SqliteSearchIndex, namespace: str, text: str, flt: MemoryFilter | None = None) -> set[str]:
    return {c.id for c in index.keyword_search(namespace, text, flt or MemoryFilter(), 1000, context_weight=0.4)}


def _holding(word: str, episodes: list[Episode]) -> set[str]:
    """The episodes whose text or context holds the word."""
    return {e.id for e in episodes if word in f"{e.content} {e.context}".lower()}


def _own_tables(db: SqliteDatabase) -> dict[str, str]:
    return dict(db.connection().execute("SELECT namespace, fts FROM fts_namespaces").fetchall())


def test_a_namespace_past_the_threshold_gets_its_own_table_and_finds_what_it_found_before(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store, index = SqliteMemoryStore(db, own_fts_episodes=50), SqliteSearchIndex(db)
        _write(store, "small", _episodes("small", 30))
        _write(store, "big", _episodes("big", 40))
        before = {q: _found(index, "big", q) for q in ("violin", "tomatoes lisbon", "refund", "weekly", "chess")}
        assert _own_tables(db) == {}

        _write(store, "big", _episodes("big", 1000, start=40))  # a bulk change set: checked at once

        assert _own_tables(db) == {"big": own_table_name("big")}
        for query, ids in before.items():
            assert ids <= _found(index, "big", query)
        assert _found(index, "big", "violin") == _holding("violin", _episodes("big", 1040))
        assert _found(index, "big", "number 7") >= {"big-7"}
        # Filters still apply, and the context column still counts at its weight.
        early = MemoryFilter(until=T0 + timedelta(minutes=13))
        assert _found(index, "big", "violin", early) == {"big-0", "big-5", "big-6", "big-11", "big-12"}
        assert "big-5" in _found(index, "big", "violin")  # only its context says violin
        # The shared table no longer holds the big namespace; the small one is as it was.
        shared = (
            db.connection().execute("SELECT count(*) FROM fts_episodes WHERE fts_episodes MATCH 'violin'").fetchone()[0]
        )
        assert shared == len(_holding("violin", _episodes("small", 30)))
        assert _found(index, "small", "violin") == _holding("violin", _episodes("small", 30))


def test_an_own_table_follows_inserts_updates_and_deletes(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store, index = SqliteMemoryStore(db, own_fts_episodes=20), SqliteSearchIndex(db)
        _write(store, "acme", _episodes("acme", 1000))
        assert "acme" in _own_tables(db)

        edited = store.get("acme", "acme-0")
        assert isinstance(edited, Episode)
        store.apply(
            "acme",
            ChangeSet(
                upserts=[(edited.model_copy(update={"content": "a harp recital", "version": 2}), None)],
                deletes=["acme-6"],
            ),
        )
        _write(
            store, "acme", [Episode(id="late", namespace="acme", content="harp strings", occurred_at=T0, created_at=T0)]
        )

        assert _found(index, "acme", "harp") == {"acme-0", "late"}
        violin = _found(index, "acme", "violin")
        assert violin == _holding("violin", _episodes("acme", 1000)) - {"acme-0", "acme-6"}
        # Facts stay in the shared facts table.
        fact = Fact(id="f", namespace="acme", content="the harp is tuned", created_at=T0, last_confirmed_at=T0)
        store.apply("acme", ChangeSet(upserts=[(fact, None)]))
        assert _found(index, "acme", "harp") == {"acme-0", "late", "f"}


def test_namespaces_with_their_own_tables_never_see_each_other(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store, index = SqliteMemoryStore(db, own_fts_episodes=100), SqliteSearchIndex(db)
        for namespace in ("acme", "umbrella", "small"):
            _write(store, namespace, _episodes(namespace, 1000 if namespace != "small" else 10))
        assert set(_own_tables(db)) == {"acme", "umbrella"}
        # A namespace whose name would break a quoted SQL literal is kept apart as well.
        _write(store, "o'brien", _episodes("o'brien", 1000))
        assert set(_own_tables(db)) == {"acme", "umbrella", "o'brien"}

        for namespace in ("acme", "umbrella", "small", "o'brien"):
            for query in ("violin", "marathon weekly", "number 3"):
                found = _found(index, namespace, query)
                assert found and all(i.startswith(f"{namespace}-") for i in found)
        store.apply("umbrella", ChangeSet(deletes=[f"umbrella-{i}" for i in range(1000)]))
        assert _found(index, "umbrella", "violin") == set()
        assert _found(index, "acme", "violin") == _holding("violin", _episodes("acme", 1000))


def test_migration_9_keeps_an_existing_database_searchable(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    with _db(path, migrations=MIGRATIONS[:8]) as db:  # written before per-namespace full-text tables
        give_todays_columns(db)
        _write(SqliteMemoryStore(db, own_fts_episodes=0), "acme", _episodes("acme", 200))

    with _db(path) as db:
        assert db.schema_version == len(MIGRATIONS)
        store, index = SqliteMemoryStore(db, own_fts_episodes=1000), SqliteSearchIndex(db)
        assert _found(index, "acme", "violin") == _holding("violin", _episodes("acme", 200))
        store.apply("acme", ChangeSet(deletes=["acme-0"]))
        _write(store, "acme", _episodes("acme", 1000, start=200))  # a bulk change set past the threshold

        assert "acme" in _own_tables(db)
        assert _found(index, "acme", "violin") == _holding("violin", _episodes("acme", 1200)) - {"acme-0"}
        tagged = db.connection().execute("SELECT count(*) FROM memory_tags WHERE namespace = 'acme'").fetchone()
        assert tagged[0] == len([i for i in range(1, 1200) if i % 5 == 0])
    with sqlite3.connect(path) as conn:  # the shared table still agrees with the rows it indexes
        conn.execute("INSERT INTO fts_facts(fts_facts, rank) VALUES ('integrity-check', 1)")


def test_a_namespace_growing_by_small_change_sets_gets_its_table_within_sixteen_of_them(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store, index = SqliteMemoryStore(db, own_fts_episodes=100), SqliteSearchIndex(db)
        written: list[Episode] = []
        for batch in range(32):
            episodes = _episodes("acme", 10, start=batch * 10)
            _write(store, "acme", episodes)
            written += episodes
            if len(written) < 100:
                assert _own_tables(db) == {}
        assert "acme" in _own_tables(db)
        assert _found(index, "acme", "violin") == _holding("violin", written)


def test_a_move_made_through_another_connection_is_followed_by_this_one(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    with _db(path) as db, _db(path) as other:  # two objects on one file, as two processes would be
        store, index = SqliteMemoryStore(db, own_fts_episodes=0), SqliteSearchIndex(db)
        _write(store, "acme", _episodes("acme", 50))
        _write(store, "umbrella", _episodes("umbrella", 50))
        assert _found(index, "acme", "violin") == _holding("violin", _episodes("acme", 50))

        _write(SqliteMemoryStore(other, own_fts_episodes=10), "acme", _episodes("acme", 1000, start=50))
        assert "acme" in _own_tables(db)

        # This connection reads the new table, and its writes reach it through the other's triggers.
        assert _found(index, "acme", "violin") == _holding("violin", _episodes("acme", 1050))
        _write(
            store, "acme", [Episode(id="late", namespace="acme", content="violin case", occurred_at=T0, created_at=T0)]
        )
        store.apply("acme", ChangeSet(deletes=["acme-0"]))
        assert _found(index, "acme", "violin") == _holding("violin", _episodes("acme", 1050)) - {"acme-0"} | {"late"}
        assert _found(index, "umbrella", "violin") == _holding("violin", _episodes("umbrella", 50))
        shared = db.connection().execute("SELECT count(*) FROM fts_episodes WHERE fts_episodes MATCH 'violin'")
        assert shared.fetchone()[0] == len(_holding("violin", _episodes("umbrella", 50)))


def _triggers(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}


def _indexed(conn: sqlite3.Connection, schema: str, table: str) -> list[tuple[object, ...]]:
    """Every (term, row, column, offset) a full-text table holds, in order."""
    conn.execute(f"CREATE VIRTUAL TABLE temp.vocab USING fts5vocab({schema}, {table}, 'instance')")
    rows = conn.execute("SELECT term, doc, col, offset FROM temp.vocab ORDER BY 1, 2, 3, 4").fetchall()
    conn.execute("DROP TABLE temp.vocab")
    return rows


def _check_fts(path: Path) -> None:
    """Each episodes' full-text table holds exactly what indexing its rows afresh gives: every row once, no other."""
    with sqlite3.connect(path) as conn:
        own = dict(conn.execute("SELECT namespace, fts FROM fts_namespaces").fetchall())
        tables: dict[str, tuple[str, str, tuple[str, ...]]] = {
            "fts_episodes": (
                "ns_token, search_text, context_text",
                "namespace NOT IN (SELECT namespace FROM fts_namespaces)",
                (),
            )
        }
        for namespace, table in own.items():
            tables[table] = ("search_text, context_text", "namespace = ?", (namespace,))
        for table, (columns, where, params) in tables.items():
            conn.execute(f"CREATE VIRTUAL TABLE temp.fresh USING fts5({columns}, tokenize='{FTS_TOKENIZER}')")
            conn.execute(
                f"INSERT INTO temp.fresh(rowid, {columns}) SELECT ref, {columns} FROM episodes WHERE {where}", params
            )
            assert _indexed(conn, "main", table) == _indexed(conn, "temp", "fresh"), table
            for term in ("violin", "number", "weekly", "lisbon"):  # and the same BM25 statistics (rows, lengths)
                scored = "SELECT rowid, round(bm25({0}), 9) FROM {1} WHERE {0} MATCH ? ORDER BY rowid"
                found = conn.execute(scored.format(table, f"main.{table}"), (term,)).fetchall()
                assert found == conn.execute(scored.format("fresh", "temp.fresh"), (term,)).fetchall(), (table, term)
            conn.execute("DROP TABLE temp.fresh")


def test_migration_11_hands_inserts_to_the_store_and_keeps_every_table_searchable(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    queries = ("violin", "tomatoes lisbon", "weekly", "number 7")
    with _db(path, migrations=MIGRATIONS[:10]) as db:  # the schema before: a trigger indexes each episode inserted
        give_todays_columns(db)
        store, index = SqliteMemoryStore(db, own_fts_episodes=500), SqliteSearchIndex(db)
        _write(store, "acme", _episodes("acme", 600))  # moved to a table of its own
        _write(store, "small", _episodes("small", 40))  # in the shared table
        own = _own_tables(db)["acme"]
        before = {(ns, q): _found(index, ns, q) for ns in ("acme", "small") for q in queries}
    assert {"episodes_fts_ai", f"{own}_ai"} <= _triggers(path)

    with _db(path) as db:
        assert db.schema_version == len(MIGRATIONS)
        triggers = _triggers(path)
        assert "episodes_fts_ai" not in triggers and f"{own}_ai" not in triggers
        assert {"episodes_fts_ad", "episodes_fts_au", f"{own}_ad", f"{own}_au", "episodes_ad"} <= triggers
        store, index = SqliteMemoryStore(db, own_fts_episodes=500), SqliteSearchIndex(db)
        for (namespace, query), ids in before.items():
            assert _found(index, namespace, query) == ids
        _write(store, "acme", _episodes("acme", 60, start=600))
        _write(store, "small", _episodes("small", 60, start=40))
        _write(store, "other", _episodes("other", 30))
        store.apply("acme", ChangeSet(deletes=["acme-1"]))
        assert _found(index, "acme", "violin") == _holding("violin", _episodes("acme", 660)) - {"acme-1"}
        assert _found(index, "small", "violin") == _holding("violin", _episodes("small", 100))
        assert _found(index, "other", "violin") == _holding("violin", _episodes("other", 30))
        assert _found(index, "small", "weekly") == {f"small-{i}" for i in range(0, 100, 5)}  # tags
    _check_fts(path)


def test_a_namespace_moved_after_migration_11_gets_no_insert_trigger_and_misses_no_insert(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    with _db(path) as db:
        store, index = SqliteMemoryStore(db, own_fts_episodes=50), SqliteSearchIndex(db)
        _write(store, "acme", _episodes("acme", 40))
        _write(store, "acme", _episodes("acme", 60, start=40))  # past the threshold: moved
        own = _own_tables(db)["acme"]
        _write(store, "acme", _episodes("acme", 25, start=100))
        _write(store, "umbrella", _episodes("umbrella", 25))
        assert _found(index, "acme", "violin") == _holding("violin", _episodes("acme", 125))
        assert _found(index, "umbrella", "violin") == _holding("violin", _episodes("umbrella", 25))
    assert f"{own}_ai" not in _triggers(path) and f"{own}_ad" in _triggers(path)
    _check_fts(path)


@pytest.mark.parametrize("neighbour", [False, True], ids=["alone", "beside-another"])
def test_a_bulk_change_set_crossing_the_threshold_lands_in_the_namespaces_own_table(
    tmp_path: Path, neighbour: bool
) -> None:
    """The table is made before the insert (so the change set is indexed once, in it); when the namespace was alone
    in the shared table, the shared table is emptied at once, else only its rows leave it."""
    path = tmp_path / "rearview.db"
    with _db(path) as db:
        store, index = SqliteMemoryStore(db, own_fts_episodes=1000), SqliteSearchIndex(db)
        if neighbour:
            _write(store, "small", _episodes("small", 30))
        _write(store, "big", _episodes("big", 600))
        assert _own_tables(db) == {}
        statements: list[str] = []
        db.connection().set_trace_callback(statements.append)
        _write(store, "big", _episodes("big", 1000, start=600))
        db.connection().set_trace_callback(None)
        assert _own_tables(db) == {"big": own_table_name("big")}
        # The change set was indexed in the new table only: nothing of it went into the shared one.
        assert not [s for s in statements if s.startswith("INSERT INTO fts_episodes(rowid")]
        assert [s for s in statements if s.startswith(f"INSERT INTO {own_table_name('big')}(rowid")]
        docs = "SELECT count(*) FROM {}_docsize"
        assert db.connection().execute(docs.format("fts_episodes")).fetchone()[0] == (30 if neighbour else 0)
        assert db.connection().execute(docs.format(own_table_name("big"))).fetchone()[0] == 1600
        assert _found(index, "big", "violin") == _holding("violin", _episodes("big", 1600))
        if neighbour:
            assert _found(index, "small", "violin") == _holding("violin", _episodes("small", 30))
    _check_fts(path)


@pytest.mark.parametrize("own_table", [False, True])
def test_what_a_change_set_inserted_is_read_by_its_refs_not_by_the_namespaces_index(
    tmp_path: Path, own_table: bool
) -> None:
    """Indexing the episodes a change set inserted (their text, tags and metadata terms) reads the range of their
    refs: read through the namespace's index, it walked every episode of the namespace on every write."""
    from rearview.adapters.sqlite.memory_store import _EPISODE_METADATA_INSERTED, _EPISODE_TAGS_INSERTED
    from rearview.adapters.sqlite.namespace_fts import fts_table, inserted_rows_statement

    with _db(tmp_path / "rearview.db") as db:
        store = SqliteMemoryStore(db, own_fts_episodes=20 if own_table else 10_000)
        _write(store, "acme", _episodes("acme", 200))
        _write(store, "other", _episodes("other", 50))
        assert ("acme" in _own_tables(db)) is own_table
        with db.snapshot() as conn:
            # The store keeps no ANALYZE statistics (schema.py), so the planner goes by the statement alone.
            statements = [
                inserted_rows_statement(fts_table(conn, "episodic", "acme")),
                _EPISODE_TAGS_INSERTED,
                _EPISODE_METADATA_INSERTED,
            ]
            for statement in statements:
                plan = [str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}", (5, 9, "acme"))]
                read = [step for step in plan if "episodes" in step or step.startswith("SEARCH e ")]
                assert read and all("INTEGER PRIMARY KEY (rowid>? AND rowid<?)" in step for step in read), plan

        # And they are indexed: the last change set's tags and words are found.
        index = SqliteSearchIndex(db)
        assert _found(index, "acme", "violin") == _holding("violin", _episodes("acme", 200))
