"""Export and import: a namespace's memories as lines of JSON, one memory per line, with its earlier versions.

A line is the memory as the API returns it, plus `history`, its archived versions (oldest first). Vectors are not
exported: an import embeds the text again with the embedder it runs with, so a namespace moves between machines
and embedders alike.
"""

from __future__ import annotations

from dataclasses import dataclass
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


class ImportResult(BaseModel):
    namespace: str
    restored: int = Field(description="Memories stored by this import")
    skipped: int = Field(
        description="Memories already present (same id): left as they are, so an import repeats safely"
    )
    ids: list[str] = Field(default_factory=list, description="The ids restored")


@dataclass(frozen=True)
class ExportPage:
    """One page of an export: its ndjson lines, and the cursor of the next page (None on the last)."""

    lines: list[str]
    next_cursor: str | None

    def body(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)
