"""Working memory: per-session scratch state, JSON values by key, each with an expiry."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.limits import MAX_TTL_SECONDS
from rearview.domain.timestamps import UtcDatetime


class WorkingEntry(BaseModel):
    namespace: str
    session_id: str
    key: str
    value: Any
    updated_at: UtcDatetime
    expires_at: UtcDatetime


class WorkingWrite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: Any = Field(description="Any JSON value")
    ttl_seconds: int | None = Field(None, ge=1, le=MAX_TTL_SECONDS)


class WorkingView(BaseModel):
    namespace: str
    session_id: str
    entries: dict[str, Any]
    expires_at: dict[str, datetime]
