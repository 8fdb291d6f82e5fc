"""When a written memory expires: `ttl_seconds` or `expires_at`, one of them, a time to come."""

from __future__ import annotations

from datetime import datetime, timedelta

from rearview.domain.write import MemoryWrite
from rearview.errors import InvalidInput


def with_expiry(item: MemoryWrite, now: datetime) -> MemoryWrite:
    """The item with its `ttl_seconds` turned into the time it expires (counted from `now`, when it is written)."""
    if item.ttl_seconds is None:
        return item
    return item.model_copy(update={"expires_at": now + timedelta(seconds=item.ttl_seconds), "ttl_seconds": None})


def check_expiry(item: MemoryWrite, now: datetime, prefix: str) -> None:
    """InvalidInput unless the item gives one expiry at most, and a time to come."""
    if item.ttl_seconds is not None and item.expires_at is not None:
        raise InvalidInput(
            f"{prefix}ttl_seconds: give ttl_seconds or expires_at, not both", field=f"{prefix}ttl_seconds"
        )
    if item.expires_at is not None and item.expires_at <= now:
        raise InvalidInput(
            f"{prefix}expires_at: must be a time to come (got {item.expires_at.isoformat()}, now is {now.isoformat()})",
            field=f"{prefix}expires_at",
        )
