"""A local vector search's candidates (built without the named tuple's Python constructor) are `Candidate`s like any
other: same type, fields, equality and hash as `Candidate(id, layer, score)`, best first."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode
from rearview.domain.search import Candidate, MemoryFilter

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=32)


def test_vector_search_returns_plain_candidates(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "m.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
    texts = ["violin lesson", "violin recital", "tax refund", "garden tomatoes"]
    episodes = [
        Episode(id=f"e{i}", namespace="acme", content=t, occurred_at=T0, created_at=T0) for i, t in enumerate(texts)
    ]
    store.apply("acme", ChangeSet(upserts=[(e, EMBEDDER.embed([e.content])[0]) for e in episodes]))

    found = index.vector_search("acme", EMBEDDER.embed(["violin"])[0], MemoryFilter(), 3)

    assert len(found) == 3
    assert all(type(c) is Candidate and c.layer == "episodic" and isinstance(c.score, float) for c in found)
    assert found == [Candidate(c.id, "episodic", c.score) for c in found]
    assert {hash(c) for c in found} == {hash(Candidate(c.id, c.layer, c.score)) for c in found}
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)
    assert found[0].id in {"e0", "e1"} and found[0]._asdict() == {
        "id": found[0].id,
        "layer": "episodic",
        "score": found[0].score,
    }
