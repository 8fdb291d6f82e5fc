"""UTC datetimes (`rearview.domain.timestamps`): conversion, and the calendar's edges as validation errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import BaseModel, ValidationError

from rearview.domain.timestamps import UtcDatetime, as_utc


class _Stamped(BaseModel):
    at: UtcDatetime


def test_naive_times_are_utc_and_aware_ones_converted() -> None:
    assert as_utc(datetime(2026, 3, 1, 9, 30)) == datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    converted = as_utc(datetime(2026, 3, 1, 9, 30, tzinfo=timezone(timedelta(hours=-5))))
    assert converted.tzinfo is UTC and converted == datetime(2026, 3, 1, 14, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    [
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14))),
        datetime(1, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=14))),
    ],
)
def test_a_time_that_leaves_the_calendar_in_utc_is_a_value_error(value: datetime) -> None:
    with pytest.raises(ValueError, match="outside the calendar once converted to UTC"):
        as_utc(value)
    with pytest.raises(ValidationError) as refused:  # a 422 naming the field, where a model holds it
        _Stamped(at=value)
    assert refused.value.errors()[0]["loc"] == ("at",)
