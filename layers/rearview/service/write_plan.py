"""The plan of one write or batch (`rearview.service.write`): the memories it will store, by id, with what each
item before has decided, so that a later item of the batch merges into an earlier one, and a memory updated twice
carries the right version."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rearview.domain.memory import Fact, Memory


@dataclass
class WritePlan:
    """What one write or batch will store, built item by item (each item sees what the ones before it decided), and
    applied as one ChangeSet."""

    # The memories to store, by id, in the order last put (an update moves one to the end).
    upserts: dict[str, tuple[Memory, np.ndarray | None]] = field(default_factory=dict)
    # Memories touched by this plan, by id, so later items of a batch see earlier ones.
    pending: dict[str, Memory] = field(default_factory=dict)
    # The stored memories under the batch's ids, read in one call before planning (nothing is applied until the
    # plan is whole): an id already stored is answered `duplicate_id` or refused.
    stored: dict[str, Memory] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    # Stored version of each already-stored memory this plan updates: the update carries exactly that + 1.
    base_versions: dict[str, int] = field(default_factory=dict)
    inserted: set[str] = field(default_factory=set)
    # `vectors` as rows of one matrix, in the same order (a batch's duplicate check against the items before each
    # item: one product, not a stack of every earlier vector per item).
    vector_ids: list[str] = field(default_factory=list)
    _rows: dict[str, int] = field(default_factory=dict)
    _matrix: np.ndarray | None = None
    # Per row: its memory's layer is episodic; it can be merged into (not a fact that is no longer active). Kept as
    # memories are put, so a duplicate check reads two arrays rather than every earlier memory.
    _episodic: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    _open: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def insert(self, memory: Memory, vector: np.ndarray) -> None:
        self.inserted.add(memory.id)
        self._put(memory.model_copy(update={"version": 1}), vector)

    def update(self, memory: Memory, vector: np.ndarray | None = None) -> None:
        """Update a memory read from the store or planned earlier in this batch (optimistic locking kept right);
        `vector` when its content changed."""
        if memory.id in self.inserted:
            version = 1
        else:
            base = self.base_versions.setdefault(memory.id, memory.version)
            version = base + 1
        self._put(memory.model_copy(update={"version": version}), vector)

    def _put(self, memory: Memory, vector: np.ndarray | None) -> None:
        previous = self.upserts.pop(memory.id, None)
        self.upserts[memory.id] = (memory, vector if vector is not None or previous is None else previous[1])
        self.pending[memory.id] = memory
        if vector is not None:
            self.vectors[memory.id] = vector
            self._put_row(memory.id, vector)
        row = self._rows.get(memory.id)
        if row is not None:
            self._episodic[row] = memory.layer == "episodic"
            self._open[row] = not (isinstance(memory, Fact) and memory.status != "active")

    def _put_row(self, memory_id: str, vector: np.ndarray) -> None:
        row = self._rows.get(memory_id)
        if row is None:
            row = self._rows[memory_id] = len(self.vector_ids)
            self.vector_ids.append(memory_id)
        if self._matrix is None or row >= self._matrix.shape[0]:
            size = max(16, 2 * row)
            grown = np.empty((size, vector.shape[0]), dtype=np.asarray(vector).dtype)
            if self._matrix is not None:
                grown[: self._matrix.shape[0]] = self._matrix
            self._matrix = grown
            self._episodic = np.resize(self._episodic, size)
            self._open = np.resize(self._open, size)
        self._matrix[row] = vector

    def mergeable_rows(self, layer: str) -> np.ndarray:
        """The rows (of `vector_ids`) a new memory of `layer` can be merged into: same layer, and not a fact that
        is no longer active."""
        n = len(self._rows)
        return np.flatnonzero((self._episodic[:n] == (layer == "episodic")) & self._open[:n])

    def similarities(self, vector: np.ndarray) -> np.ndarray:
        """The dot product of `vector` with each row of `vectors`, in `vector_ids` order."""
        if self._matrix is None:
            return np.empty(0, dtype=np.float32)
        return self._matrix[: len(self._rows)] @ vector
