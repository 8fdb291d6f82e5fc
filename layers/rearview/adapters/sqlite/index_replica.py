"""SqliteIndexReplica: the embedded index (FTS5 BM25 and exact vectors, as `make run` searches) kept apart from the
store, written by index sync from the store's change stream the way OpenSearch is.

It is what `rearview emulate` searches when no OpenSearch node is reachable (`aws.search` `embedded`): the functions
keep the AWS shape (DynamoDB is the source of truth, the stream keeps the index in step, recall reads the last
minutes from the store while the index catches up), with the index in a SQLite file of its own.

The file holds copies of the memories in the embedded store's tables, which is what `SqliteSearchIndex` searches.
Their versions are the replica's own: a stream may skip versions (changes search does not see are not sent), so
an upsert replaces whatever copy is there instead of checking the version the store checked already. Index sync is
the one writer (its records arrive in order per memory); any number of processes may search the same file.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rearview.adapters.sqlite.connection import SqliteDatabase
from rearview.adapters.sqlite.memory_store import SqliteMemoryStore
from rearview.adapters.sqlite.search_index import SqliteSearchIndex
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Memory, StoredLayer
from rearview.domain.search import MemoryFilter

INDEX_FILENAME = "index.db"


class SqliteIndexReplica(SqliteSearchIndex):
    """SearchIndex and IndexMaintenance over a SQLite file of copies, upserted and deleted by index sync."""

    def __init__(self, db: SqliteDatabase) -> None:
        super().__init__(db)
        self._copies = SqliteMemoryStore(db)

    @classmethod
    def in_directory(cls, directory: Path, *, embedder_name: str, dim: int) -> SqliteIndexReplica:
        """Open (or create) `<directory>/index.db` for vectors of `embedder_name` and `dim`."""
        return cls(SqliteDatabase(Path(directory) / INDEX_FILENAME, embedder_name=embedder_name, dim=dim))

    def maintenance(self) -> SqliteIndexReplica:
        return self

    def ensure_index(self) -> bool:
        """The tables exist once the file is open: nothing to create."""
        return False

    def upsert(self, docs: Sequence[tuple[Memory, np.ndarray | None]]) -> int:
        """Replace the copies of `docs` (the last of an id wins); returns how many were written."""
        latest: dict[tuple[str, str], tuple[Memory, np.ndarray | None]] = {}
        for memory, vector in docs:
            latest[(memory.namespace, memory.id)] = (memory, vector)
        by_namespace: dict[str, list[tuple[Memory, np.ndarray | None]]] = defaultdict(list)
        for (namespace, _), doc in latest.items():
            by_namespace[namespace].append(doc)
        for namespace, group in by_namespace.items():
            stored = self._copies.get_many(namespace, [memory.id for memory, _ in group])
            changes = ChangeSet()
            for memory, vector in group:
                copy = stored.get(memory.id)
                if copy is not None and copy.layer != memory.layer:
                    self._copies.apply(namespace, ChangeSet(deletes=[memory.id]))
                    copy = None
                version = 1 if copy is None else copy.version + 1
                changes.upserts.append((memory.model_copy(update={"version": version}), vector))
            self._copies.apply(namespace, changes)
        return len(latest)

    def delete(self, namespace: str, ids: Sequence[str], layer: StoredLayer | None = None) -> None:
        if layer is not None:
            found = self._copies.get_many(namespace, list(ids))
            ids = [memory_id for memory_id, memory in found.items() if memory.layer == layer]
        if ids:
            self._copies.apply(namespace, ChangeSet(deletes=list(ids)))

    def delete_namespace(self, namespace: str) -> int:
        ids = [memory.id for memory in self._copies.list_memories(namespace, MemoryFilter(include_superseded=True))]
        self.delete(namespace, ids)
        return len(ids)

    def close(self) -> None:
        self.db.close()
