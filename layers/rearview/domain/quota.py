"""Request quotas: how many requests an API key may make per minute, and the windows they are counted in.

Every authenticated request of a key is counted in the fixed window (a UTC minute) it arrives in; once the key's
limit is reached, its further requests in that window are refused (429) and not counted, and the next window
starts from zero. A fixed window lets a key make up to twice its limit across a window boundary (the end of one
minute and the start of the next); in exchange counting costs one atomic counter update, shared by every process
and Lambda container, where a sliding window needs two reads or a log of requests. A process counts a lease of
several requests in one update (`rearview.service.throttle`), so most requests cost no write at all.

A key's own limit (`ApiKey.requests_per_minute`) overrides the deployment's default (`throttle.requests_per_minute`);
0, on a key or as the default, means unlimited, and only where set so explicitly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rearview.errors import InvalidInput

# Counters are per UTC minute: limits read as "requests per minute".
WINDOW_SECONDS = 60
# The largest limit a key or the default may state (about 16,700 requests a second): beyond it, 0 (unlimited).
MAX_REQUESTS_PER_MINUTE = 1_000_000
# A window's counter is kept this long after the window ends, then dropped (DynamoDB's TTL, SQLite's purge).
COUNTER_RETENTION = timedelta(hours=1)


def check_requests_per_minute(value: int, field: str = "requests_per_minute") -> int:
    """A limit as a key or the settings state it: 0 (unlimited) up to MAX_REQUESTS_PER_MINUTE; InvalidInput else."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REQUESTS_PER_MINUTE:
        raise InvalidInput(
            f"{field}: must be an integer from 0 (unlimited) to {MAX_REQUESTS_PER_MINUTE} (got {value!r})",
            field=field,
        )
    return value


@dataclass(frozen=True)
class RequestLimit:
    """A finite limit: at most `per_minute` requests in each window."""

    per_minute: int

    def __post_init__(self) -> None:
        if check_requests_per_minute(self.per_minute) == 0:
            raise InvalidInput("requests_per_minute: a limit is at least 1 (0 means no limit)")

    @classmethod
    def effective(cls, key_limit: int | None, default: int) -> RequestLimit | None:
        """The limit that applies to a key: its own when it states one, else the default; None when that is 0."""
        chosen = default if key_limit is None else key_limit
        return None if chosen == 0 else cls(chosen)

    def describe(self) -> str:
        return f"{self.per_minute} request{'s' if self.per_minute != 1 else ''} per minute"


@dataclass(frozen=True)
class QuotaWindow:
    """One counting window: the UTC minute [start, end)."""

    start: datetime

    @classmethod
    def containing(cls, at: datetime) -> QuotaWindow:
        epoch = math.floor(at.timestamp())
        return cls(datetime.fromtimestamp(epoch - epoch % WINDOW_SECONDS, UTC))

    @property
    def end(self) -> datetime:
        return self.start + timedelta(seconds=WINDOW_SECONDS)

    @property
    def epoch(self) -> int:
        """The window's start in epoch seconds: its name in the counters' storage."""
        return int(self.start.timestamp())

    @property
    def expires_at(self) -> datetime:
        """When the window's counter may be dropped."""
        return self.end + COUNTER_RETENTION

    def retry_after(self, now: datetime) -> int:
        """Whole seconds from `now` until the next window starts (at least 1): the `Retry-After` of a refusal."""
        return max(1, math.ceil((self.end - now).total_seconds()))
