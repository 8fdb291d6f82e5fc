"""Contract suite fixtures: one `backend` fixture, parametrised over every MemoryStore + SearchIndex backend.

A backend joins the suite by adding one factory to BACKENDS; everything else (tests, builders) is
backend-agnostic. Builders: `make_episode` / `make_fact` (also as the `episode` / `fact` fixtures).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite_store import SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
from rearview.clock import ManualClock
from rearview.model import Episode, Fact, Memory
from rearview.ports import ChangeSet, Embedder, MemoryStore, SearchIndex

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@dataclass
class Backend:
    """A store and an index over the same storage, with the embedder that wrote its vectors."""

    name: str
    store: MemoryStore
    index: SearchIndex
    embedder: Embedder
    clock: ManualClock
    # Close this backend and open the same storage again, with this embedder or (None) the same one.
    reopen: Callable[[Embedder | None], Backend]
    # Idempotent.
    close: Callable[[], None]

    def write(self, namespace: str, *memories: Memory) -> None:
        """Apply one change set upserting the memories, each with the embedding of its content."""
        vectors = self.embedder.embed([m.content for m in memories])
        self.store.apply(namespace, ChangeSet(upserts=list(zip(memories, vectors, strict=True))))

    def delete(self, namespace: str, *ids: str) -> None:
        self.store.apply(namespace, ChangeSet(deletes=list(ids)))

    def query_vector(self, text: str) -> np.ndarray:
        return np.asarray(self.embedder.embed([text])[0])


BackendFactory = Callable[[Path, Embedder, ManualClock, Callable[[Backend], None]], Backend]


def _sqlite_backend(
    tmp_path: Path, embedder: Embedder, clock: ManualClock, opened: Callable[[Backend], None]
) -> Backend:
    path = tmp_path / "data" / "rearview.db"

    def open_backend(with_embedder: Embedder | None) -> Backend:
        chosen = with_embedder or embedder
        db = SqliteDatabase(path, embedder_name=chosen.name, dim=chosen.dim)

        def reopen(new_embedder: Embedder | None) -> Backend:
            db.close()
            return open_backend(new_embedder)

        backend = Backend(
            name="sqlite",
            store=SqliteMemoryStore(db, clock=clock),
            index=SqliteSearchIndex(db),
            embedder=chosen,
            clock=clock,
            reopen=reopen,
            close=db.close,
        )
        opened(backend)
        return backend

    return open_backend(None)


# A backend joins the suite here: name -> factory(tmp_path, embedder, clock, opened) (call `opened` on every
# Backend made, so the fixture can close them all).
BACKENDS: dict[str, BackendFactory] = {
    "sqlite": _sqlite_backend,
}


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A fresh, empty backend with a HashingEmbedder(dim=512) and a ManualClock at T0."""
    opened: list[Backend] = []
    yield BACKENDS[request.param](tmp_path, HashingEmbedder(dim=512), ManualClock(T0), opened.append)
    for each in opened:
        each.close()


def make_episode(namespace: str, memory_id: str, content: str, **fields: Any) -> Episode:
    """An episode with sensible defaults: occurred and created at T0, version 1."""
    fields.setdefault("occurred_at", T0)
    fields.setdefault("created_at", fields["occurred_at"])
    return Episode(id=memory_id, namespace=namespace, content=content, **fields)


def make_fact(namespace: str, memory_id: str, content: str, **fields: Any) -> Fact:
    """An active fact with sensible defaults: confirmed and created at T0, version 1."""
    fields.setdefault("last_confirmed_at", T0)
    fields.setdefault("created_at", fields["last_confirmed_at"])
    return Fact(id=memory_id, namespace=namespace, content=content, **fields)


@pytest.fixture
def episode() -> Callable[..., Episode]:
    return make_episode


@pytest.fixture
def fact() -> Callable[..., Fact]:
    return make_fact
