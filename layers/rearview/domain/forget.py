"""Forgetting: by ids or by a filter, and the receipt of what went."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.limits import ID_PATTERN, MAX_TAGS, SESSION_PATTERN
from rearview.domain.timestamps import UtcDatetime


class ForgetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: list[Annotated[str, Field(pattern=ID_PATTERN)]] | None = Field(None, max_length=1000)
    layer: Literal["working", "episodic", "semantic"] | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    tags: list[str] | None = Field(None, max_length=MAX_TAGS)
    session_id: str | None = Field(None, pattern=SESSION_PATTERN)
    cascade: bool = True


class ForgetReceipt(BaseModel):
    namespace: str
    deleted: dict[str, int] = Field(default_factory=lambda: {"working": 0, "episodic": 0, "semantic": 0})
    ids: list[str] = Field(default_factory=list)
    facts_updated: list[str] = Field(default_factory=list, description="Facts whose provenance lost deleted ids")
