"""SqliteDatabase: schema migrations, the meta table, pragmas, the embedder check and transactions."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.adapters.sqlite import (
    MIGRATIONS,
    SCHEMA_VERSION,
    Migration,
    SqliteDatabase,
    SqliteMemoryStore,
    SqliteSearchIndex,
    namespace_token,
)
from rearview.adapters.sqlite.rows import EPISODE_COLUMNS, filter_clause
from rearview.adapters.sqlite.schema import add_agent_fields
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode
from rearview.domain.search import MemoryFilter
from rearview.errors import ConfigurationError, EmbeddingMismatch
from support.old_schemas import give_todays_columns

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _open(
    path: Path, *, embedder_name: str = "hashing-64", dim: int = 64, migrations: tuple[Migration, ...] = MIGRATIONS
) -> SqliteDatabase:
    return SqliteDatabase(path, embedder_name=embedder_name, dim=dim, migrations=migrations)


def _meta(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_a_new_database_is_migrated_to_the_current_version(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "rearview.db"

    with _open(path) as db:
        assert db.schema_version == SCHEMA_VERSION == len(MIGRATIONS)

    assert _meta(path) == {"schema_version": str(SCHEMA_VERSION), "embedder_name": "hashing-64", "embedding_dim": "64"}
    assert {"working", "episodes", "facts", "namespace_state", "fts_episodes", "fts_facts"} <= _tables(path)


def test_connections_use_wal_and_the_configured_pragmas(tmp_path: Path) -> None:
    with _open(tmp_path / "rearview.db") as db:
        conn = db.connection()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000


def test_reopening_applies_only_new_migrations(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    with _open(path) as db:
        db.connection().execute("INSERT INTO namespace_state(namespace, generation) VALUES ('acme', 7)")
    later = (*MIGRATIONS, "CREATE TABLE extra (x INTEGER);\nINSERT INTO extra VALUES (42);")

    with _open(path, migrations=later) as db:
        assert db.schema_version == len(later)
        conn = db.connection()
        assert conn.execute("SELECT x FROM extra").fetchall() == [(42,)]
        assert conn.execute("SELECT generation FROM namespace_state").fetchall() == [(7,)]
    with _open(path, migrations=later) as db:  # nothing left to apply: the insert does not run twice
        assert db.connection().execute("SELECT count(*) FROM extra").fetchone()[0] == 1


def test_a_failing_migration_leaves_the_previous_version_intact(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    _open(path).close()
    broken = (*MIGRATIONS, "CREATE TABLE half_done (x INTEGER);\nINSERT INTO no_such_table VALUES (1);")

    with pytest.raises(sqlite3.OperationalError):
        _open(path, migrations=broken)

    assert _meta(path)["schema_version"] == str(SCHEMA_VERSION)
    assert "half_done" not in _tables(path)


def test_a_database_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    _open(path, migrations=(*MIGRATIONS, "CREATE TABLE extra (x INTEGER);")).close()

    with pytest.raises(ConfigurationError, match="newer"):
        _open(path)


@pytest.mark.parametrize(("name", "dim"), [("hashing-64", 128), ("minilm-l6", 64)])
def test_another_embedder_is_refused_with_both_named(tmp_path: Path, name: str, dim: int) -> None:
    path = tmp_path / "rearview.db"
    _open(path).close()

    with pytest.raises(EmbeddingMismatch) as raised:
        _open(path, embedder_name=name, dim=dim)

    message = raised.value.message
    assert "'hashing-64' (dim 64)" in message
    assert f"{name!r} (dim {dim})" in message
    assert "another data directory" in message and "rearview reindex" in message
    # The first embedder is still recorded and still accepted.
    assert _meta(path)["embedder_name"] == "hashing-64"
    _open(path).close()


def test_a_transaction_rolls_back_on_error_and_nested_ones_join_it(tmp_path: Path) -> None:
    with _open(tmp_path / "rearview.db") as db:
        with pytest.raises(RuntimeError), db.transaction() as conn:
            conn.execute("INSERT INTO namespace_state(namespace) VALUES ('a')")
            with db.transaction() as inner:
                inner.execute("INSERT INTO namespace_state(namespace) VALUES ('b')")
            raise RuntimeError("boom")
        with db.transaction() as conn:
            conn.execute("INSERT INTO namespace_state(namespace) VALUES ('c')")

        rows = db.connection().execute("SELECT namespace FROM namespace_state").fetchall()
        assert rows == [("c",)]
        assert not db.connection().in_transaction


def test_in_data_dir_opens_rearview_db(tmp_path: Path) -> None:
    with SqliteDatabase.in_data_dir(tmp_path / "data", embedder_name="e", dim=8) as db:
        assert db.path == tmp_path / "data" / "rearview.db"
    assert (tmp_path / "data" / "rearview.db").exists()


def _insert_an_old_episode(db: SqliteDatabase) -> None:
    """An episode as the first schema held it (the columns every later one keeps), id `old`, in `acme`."""
    db.connection().execute(
        "INSERT INTO episodes (namespace, id, ns_token, content, tags_json, importance, access_count, "
        "created_at, confirmations, redacted, version, occurred_at, entities_json, consolidated, search_text) "
        "VALUES ('acme', 'old', ?, 'Adopted a turtle', '[]', 0.5, 0, 0, 1, 0, 1, 0, '[]', 0, 'adopted a turtle')",
        (namespace_token("acme"),),
    )


def test_migration_4_indexes_the_context_of_episodes_and_keeps_the_old_ones_searchable(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    with _open(path, migrations=MIGRATIONS[:3]) as db:  # a database written before contextual keyword search
        _insert_an_old_episode(db)

    with _open(path) as db:
        store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
        old = store.get("acme", "old")
        assert isinstance(old, Episode) and old.context == ""
        new = Episode(
            id="new",
            namespace="acme",
            content="Three years now",
            context="How long have you had the turtle?",
            occurred_at=T0,
            created_at=T0,
        )
        store.apply("acme", ChangeSet(upserts=[(new, None)]))

        assert [c.id for c in index.keyword_search("acme", "turtle", MemoryFilter(), 10, context_weight=0.4)] == [
            "old",
            "new",
        ]
        assert [c.id for c in index.keyword_search("acme", "adopted", MemoryFilter(), 10, context_weight=0.4)] == [
            "old"
        ]
        assert store.get("acme", "new") == new


def _filter_plans(conn: sqlite3.Connection) -> dict[str, str]:
    """The query plan of each way episodes are read with a filter: list_memories (oldest first) and the management
    pages (newest first), for each kind of condition."""
    filters = {
        "session": MemoryFilter(session_id="s1"),
        "event types": MemoryFilter(event_types=("deploy", "chat")),
        "both": MemoryFilter(session_id="s1", event_types=("deploy",), since=T0),
        "outcomes": MemoryFilter(outcomes=("failure",)),
        "nothing": MemoryFilter(),
    }
    plans: dict[str, str] = {}
    for name, flt in filters.items():
        clause = filter_clause("episodic", "acme", flt, "m")
        assert clause is not None
        where, params = clause
        for order in ("occurred_at, m.ref", "occurred_at DESC, m.id DESC"):
            sql = f"SELECT {EPISODE_COLUMNS} FROM episodes AS m WHERE {where} ORDER BY m.{order} LIMIT 50"
            plans[f"{name}: {order}"] = " / ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    return plans


def test_migration_12_drops_two_indexes_no_query_plan_used(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    episodes = [
        Episode(
            id=f"e{i}", namespace="acme", content=f"step {i}", session_id=f"s{i % 3}",
            event_type=("deploy", "chat")[i % 2], occurred_at=T0 + timedelta(minutes=i), created_at=T0,
        )
        for i in range(40)
    ]  # fmt: skip
    with _open(path, migrations=MIGRATIONS[:11]) as db:
        give_todays_columns(db)
        SqliteMemoryStore(db).apply("acme", ChangeSet(upserts=[(e, None) for e in episodes]))
        before = _filter_plans(db.connection())
        listed = SqliteMemoryStore(db).list_memories("acme", MemoryFilter(session_id="s1", event_types=("deploy",)))
    assert any("episodes_by_time" in plan for plan in before.values())

    with _open(path) as db:
        names = {row[0] for row in db.connection().execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert not {"episodes_by_session", "episodes_by_event_type"} & names
        assert _filter_plans(db.connection()) == before
        flt = MemoryFilter(session_id="s1", event_types=("deploy",))
        assert SqliteMemoryStore(db).list_memories("acme", flt) == listed
        assert [e.id for e in listed] == [e.id for e in episodes if e.session_id == "s1" and e.event_type == "deploy"]


def _exploded_tags(conn: sqlite3.Connection) -> list[tuple[str, str, str, int]]:
    """memory_tags as the episodes' and facts' rows say it should be: every tag of every row."""
    return sorted(
        conn.execute(
            "SELECT namespace, value, 'episodic', ref FROM episodes, json_each(tags_json) UNION "
            "SELECT namespace, value, 'semantic', ref FROM facts, json_each(tags_json)"
        ).fetchall()
    )


def _tagged(path: Path, namespace: str, tags: tuple[str, ...]) -> list[str]:
    with _open(path) as db:
        return [m.id for m in SqliteMemoryStore(db).list_memories(namespace, MemoryFilter(tags=tags))]


def test_migration_13_hands_the_tags_of_inserted_episodes_to_the_store(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"

    def episodes(namespace: str, start: int, count: int) -> list[Episode]:
        return [
            Episode(
                id=f"{namespace}-{i}", namespace=namespace, content=f"step {i}", occurred_at=T0 + timedelta(minutes=i),
                created_at=T0, tags=[["weekly"], [], ["weekly", "ops", "weekly"], []][i % 4],
            )
            for i in range(start, start + count)
        ]  # fmt: skip

    with _open(path, migrations=MIGRATIONS[:12]) as db:  # the schema before: a trigger wrote each row's tags
        give_todays_columns(db)
        store = SqliteMemoryStore(db)
        for namespace in ("acme", "umbrella"):
            store.apply(namespace, ChangeSet(upserts=[(e, None) for e in episodes(namespace, 0, 20)]))
        before = _exploded_tags(db.connection())
        assert before == sorted(db.connection().execute("SELECT * FROM memory_tags").fetchall())
    weekly_before = _tagged(path, "acme", ("weekly",))

    with _open(path) as db:
        conn = db.connection()
        assert "episodes_ai" not in {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert sorted(conn.execute("SELECT * FROM memory_tags").fetchall()) == before
        store = SqliteMemoryStore(db)
        untagged = Episode(id="acme-quiet", namespace="acme", content="quiet", occurred_at=T0, created_at=T0)
        store.apply("acme", ChangeSet(upserts=[(untagged, None)]))  # nothing tagged: no statement needed
        retagged = episodes("acme", 1, 1)[0].model_copy(update={"tags": ["ops"], "version": 2})
        store.apply(
            "acme",
            ChangeSet(
                upserts=[*((e, None) for e in episodes("acme", 20, 10)), (retagged, None)],
                deletes=["acme-0", "acme-22"],  # acme-22: inserted, then deleted by the same change set
            ),
        )
        store.apply("umbrella", ChangeSet(upserts=[(e, None) for e in episodes("umbrella", 20, 10)]))
        assert sorted(conn.execute("SELECT * FROM memory_tags").fetchall()) == _exploded_tags(conn)
    assert weekly_before == [f"acme-{i}" for i in range(20) if i % 2 == 0]
    assert _tagged(path, "acme", ("weekly",)) == [f"acme-{i}" for i in range(2, 30, 2) if i != 22]
    assert _tagged(path, "acme", ("ops",)) == ["acme-1", *(f"acme-{i}" for i in range(2, 30, 4) if i != 22)]
    assert _tagged(path, "umbrella", ("ops",)) == [f"umbrella-{i}" for i in range(2, 30, 4)]


def test_migration_15_gives_memories_metadata_source_and_expiry_and_keeps_what_was_there(tmp_path: Path) -> None:
    path = tmp_path / "rearview.db"
    with _open(path, migrations=MIGRATIONS[:14]) as db:  # the schema before: no metadata, source or expiry
        _insert_an_old_episode(db)

    with _open(path) as db:
        store = SqliteMemoryStore(db)
        old = store.get("acme", "old")
        assert isinstance(old, Episode)
        assert (old.metadata, old.source, old.expires_at, old.parent_id) == ({}, None, None, None)
        tagged = Episode(id="new", namespace="acme", content="Fed the turtle", occurred_at=T0, created_at=T0,
                         metadata={"pet": "turtle"}, expires_at=T0 + timedelta(days=1))  # fmt: skip
        store.apply("acme", ChangeSet(upserts=[(old.model_copy(update={"version": 2, "metadata": {"pet": "turtle"}}),
                                                None), (tagged, None)]))  # fmt: skip
        pets = MemoryFilter(metadata=(("pet\x1fs:turtle",),))
        assert [m.id for m in store.list_memories("acme", pets)] == ["old", "new"]
        assert store.expired_memories(T0 + timedelta(days=2), 10) == [("acme", "new")]
        conn = db.connection()
        clause = filter_clause("episodic", "acme", pets, "m")
        assert clause is not None
        plan = " / ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN SELECT m.id FROM episodes AS m WHERE "
                                                         f"{clause[0]}", clause[1]))  # fmt: skip
        assert "memory_metadata" in plan and "PRIMARY KEY" in plan, plan
        purge = conn.execute("EXPLAIN QUERY PLAN SELECT id FROM episodes WHERE expires_at <= 0").fetchall()
        assert "episodes_expiring" in " ".join(row[3] for row in purge)
        # Idempotent: what it adds is there once, however often it runs.
        with db.transaction() as inner:
            add_agent_fields(inner)
        assert [m.id for m in store.list_memories("acme", pets)] == ["old", "new"]
