"""Outcomes of any shape: a failure report recognised by its shape (a typed error, an errno name, a non-zero exit)
whatever its words, and an outcome no word settles read from its subject's sequence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rearview.domain.memory import Episode
from rearview.service.hindsight.lessons import read_in_sequence
from rearview.service.hindsight.outcomes import recognise_outcome

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("ECONNRESET after 312s", "failure"),
        ("process exited with status 137", "failure"),
        ("QuotaExceeded: daily character limit reached", "failure"),
        ("ValueError: could not convert string to float: '1.234,56'", "failure"),
        ("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xb5", "failure"),
        ("RATE_LIMITED", "failure"),
        ("返回 429：请求过于频繁", "failure"),
        ("exit status 0, 1.2M rows loaded", "success"),
        ("uploaded 34/34 parts", "success"),
        ("全部 500 个查询完毕", "success"),
        ("HTTP status 200", "success"),
        ("geocoded 500 addresses", "unknown"),
    ],
)
def test_an_outcome_is_read_by_its_shape(text: str, status: str) -> None:
    assert recognise_outcome(text) == status


def _tool(i: int, outcome: str, tool: str = "csv_import") -> Episode:
    return Episode(
        id=f"e{i}",
        namespace="n",
        content=f"parse sales.csv, attempt {i}",
        occurred_at=T0 + timedelta(minutes=i),
        created_at=T0,
        entities=[tool],
        outcome=outcome,
        outcome_status=recognise_outcome(outcome),
    )


def test_what_followed_the_failures_and_looks_nothing_like_them_worked() -> None:
    pool = [
        _tool(0, "ValueError: could not convert string to float: '1.234,56'"),
        _tool(1, "ValueError: could not convert string to float: '2.010,00'"),
        _tool(2, "parsed 4,812 rows"),
    ]

    assert [e.outcome_status for e in read_in_sequence(pool)] == ["failure", "failure", "success"]


def test_an_unknown_outcome_with_no_failure_before_it_stays_unknown() -> None:
    pool = [_tool(0, "parsed 4,812 rows"), _tool(1, "ValueError: bad row", tool="other_tool")]

    assert [e.outcome_status for e in read_in_sequence(pool)] == ["unknown", "failure"]
