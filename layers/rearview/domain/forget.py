"""Forgetting: by ids or by a filter, and the receipt of what went."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.limits import MAX_TAGS, MemoryId, SessionId
from rearview.domain.request_model import RequestModel
from rearview.domain.timestamps import RequestDatetime


class ForgetRequest(RequestModel):
    """What to forget: ids, or a filter. The descriptions are written for the model that calls the MCP tool;
    HTTP's OpenAPI and the CLI's help read the same words."""

    model_config = ConfigDict(extra="forbid")

    ids: list[MemoryId] | None = Field(
        None, max_length=1000, description="Ids of the memories to delete (as returned by a write or a recall)"
    )
    layer: Literal["working", "episodic", "semantic"] | None = Field(
        None, description="Only this layer ('working' clears working memory of every session)"
    )
    since: RequestDatetime | None = Field(None, description="Only memories from this time on, ISO 8601")
    until: RequestDatetime | None = Field(None, description="Only memories before this time, ISO 8601")
    tags: list[str] | None = Field(None, max_length=MAX_TAGS, description="Only memories carrying any of these tags")
    session_id: SessionId | None = Field(
        None, description="Forget a session: alone, its working memory; with layer 'episodic', its episodes too"
    )
    cascade: bool = Field(
        True,
        description="Also update facts induced from the deleted episodes (they lose those sources, and go when none "
        "is left); default true",
    )


class ForgetReceipt(BaseModel):
    namespace: str
    deleted: dict[str, int] = Field(default_factory=lambda: {"working": 0, "episodic": 0, "semantic": 0})
    ids: list[str] = Field(default_factory=list)
    facts_updated: list[str] = Field(default_factory=list, description="Facts whose provenance lost deleted ids")
