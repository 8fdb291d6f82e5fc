"""Export and import: a namespace's memories as lines of JSON, one memory per line, with its earlier versions.

A line is the memory as the API returns it, plus `history`, its archived versions (oldest first). Vectors are not
exported: an import embeds the text again with the embedder it runs with, so a namespace moves between machines
and embedders alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.history import ArchivedVersion
from rearview.domain.memory import Episode, Fact, Memory

MAX_IMPORT_ITEMS = 1000
NDJSON = "application/x-ndjson"


class ExportedEpisode(Episode):
    history: list[ArchivedVersion] = Field(default_factory=list, description="Earlier versions, oldest first")


class ExportedFact(Fact):
    history: list[ArchivedVersion] = Field(default_factory=list, description="Earlier versions, oldest first")


ExportedMemory = Annotated[ExportedEpisode | ExportedFact, Field(discriminator="layer")]


def exported(memory: Memory, history: list[ArchivedVersion]) -> ExportedEpisode | ExportedFact:
    """The export line of a memory."""
    line_type = ExportedEpisode if isinstance(memory, Episode) else ExportedFact
    return line_type.model_validate({**memory.model_dump(), "history": [h.model_dump() for h in history]})


def split_exported(line: ExportedEpisode | ExportedFact) -> tuple[Memory, list[ArchivedVersion]]:
    """The memory and the history an export line carries."""
    fields = line.model_dump(exclude={"history"})
    memory: Memory = (
        Episode.model_validate(fields) if isinstance(line, ExportedEpisode) else Fact.model_validate(fields)
    )
    return memory, list(line.history)


class ImportRequest(BaseModel):
    """Memories to restore, as `export` gives them (ids, timestamps, provenance, versions and history kept)."""

    model_config = ConfigDict(extra="forbid")

    items: list[ExportedMemory] = Field(min_length=1, max_length=MAX_IMPORT_ITEMS)


# Exported memories per queued import message (where writes are queued): with their history a message stays well
# under SQS's 256 KiB, and the worker embeds a chunk in one call, well within its timeout.
IMPORT_CHUNK_ITEMS = 50


class QueuedImport(BaseModel):
    """A chunk of an accepted import as it travels through the write queue (redacted already, ids kept)."""

    model_config = ConfigDict(extra="forbid")

    namespace: str
    restore: list[ExportedMemory] = Field(min_length=1, max_length=IMPORT_CHUNK_ITEMS)
    accepted_at: datetime


class ImportResult(BaseModel):
    namespace: str
    restored: int = Field(description="Memories stored by this import")
    skipped: int = Field(
        description="Memories already present (same id): left as they are, so an import repeats safely"
    )
    ids: list[str] = Field(default_factory=list, description="The ids restored")
    accepted: int = Field(
        0,
        description="Memories accepted onto the write queue where writes are queued (AWS), restored by the worker "
        "in chunks (then `restored` and `skipped` are 0 here)",
    )


@dataclass(frozen=True)
class ExportPage:
    """One page of an export: its ndjson lines, and the cursor of the next page (None on the last)."""

    lines: list[str]
    next_cursor: str | None

    def body(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)
