"""Index sync: the search index follows the store. Each change of a stored memory (a DynamoDB stream record,
decoded by an adapter into an IndexChange) becomes an upsert or a delete in the index.

The store is the source of truth and the index is derived from it, so every operation here is idempotent: a
batch may be applied twice (a retried Lambda invocation) and ends in the same index. Within one batch the last
change of each memory wins (records arrive in order per item), and the batch goes to the index as one upsert
call and one delete call per namespace and layer, not one request per record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from rearview.domain.changes import IndexChange
from rearview.domain.memory import Memory, StoredLayer
from rearview.ports import IndexMaintenance


@dataclass
class SyncReport:
    """What one batch did to the index."""

    upserted: int = 0
    deleted: int = 0
    expired: int = 0
    unchanged: int = 0  # updates search cannot see, not sent
    superseded: int = 0  # changes overtaken by a later change of the same memory in the batch
    namespaces: set[str] = field(default_factory=set)


class IndexSyncService:
    """Applies batches of IndexChanges to a separate index."""

    def __init__(self, index: IndexMaintenance) -> None:
        self.index = index
        self._index_ensured = False

    def apply(self, changes: Sequence[IndexChange]) -> SyncReport:
        """Apply a batch: the last change of each memory, upserts first, then deletes (grouped).

        Before the first batch that writes, the index is ensured once (created, or its mapping given the fields a
        newer version added), so a deployment needs no manual step and an upgrade's new fields are accepted.
        """
        report = SyncReport()
        last: dict[tuple[str, StoredLayer, str], IndexChange] = {}
        for change in changes:
            earlier = last.pop(change.key, None)  # re-inserted at the end: the batch's order is kept
            if earlier is not None:
                report.superseded += 1
                # Compare the last state with the state before the batch, not with the one just before it: an
                # insert followed by an access-count update must still be indexed.
                before = (earlier.previous, earlier.previous_vector) if earlier.memory is not None else (None, None)
                change = replace(change, previous=before[0], previous_vector=before[1])
            last[change.key] = change
        upserts: list[tuple[Memory, np.ndarray | None]] = []
        deletes: dict[tuple[str, StoredLayer], list[str]] = {}
        for change in last.values():
            report.namespaces.add(change.namespace)
            if change.memory is None:
                deletes.setdefault((change.namespace, change.layer), []).append(change.memory_id)
                report.expired += int(change.expired)
            elif not change.is_search_visible():
                report.unchanged += 1
            else:
                # A memory stored without a vector is still keyword-searchable; the index leaves it out of k-NN.
                upserts.append((change.memory, change.vector))
        if (upserts or deletes) and not self._index_ensured:
            self.index.ensure_index()
            self._index_ensured = True
        if upserts:
            report.upserted = self.index.upsert(upserts)
        for (namespace, layer), ids in deletes.items():
            self.index.delete(namespace, ids, layer)
            report.deleted += len(ids)
        return report
