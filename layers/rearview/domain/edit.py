"""Editing a stored memory: what a caller may change. Content rules, redaction and re-embedding run in the service."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, model_validator

from rearview.domain.limits import (
    LABEL_PATTERN,
    MAX_ENTITIES,
    MAX_ENTITY_CHARS,
    MAX_EPISODE_CHARS,
    MAX_MEMORY_TTL_SECONDS,
    MAX_SOURCE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    SOURCE_PATTERN,
    Dimension,
)
from rearview.domain.metadata import MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_METADATA_KEYS, Metadata
from rearview.domain.request_model import RequestModel
from rearview.domain.timestamps import RequestDatetime


class MemoryEdit(RequestModel):
    """The fields to change; those left out keep their value. The descriptions are written for the model that calls
    the MCP tool."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_EPISODE_CHARS,
        description="The corrected text (the same limits and secret redaction as a write); recall finds the new "
        "text, never the old",
    )
    tags: list[Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_TAG_CHARS)]] | None = Field(
        None, max_length=MAX_TAGS, description="The memory's tags, replacing the old ones"
    )
    entities: list[Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_ENTITY_CHARS)]] | None = Field(
        None, max_length=MAX_ENTITIES, description="The entities, replacing the old ones"
    )
    metadata: Metadata | None = Field(
        None,
        description="The memory's metadata, replacing the old object ({} removes it; at most "
        f"{MAX_METADATA_KEYS} keys, nested {MAX_METADATA_DEPTH} levels, {MAX_METADATA_BYTES} bytes as JSON)",
    )
    source: str | None = Field(
        None,
        pattern=SOURCE_PATTERN,
        max_length=MAX_SOURCE_CHARS,
        description="Where it came from (a URL, a document, 'user said'); null removes it",
    )
    expires_at: RequestDatetime | None = Field(
        None, description="When to forget it, ISO 8601, a time to come; null: never"
    )
    ttl_seconds: int | None = Field(
        None,
        ge=1,
        le=MAX_MEMORY_TTL_SECONDS,
        description="Forget it this many seconds from now (instead of expires_at)",
    )
    importance: float | None = Field(None, ge=0.0, le=1.0, description="How much it matters, 0 to 1")
    confidence: float | None = Field(None, ge=0.0, le=1.0, description="Semantic only: how sure it is, 0 to 1")
    dimension: Dimension | None = Field(
        None,
        description="Semantic only: the attribute it sets; an active fact on the same dimension is superseded",
    )

    @model_validator(mode="after")
    def _something_to_change(self) -> MemoryEdit:
        if not self.model_fields_set:
            raise ValueError(
                "give at least one of content, tags, entities, importance, confidence, dimension, metadata, source, "
                "expires_at, ttl_seconds"
            )
        return self

    def changes(self) -> dict[str, object]:
        """The fields the caller set, with their new values."""
        return {name: getattr(self, name) for name in self.model_fields_set}
