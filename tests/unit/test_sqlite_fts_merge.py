"""The store merges the full-text segments of the tables each change set wrote (namespace_fts.merge_segments):
small change sets leave few segments instead of one each, searches find and score exactly what they did, and
databases made before (schema migration 14) and namespaces' own tables get the same setting."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import (
    MIGRATIONS,
    Migration,
    SqliteDatabase,
    SqliteMemoryStore,
    SqliteSearchIndex,
    namespace_fts,
)
from rearview.adapters.sqlite import memory_store as memory_store_module
from rearview.adapters.sqlite.namespace_fts import own_table_name
from rearview.adapters.sqlite.schema import FTS_USERMERGE
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.search import Candidate, MemoryFilter
from support.fts_segments import segment_count
from support.old_schemas import give_todays_columns

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=32)
WORDS = ("violin", "garden", "lisbon", "refund", "chess", "marathon", "harp", "tomatoes", "ferry", "quartet")
QUERIES = ("violin", "garden lisbon", "chess harp ferry", "number 17", "quartet marathon tomatoes", "refund")


def _db(path: Path, migrations: tuple[Migration, ...] = MIGRATIONS) -> SqliteDatabase:
    return SqliteDatabase(path, embedder_name=EMBEDDER.name, dim=EMBEDDER.dim, migrations=migrations)


def _episode(namespace: str, i: int, version: int = 1) -> Episode:
    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
    return Episode(
        id=f"{namespace}-{i}",
        namespace=namespace,
        content=f"{words} number {i}" + (" revised" if version > 1 else ""),
        context=f"about {WORDS[(i + 1) % len(WORDS)]}",
        occurred_at=T0 + timedelta(minutes=i),
        created_at=T0,
        version=version,
    )


def _fact(namespace: str, i: int) -> Fact:
    return Fact(
        id=f"{namespace}-f{i}",
        namespace=namespace,
        content=f"{WORDS[i % len(WORDS)]} fact {i}",
        created_at=T0,
        last_confirmed_at=T0,
    )


def _write_small_sets(store: SqliteMemoryStore, namespace: str, sets: int, size: int = 10) -> None:
    """`sets` change sets of `size` new episodes and a fact each; every fifth also edits and deletes a few."""
    for s in range(sets):
        new = [_episode(namespace, s * size + i) for i in range(size)]
        upserts: list[tuple[Memory, np.ndarray | None]] = [(e, EMBEDDER.embed([e.content])[0]) for e in new]
        upserts.append((_fact(namespace, s), None))
        deletes: list[str] = []
        if s % 5 == 4:
            upserts += [(_episode(namespace, s * size - 3, version=2), None)]
            deletes = [f"{namespace}-{s * size - 7}", f"{namespace}-f{s - 2}"]
        store.apply(namespace, ChangeSet(upserts=upserts, deletes=deletes))


def _searches(index: SqliteSearchIndex, namespace: str) -> dict[str, list[Candidate]]:
    return {q: index.keyword_search(namespace, q, MemoryFilter(), 1000, context_weight=0.4) for q in QUERIES}


def _usermerge(conn: sqlite3.Connection, table: str) -> int | None:
    row = conn.execute(f"SELECT v FROM {table}_config WHERE k = 'usermerge'").fetchone()
    return None if row is None else int(row[0])


def _without_merging(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_store_module, "merge_segments", lambda conn, table: None)


def _written(path: Path) -> tuple[dict[str, dict[str, list[Candidate]]], tuple[int, int]]:
    """The searches of two namespaces written in small change sets, and the segments of the two shared tables."""
    with _db(path) as db:
        store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
        _write_small_sets(store, "acme", 60)
        _write_small_sets(store, "other", 5)
        conn = db.connection()
        assert _usermerge(conn, "fts_episodes") == _usermerge(conn, "fts_facts") == FTS_USERMERGE
        searches = {ns: _searches(index, ns) for ns in ("acme", "other")}
        return searches, (segment_count(conn, "fts_episodes"), segment_count(conn, "fts_facts"))


def test_small_change_sets_leave_few_segments_and_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    merged, merged_segments = _written(tmp_path / "merged.db")
    _without_merging(monkeypatch)
    unmerged, unmerged_segments = _written(tmp_path / "unmerged.db")

    # 65 change sets, each with inserts, some with edits and deletes (one segment per row through the triggers):
    # FTS5 alone leaves up to 15 of them waiting (13 and 15 here); merged, about one per level (3 and 1).
    assert max(merged_segments) <= 4 and min(unmerged_segments) >= 10
    assert merged == unmerged  # the same ids, layers and BM25 scores, in the same order
    assert any(len(found) > 10 for found in merged["acme"].values())
    assert all(c.id.startswith("other-") for found in merged["other"].values() for c in found)


def test_a_namespaces_own_table_is_merged_too(tmp_path: Path) -> None:
    with _db(tmp_path / "rearview.db") as db:
        store, index = SqliteMemoryStore(db, own_fts_episodes=50), SqliteSearchIndex(db)
        _write_small_sets(store, "acme", 70)
        own = own_table_name("acme")
        conn = db.connection()
        assert conn.execute("SELECT fts FROM fts_namespaces").fetchall() == [(own,)]
        assert _usermerge(conn, own) == FTS_USERMERGE
        assert segment_count(conn, own) <= 3  # 17 with FTS5 alone
        found = index.keyword_search("acme", "violin", MemoryFilter(), 1000)
        deleted = {f"acme-{s * 10 - 7}" for s in range(4, 70, 5)}
        expected = {f"acme-{i}" for i in range(700) if "violin" in _episode("acme", i).content} - deleted
        assert {c.id for c in found if c.layer == "episodic"} == expected


def _written_before_14(path: Path) -> dict[str, dict[str, list[Candidate]]]:
    with _db(path, migrations=MIGRATIONS[:13]) as db:
        give_todays_columns(db)
        store, index = SqliteMemoryStore(db, own_fts_episodes=100), SqliteSearchIndex(db)
        # small first: acme, not alone in the shared table, leaves it row by row (a segment each) when it is
        # moved to a table of its own at its 16th change set.
        _write_small_sets(store, "small", 12, size=3)
        _write_small_sets(store, "acme", 40)
        conn = db.connection()
        assert conn.execute("SELECT fts FROM fts_namespaces").fetchall() == [(own_table_name("acme"),)]
        assert {_usermerge(conn, t) for t in ("fts_episodes", "fts_facts", own_table_name("acme"))} == {None}
        assert segment_count(conn, "fts_episodes") > 6
        return {ns: _searches(index, ns) for ns in ("acme", "small")}


def test_migration_14_sets_every_table_to_merge_and_keeps_what_it_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rearview.db"
    with monkeypatch.context() as before_14:  # the code and schema before: FTS5's own merging only
        before_14.setattr(memory_store_module, "merge_segments", lambda conn, table: None)
        before_14.setattr(namespace_fts, "set_usermerge", lambda conn, table: None)
        before = _written_before_14(path)
    own = own_table_name("acme")
    with _db(path) as db:
        assert db.schema_version == len(MIGRATIONS)
        conn = db.connection()
        assert {_usermerge(conn, t) for t in ("fts_episodes", "fts_facts", own)} == {FTS_USERMERGE}
        store, index = SqliteMemoryStore(db, own_fts_episodes=100), SqliteSearchIndex(db)
        assert {ns: _searches(index, ns) for ns in ("acme", "small")} == before
        for i in range(8):  # the next change sets merge what piled up, a bounded step each
            store.apply("small", ChangeSet(upserts=[(_episode("small", 1000 + i), None)]))
            store.apply("acme", ChangeSet(upserts=[(_episode("acme", 1000 + i), None)]))
        assert segment_count(conn, "fts_episodes") <= 6 and segment_count(conn, own) <= 6
        after = _searches(index, "small")
        assert {c.id for c in after["violin"]} >= {c.id for c in before["small"]["violin"]}
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        for table in ("fts_episodes", "fts_facts", own):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
