"""Listing memories page by page, newest first, with an opaque cursor.

Memories are ordered by their time (an episode's `occurred_at`, a fact's `last_confirmed_at`) and then by id, both
descending: a total order every backend keeps alike. A cursor is the position of the last memory of a page; the
next page holds what sorts strictly after it. A memory written while a caller pages sorts either before the cursor
(already passed: it is not listed) or after it (listed once), so nothing is skipped or repeated. (A memory whose
time moves while a caller pages, a fact confirmed again, moves with it.)
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.history import StoredMemory
from rearview.domain.limits import LABEL_PATTERN, MAX_ENTITY_CHARS
from rearview.domain.memory import Kind, Memory, StoredLayer
from rearview.domain.metadata import METADATA_FILTER_DESCRIPTION, MetadataFilter
from rearview.domain.request_model import RequestModel
from rearview.domain.timestamps import RequestDatetime, as_utc
from rearview.errors import InvalidInput

MAX_PAGE = 500
DEFAULT_PAGE = 50
# The most memories one page filtered by `text` reads: a bounded request on every backend (a query, never a scan of
# the namespace); its cursor goes on from the last memory read.
TEXT_SCAN_LIMIT = 2000
MAX_TEXT_FILTER_CHARS = 200
_CURSOR_VERSION = "1"
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


@dataclass(frozen=True, order=True)
class PagePosition:
    """Where a page ended: the last memory's time and id. Later pages hold what sorts strictly before it."""

    time: datetime
    id: str

    @classmethod
    def of(cls, memory: Memory) -> PagePosition:
        return cls(as_utc(memory.occurred_at), memory.id)

    def key(self) -> tuple[str, str]:
        """The sort key every backend compares: fixed-width ISO text, then the id."""
        return (self.time.strftime(_TIME_FORMAT), self.id)

    def encode(self) -> str:
        raw = f"{_CURSOR_VERSION}|{self.time.strftime(_TIME_FORMAT)}|{self.id}".encode()
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, cursor: str) -> PagePosition:
        """The position a cursor names; InvalidInput (field `cursor`) for anything else."""
        try:
            padded = cursor + "=" * (-len(cursor) % 4)
            version, when, memory_id = base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8").split("|", 2)
            if version != _CURSOR_VERSION or not memory_id:
                raise ValueError("unknown cursor version")
            return cls(datetime.strptime(when, _TIME_FORMAT).replace(tzinfo=UTC), memory_id)
        except (ValueError, UnicodeError, binascii.Error):
            raise InvalidInput(
                "cursor: not a cursor this API returned (pass next_cursor as it is)", field="cursor"
            ) from None


def sort_key(memory: Memory) -> tuple[str, str]:
    """A memory's place in a listing (compared descending)."""
    return PagePosition.of(memory).key()


class ListQuery(RequestModel):
    """Which memories to list, newest first. The descriptions are written for the model that calls the MCP tool."""

    model_config = ConfigDict(extra="forbid")

    layer: StoredLayer | None = Field(
        None, description="Only 'episodic' (events) or 'semantic' (facts, preferences, lessons)"
    )
    tag: str | None = Field(None, pattern=LABEL_PATTERN, max_length=64, description="Only memories carrying this tag")
    event_type: str | None = Field(
        None, pattern=LABEL_PATTERN, max_length=64, description="Only episodes of this event type"
    )
    kind: Kind | None = Field(None, description="Only semantic memories of this kind: preference, fact or lesson")
    entity: str | None = Field(
        None, pattern=LABEL_PATTERN, max_length=MAX_ENTITY_CHARS, description="Only memories about this entity"
    )
    metadata: MetadataFilter | None = Field(
        None, description=METADATA_FILTER_DESCRIPTION + "; in a query string, its JSON text"
    )
    since: RequestDatetime | None = Field(None, description="Only memories from this time on, ISO 8601")
    until: RequestDatetime | None = Field(None, description="Only memories before this time, ISO 8601")
    include_superseded: bool = Field(False, description="Also facts that a later fact replaced")
    text: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_TEXT_FILTER_CHARS,
        description="Only memories whose text, tags or entities contain this, ignoring case (a filter, not a search: "
        f"a page reads at most {TEXT_SCAN_LIMIT} memories, so it may hold fewer than `limit` while `next_cursor` "
        "says there is more to read)",
    )
    limit: int = Field(DEFAULT_PAGE, ge=1, le=MAX_PAGE, description=f"Page size, 1 to {MAX_PAGE}")
    cursor: str | None = Field(
        None, max_length=1024, description="The next_cursor of the previous page; omit for the first page"
    )


class MemoryPage(BaseModel):
    items: list[StoredMemory]
    next_cursor: str | None = Field(None, description="Pass it as `cursor` for the next page; null on the last page")
    scanned: int | None = Field(
        None, description="With `text`: how many memories this page read to find its items (the others did not match)"
    )
