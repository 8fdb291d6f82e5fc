"""The backends of the contract suite, and builders of memories for its tests.

A backend joins the suite by adding one factory to BACKENDS; the tests themselves are backend-agnostic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from rearview.adapters.sqlite_store import SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
from rearview.clock import ManualClock
from rearview.model import Episode, Fact, Memory
from rearview.ports import ChangeSet, Embedder, MemoryFilter, MemoryStore, SearchIndex

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


def filter_dataset(namespace: str = "acme") -> list[Episode | Fact]:
    """Episodes and facts that differ in every attribute a MemoryFilter looks at."""
    day = timedelta(days=1)
    return [
        make_episode(namespace, "e1", "flew to Berlin", occurred_at=T0, tags=["travel"], event_type="trip",
                     session_id="s1"),
        make_episode(namespace, "e2", "booked a hotel", occurred_at=T0 + day, tags=["travel", "money"],
                     event_type="booking", session_id="s1", consolidated=True),
        make_episode(namespace, "e3", "paid the rent", occurred_at=T0 + 2 * day, tags=["money"],
                     event_type="payment", session_id="s2"),
        make_episode(namespace, "e4", "read a novel", occurred_at=T0 + 3 * day),
        make_fact(namespace, "f1", "lives in Berlin", last_confirmed_at=T0 + 0.5 * day, tags=["travel"],
                  dimension="city"),
        make_fact(namespace, "f2", "used to live in Paris", last_confirmed_at=T0 + 1.5 * day,
                  status="superseded", superseded_by="f1", superseded_at=T0 + 1.5 * day, dimension="city",
                  tags=["money"]),
        make_fact(namespace, "f3", "is vegetarian", last_confirmed_at=T0 + 4 * day, dimension="diet"),
    ]  # fmt: skip


def time_of(memory: Episode | Fact) -> datetime:
    return memory.occurred_at


def expected_ids(memories: list[Episode | Fact], flt: MemoryFilter) -> set[str]:
    """The filter semantics every backend implements, written out plainly (reference for both searches)."""
    chosen: set[str] = set()
    for m in memories:
        if m.layer not in flt.layers:
            continue
        if flt.since is not None and time_of(m) < flt.since:
            continue
        if flt.until is not None and time_of(m) >= flt.until:
            continue
        if flt.tags and not set(flt.tags) & set(m.tags):
            continue
        if flt.ids is not None and m.id not in flt.ids:
            continue
        if isinstance(m, Fact):
            if flt.event_types or flt.session_id is not None:
                continue
            if not flt.include_superseded and m.status != "active":
                continue
        else:
            if flt.event_types and m.event_type not in flt.event_types:
                continue
            if flt.session_id is not None and m.session_id != flt.session_id:
                continue
            if flt.consolidated is not None and m.consolidated != flt.consolidated:
                continue
        chosen.add(m.id)
    return chosen


DAY = timedelta(days=1)
FILTERS: dict[str, MemoryFilter] = {
    "everything": MemoryFilter(),
    "episodes only": MemoryFilter(layers=("episodic",)),
    "facts only": MemoryFilter(layers=("semantic",)),
    "since (inclusive)": MemoryFilter(since=T0 + DAY),
    "until (exclusive)": MemoryFilter(until=T0 + 2 * DAY),
    "since and until": MemoryFilter(since=T0 + 0.5 * DAY, until=T0 + 3 * DAY),
    "tags any of": MemoryFilter(tags=("travel",)),
    "tags any of two": MemoryFilter(tags=("money", "nope"), include_superseded=True),
    "event types": MemoryFilter(event_types=("trip", "payment")),
    "session": MemoryFilter(session_id="s1"),
    "unknown session": MemoryFilter(session_id="zzz"),
    "include superseded": MemoryFilter(include_superseded=True),
    "consolidated": MemoryFilter(consolidated=True),
    "not consolidated": MemoryFilter(consolidated=False),
    "ids": MemoryFilter(ids=("e2", "f1", "f2", "unknown")),
    "no ids": MemoryFilter(ids=()),
    "combined": MemoryFilter(layers=("episodic",), tags=("money",), since=T0 + DAY, session_id="s2"),
}
