"""UTC datetimes: every datetime the domain holds is timezone-aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def utc_from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


UtcDatetime = Annotated[datetime, AfterValidator(as_utc)]
