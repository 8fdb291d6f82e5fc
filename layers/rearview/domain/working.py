"""Working memory: per-session scratch state, JSON values by key, each with an expiry."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.limits import MAX_TTL_SECONDS, MAX_WORKING_VALUE_BYTES
from rearview.domain.request_model import RequestModel
from rearview.domain.timestamps import UtcDatetime


class WorkingEntry(BaseModel):
    namespace: str
    session_id: str
    key: str
    value: Any
    updated_at: UtcDatetime
    expires_at: UtcDatetime


class WorkingWrite(RequestModel):
    """One working-memory key's new value. The descriptions are written for the model that calls the MCP tool;
    HTTP's OpenAPI reads the same words."""

    model_config = ConfigDict(extra="forbid")

    value: Any = Field(
        description="Any JSON value: a string, number, list or object "
        f"(at most {MAX_WORKING_VALUE_BYTES // 1024} KiB as JSON)"
    )
    ttl_seconds: int | None = Field(
        None,
        ge=1,
        le=MAX_TTL_SECONDS,
        description="Seconds until the key expires (default 7200); every write restarts it",
    )


class WorkingView(BaseModel):
    namespace: str
    session_id: str
    entries: dict[str, Any]
    expires_at: dict[str, datetime]


class SessionEnded(BaseModel):
    """What ending a session did: its working memory cleared, and the session-end trigger fired."""

    namespace: str
    session_id: str
    cleared: int = Field(description="How many working-memory keys were removed")
    consolidation_job_sent: bool = Field(
        description="True when a consolidation job for the namespace was sent (the session-end trigger is on and a "
        "worker or queue takes jobs); the run happens in the background"
    )
