"""SqliteMemoryStore.apply reads the refs of the rows it inserts off the table (AUTOINCREMENT makes one statement's
rows consecutive): the refs it publishes to the vector caches are the stored ones, after deletions left gaps too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore
from rearview.adapters.sqlite.connection import AppliedChanges
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=16)


def _episode(namespace: str, i: int) -> Episode:
    return Episode(
        id=f"e{i}", namespace=namespace, content=f"note {i}", occurred_at=T0 + timedelta(minutes=i), created_at=T0
    )


def _stored_refs(db: SqliteDatabase, namespace: str) -> dict[str, int]:
    conn = db.connection()
    rows = conn.execute("SELECT id, ref FROM episodes WHERE namespace = ?", (namespace,)).fetchall()
    return dict(rows + conn.execute("SELECT id, ref FROM facts WHERE namespace = ?", (namespace,)).fetchall())


def test_published_refs_are_the_stored_ones_across_namespaces_layers_and_gaps(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "r.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store = SqliteMemoryStore(db)
    published: dict[tuple[str, str], int] = {}

    def listen(changes: AppliedChanges) -> None:
        published.update({(changes.namespace, row.id): row.ref for row in changes.upserted})
        for _, memory_id in changes.deleted:
            published.pop((changes.namespace, memory_id), None)

    db.subscribe(listen)

    def write(namespace: str, episodes: list[Episode], deletes: tuple[str, ...] = ()) -> None:
        vectors = EMBEDDER.embed([e.content for e in episodes])
        store.apply(namespace, ChangeSet(upserts=list(zip(episodes, vectors, strict=True)), deletes=list(deletes)))

    write("acme", [_episode("acme", i) for i in range(10)])
    write("umbrella", [_episode("umbrella", i) for i in range(4)])
    # The table's largest refs deleted: AUTOINCREMENT does not give them out again.
    store.apply("acme", ChangeSet(deletes=["e8", "e9"]))
    store.apply("umbrella", ChangeSet(deletes=["e3"]))
    fact = Fact(id="f1", namespace="acme", content="likes tea", created_at=T0, last_confirmed_at=T0)
    edited = _episode("acme", 2).model_copy(update={"content": "note two", "version": 2})
    store.apply("acme", ChangeSet(upserts=[(fact, None), (edited, None), (_episode("acme", 20), None)]))
    # Inserted, then deleted by the same change set: not published.
    write("acme", [_episode("acme", i) for i in range(30, 35)], deletes=("e31",))

    for namespace in ("acme", "umbrella"):
        assert {i: r for (ns, i), r in published.items() if ns == namespace} == _stored_refs(db, namespace)
    assert max(published.values()) == max(_stored_refs(db, "acme").values())
    assert ("acme", "e31") not in published
    db.close()


def test_a_notices_rows_are_made_only_for_a_listener_that_reads_them(tmp_path: Path) -> None:
    """A bulk load into a namespace no cache holds asks for none of its rows (`AppliedChanges.upserted` is made on
    first read); the count of vectors written, which decides whether the keeper warms the namespace, is there
    without them."""
    db = SqliteDatabase(tmp_path / "r.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store = SqliteMemoryStore(db)
    notices: list[AppliedChanges] = []
    db.subscribe(notices.append)
    episodes = [_episode("acme", i) for i in range(50)]
    vectors = EMBEDDER.embed([e.content for e in episodes])
    fact = Fact(id="f1", namespace="acme", content="likes tea", created_at=T0, last_confirmed_at=T0)
    store.apply("acme", ChangeSet(upserts=[*zip(episodes, vectors, strict=True), (fact, None)]))
    (notice,) = notices
    assert notice.vectors_written == {"episodic": 50, "semantic": 0}
    assert "upserted" not in vars(notice)  # not made: nobody read it
    rows = notice.upserted
    assert [row.id for row in rows] == [*(e.id for e in episodes), "f1"]
    assert rows[0].vector is not None and rows[-1].vector is None
    assert notice.upserted is rows  # made once
    db.close()
