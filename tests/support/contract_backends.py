"""The backends of the contract suite, and builders of memories for its tests.

A backend joins the suite by adding one factory to BACKENDS; the tests themselves are backend-agnostic.

A backend whose index is separate from its store (the AWS backends: OpenSearch kept up to date from the
DynamoDB stream) wraps its store in `IndexSyncedStore`, which after every `apply` pushes the new state of
what changed to the index, as index_sync does from the stream; so writes made through `Backend.write`,
`Backend.delete` or straight through `backend.store.apply` all reach the index. `make_opensearch_index` gives
such a backend an OpenSearchIndex on a real OpenSearch cluster (a node assembled for the test session, see
`support.opensearch_node`) or on the OpenSearch test double, for what a real node cannot imitate.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from rearview.adapters.in_memory import InMemoryData, InMemoryMemoryStore, InMemorySearchIndex
from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex, build_opensearch_client
from rearview.adapters.sqlite import (
    ANN_DIRNAME,
    SqliteDatabase,
    SqliteMemoryStore,
    SqliteSearchIndex,
    VectorOptions,
)
from rearview.adapters.sqlite.index_replica import SqliteIndexReplica
from rearview.clock import ManualClock
from rearview.domain.changes import ChangeSet
from rearview.domain.episode_columns import EpisodeColumns
from rearview.domain.erase import ErasedCounts
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.metadata import filter_terms
from rearview.domain.search import MemoryFilter
from rearview.ports import Embedder, MemoryStore, SearchIndex
from support.opensearch_double import OpenSearchDouble
from support.opensearch_node import OpenSearchCluster

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
    tmp_path: Path,
    embedder: Embedder,
    clock: ManualClock,
    opened: Callable[[Backend], None],
    *,
    large: bool = False,
) -> Backend:
    """SQLite as configured by default; `large`: as if every namespace were large, so every search goes through
    the paths only large namespaces take (an HNSW graph per namespace and layer, saved beside the file, and a
    full-text table of its own per namespace)."""
    path = tmp_path / "data" / "rearview.db"
    vectors = VectorOptions(ann_threshold=1, ann_dir=path.parent / ANN_DIRNAME) if large else VectorOptions()
    own_fts_episodes = 1 if large else 20_000

    def open_backend(with_embedder: Embedder | None) -> Backend:
        chosen = with_embedder or embedder
        db = SqliteDatabase(path, embedder_name=chosen.name, dim=chosen.dim)

        def reopen(new_embedder: Embedder | None) -> Backend:
            db.close()
            return open_backend(new_embedder)

        backend = Backend(
            name="sqlite-large" if large else "sqlite",
            store=SqliteMemoryStore(db, clock=clock, own_fts_episodes=own_fts_episodes),
            index=SqliteSearchIndex(db, vectors=vectors),
            embedder=chosen,
            clock=clock,
            reopen=reopen,
            close=db.close,
        )
        opened(backend)
        return backend

    return open_backend(None)


class _ReplicaSyncedStore:
    """A store whose every `apply` is followed by the replica's upserts and deletes of what it changed (the stored
    state, with the stored vectors), as index sync applies a stream batch; every other call goes to the store."""

    def __init__(self, store: MemoryStore, replica: SqliteIndexReplica) -> None:
        self._store = store
        self._replica = replica

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def apply(self, namespace: str, changes: ChangeSet) -> None:
        self._store.apply(namespace, changes)
        self._upserted(namespace, [memory.id for memory, _ in changes.upserts])
        if changes.deletes:
            self._replica.delete(namespace, changes.deletes)

    def load_episodes(self, namespace: str, rows: EpisodeColumns, vectors: np.ndarray | None) -> None:
        self._store.load_episodes(namespace, rows, vectors)
        self._upserted(namespace, rows.id)

    def _upserted(self, namespace: str, upserted: list[str]) -> None:
        if upserted:
            memories = self._store.get_many(namespace, upserted)
            vectors = self._store.get_vectors(namespace, list(memories))
            self._replica.upsert([(memory, vectors.get(memory_id)) for memory_id, memory in memories.items()])

    def erase_namespace(self, namespace: str) -> ErasedCounts:
        # What the erase service does beside the store when the index is kept apart.
        erased = self._store.erase_namespace(namespace)
        self._replica.delete_namespace(namespace)
        return erased


def _sqlite_replica_backend(
    tmp_path: Path, embedder: Embedder, clock: ManualClock, opened: Callable[[Backend], None]
) -> Backend:
    """The embedded index kept apart from its store, as `rearview emulate` searches it without OpenSearch: a
    SqliteIndexReplica in a file of its own, fed after every write of the store."""

    def open_backend(with_embedder: Embedder | None) -> Backend:
        chosen = with_embedder or embedder
        db = SqliteDatabase(tmp_path / "store" / "rearview.db", embedder_name=chosen.name, dim=chosen.dim)
        replica = SqliteIndexReplica.in_directory(tmp_path / "replica", embedder_name=chosen.name, dim=chosen.dim)

        def close() -> None:
            db.close()
            replica.close()

        def reopen(new_embedder: Embedder | None) -> Backend:
            close()
            return open_backend(new_embedder)

        store = _ReplicaSyncedStore(SqliteMemoryStore(db, clock=clock), replica)
        backend = Backend("sqlite-replica", store, replica, chosen, clock, reopen, close)
        opened(backend)
        return backend

    return open_backend(None)


def _memory_backend(
    tmp_path: Path, embedder: Embedder, clock: ManualClock, opened: Callable[[Backend], None]
) -> Backend:
    """The in-memory fake. Its InMemoryData is the storage: reopening builds a new store and index over the same
    object, as the other backends open their file or table again. (tmp_path is taken for symmetry.)"""
    data = InMemoryData()

    def open_backend(with_embedder: Embedder | None) -> Backend:
        chosen = with_embedder or embedder
        store = InMemoryMemoryStore(data, embedder_name=chosen.name, dim=chosen.dim, clock=clock)
        backend = Backend("memory", store, InMemorySearchIndex(data), chosen, clock, open_backend, store.close)
        opened(backend)
        return backend

    return open_backend(None)


# --- backends whose index is separate from the store ---------------------------------------------------------


def sync_index(store: MemoryStore, index: OpenSearchIndex, namespace: str, changes: ChangeSet) -> None:
    """Push what an applied change set changed to the index: the stored state of every upserted memory (with
    its stored vector, since an upsert may keep the old one) and a delete of every deleted id."""
    upserted = [memory.id for memory, _ in changes.upserts]
    if upserted:
        memories = store.get_many(namespace, upserted)
        vectors = store.get_vectors(namespace, list(memories))
        index.upsert([(memory, vectors.get(memory_id)) for memory_id, memory in memories.items()])
    if changes.deletes:
        index.delete(namespace, changes.deletes)
    index.refresh()


class IndexSyncedStore:
    """A MemoryStore whose every `apply` is followed by `sync_index`; every other call goes to the store."""

    def __init__(self, store: MemoryStore, index: OpenSearchIndex) -> None:
        self._store = store
        self._index = index

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def apply(self, namespace: str, changes: ChangeSet) -> None:
        self._store.apply(namespace, changes)
        sync_index(self._store, self._index, namespace, changes)

    def load_episodes(self, namespace: str, rows: EpisodeColumns, vectors: np.ndarray | None) -> None:
        self._store.load_episodes(namespace, rows, vectors)
        sync_index(
            self._store, self._index, namespace, ChangeSet(upserts=[(e, None) for e in rows.episodes(namespace)])
        )

    def erase_namespace(self, namespace: str) -> ErasedCounts:
        # What the erase service does beside the store when the index is kept apart.
        erased = self._store.erase_namespace(namespace)
        self._index.delete_namespace(namespace)
        self._index.refresh()
        return erased


def connect_opensearch_index(
    url: str,
    dim: int,
    *,
    serverless: bool = False,
    name: str = "rearview-contract",
    cluster: OpenSearchCluster | None = None,
) -> OpenSearchIndex:
    """A new OpenSearchIndex (new client) on an endpoint, its index made or checked (dimension) on the way.

    `cluster`: a real cluster, whose signing and k-NN engine the index takes; None: the test double (unsigned)."""
    signed_as = cluster.signed_as if cluster else None
    index = OpenSearchIndex(
        OpenSearchConnection(url, service="aoss" if serverless else "es"),
        name,
        dim,
        client=build_opensearch_client(url, service=signed_as, region=cluster.region if cluster else None),
        engine=cluster.engine if cluster else "faiss",
    )
    index.ensure_index()
    return index


def make_opensearch_index(
    tmp_path: Path, dim: int, *, serverless: bool = False, cluster: OpenSearchCluster | None = None
) -> tuple[OpenSearchIndex, Callable[[], None]]:
    """An OpenSearchIndex and the function that ends it: a fresh index of its own on `cluster` (deleted at the
    end), or without one on a fresh OpenSearch test double (stopped at the end).

    serverless (on the double only): the double imitates an OpenSearch Serverless vector collection (no
    caller-chosen document ids, no _delete_by_query) and the index runs in its `aoss` mode. (The double keeps
    its data in memory; tmp_path is taken for symmetry with the other factories.)
    """
    if cluster is not None:
        name = f"rearview-contract-{uuid.uuid4().hex[:12]}"
        index = connect_opensearch_index(cluster.url, dim, serverless=serverless, name=name, cluster=cluster)
        return index, index.delete_index
    double = OpenSearchDouble(serverless=serverless).start()
    try:
        return connect_opensearch_index(double.url, dim, serverless=serverless), double.close
    except BaseException:
        double.close()
        raise


def _opensearch_backend(
    tmp_path: Path,
    embedder: Embedder,
    clock: ManualClock,
    opened: Callable[[Backend], None],
    *,
    serverless: bool,
    cluster: OpenSearchCluster | None = None,
) -> Backend:
    """SQLite (on tmp_path) as the store, OpenSearchIndex on `cluster` (or the double) as the index, synced after
    each apply."""
    path = tmp_path / "data" / "rearview.db"
    first_index, end_index = make_opensearch_index(tmp_path, embedder.dim, serverless=serverless, cluster=cluster)
    name = "opensearch-serverless" if serverless else "opensearch"
    ended = False

    def end() -> None:
        nonlocal ended
        if not ended:
            ended = True
            end_index()

    def open_backend(with_embedder: Embedder | None, index: OpenSearchIndex | None) -> Backend:
        chosen = with_embedder or embedder
        db = SqliteDatabase(path, embedder_name=chosen.name, dim=chosen.dim)
        try:
            index = index or connect_opensearch_index(
                first_index.endpoint, chosen.dim, serverless=serverless, name=first_index.index_name, cluster=cluster
            )
        except BaseException:
            db.close()
            raise

        def reopen(new_embedder: Embedder | None) -> Backend:
            db.close()
            index.client.close()
            return open_backend(new_embedder, None)

        def close() -> None:
            db.close()
            end()

        backend = Backend(
            name=name,
            store=IndexSyncedStore(SqliteMemoryStore(db, clock=clock), index),
            index=index,
            embedder=chosen,
            clock=clock,
            reopen=reopen,
            close=close,
        )
        opened(backend)
        return backend

    return open_backend(None, first_index)


class _StreamSyncedStore:
    """A DynamoDB store whose index follows it through the table's stream after every write, so a test can
    search right after writing (in production index sync runs asynchronously; see the integration tests)."""

    def __init__(self, store: Any, sync: Callable[[], None]) -> None:
        self._store = store
        self._sync = sync

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def apply(self, namespace: str, changes: ChangeSet) -> None:
        try:
            self._store.apply(namespace, changes)
        finally:
            self._sync()

    def load_episodes(self, namespace: str, rows: EpisodeColumns, vectors: np.ndarray | None) -> None:
        try:
            self._store.load_episodes(namespace, rows, vectors)
        finally:
            self._sync()

    def record_access(self, *args: Any) -> None:
        self._store.record_access(*args)
        self._sync()

    def record_recall(self, *args: Any, **kwargs: Any) -> None:
        self._store.record_recall(*args, **kwargs)
        self._sync()

    def erase_namespace(self, namespace: str) -> ErasedCounts:
        try:
            return self._store.erase_namespace(namespace)
        finally:
            self._sync()


def _dynamodb_backend(
    tmp_path: Path, embedder: Embedder, clock: ManualClock, opened: Callable[[Backend], None]
) -> Backend:
    """DynamoDBMemoryStore on moto; OpenSearchIndex (opensearch-py) on the OpenSearch test double, fed from the
    table's stream (moto's DynamoDB Streams)."""
    import boto3
    from moto import mock_aws

    from rearview.adapters.dynamodb import DynamoDBMemoryStore, create_table
    from support.dynamodb_stream import StreamReader, apply_records_to_index, moto_streams_client
    from support.opensearch_double import OpenSearchDouble

    # A table of its own: a module's shared backend (`filter_backend`) keeps moto's state alive while the tests'
    # own backends come and go, so a fixed name would meet the table of the backend before.
    table = f"rearview-contract-{uuid.uuid4().hex[:12]}"
    mock = mock_aws()
    mock.start()
    double = OpenSearchDouble().start()
    closed = False

    def close() -> None:
        nonlocal closed
        if not closed:
            closed = True
            double.close()
            mock.stop()

    try:
        client = boto3.client("dynamodb", region_name="us-east-1")
        streams = moto_streams_client("us-east-1")
        create_table(client, table)
        reader = StreamReader(client, streams, table)
    except BaseException:
        close()
        raise

    def open_backend(with_embedder: Embedder | None) -> Backend:
        chosen = with_embedder or embedder
        store = DynamoDBMemoryStore(table, client=client, clock=clock, embedder_name=chosen.name, dim=chosen.dim)
        index = OpenSearchIndex(OpenSearchConnection(double.url, service=None), "rearview-contract", chosen.dim)
        index.ensure_index()
        backend = Backend(
            name="dynamodb",
            store=_StreamSyncedStore(store, lambda: apply_records_to_index(reader.read(), index)),  # type: ignore[arg-type]
            index=index,
            embedder=chosen,
            clock=clock,
            reopen=open_backend,
            close=close,
        )
        opened(backend)
        return backend

    return open_backend(None)


# A backend joins the suite here: name -> factory(tmp_path, embedder, clock, opened) (call `opened` on every
# Backend made, so the fixture can close them all).
BACKENDS: dict[str, BackendFactory] = {
    "sqlite": _sqlite_backend,
    # The embedded index apart from its store, fed like OpenSearch (`aws.search=embedded`, the emulator's default).
    "sqlite-replica": _sqlite_replica_backend,
    # SQLite with every namespace past the size thresholds: searched through HNSW graphs and full-text tables of
    # their own.
    "sqlite-large": partial(_sqlite_backend, large=True),
    # The in-memory fake (tests and throwaway runs), held to the same contract.
    "memory": _memory_backend,
    "dynamodb": _dynamodb_backend,
    # OpenSearch as on a managed domain: deterministic document ids, _delete_by_query. The suite runs it on a
    # real cluster (ON_REAL_CLUSTER); this factory alone puts it on the double.
    "opensearch": partial(_opensearch_backend, serverless=False),
    # OpenSearch as on a Serverless vector collection: server-assigned ids, no _delete_by_query. On the double,
    # which refuses what a collection refuses (a real node accepts both).
    "opensearch-serverless": partial(_opensearch_backend, serverless=True),
}
# The backends that run on a real OpenSearch cluster: the fixture makes their factory with the session's
# cluster, and skips them (saying why) when there is none.
ON_REAL_CLUSTER: dict[str, Callable[[OpenSearchCluster], BackendFactory]] = {
    "opensearch": lambda cluster: partial(_opensearch_backend, serverless=False, cluster=cluster),
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
                     session_id="s1", outcome="landed on time", outcome_status="success", entities=["Berlin"],
                     metadata={"project": "apollo", "priority": 2, "labels": ["x", "y"],
                               "nested": {"project": "gemini"}}),
        make_episode(namespace, "e2", "booked a hotel", occurred_at=T0 + day, tags=["travel", "money"],
                     event_type="booking", session_id="s1", consolidated=True, outcome="card declined",
                     outcome_status="failure", entities=["Ana", "Berlin"],
                     metadata={"project": "gemini", "priority": 2.0, "urgent": True}),
        make_episode(namespace, "e3", "paid the rent", occurred_at=T0 + 2 * day, tags=["money"],
                     event_type="payment", session_id="s2", outcome_status="failure",
                     metadata={"project": "apollo", "priority": "2", "urgent": "true"}, expires_at=T0 + 10 * day),
        make_episode(namespace, "e4", "read a novel", occurred_at=T0 + 3 * day),
        make_fact(namespace, "f1", "lives in Berlin", last_confirmed_at=T0 + 0.5 * day, tags=["travel"],
                  dimension="city", entities=["Berlin"], metadata={"project": "apollo", "score": 1.5}),
        make_fact(namespace, "f2", "used to live in Paris", last_confirmed_at=T0 + 1.5 * day,
                  status="superseded", superseded_by="f1", superseded_at=T0 + 1.5 * day, dimension="city",
                  tags=["money"], metadata={"project": "apollo"}),
        make_fact(namespace, "f3", "is vegetarian", last_confirmed_at=T0 + 4 * day, dimension="diet",
                  kind="preference", entities=["Ana"], metadata={"urgent": 1}, expires_at=T0 + 5 * day),
        make_fact(namespace, "f4", "the build breaks without the cache flag", last_confirmed_at=T0 + 2.5 * day,
                  kind="lesson", dimension="tool:build", facets={"fails": "no cache"}),
    ]  # fmt: skip


def time_of(memory: Episode | Fact) -> datetime:
    return memory.occurred_at


def expected_ids(memories: Sequence[Episode | Fact], flt: MemoryFilter) -> set[str]:
    """The ids a backend must return for `flt`: MemoryFilter.matches is the semantics the core evaluates in Python
    (on fresh candidates), so every backend must agree with it exactly."""
    return {m.id for m in memories if flt.matches(m)}


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
    "outcomes any of": MemoryFilter(outcomes=("failure",)),
    "outcomes and a session": MemoryFilter(outcomes=("success", "failure"), session_id="s1"),
    "outcomes on facts only": MemoryFilter(layers=("semantic",), outcomes=("failure",)),
    "kinds any of": MemoryFilter(kinds=("preference", "lesson")),
    "kinds include plain facts": MemoryFilter(kinds=("fact",), include_superseded=True),
    "kinds on episodes only": MemoryFilter(layers=("episodic",), kinds=("lesson",)),
    # What agents send (issue 37): metadata (`rearview.domain.metadata`), entities, expiry.
    "metadata equal": MemoryFilter(metadata=filter_terms({"project": "apollo"})),
    "metadata in": MemoryFilter(metadata=filter_terms({"project": ["gemini", "zzz"]}), include_superseded=True),
    "metadata numbers by value": MemoryFilter(metadata=filter_terms({"priority": 2})),
    "metadata text is no number": MemoryFilter(metadata=filter_terms({"priority": "2"})),
    "metadata booleans": MemoryFilter(metadata=filter_terms({"urgent": True})),
    "metadata number is no boolean": MemoryFilter(metadata=filter_terms({"urgent": 1})),
    "metadata list holds": MemoryFilter(metadata=filter_terms({"labels": "y"})),
    "metadata conditions ANDed": MemoryFilter(metadata=filter_terms({"project": "apollo", "priority": [2, 3]})),
    "metadata unknown key": MemoryFilter(metadata=filter_terms({"nope": 1})),
    "metadata on superseded": MemoryFilter(metadata=filter_terms({"project": "apollo"}), include_superseded=True),
    "entities any of": MemoryFilter(entities=("Ana", "nobody")),
    "entities and metadata": MemoryFilter(entities=("Berlin",), metadata=filter_terms({"project": "apollo"})),
    "entities and a layer": MemoryFilter(layers=("semantic",), entities=("Berlin", "Ana")),
    "alive before any expiry": MemoryFilter(alive_at=T0),
    "alive when one expired": MemoryFilter(alive_at=T0 + 5 * DAY),
    "alive when both expired": MemoryFilter(alive_at=T0 + 11 * DAY, include_superseded=True),
    "alive with other conditions": MemoryFilter(alive_at=T0 + 11 * DAY, tags=("money",), since=T0 + DAY),
}
