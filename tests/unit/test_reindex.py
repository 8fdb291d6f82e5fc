"""Reindex: the index rebuilt from the store, one namespace or all; and `rearview reindex`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex, build_opensearch_client
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
from rearview.cli import app
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.search import MemoryFilter
from rearview.ports import MemoryStore
from rearview.service.reindex import ReindexService
from support.opensearch_double import OpenSearchDouble

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=64)
EVERYTHING = MemoryFilter(include_superseded=True)


class CatalogStore:
    """A store that also lists its namespaces (as the AWS store is asked to)."""

    def __init__(self, store: MemoryStore, namespaces: list[str]) -> None:
        self._store = store
        self._namespaces = namespaces

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    def list_namespaces(self, prefix: str = "") -> list[str]:
        return [n for n in self._namespaces if n.startswith(prefix)]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SqliteDatabase]:
    database = SqliteDatabase(tmp_path / "rearview.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    yield database
    database.close()


@pytest.fixture
def store(db: SqliteDatabase) -> SqliteMemoryStore:
    store = SqliteMemoryStore(db)
    for namespace in ("acme", "acme:u-42"):
        memories: list[Memory] = [
            Episode(id=f"e{i}", namespace=namespace, content=f"{namespace} note {i} about hiking",
                    occurred_at=T0 + timedelta(hours=i), created_at=T0)
            for i in range(5)
        ]  # fmt: skip
        memories.append(
            Fact(id="f0", namespace=namespace, content="used to hike", status="superseded",
                 last_confirmed_at=T0, created_at=T0)
        )  # fmt: skip
        vectors = EMBEDDER.embed([m.content for m in memories])
        store.apply(namespace, ChangeSet(upserts=list(zip(memories, vectors, strict=True))))
    return store


@pytest.fixture
def index() -> Iterator[OpenSearchIndex]:
    with OpenSearchDouble() as double:
        yield OpenSearchIndex(
            OpenSearchConnection(double.url, service="es"),
            "mem",
            EMBEDDER.dim,
            client=build_opensearch_client(double.url, service=None),
        )


def _indexed(index: OpenSearchIndex, namespace: str) -> set[str]:
    return {c.id for c in index.vector_search(namespace, EMBEDDER.embed(["hiking"])[0], EVERYTHING, 100)}


def test_reindex_of_one_namespace_creates_the_index_and_indexes_every_memory_with_its_vector(
    store: SqliteMemoryStore, index: OpenSearchIndex
) -> None:
    report = ReindexService(store, index, batch_size=2).reindex("acme")

    assert report.indexed == {"acme": 6}
    assert _indexed(index, "acme") == {"e0", "e1", "e2", "e3", "e4", "f0"}
    assert _indexed(index, "acme:u-42") == set()
    top = index.vector_search("acme", store.get_vectors("acme", ["e3"])["e3"], MemoryFilter(), 1)
    assert top[0].id == "e3" and top[0].score == pytest.approx(1.0, abs=1e-6)


def test_reindex_drops_documents_of_memories_the_store_no_longer_has(
    store: SqliteMemoryStore, index: OpenSearchIndex
) -> None:
    service = ReindexService(store, index)
    service.reindex("acme")
    store.apply("acme", ChangeSet(deletes=["e1", "e2"]))  # deleted while index sync was down

    report = service.reindex("acme")

    assert report.removed == {"acme": 6}
    assert _indexed(index, "acme") == {"e0", "e3", "e4", "f0"}


def test_reindex_of_everything_covers_every_namespace_the_store_lists(
    store: SqliteMemoryStore, index: OpenSearchIndex
) -> None:
    report = ReindexService(store, index).reindex()

    assert report.indexed == {"acme": 6, "acme:u-42": 6}
    assert report.total_indexed == 12
    assert _indexed(index, "acme:u-42") == {"e0", "e1", "e2", "e3", "e4", "f0"}


def test_reindex_of_everything_follows_the_store_catalogue(store: SqliteMemoryStore, index: OpenSearchIndex) -> None:
    report = ReindexService(CatalogStore(store, ["acme:u-42", "acme"]), index).reindex()  # type: ignore[arg-type]

    assert report.indexed == {"acme": 6, "acme:u-42": 6}
    assert report.total_indexed == 12
    assert _indexed(index, "acme:u-42") == {"e0", "e1", "e2", "e3", "e4", "f0"}


def test_an_index_written_with_the_store_has_no_write_side_to_rebuild(db: SqliteDatabase) -> None:
    assert SqliteSearchIndex(db).maintenance() is None


def test_a_memory_without_a_stored_vector_is_still_indexed_for_keyword_search(index: OpenSearchIndex) -> None:
    class NoVectors:
        def __init__(self, memory: Memory) -> None:
            self.memory = memory

        def list_memories(self, namespace: str, flt: MemoryFilter, limit: int | None = None) -> list[Memory]:
            return [self.memory]

        def get_vectors(self, namespace: str, ids: list[str]) -> dict[str, np.ndarray]:
            return {}

    memory = Episode(id="e", namespace="acme", content="cello lessons", occurred_at=T0, created_at=T0)

    ReindexService(NoVectors(memory), index).reindex("acme")  # type: ignore[arg-type]

    assert [c.id for c in index.keyword_search("acme", "cello", MemoryFilter(), 5)] == ["e"]
    assert index.vector_search("acme", EMBEDDER.embed(["cello"])[0], MemoryFilter(), 5) == []


def test_the_cli_refuses_to_reindex_the_sqlite_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")

    assert CliRunner().invoke(app, ["remember", "acme", "Bought a cello"]).exit_code == 0
    result = CliRunner().invoke(app, ["reindex", "acme"])

    assert result.exit_code == 2
    assert "nothing to rebuild" in result.output
