"""A local vector search's candidates (built without the named tuple's Python constructor) are `Candidate`s like any
other: same type, fields, equality and hash as `Candidate(id, layer, score)`, best first."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
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


def _scan(vectors: dict[str, np.ndarray], query: np.ndarray, ids: set[str]) -> list[str]:
    """The reference: every named memory's float16 cosine, best first (ids break no tie here)."""
    q = (query / np.linalg.norm(query)).astype(np.float16).astype(np.float64)
    scored = {i: float(q @ (v / np.linalg.norm(v)).astype(np.float16).astype(np.float64)) for i, v in vectors.items()}
    return sorted((i for i in scored if i in ids), key=lambda i: -scored[i])


def test_a_search_within_ids_finds_exactly_the_named_memories(tmp_path: Path) -> None:
    """Recall's second search names the first one's ids: those the cache holds are searched, unknown ones and another
    layer's cache (no facts at all) change nothing, one id alone works, and a forgotten memory is not found."""
    db = SqliteDatabase(tmp_path / "m.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store, index = SqliteMemoryStore(db), SqliteSearchIndex(db)
    texts = [f"{word} number {i}" for i, word in enumerate(["violin", "tax", "garden", "chess", "flight"] * 8)]
    episodes = [
        Episode(id=f"e{i}", namespace="acme", content=t, occurred_at=T0, created_at=T0) for i, t in enumerate(texts)
    ]
    vectors = {e.id: EMBEDDER.embed([e.content])[0] for e in episodes}
    store.apply("acme", ChangeSet(upserts=[(e, vectors[e.id]) for e in episodes]))
    query = EMBEDDER.embed(["violin garden"])[0]

    for named in (["e3"], ["e1", "e7", "e30"], ["e2", "missing", "e9", "e11"], [f"e{i}" for i in range(0, 40, 3)]):
        found = index.vector_search("acme", query, MemoryFilter(ids=tuple(named)), 50)
        assert [c.id for c in found] == _scan(vectors, query, set(named)), named
    assert index.vector_search("acme", query, MemoryFilter(ids=("missing", "gone")), 50) == []

    store.apply("acme", ChangeSet(deletes=["e9"]))
    del vectors["e9"]
    found = index.vector_search("acme", query, MemoryFilter(ids=("e2", "e9", "e11")), 50)
    assert [c.id for c in found] == _scan(vectors, query, {"e2", "e11"})
    everything = index.vector_search("acme", query, MemoryFilter(), 50)
    assert [c.id for c in everything] == _scan(vectors, query, set(vectors))
