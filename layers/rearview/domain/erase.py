"""Erasing a namespace (and the namespaces under it), and listing the namespaces a caller may see."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class ErasedCounts(BaseModel):
    """What went from one namespace."""

    working: int = 0
    episodic: int = 0
    semantic: int = 0
    versions: int = Field(0, description="Archived earlier versions of memories")
    ledger: int = Field(0, description="Consolidation's records: runs, spend, totals, feedback counts, the lease")
    index: int = Field(0, description="Documents removed from a search index kept apart from the store")
    retention_policy: bool = Field(False, description="Whether the namespace's own retention policy was removed")

    def total(self) -> int:
        return self.working + self.episodic + self.semantic + self.versions + self.ledger


class ErasureMark(BaseModel):
    """What marking a namespace erased promises: writes accepted before the erase and still queued are dropped
    until `holds_until`; `not_reached` names the copies no erase can reach, each with when it expires."""

    holds_until: datetime
    not_reached: list[str] = Field(default_factory=list)


class EraseReceipt(BaseModel):
    namespace: str
    subtree: bool
    namespaces: dict[str, ErasedCounts] = Field(description="What went, per namespace erased")
    keys_revoked: list[str] = Field(
        default_factory=list, description="Ids of the API keys whose whole scope was erased (revoked, not deleted)"
    )
    queued_writes_dropped_until: datetime | None = Field(
        None,
        description="Writes accepted before the erase that are still queued are dropped until then, instead of "
        "bringing the namespace back (null where writes are never queued: they were stored before the erase)",
    )
    not_reached: list[str] = Field(
        default_factory=list,
        description="Copies the erase cannot reach (dead-letter queues, backups), each with when it expires",
    )
    keys_left_active: int = Field(
        0,
        description="API keys whose whole scope was erased but which stay active: revoking a key takes the `admin` "
        "permission, which the caller lacks",
    )


class NamespaceInfo(BaseModel):
    namespace: str
    episodic: int
    semantic: int = Field(description="Active semantic memories")
    semantic_superseded: int = 0
    last_write_at: datetime | None = None


class NamespaceList(BaseModel):
    namespaces: list[NamespaceInfo]
    truncated: bool = Field(False, description="True when more namespaces matched than were listed")
