"""What the contract suite cannot see of the in-memory backend: that its keyword scores are the embedded backend's
(the contract only orders them), and that `backend = "memory"` builds it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.in_memory import InMemoryData, InMemoryKeyStore, InMemoryMemoryStore, InMemorySearchIndex
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
from rearview.bootstrap import build
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.ports import MemoryStore, SearchIndex
from rearview.settings import Settings

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=64)

TURNS = [
    "How long have you had the turtles?",
    "I've had them for three years now, since the move to Porto",
    "We went hiking in the mountains with the kids last weekend",
    "The hiking boots I bought were far too expensive",
    "Caroline said the adoption agency called back about the paperwork",
    "My turtles love the new tank; the kids feed them every morning",
    "We talked about painting the sunset over the beach",
    "The charity race raised more money than last year's",
    "She is researching adoption agencies that support LGBTQ families",
    "Running every morning before work keeps me sane",
]


def _memories(namespace: str) -> list[Memory]:
    """Episodes in two sessions (each with the turn before it as context) and a few facts."""
    memories: list[Memory] = []
    for i, text in enumerate(TURNS):
        at = T0 + timedelta(minutes=i)
        if i % 4 == 3:
            memories.append(Fact(id=f"f{i}", namespace=namespace, content=text, created_at=at, last_confirmed_at=at))
            continue
        memories.append(
            Episode(
                id=f"e{i}",
                namespace=namespace,
                content=text,
                created_at=at,
                occurred_at=at,
                session_id=f"s{i % 2}",
                context=TURNS[i - 1] if i else "",
                tags=["family"] if "kids" in text else [],
                entities=["Caroline"] if "Caroline" in text else [],
            )
        )
    return memories


@pytest.fixture
def both(tmp_path: Path) -> Iterator[list[tuple[MemoryStore, SearchIndex]]]:
    """The embedded backend and the in-memory one, holding the same memories in two namespaces (of different
    sizes, so that statistics over the whole layer differ from those of one namespace)."""
    db = SqliteDatabase(tmp_path / "rearview.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    data = InMemoryData()
    backends: list[tuple[MemoryStore, SearchIndex]] = [
        (SqliteMemoryStore(db), SqliteSearchIndex(db)),
        (InMemoryMemoryStore(data, embedder_name=EMBEDDER.name, dim=EMBEDDER.dim), InMemorySearchIndex(data)),
    ]
    for namespace, memories in (("acme", _memories("acme")), ("zeta", _memories("zeta")[:4])):
        vectors = EMBEDDER.embed([m.content for m in memories])
        for store, _ in backends:
            store.apply(namespace, ChangeSet(upserts=list(zip(memories, vectors, strict=True))))
    yield backends
    db.close()


@pytest.mark.parametrize("context_weight", [0.0, 0.4, 1.5])
@pytest.mark.parametrize(
    ("query", "flt"),
    [
        ("hiking boots", MemoryFilter()),
        ("how long have they had the turtles", MemoryFilter()),
        ("adoption agencies Caroline", MemoryFilter(layers=("episodic",))),
        ("kids morning family", MemoryFilter(tags=("family",))),
        ("turtles hiking adoption running", MemoryFilter(session_id="s1")),
        ("turtles hiking adoption running", MemoryFilter(since=T0 + timedelta(minutes=4))),
    ],
)
def test_keyword_scores_are_the_embedded_backends(
    both: list[tuple[MemoryStore, SearchIndex]], query: str, flt: MemoryFilter, context_weight: float
) -> None:
    (_, sqlite), (_, memory) = both

    expected = {c.id: c.score for c in sqlite.keyword_search("acme", query, flt, 50, context_weight)}
    found = {c.id: c.score for c in memory.keyword_search("acme", query, flt, 50, context_weight)}

    assert expected
    assert found == pytest.approx(expected, rel=1e-9)


def test_the_memory_backend_keeps_store_index_and_keys_over_one_data_object(tmp_path: Path) -> None:
    services = build(Settings(backend="memory", data_dir=tmp_path / "unused", embedder="hashing"))
    try:
        store, index, keys = services.store, services.index, services.access.keys
        assert isinstance(store, InMemoryMemoryStore) and isinstance(index, InMemorySearchIndex)
        assert isinstance(keys, InMemoryKeyStore)
        assert store.data is index.data is keys.data
        assert services.index_maintenance is None

        written = services.writer.write("acme", MemoryWrite(content="Adopted a greyhound named Pixel"))
        found = services.recaller.recall("acme", RecallQuery(query="what is the greyhound called?"))

        assert written.id in [hit.id for hit in found.results]
        assert services.stats.of("acme").counts["episodic"] == 1
        assert not (tmp_path / "unused").exists()
    finally:
        services.close()
