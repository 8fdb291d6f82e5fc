"""Writing memories: what a caller sends, what it gets back, and the body a queued write travels in."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rearview.domain.limits import (
    LABEL_PATTERN,
    MAX_BATCH,
    MAX_CHUNKS,
    MAX_ENTITIES,
    MAX_ENTITY_CHARS,
    MAX_EPISODE_CHARS,
    MAX_FACT_CHARS,
    MAX_MEMORY_TTL_SECONDS,
    MAX_SOURCE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_WRITE_CHARS,
    SOURCE_PATTERN,
    Dimension,
    MemoryId,
    SessionId,
)
from rearview.domain.memory import Kind, OutcomeStatus, StoredLayer
from rearview.domain.metadata import MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_METADATA_KEYS, Metadata
from rearview.domain.namespaces import Namespace
from rearview.domain.request_model import RequestModel
from rearview.domain.timestamps import RequestDatetime, UtcDatetime
from rearview.errors import RearviewError


class MemoryWrite(RequestModel):
    """One memory to write. Content rules beyond length (control characters, dumps, secrets) run in the service.

    The descriptions are written for the model that calls the MCP tool; HTTP's OpenAPI and the CLI's help read
    the same words."""

    model_config = ConfigDict(extra="forbid")

    layer: StoredLayer = Field(
        "episodic",
        description="'episodic' for something that happened (an event, a decision, a conversation turn), "
        "'semantic' for a lasting fact or preference about the user or the world",
    )
    content: str = Field(
        description="The memory, as a self-contained sentence or short paragraph a later reader understands "
        f"without this conversation ({MAX_FACT_CHARS} characters at most for semantic). An episodic text longer "
        f"than {MAX_EPISODE_CHARS} characters (up to {MAX_WRITE_CHARS}) is stored as up to {MAX_CHUNKS} linked "
        "chunks, each found by recall with the id of the first as its `parent_id`. Never include secrets such as "
        "passwords or API keys."
    )
    occurred_at: RequestDatetime | None = Field(
        None, description="When it happened, ISO 8601 (UTC if no offset is given); default now"
    )
    id: MemoryId | None = Field(
        None, description="Optional idempotency id of your choosing: the same id written twice is stored once"
    )
    event_type: str | None = Field(
        None,
        pattern=LABEL_PATTERN,
        max_length=64,
        description="Episodic only: a short kind of event, e.g. 'booking', 'meeting', 'purchase'",
    )
    entities: list[Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_ENTITY_CHARS)]] = Field(
        default_factory=list,
        max_length=MAX_ENTITIES,
        description=f"Optional names of the people, places, products the memory is about (at most {MAX_ENTITIES})",
    )
    tags: list[Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_TAG_CHARS)]] = Field(
        default_factory=list,
        max_length=MAX_TAGS,
        description=f"Optional labels to filter by later, e.g. ['travel', 'work'] (at most {MAX_TAGS})",
    )
    outcome: str | None = Field(
        None,
        max_length=500,
        description="Episodic only: how it turned out, in words, e.g. 'confirmed', 'HTTP 413 Payload Too Large', "
        "'timed out after 30s'. Consolidation learns lessons from failures and what worked after them",
    )
    outcome_status: OutcomeStatus | None = Field(
        None,
        description="Episodic only: success, failure, partial or unknown; default recognised from `outcome` "
        "('failed', 'error', 'timeout', '413' are failures; 'ok', 'done', '成功' successes)",
    )
    session_id: SessionId | None = Field(
        None, description="Optional id of the conversation or task this happened in, to filter or forget by later"
    )
    dimension: Dimension | None = Field(
        None,
        description="Semantic only: the attribute the fact sets, e.g. 'diet', 'home_city', 'language'. A new fact "
        "with the same dimension supersedes the old one",
    )
    confidence: float | None = Field(
        None, ge=0.0, le=1.0, description="Semantic only: how sure the fact is, 0 to 1 (default 0.8)"
    )
    kind: Kind | None = Field(
        None,
        description="Semantic only: 'preference' (something the user wants), 'fact' (the default: something true "
        "about the user or the world) or 'lesson' (what failed and what worked)",
    )
    importance: float | None = Field(
        None, ge=0.0, le=1.0, description="Optional override of the computed importance, 0 (trivial) to 1 (critical)"
    )
    metadata: Metadata = Field(
        default_factory=dict,
        description="Optional JSON object of your own, stored and returned with the memory and filterable in "
        'recall and list_memories, e.g. {"project": "apollo", "priority": 2} (at most '
        f"{MAX_METADATA_KEYS} keys, nested {MAX_METADATA_DEPTH} levels, {MAX_METADATA_BYTES} bytes as JSON)",
    )
    source: str | None = Field(
        None,
        pattern=SOURCE_PATTERN,
        max_length=MAX_SOURCE_CHARS,
        description="Optional: where it came from, e.g. a URL, a document's name, 'user said' "
        f"(one line, at most {MAX_SOURCE_CHARS} characters)",
    )
    extract: bool | None = Field(
        None,
        description="Episodic only: also learn the facts and preferences this turn states about the user now, from "
        "this one turn (a model if one is configured, else the rules), each a semantic memory citing the turn; "
        "default false: consolidation learns from what is said again and again",
    )
    ttl_seconds: int | None = Field(
        None,
        ge=1,
        le=MAX_MEMORY_TTL_SECONDS,
        description="Optional: forget it this many seconds after it is written (it is never returned after that); "
        "default never",
    )
    expires_at: RequestDatetime | None = Field(
        None, description="Optional: forget it at this time, ISO 8601 (instead of ttl_seconds); default never"
    )

    @field_validator("content")
    @classmethod
    def _content_not_empty(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("must not be empty")
        if len(value) > MAX_WRITE_CHARS:
            raise ValueError(
                f"must be at most {MAX_WRITE_CHARS} characters (got {len(value)}); split the text into several writes"
            )
        return value


class BatchWrite(RequestModel):
    model_config = ConfigDict(extra="forbid")
    items: list[MemoryWrite] = Field(min_length=1, max_length=MAX_BATCH)


WriteStatus = Literal["stored", "accepted", "merged", "skipped"]


class WriteResult(BaseModel):
    id: str
    status: WriteStatus
    reason: str | None = None
    redacted: bool = False
    importance: float | None = None
    merged_into: str | None = None
    superseded: list[str] = Field(default_factory=list)
    chunks: list[str] = Field(
        default_factory=list,
        description="A text too long for one memory, stored as linked chunks: every chunk's id, the first being `id`",
    )


class BatchResult(BaseModel):
    results: list[WriteResult]


# --- the queued write: one accepted request as it travels through the write queue ---------------------------------

# Longest error text kept with a dead letter (SQS message attributes count against the 256 KiB message size).
MAX_ERROR_CHARS = 1000


class QueuedWrite(BaseModel):
    """One accepted write request as it travels through the queue."""

    model_config = ConfigDict(extra="forbid")

    namespace: Namespace
    items: list[MemoryWrite] = Field(min_length=1, max_length=MAX_BATCH)
    accepted_at: UtcDatetime


def queued_write_body(namespace: str, items: Sequence[MemoryWrite], accepted_at: datetime) -> str:
    """The message body of one accepted request (unset optional fields left out, to keep messages small)."""
    message = QueuedWrite(namespace=namespace, items=list(items), accepted_at=accepted_at)
    return message.model_dump_json(exclude_none=True, exclude_defaults=True)


class PoisonMessage(ValueError):
    """A message body that is not what its queue carries (a queued write, a consolidation job)."""


def parse_queued_write(body: str) -> QueuedWrite:
    """The queued write in a message body; PoisonMessage if it is not one."""
    try:
        return QueuedWrite.model_validate_json(body)
    except (ValidationError, ValueError, RearviewError) as exc:
        raise PoisonMessage(short_error(exc)) from exc


def short_error(exc: BaseException) -> str:
    """One line naming an error, at most MAX_ERROR_CHARS (what a dead letter keeps of why)."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ValidationError):
        # pydantic's message is long and multi-line; the first errors name the fields.
        text = "ValidationError: " + json.dumps(
            [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()[:5]], ensure_ascii=False
        )
    return text[:MAX_ERROR_CHARS]
