"""Export and import: a namespace's memories as lines of JSON, one memory per line, with its earlier versions.

A line is the memory as the API returns it, plus `history`, its archived versions (oldest first). Vectors are not
exported: an import embeds the text again with the embedder it runs with, so a namespace moves between machines
and embedders alike.
"""

from __future__ import annotations

import re
from collections.abc import Sized
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.history import ArchivedVersion
from rearview.domain.limits import (
    DIMENSION_PATTERN,
    ID_PATTERN,
    LABEL_PATTERN,
    MAX_ENTITIES,
    MAX_ENTITY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    SESSION_PATTERN,
)
from rearview.domain.memory import MAX_EPISODE_SESSIONS, Episode, Evidence, Fact, Memory
from rearview.domain.timestamps import EARLIEST_YEAR, LATEST_YEAR

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
    """Memories to restore, as `export` gives them (ids, timestamps, provenance, versions and history kept). Read
    from JSON in pydantic's strict mode (`parse_import`), which refuses what RequestModel refuses."""

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


# What a restored memory may hold: no more than a write may give, and counts and versions that ranking, SQLite
# (64-bit integers) and DynamoDB take. A count past a billion or a version past two billion is no memory's.
MAX_RESTORED_COUNT = 10**9
MAX_RESTORED_VERSION = 2**31 - 1
MAX_RESTORED_PROVENANCE = 10_000
MAX_RESTORED_FACETS = 64
MAX_RESTORED_TEXT = 8000  # an episode's context: the turns before it, each at most an episode's length
_RANGES: dict[str, tuple[float, float]] = {
    "access_count": (0, MAX_RESTORED_COUNT),
    "confirmations": (0, MAX_RESTORED_COUNT),
    "version": (1, MAX_RESTORED_VERSION),
    "importance": (0.0, 1.0),
    "confidence": (0.0, 1.0),
}
_EVIDENCE_COUNTS = ("episodes", "occurrences", "sessions", "days", "failures", "successes")
_ID, _SESSION, _LABEL, _DIMENSION = (
    re.compile(p) for p in (ID_PATTERN, SESSION_PATTERN, LABEL_PATTERN, DIMENSION_PATTERN)
)


class RestoreProblem(ValueError):
    """What makes a restored memory unfit: the field (dotted, within the memory) and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def _number(field: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise RestoreProblem(field, f"must be between {low:g} and {high:g} (got {value!r:.40})")


def _pattern(field: str, value: str | None, pattern: re.Pattern[str], what: str) -> None:
    if value is not None and pattern.fullmatch(value) is None:
        raise RestoreProblem(field, f"must be {what} (got {value[:80]!r})")


def _labels(field: str, values: list[str], most: int, longest: int) -> None:
    if len(values) > most:
        raise RestoreProblem(field, f"at most {most} (got {len(values)})")
    for i, value in enumerate(values):
        _pattern(f"{field}.{i}", value, _LABEL, "1 to 128 characters without control characters")
        if len(value) > longest:
            raise RestoreProblem(f"{field}.{i}", f"at most {longest} characters (got {len(value)})")


def _times(model: BaseModel, prefix: str = "") -> None:
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, datetime) and not EARLIEST_YEAR <= value.year <= LATEST_YEAR:
            raise RestoreProblem(
                prefix + name, f"must lie between the years {EARLIEST_YEAR} and {LATEST_YEAR} (got {value.isoformat()})"
            )


def _evidence(evidence: Evidence | None) -> None:
    if evidence is None:
        return
    for name in _EVIDENCE_COUNTS:
        _number(f"evidence.{name}", getattr(evidence, name), 0, MAX_RESTORED_COUNT)
    _times(evidence, "evidence.")


def _most(field: str, values: Sized, most: int) -> None:
    if len(values) > most:
        raise RestoreProblem(field, f"at most {most} (got {len(values)})")


def _episode(memory: Episode) -> None:
    _labels("entities", memory.entities, MAX_ENTITIES, MAX_ENTITY_CHARS)
    _labels("event_type", [memory.event_type] if memory.event_type else [], 1, 64)
    for field, session in [("session_id", memory.session_id), *(
        (f"session_ids.{i}", s) for i, s in enumerate(memory.session_ids)
    )]:  # fmt: skip
        _pattern(field, session, _SESSION, "1 to 128 characters of A-Z a-z 0-9 _ . : @ -")
    _most("session_ids", memory.session_ids, MAX_EPISODE_SESSIONS)
    _most("outcome", memory.outcome or "", 500)
    _most("context", memory.context, MAX_RESTORED_TEXT)


def _fact(memory: Fact) -> None:
    _pattern("dimension", memory.dimension, _DIMENSION, "1 to 64 characters of A-Z a-z 0-9 _ . -")
    _pattern("superseded_by", memory.superseded_by, _ID, "a memory id")
    _most("provenance", memory.provenance, MAX_RESTORED_PROVENANCE)
    for i, source in enumerate(memory.provenance):
        _pattern(f"provenance.{i}", source, _ID, "a memory id")
    _most("facets", memory.facets, MAX_RESTORED_FACETS)
    _evidence(memory.evidence)


def check_restorable(memory: Memory) -> None:
    """RestoreProblem naming the first field of `memory` that a write could not have given or that the store and
    ranking cannot take: a count below 0, a confidence past 1, a version past range, a time outside the calendar,
    an id or label a write would refuse."""
    for name, (low, high) in _RANGES.items():
        if hasattr(memory, name):
            _number(name, getattr(memory, name), low, high)
    _times(memory)
    _pattern("id", memory.id, _ID, "1 to 128 characters of A-Z a-z 0-9 _ . : @ # -")
    _labels("tags", memory.tags, MAX_TAGS, MAX_TAG_CHARS)
    if isinstance(memory, Episode):
        _episode(memory)
    else:
        _fact(memory)
