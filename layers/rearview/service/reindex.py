"""Reindex: rebuild the search index of a namespace (or of every namespace) from the store.

The store is the source of truth and a separate index (OpenSearch) is derived from it, so whatever happened to
the index (lost, built with another mapping, drifted after an outage of index sync) it can be rebuilt: drop the
namespace's documents, then upsert every memory with its stored vector, in batches. During a rebuild the
namespace's recall finds less than it should; rebuild out of hours, or into a fresh index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from rearview.domain.namespaces import validate_namespace
from rearview.domain.search import MemoryFilter
from rearview.ports import IndexMaintenance, MemoryManagement, MemoryReader


class ReindexStore(MemoryReader, MemoryManagement, Protocol):
    """What reindex asks of the store: the namespaces, and their memories with their vectors."""


# Memories per upsert call (the index splits its own bulk requests further if it needs to).
DEFAULT_BATCH_SIZE = 200


@dataclass
class ReindexReport:
    """Per namespace: documents removed before the rebuild, and memories indexed."""

    removed: dict[str, int] = field(default_factory=dict)
    indexed: dict[str, int] = field(default_factory=dict)

    @property
    def total_indexed(self) -> int:
        return sum(self.indexed.values())


class ReindexService:
    """Rebuilds an index kept apart from the store (`SearchIndex.maintenance`) from the store."""

    def __init__(self, store: ReindexStore, index: IndexMaintenance, *, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.store = store
        self.index = index
        self.batch_size = batch_size

    def namespaces(self) -> list[str]:
        """Every namespace of the store."""
        return sorted(self.store.list_namespaces())

    def reindex(self, namespace: str | None = None) -> ReindexReport:
        """Rebuild one namespace's documents, or (None) every namespace's; returns what was done."""
        targets = [validate_namespace(namespace)] if namespace is not None else self.namespaces()
        self.index.ensure_index()
        report = ReindexReport()
        for each in targets:
            report.removed[each] = self.index.delete_namespace(each)
            report.indexed[each] = self._index_namespace(each)
        return report

    def _index_namespace(self, namespace: str) -> int:
        # Superseded facts too: the index filters them out unless a query asks for them.
        memories = self.store.list_memories(namespace, MemoryFilter(include_superseded=True))
        indexed = 0
        for start in range(0, len(memories), self.batch_size):
            batch = memories[start : start + self.batch_size]
            vectors = self.store.get_vectors(namespace, [m.id for m in batch])
            # A memory without a stored vector is still indexed for keyword search.
            indexed += self.index.upsert([(m, vectors.get(m.id)) for m in batch])
        return indexed
