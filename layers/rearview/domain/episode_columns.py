"""Episodes loaded in bulk, field by field: what `MemoryStore.load_episodes` takes.

A bulk load through `apply` (an archive, another system's memories, a corpus) spent about a third of its time
making one `Episode` model per row before the store saw it. `EpisodeColumns` holds the same fields as one list per
field, validated once per column (pydantic's core checks a whole list in one call, with the limits a write has),
and a store that inserts columns (SQLite) inserts them without making a model per row; the others insert
`episodes()`. Times are epoch seconds, UTC.

A load inserts: every id is new to the namespace. The fields not given take an `Episode`'s defaults (importance
0.5, no entities, tags, type, outcome or session, `created_at` = `occurred_at`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rearview.domain.limits import (
    LABEL_PATTERN,
    MAX_ENTITIES,
    MAX_ENTITY_CHARS,
    MAX_EPISODE_CHARS,
    MAX_SOURCE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    SOURCE_PATTERN,
    MemoryId,
    SessionId,
)
from rearview.domain.memory import Episode, OutcomeStatus
from rearview.domain.metadata import Metadata
from rearview.domain.timestamps import EARLIEST_YEAR, LATEST_YEAR, utc_from_epoch
from rearview.errors import InvalidInput

# Episodes in one load: one transaction, its rows and their vectors held in memory at once.
MAX_LOAD_EPISODES = 50_000
# The epoch seconds of the calendar a request may name (timestamps.EARLIEST_YEAR to LATEST_YEAR).
EARLIEST_EPOCH = datetime(EARLIEST_YEAR, 1, 1, tzinfo=UTC).timestamp()
LATEST_EPOCH = datetime(LATEST_YEAR, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()

EpochSeconds = Annotated[float, Field(ge=EARLIEST_EPOCH, le=LATEST_EPOCH, allow_inf_nan=False)]
_Content = Annotated[str, Field(min_length=1, max_length=MAX_EPISODE_CHARS, pattern=r"\S")]
_Entity = Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_ENTITY_CHARS)]
_Tag = Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_TAG_CHARS)]
_Label = Annotated[str, Field(pattern=LABEL_PATTERN, max_length=64)]
_Outcome = Annotated[str, Field(max_length=500)]
_Source = Annotated[str, Field(pattern=SOURCE_PATTERN, max_length=MAX_SOURCE_CHARS)]
# A context is at most the five turns before an episode (`WriteTuning.context_turns`).
MAX_CONTEXT_CHARS = 5 * MAX_EPISODE_CHARS + 4


class EpisodeColumns(BaseModel):
    """Episodes as columns: `id`, `content` and `occurred_at` for every row, any other column for every row or
    not at all (None). Each column is named as the `Episode` field it fills."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: list[MemoryId] = Field(min_length=1, max_length=MAX_LOAD_EPISODES)
    content: list[_Content]
    occurred_at: list[EpochSeconds]
    created_at: list[EpochSeconds] | None = None
    entities: list[Annotated[list[_Entity], Field(max_length=MAX_ENTITIES)]] | None = None
    tags: list[Annotated[list[_Tag], Field(max_length=MAX_TAGS)]] | None = None
    importance: list[Annotated[float, Field(ge=0.0, le=1.0)]] | None = None
    event_type: list[_Label | None] | None = None
    outcome: list[_Outcome | None] | None = None
    outcome_status: list[OutcomeStatus | None] | None = None
    session_id: list[SessionId | None] | None = None
    # The text of the turns before each (the write path's `context`), and what a write would have stored with it.
    context: list[Annotated[str, Field(max_length=MAX_CONTEXT_CHARS)]] | None = None
    redacted: list[bool] | None = None
    metadata: list[Metadata] | None = None
    source: list[_Source | None] | None = None
    expires_at: list[EpochSeconds | None] | None = None

    @model_validator(mode="after")
    def _rows_line_up(self) -> EpisodeColumns:
        count = len(self.id)
        for name in type(self).model_fields:
            column = getattr(self, name)
            if column is not None and len(column) != count:
                raise ValueError(f"{name}: {len(column)} values for {count} ids; a column has one value per id")
        if len(set(self.id)) != count:
            seen: set[str] = set()
            for i, memory_id in enumerate(self.id):
                if memory_id in seen:
                    raise ValueError(f"id.{i}: {memory_id!r} appears twice")
                seen.add(memory_id)
        return self

    @classmethod
    def of(cls, **columns: Sequence[Any] | None) -> EpisodeColumns:
        """The columns validated; InvalidInput naming the column and row (`content.17`) and the limit otherwise."""
        try:
            return cls.model_validate(columns)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            message = first["msg"].removeprefix("Value error, ")
            if not where:  # the model validator's message names the column itself
                where = message.partition(":")[0]
                raise InvalidInput(message, field=where) from None
            raise InvalidInput(f"{where}: {message}", field=where) from None

    def __len__(self) -> int:
        return len(self.id)

    def given(self, name: str) -> list[Any] | None:
        """The column of that `Episode` field, or None if not given (a field the load never sets included)."""
        return getattr(self, name, None) if name in type(self).model_fields else None

    def episodes(self, namespace: str) -> list[Episode]:
        """The rows as `Episode` models, in order: what a store without a column path inserts."""
        count = len(self.id)
        present = {name: getattr(self, name) for name in type(self).model_fields if getattr(self, name) is not None}
        times = {"occurred_at", "created_at", "expires_at"}
        rows = []
        for i in range(count):
            fields = {name: column[i] for name, column in present.items() if name not in times}
            occurred_at = utc_from_epoch(self.occurred_at[i])
            created_at = utc_from_epoch(self.created_at[i]) if self.created_at is not None else occurred_at
            expires = self.expires_at[i] if self.expires_at is not None else None
            expires_at = utc_from_epoch(expires) if expires is not None else None
            rows.append(
                Episode(
                    namespace=namespace, occurred_at=occurred_at, created_at=created_at, expires_at=expires_at, **fields
                )
            )
        return rows


def checked_vectors(rows: EpisodeColumns, vectors: np.ndarray | None, dim: int) -> np.ndarray | None:
    """`vectors` as one float32 row of `dim` (0: any one dimension) per episode of `rows` (None: the episodes
    have none); InvalidInput naming `vectors` and the shape expected otherwise."""
    if vectors is None:
        return None
    array = np.ascontiguousarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != len(rows) or (dim and array.shape[1] != dim):
        raise InvalidInput(
            f"vectors: expected shape ({len(rows)}, {dim or 'dim'}), one vector per episode, got {tuple(array.shape)}",
            field="vectors",
        )
    if not np.isfinite(array).all():
        raise InvalidInput("vectors: every value must be finite", field="vectors")
    return array
