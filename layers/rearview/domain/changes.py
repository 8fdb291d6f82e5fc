"""Changes: `ChangeSet` is everything one operation changes, applied by a store in one transaction;
`IndexChange` is one stored memory's change as it reaches a separate search index."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rearview.domain.episode_columns import EpisodeColumns, checked_vectors
from rearview.domain.history import ArchivedVersion, ChangeCause
from rearview.domain.memory import Memory, StoredLayer
from rearview.errors import ConcurrentUpdate, InvalidInput


@dataclass
class ChangeSet:
    """Everything one write or batch changes, applied by the store in one transaction.

    `upserts` carry the full memory; a memory with version > 1 must match the stored version - 1 (optimistic locking),
    else the store raises ConcurrentUpdate and applies nothing. A vector of None keeps the stored vector.

    History (`rearview.domain.history`): the store archives the stored state of each memory an update changes in
    earnest, as replaced by `cause` (and `actor`), in the same transaction; it removes the history of every
    deleted memory and of the ids in `purge_history`. `archived` are archives to keep as they are (an import
    restores them). With `restore`, every upsert is an insert of the memory as given, at its own version (an
    import): an id already stored refuses the set, as an insert does.
    """

    upserts: list[tuple[Memory, np.ndarray | None]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    cause: ChangeCause = "write"
    actor: str | None = None
    restore: bool = False
    archived: list[ArchivedVersion] = field(default_factory=list)
    purge_history: list[str] = field(default_factory=list)

    @classmethod
    def loading(cls, namespace: str, rows: EpisodeColumns, vectors: np.ndarray | None, dim: int) -> ChangeSet:
        """A bulk load as a change set: every row inserted as an import inserts (an id stored already refuses
        the set), with its vector. What `load_episodes` applies in a store without a path of its own for columns."""
        checked = checked_vectors(rows, vectors, dim)
        episodes = rows.episodes(namespace)
        paired = zip(episodes, checked if checked is not None else [None] * len(episodes), strict=True)
        return cls(upserts=list(paired), restore=True, cause="import")

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes or self.archived or self.purge_history)

    def history_purged(self) -> list[str]:
        """The ids whose history this set removes: every deleted memory's, and `purge_history`."""
        return list(dict.fromkeys([*self.deletes, *self.purge_history]))

    def collapsed(self, namespace: str) -> dict[str, PendingUpsert]:
        """One net upsert per id, in first-seen order: the last state wins, a v1 -> v2 chain within the set is
        allowed, and a later upsert without a vector keeps the earlier one's. Every store applies this."""
        pending: dict[str, PendingUpsert] = {}
        for memory, vector in self.upserts:
            if memory.namespace != namespace:
                raise InvalidInput(
                    f"memory {memory.id} belongs to namespace {memory.namespace!r}, not {namespace!r}",
                    field="namespace",
                )
            previous = pending.get(memory.id)
            if previous is None:
                pending[memory.id] = PendingUpsert(memory, vector, 1 if self.restore else memory.version)
                continue
            if memory.layer != previous.memory.layer or memory.version != previous.memory.version + 1:
                raise ConcurrentUpdate(
                    f"memory {memory.id}: version {memory.version} follows version {previous.memory.version} "
                    "in the same change set"
                )
            kept = vector if vector is not None else previous.vector
            pending[memory.id] = PendingUpsert(memory, kept, previous.first_version)
        return pending


@dataclass(frozen=True, slots=True)
class PendingUpsert:
    """One memory's net upsert within a ChangeSet; the stored memory must be at `first_version - 1` (or absent
    when `first_version` is 1)."""

    memory: Memory
    vector: np.ndarray | None
    first_version: int


# Fields that change without changing what search sees (recall's access bookkeeping): a change of only these
# is not sent to the index, so that every recall hit does not cost an index write.
UNSEARCHED_FIELDS = frozenset({"access_count", "last_accessed_at"})


@dataclass(frozen=True)
class IndexChange:
    """One change of a stored memory: `memory` set (with its vector) to upsert it, None to delete it.

    `previous` is the memory before the change when the record carries it (a MODIFY); `expired` marks a delete
    made by the store's TTL rather than by a caller.
    """

    namespace: str
    layer: StoredLayer
    memory_id: str
    memory: Memory | None = None
    vector: np.ndarray | None = None
    previous: Memory | None = None
    previous_vector: np.ndarray | None = None
    expired: bool = False

    @property
    def key(self) -> tuple[str, StoredLayer, str]:
        return (self.namespace, self.layer, self.memory_id)

    def is_search_visible(self) -> bool:
        """False for an update that changes nothing search looks at (only access counters)."""
        if self.memory is None or self.previous is None:
            return True
        unsearched = set(UNSEARCHED_FIELDS)
        if self.memory.model_dump(exclude=unsearched) != self.previous.model_dump(exclude=unsearched):
            return True
        if self.vector is None or self.previous_vector is None:
            return self.vector is not self.previous_vector
        return not np.array_equal(self.vector, self.previous_vector)
