"""The rules consolidation learns with: signals, outcomes, shared phrases, lessons and statements."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rearview.domain.memory import Episode
from rearview.service.hindsight.lessons import error_signature, outcome_patterns, what_changed
from rearview.service.hindsight.outcomes import recognise_outcome
from rearview.service.hindsight.phrases import shared_phrase
from rearview.service.hindsight.signals import signals_of
from rearview.service.hindsight.wording import is_request
from rearview.text_analysis import is_chinese

pytestmark = pytest.mark.unit
T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Please answer in Chinese from now on", ("preference", "language", "replies", "Chinese")),
        ("I'd rather you respond in Mandarin", ("preference", "language", "replies", "Chinese")),
        ("Chinese please, not English", ("preference", "language", "replies", "Chinese")),
        ("write the code comments in English", ("preference", "language", "code comments", "English")),
        ("能不能用中文说？", ("preference", "language", "replies", "Chinese")),
        ("中文回答就好", ("preference", "language", "replies", "Chinese")),
        ("Give me the numbers as a markdown table", ("preference", "format", "data", "a table")),
        ("Please number the deployment steps", ("preference", "format", "steps", "a numbered list")),
        ("请把结果做成表格", ("preference", "format", "data", "a table")),
        ("That's too long, be brief", ("preference", "length", "answers", "concise")),
        ("回答简短一点", ("preference", "length", "answers", "concise")),
        ("No emojis please", ("preference", "style", "emojis", "none")),
        ("give me kilometers, not miles", ("preference", "units", "measurements", "metric")),
        ("Book me a window seat", ("preference", "travel", "seat", "window")),
        ("Please use pnpm, not npm", ("preference", "tools", "npm", "pnpm")),
        ("I live in Berlin, so CET works", ("fact", "home_city", "home", "Berlin")),
        ("Here in Denver the air is dry", ("fact", "home_city", "home", "Denver")),
        ("我搬到深圳了", ("fact", "home_city", "home", "深圳")),
        ("As a nurse I can't take calls", ("fact", "job", "job", "nurse")),
        ("我是一名老师", ("fact", "job", "job", "老师")),
        ("my dog Max chewed the charger", ("fact", "pet", "dog", "Max")),
        ("I'm allergic to peanuts when we eat out", ("fact", "allergy", "peanut", "allergic")),
        ("我对花生过敏", ("fact", "allergy", "花生", "allergic")),
        ("I'm vegetarian, no meat please", ("fact", "diet", "diet", "vegetarian")),
        ("Went for my morning run, 5k", ("fact", "exercise", "routine", "running")),
        ("今天早上跑步5公里", ("fact", "exercise", "routine", "running")),
        ("羽毛球先停了，开始去练瑜伽", ("fact", "exercise", "routine", "yoga")),
    ],
)
def test_signals_name_the_dimension_facet_and_value(text: str, expected: tuple[str, str, str, str]) -> None:
    assert expected in [(s.kind, s.dimension, s.facet, s.value) for s in signals_of(text)]


@pytest.mark.parametrize(
    "text",
    [
        "Translate this into French please",  # a task, not a preference
        "I speak Chinese at home",  # a statement, not a request about replies
        "Please don't answer in English",  # negated: says what not to do, not what to do
        "Ran the tests again, all green",  # running code, not running
        "We are running out of time",
        "Ordered new running shoes online",
        "What's the capital of Peru?",
        "I don't live in Oslo any more",
    ],
)
def test_no_signal_where_the_text_states_no_preference_fact_or_habit(text: str) -> None:
    assert signals_of(text) == []


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        ("HTTP 413 Payload Too Large", "failure"),
        ("error: SSL: CERTIFICATE_VERIFY_FAILED", "failure"),
        ("timed out after 300s", "failure"),
        ("失败：权限不足", "failure"),
        ("geocoded 500 addresses", "unknown"),  # a number is no status code
        ("200 OK", "success"),
        ("done, 12 files", "success"),
        ("成功", "success"),
        ("partial success: 40 of 50", "partial"),
        ("no idea", "unknown"),
        (None, None),
        ("  ", None),
    ],
)
def test_outcome_status_is_recognised_from_the_outcome_text(outcome: str | None, status: str | None) -> None:
    assert recognise_outcome(outcome) == status


def test_shared_phrase_is_what_most_texts_say_not_any_one_of_them() -> None:
    texts = [
        "btw the staging server is staging.acme.io",
        "remember that the staging server is staging.acme.io now",
        "the staging server is staging.acme.io since the move",
    ]
    assert shared_phrase(texts, min_terms=3) == "the staging server is staging.acme.io"
    assert shared_phrase(["completely different", "nothing alike here"], min_terms=2) is None


def _call(i: int, content: str, outcome: str, tool: str = "geocoding API") -> Episode:
    when = T0 + timedelta(minutes=i)
    return Episode(
        id=f"c{i}",
        namespace="ns",
        content=content,
        occurred_at=when,
        created_at=when,
        entities=[tool],
        outcome=outcome,
        outcome_status=recognise_outcome(outcome),
    )


def test_a_numeric_fix_names_the_failing_range_and_the_working_value() -> None:
    failures = [_call(i, f"geocoded a batch of {n} addresses", "HTTP 413 Payload Too Large") for i, n in
                enumerate((200, 150, 100))]  # fmt: skip
    success = _call(3, "geocoded a batch of 50 addresses", "200 OK")
    [pattern] = outcome_patterns("geocoding API", [*failures, success], min_failures=2, recurring_min=3)
    assert pattern.success is success and error_signature(pattern.failures) == "HTTP 413 Payload Too Large"
    change = what_changed(pattern.failures, success)
    assert change is not None and (change.failed, change.worked) == ("100 or more addresses", "50 addresses")


def test_a_fix_by_added_words_names_them() -> None:
    failures = [_call(0, "pip install torch", "SSL: CERTIFICATE_VERIFY_FAILED", "pip"),
                _call(1, "pip install torch --upgrade", "error: SSL: CERTIFICATE_VERIFY_FAILED", "pip")]  # fmt: skip
    success = _call(2, "pip install torch --trusted-host pypi.org", "installed", "pip")
    change = what_changed(failures, success)
    assert change is not None and change.worked == "--trusted-host pypi.org"
    assert error_signature(failures) == "SSL: CERTIFICATE_VERIFY_FAILED"


def test_one_failure_then_a_success_is_no_lesson_and_three_failures_in_a_row_are() -> None:
    transient = [_call(0, "sent the mail", "connection reset"), _call(1, "sent the mail", "sent")]
    assert outcome_patterns("smtp", transient, min_failures=2, recurring_min=3) == []
    recurring = [_call(i, f"deploy {i}", "failed: permission denied") for i in range(3)]
    [pattern] = outcome_patterns("deploy", recurring, min_failures=2, recurring_min=3)
    assert pattern.success is None and error_signature(pattern.failures) == "permission denied"


def test_chinese_is_told_from_english() -> None:
    assert is_chinese("请用中文回答") and is_chinese("用 pnpm 而不是 npm 安装依赖")
    assert not is_chinese("Reply in Chinese (中文) please")


def test_the_user_named_in_chinese_is_no_request_to_use_something() -> None:
    assert not is_request("用户每天早上跑步五公里。")
    assert not any(s.dimension == "units" for s in signals_of("帮用户记录了早上的跑步数据，五公里。"))
    assert any(s.dimension == "units" for s in signals_of("用户要求距离用公里表示"))


@pytest.mark.parametrize(
    ("text", "seat"),
    [
        ("usual rules: aisle, no connections", "aisle"),  # a bare aisle is a seat
        ("seat 14C by the window, please", "window"),  # a seat number says a trip is booked
        ("I made this stained glass window for the church", None),  # "made" is no seat number
        ("The window in my office faces east", None),
    ],
)
def test_a_bare_window_is_a_seat_only_on_a_trip(text: str, seat: str | None) -> None:
    found = [s.value for s in signals_of(text) if s.dimension == "travel" and s.facet == "seat"]
    assert found == ([seat] if seat else [])
