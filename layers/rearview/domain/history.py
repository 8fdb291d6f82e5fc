"""Version history: the earlier states of a memory, kept by the store when a change replaces them, and who or what
made each change.

A store archives a memory's stored state when an update changes something a person would call the memory (its
text, labels, importance, confidence, status ...): `ArchivedVersion` is that state with the change that replaced
it. Bookkeeping (access counters, a merged repeat's count and sessions, the `consolidated` mark, an episode's
context, a fact's evidence and confirmation time) moves on without an archive. Forgetting never archives: what is
forgotten must not survive in a memory's past, so a forget also removes the history of what it deletes or
restates.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.limits import Identifier
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.timestamps import UtcDatetime

ChangeCause = Literal["write", "edit", "consolidation", "feedback", "forget", "import"]
CHANGE_CAUSES: tuple[ChangeCause, ...] = ("write", "edit", "consolidation", "feedback", "forget", "import")

# Fields whose change alone is bookkeeping, not a new version worth keeping.
UNARCHIVED_FIELDS = frozenset(
    {
        "version",
        "access_count",
        "last_accessed_at",
        "consolidated",
        "confirmations",
        "last_occurred_at",
        "session_ids",
        "context",
        "evidence",
        "last_confirmed_at",
    }
)

StoredMemory = Annotated[Episode | Fact, Field(discriminator="layer")]


class ArchivedVersion(BaseModel):
    """One earlier state of a memory, and the change that replaced it."""

    model_config = ConfigDict(extra="forbid")

    memory: StoredMemory = Field(description="The memory as it was at this version")
    replaced_by: ChangeCause = Field(description="What replaced this version: write, edit, consolidation, feedback")
    replaced_at: UtcDatetime
    actor: Identifier | None = Field(None, description="Who made the change, when a caller made it (an API key's id)")

    @property
    def version(self) -> int:
        return self.memory.version


def worth_archiving(previous: Memory, current: Memory) -> bool:
    """True if `current` differs from `previous` in anything but bookkeeping."""
    if previous.layer != current.layer:
        return True
    return previous.model_dump(exclude=set(UNARCHIVED_FIELDS)) != current.model_dump(exclude=set(UNARCHIVED_FIELDS))


def archived_versions(
    updates: Mapping[str, Memory],
    stored: Mapping[str, Memory],
    cause: ChangeCause,
    at: datetime,
    actor: str | None = None,
) -> list[ArchivedVersion]:
    """The archives an apply writes: the stored state of each updated memory whose update is worth keeping (never
    for a forget)."""
    if cause == "forget":
        return []
    archives: list[ArchivedVersion] = []
    for memory_id, current in updates.items():
        previous = stored.get(memory_id)
        if previous is not None and worth_archiving(previous, current):
            archives.append(ArchivedVersion(memory=previous, replaced_by=cause, replaced_at=at, actor=actor))
    return archives


# --- what the API answers ---------------------------------------------------------------------------------------


class MemoryVersion(BaseModel):
    """One entry of a memory's history: a state it had (or a fact it superseded), and what made it so."""

    version: int
    relation: Literal["version", "superseded"] = Field(
        description="'version': a state of this memory; 'superseded': an earlier fact this one replaced"
    )
    memory: StoredMemory
    changed_by: ChangeCause = Field(description="What made this state: write, edit, consolidation, feedback, import")
    changed_at: datetime
    actor: str | None = None


class MemoryHistory(BaseModel):
    namespace: str
    memory_id: str
    versions: list[MemoryVersion] = Field(
        description="Oldest first: the facts this one superseded, then its earlier versions, then the current one"
    )


def origin(memory: Memory) -> ChangeCause:
    """What first made a memory: consolidation for an induced one, else a write."""
    return "consolidation" if isinstance(memory, Fact) and memory.induced_by else "write"


def version_chain(current: Memory, archives: list[ArchivedVersion]) -> list[MemoryVersion]:
    """The states of one memory, oldest first: each archive, then the current state, each with its cause."""
    ordered = sorted(archives, key=lambda a: a.version)
    states: list[MemoryVersion] = []
    cause, at, actor = origin(ordered[0].memory if ordered else current), None, None
    for memory in [*(a.memory for a in ordered), current]:
        states.append(
            MemoryVersion(
                version=memory.version,
                relation="version",
                memory=memory,
                changed_by=cause,
                changed_at=at or memory.created_at,
                actor=actor,
            )
        )
        archive = next((a for a in ordered if a.memory is memory), None)
        if archive is not None:
            cause, at, actor = archive.replaced_by, archive.replaced_at, archive.actor
    return states
