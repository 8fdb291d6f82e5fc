"""UTC datetimes: every datetime the domain holds is timezone-aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator

from rearview.errors import InvalidInput


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC. A time whose conversion leaves the calendar
    (9999-12-31T23:59:59-14:00) is a ValueError, which a model's validation reports as a 422 naming the field,
    not an OverflowError (a 500)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError(f"is outside the calendar once converted to UTC (got {value.isoformat()[:40]})") from exc


def utc_from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


UtcDatetime = Annotated[datetime, AfterValidator(as_utc)]

# The years a request may name. Every computation on a time (a day before it for a session's context, a week
# around it for neighbours, a lookback of months, "yesterday" from an `as_of`) stays inside the calendar
# (years 1 to 9999) from anywhere in this range; at its very edges it would overflow.
EARLIEST_YEAR = 100
LATEST_YEAR = 9899
# The same range in epoch seconds, for a time given as a number.
EARLIEST_EPOCH = int(datetime(EARLIEST_YEAR, 1, 1, tzinfo=UTC).timestamp())
LATEST_EPOCH = int(datetime(LATEST_YEAR, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp())


def within_calendar(value: datetime) -> datetime:
    """`value` in UTC, if its year lies within [EARLIEST_YEAR, LATEST_YEAR]; ValueError (a 422 naming the field)
    otherwise. Checked before the conversion to UTC, which itself overflows at the calendar's edge."""
    if not EARLIEST_YEAR <= value.year <= LATEST_YEAR:
        raise ValueError(f"must lie between the years {EARLIEST_YEAR} and {LATEST_YEAR} (got {value.isoformat()[:40]})")
    return as_utc(value)


# A time a caller sends: bounded (above), then UTC. Stored times stay UtcDatetime, so nothing read back is refused.
RequestDatetime = Annotated[datetime, AfterValidator(within_calendar)]


def check_time_range(since: datetime | None, until: datetime | None) -> None:
    """InvalidInput (422 on `since`) unless `since` comes before `until`: recall and forget say it alike."""
    if since is not None and until is not None and since >= until:
        raise InvalidInput("since: must be before until", field="since")
