"""The time-expression parser: English and Chinese time words in a recall query resolved to UTC ranges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from rearview.service.time_expressions import EPOCH, TimeRange, parse_time_range, strip_time_expression

pytestmark = pytest.mark.unit

# Wednesday 13 March 2024 (a leap year), mid-afternoon UTC.
WED = datetime(2024, 3, 13, 15, 30, tzinfo=UTC)
MON = datetime(2024, 3, 11, 9, 0, tzinfo=UTC)
SUN = datetime(2024, 3, 17, 20, 0, tzinfo=UTC)
MARCH_1 = datetime(2024, 3, 1, 10, 0, tzinfo=UTC)  # the day after Feb 29
NEW_YEAR = datetime(2024, 1, 1, 8, 0, tzinfo=UTC)  # a Monday
MARCH_31 = datetime(2024, 3, 31, 10, 0, tzinfo=UTC)
LEAP_DAY = datetime(2024, 2, 29, 12, 0, tzinfo=UTC)
MARCH_1_2025 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
# 01:00 on the 14th in Beijing is still the 13th in UTC; 22:00 on the 12th in New York is already the 13th.
BEIJING = datetime(2024, 3, 14, 1, 0, tzinfo=timezone(timedelta(hours=8)))
NEW_YORK = datetime(2024, 3, 12, 22, 0, tzinfo=timezone(timedelta(hours=-5)))


def utc(text: str) -> datetime:
    """`2024-03-13` or `2024-03-13T15:30` as an aware UTC datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def case(query: str, as_of: datetime, since: str, until: str, expression: str) -> object:
    return pytest.param(query, as_of, since, until, expression, id=f"{query}@{as_of.date()}")


CASES = [
    # --- English: days ---
    case("What did we do today?", WED, "2024-03-13", "2024-03-14", "today"),
    case("What did I eat tonight", WED, "2024-03-13", "2024-03-14", "tonight"),
    case("what did we talk about this morning?", WED, "2024-03-13", "2024-03-14", "this morning"),
    case("This afternoon's meeting", WED, "2024-03-13", "2024-03-14", "This afternoon"),
    case("this evening", WED, "2024-03-13", "2024-03-14", "this evening"),
    case("what did I say earlier today", WED, "2024-03-13", "2024-03-13T15:30", "earlier today"),
    case("What did I say yesterday?", WED, "2024-03-12", "2024-03-13", "yesterday"),
    case("YESTERDAY", WED, "2024-03-12", "2024-03-13", "YESTERDAY"),
    case("who called last night", WED, "2024-03-12", "2024-03-13", "last night"),
    case("the day before yesterday", WED, "2024-03-11", "2024-03-12", "the day before yesterday"),
    case("3 days ago", WED, "2024-03-10", "2024-03-11", "3 days ago"),
    case("three days ago", WED, "2024-03-10", "2024-03-11", "three days ago"),
    case("a day ago", WED, "2024-03-12", "2024-03-13", "a day ago"),
    case("a couple of days ago", WED, "2024-03-11", "2024-03-12", "a couple of days ago"),
    case("a few days ago", WED, "2024-03-10", "2024-03-11", "a few days ago"),
    case("twelve days ago", WED, "2024-03-01", "2024-03-02", "twelve days ago"),
    # --- English: weeks, months, years ago (the whole calendar unit) ---
    case("two weeks ago", WED, "2024-02-26", "2024-03-04", "two weeks ago"),
    case("a week ago", MON, "2024-03-04", "2024-03-11", "a week ago"),
    case("a month ago", WED, "2024-02-01", "2024-03-01", "a month ago"),
    case("3 months ago", WED, "2023-12-01", "2024-01-01", "3 months ago"),
    case("twelve months ago", WED, "2023-03-01", "2023-04-01", "twelve months ago"),
    case("one year ago", WED, "2023-01-01", "2024-01-01", "one year ago"),
    case("a couple years ago", WED, "2022-01-01", "2023-01-01", "a couple years ago"),
    # --- English: rolling windows ending at as_of ---
    case("the last 3 days", WED, "2024-03-10T15:30", "2024-03-13T15:30", "the last 3 days"),
    case("past 2 weeks", WED, "2024-02-28T15:30", "2024-03-13T15:30", "past 2 weeks"),
    case("in the last seven days", WED, "2024-03-06T15:30", "2024-03-13T15:30", "in the last seven days"),
    case("over the past few days", WED, "2024-03-10T15:30", "2024-03-13T15:30", "over the past few days"),
    case("last 2 months", WED, "2024-01-13T15:30", "2024-03-13T15:30", "last 2 months"),
    case("the past month", MARCH_31, "2024-02-29T10:00", "2024-03-31T10:00", "the past month"),
    case("last 1 year", LEAP_DAY, "2023-02-28T12:00", "2024-02-29T12:00", "last 1 year"),
    case("in the past 24 hours", WED, "2024-03-12T15:30", "2024-03-13T15:30", "in the past 24 hours"),
    # --- English: calendar weeks, months, years ---
    case("this week", WED, "2024-03-11", "2024-03-18", "this week"),
    case("last week", WED, "2024-03-04", "2024-03-11", "last week"),
    case("last weekend", WED, "2024-03-09", "2024-03-11", "last weekend"),
    case("this month", WED, "2024-03-01", "2024-04-01", "this month"),
    case("last month", WED, "2024-02-01", "2024-03-01", "last month"),
    case("this year", WED, "2024-01-01", "2025-01-01", "this year"),
    case("last year", WED, "2023-01-01", "2024-01-01", "last year"),
    case("the week before last", WED, "2024-02-26", "2024-03-04", "the week before last"),
    case("the month before last", NEW_YEAR, "2023-11-01", "2023-12-01", "the month before last"),
    case("the previous month", MARCH_31, "2024-02-01", "2024-03-01", "previous month"),
    # --- English: weekdays ---
    case("last Tuesday", WED, "2024-03-12", "2024-03-13", "last Tuesday"),
    case("last Wednesday", WED, "2024-03-06", "2024-03-07", "last Wednesday"),
    case("what did I do on Wednesday", WED, "2024-03-13", "2024-03-14", "on Wednesday"),
    case("Friday", WED, "2024-03-08", "2024-03-09", "Friday"),
    case("this Monday", WED, "2024-03-11", "2024-03-12", "this Monday"),
    # --- English: explicit dates ---
    case("on 2023-05-07", WED, "2023-05-07", "2023-05-08", "on 2023-05-07"),
    case("2023/12/31", WED, "2023-12-31", "2024-01-01", "2023/12/31"),
    case("7 May 2023", WED, "2023-05-07", "2023-05-08", "7 May 2023"),
    case("the 7th of May, 2023", WED, "2023-05-07", "2023-05-08", "the 7th of May, 2023"),
    case("May 7, 2023", WED, "2023-05-07", "2023-05-08", "May 7, 2023"),
    case("Sept. 3rd 2022", WED, "2022-09-03", "2022-09-04", "Sept. 3rd 2022"),
    case("May 7th", WED, "2023-05-07", "2023-05-08", "May 7th"),
    case("12 March", WED, "2024-03-12", "2024-03-13", "12 March"),
    case("March 13", WED, "2024-03-13", "2024-03-14", "March 13"),
    case("March 14", WED, "2023-03-14", "2023-03-15", "March 14"),
    case("Feb 29", WED, "2024-02-29", "2024-03-01", "Feb 29"),
    case("Feb 29", MARCH_1_2025, "2024-02-29", "2024-03-01", "Feb 29"),
    case("May 2023", WED, "2023-05-01", "2023-06-01", "May 2023"),
    case("in May 2023", WED, "2023-05-01", "2023-06-01", "in May 2023"),
    case("what happened in May?", WED, "2023-05-01", "2023-06-01", "in May"),
    case("in March", WED, "2024-03-01", "2024-04-01", "in March"),
    case("during December", NEW_YEAR, "2023-12-01", "2024-01-01", "during December"),
    case("last May", WED, "2023-05-01", "2023-06-01", "last May"),
    case("last February", WED, "2024-02-01", "2024-03-01", "last February"),
    case("in 2022", WED, "2022-01-01", "2023-01-01", "in 2022"),
    case("What happened 2021?", WED, "2021-01-01", "2022-01-01", "2021"),
    case("since 2023", WED, "2023-01-01", "2024-03-13T15:30", "since 2023"),
    case("since May 7", WED, "2023-05-07", "2024-03-13T15:30", "since May 7"),
    case("ever since last Tuesday", WED, "2024-03-12", "2024-03-13T15:30", "ever since last Tuesday"),
    case("before 2020", WED, "1970-01-01", "2020-01-01", "before 2020"),
    # --- English: month and year boundaries ---
    case("yesterday", MARCH_1, "2024-02-29", "2024-03-01", "yesterday"),
    case("3 days ago", MARCH_1, "2024-02-27", "2024-02-28", "3 days ago"),
    case("last month", MARCH_1, "2024-02-01", "2024-03-01", "last month"),
    case("yesterday", NEW_YEAR, "2023-12-31", "2024-01-01", "yesterday"),
    case("last week", NEW_YEAR, "2023-12-25", "2024-01-01", "last week"),
    case("last month", NEW_YEAR, "2023-12-01", "2024-01-01", "last month"),
    case("this year", NEW_YEAR, "2024-01-01", "2025-01-01", "this year"),
    case("a year ago", LEAP_DAY, "2023-01-01", "2024-01-01", "a year ago"),
    # --- as_of on a Monday ---
    case("this week", MON, "2024-03-11", "2024-03-18", "this week"),
    case("last week", MON, "2024-03-04", "2024-03-11", "last week"),
    case("last Monday", MON, "2024-03-04", "2024-03-05", "last Monday"),
    case("Monday", MON, "2024-03-11", "2024-03-12", "Monday"),
    case("last weekend", MON, "2024-03-09", "2024-03-11", "last weekend"),
    case("yesterday", MON, "2024-03-10", "2024-03-11", "yesterday"),
    case("上周日", MON, "2024-03-10", "2024-03-11", "上周日"),
    case("周一", MON, "2024-03-11", "2024-03-12", "周一"),
    # --- as_of on a Sunday ---
    case("this week", SUN, "2024-03-11", "2024-03-18", "this week"),
    case("last weekend", SUN, "2024-03-09", "2024-03-11", "last weekend"),
    case("this weekend", SUN, "2024-03-16", "2024-03-18", "this weekend"),
    case("last Sunday", SUN, "2024-03-10", "2024-03-11", "last Sunday"),
    case("Sunday", SUN, "2024-03-17", "2024-03-18", "Sunday"),
    case("本周末", SUN, "2024-03-16", "2024-03-18", "本周末"),
    case("这周三", SUN, "2024-03-13", "2024-03-14", "这周三"),
    case("上周三", SUN, "2024-03-06", "2024-03-07", "上周三"),
    # --- as_of in another time zone: days are UTC days ---
    case("today", BEIJING, "2024-03-13", "2024-03-14", "today"),
    case("今天", BEIJING, "2024-03-13", "2024-03-14", "今天"),
    case("last 2 days", BEIJING, "2024-03-11T17:00", "2024-03-13T17:00", "last 2 days"),
    case("yesterday", NEW_YORK, "2024-03-12", "2024-03-13", "yesterday"),
    # --- Chinese: days ---
    case("今天我们聊了什么", WED, "2024-03-13", "2024-03-14", "今天"),
    case("今早的会议", WED, "2024-03-13", "2024-03-14", "今早"),
    case("今晚吃什么", WED, "2024-03-13", "2024-03-14", "今晚"),
    case("昨天我说了什么", WED, "2024-03-12", "2024-03-13", "昨天"),
    case("昨日", WED, "2024-03-12", "2024-03-13", "昨日"),
    case("前天", WED, "2024-03-11", "2024-03-12", "前天"),
    case("大前天", WED, "2024-03-10", "2024-03-11", "大前天"),
    case("我三天前说过什么", WED, "2024-03-10", "2024-03-11", "三天前"),
    case("3天前", WED, "2024-03-10", "2024-03-11", "3天前"),
    case("两天前", WED, "2024-03-11", "2024-03-12", "两天前"),
    case("十天前", WED, "2024-03-03", "2024-03-04", "十天前"),
    case("二十一天前", WED, "2024-02-21", "2024-02-22", "二十一天前"),
    case("三天之前", WED, "2024-03-10", "2024-03-11", "三天之前"),
    # --- Chinese: weeks, months, years ago ---
    case("两周前", WED, "2024-02-26", "2024-03-04", "两周前"),
    case("三个星期前", WED, "2024-02-19", "2024-02-26", "三个星期前"),
    case("两个月前", WED, "2024-01-01", "2024-02-01", "两个月前"),
    case("一年前", WED, "2023-01-01", "2024-01-01", "一年前"),
    # --- Chinese: rolling windows ---
    case("最近7天", WED, "2024-03-06T15:30", "2024-03-13T15:30", "最近7天"),
    case("过去三天里", WED, "2024-03-10T15:30", "2024-03-13T15:30", "过去三天里"),
    case("近一个月", WED, "2024-02-13T15:30", "2024-03-13T15:30", "近一个月"),
    case("这几天", WED, "2024-03-10T15:30", "2024-03-13T15:30", "这几天"),
    # --- Chinese: calendar weeks, months, years ---
    case("这周", WED, "2024-03-11", "2024-03-18", "这周"),
    case("本周", WED, "2024-03-11", "2024-03-18", "本周"),
    case("上周我们讨论了什么项目", WED, "2024-03-04", "2024-03-11", "上周"),
    case("上个星期", WED, "2024-03-04", "2024-03-11", "上个星期"),
    case("上星期", WED, "2024-03-04", "2024-03-11", "上星期"),
    case("上周末", WED, "2024-03-09", "2024-03-11", "上周末"),
    case("这个月", WED, "2024-03-01", "2024-04-01", "这个月"),
    case("本月", WED, "2024-03-01", "2024-04-01", "本月"),
    case("上个月", WED, "2024-02-01", "2024-03-01", "上个月"),
    case("上月", NEW_YEAR, "2023-12-01", "2024-01-01", "上月"),
    case("今年", WED, "2024-01-01", "2025-01-01", "今年"),
    case("去年", WED, "2023-01-01", "2024-01-01", "去年"),
    case("前年", WED, "2022-01-01", "2023-01-01", "前年"),
    case("昨天", MARCH_1, "2024-02-29", "2024-03-01", "昨天"),
    # --- Chinese: weekdays ---
    case("周一开会说了什么", WED, "2024-03-11", "2024-03-12", "周一"),
    case("星期三", WED, "2024-03-13", "2024-03-14", "星期三"),
    case("礼拜五", WED, "2024-03-08", "2024-03-09", "礼拜五"),
    case("星期天", WED, "2024-03-10", "2024-03-11", "星期天"),
    case("上周三我们讨论了什么", WED, "2024-03-06", "2024-03-07", "上周三"),
    case("上个星期一", WED, "2024-03-04", "2024-03-05", "上个星期一"),
    # --- Chinese: explicit dates ---
    case("2023年5月7日", WED, "2023-05-07", "2023-05-08", "2023年5月7日"),
    case("5月7日", WED, "2023-05-07", "2023-05-08", "5月7日"),
    case("3月13号", WED, "2024-03-13", "2024-03-14", "3月13号"),
    case("2024年2月29日", WED, "2024-02-29", "2024-03-01", "2024年2月29日"),
    case("2023年5月", WED, "2023-05-01", "2023-06-01", "2023年5月"),
    case("十二月", WED, "2023-12-01", "2024-01-01", "十二月"),
    case("2023年的事", WED, "2023-01-01", "2024-01-01", "2023年"),
    case("2023-05-07我们做了什么", WED, "2023-05-07", "2023-05-08", "2023-05-07"),
    case("自去年以来", WED, "2023-01-01", "2024-03-13T15:30", "自去年以来"),
    case("从上周开始", WED, "2024-03-04", "2024-03-13T15:30", "从上周开始"),
    case("昨天之前", WED, "1970-01-01", "2024-03-12", "昨天之前"),
    # ranges: from the start of the first bound to the end of the second
    case(
        "Where was John between August 11 and August 15 2023?",
        WED,
        "2023-08-11",
        "2023-08-16",
        "between August 11 and August 15 2023",
    ),
    case("what did we ship from March to May?", WED, "2023-03-01", "2023-06-01", "from March to May"),
    case("between December 20 and January 5", WED, "2023-12-20", "2024-01-06", "between December 20 and January 5"),
    case("where did I live between 2021 and 2022", WED, "2021-01-01", "2023-01-01", "between 2021 and 2022"),
    case("from 3 days ago until yesterday", WED, "2024-03-10", "2024-03-13", "from 3 days ago until yesterday"),
    case("从上周一到上周三我们做了什么", WED, "2024-03-04", "2024-03-07", "从上周一到上周三"),
]


@pytest.mark.parametrize(("query", "as_of", "since", "until", "expression"), CASES)
def test_resolves_time_expression(query: str, as_of: datetime, since: str, until: str, expression: str) -> None:
    rng = parse_time_range(query, as_of)

    assert rng is not None
    assert (rng.since, rng.until, rng.expression) == (utc(since), utc(until), expression)
    assert query[rng.start : rng.end] == rng.expression
    assert rng.since.utcoffset() == timedelta(0) and rng.until.utcoffset() == timedelta(0)


NO_MATCH = [
    "What is Caroline's identity?",
    "Do I like tea?",
    "Maybe later",
    "the mayor said",
    "May I ask what my hobbies are?",
    "This may take a while",
    "I will march on",
    "We counted 2023 people",
    "I have 3 cats and 2023 was fun",
    "I want to march to the river",
    "Who was the last person I met?",
    "I have 3 days of vacation left",
    "Call me tomorrow",
    "Feb 30",
    "",
    "如今天气很好",
    "之前天气很好",
    "我们每周一开会",
    "一周一次",
    "下周一",
    "我喜欢喝茶吗",
    "他失去年轻的梦想",
    "早上周围很安静",
    "13月",
]


@pytest.mark.parametrize("query", NO_MATCH)
def test_ignores_text_without_time_expression(query: str) -> None:
    assert parse_time_range(query, WED) is None


@pytest.mark.parametrize(
    ("query", "expression"),
    [
        ("What did I say yesterday and last week?", "yesterday"),
        ("last week, or was it yesterday?", "last week"),
        ("the day before yesterday", "the day before yesterday"),
        ("last weekend", "last weekend"),
        ("on May 7, 2023 we met", "on May 7, 2023"),
        ("上周三和昨天", "上周三"),
        ("大前天", "大前天"),
        ("since yesterday", "since yesterday"),
        ("2023年5月7日以前", "2023年5月7日以前"),
    ],
)
def test_first_then_longest_expression_wins(query: str, expression: str) -> None:
    rng = parse_time_range(query, WED)

    assert rng is not None
    assert rng.expression == expression


def test_naive_as_of_is_taken_as_utc() -> None:
    naive = WED.replace(tzinfo=None)

    assert parse_time_range("last 3 days", naive) == parse_time_range("last 3 days", WED)


def test_since_an_explicit_date_ends_now() -> None:
    rng = parse_time_range("since 7 May 2023", WED)

    assert rng is not None
    assert (rng.since, rng.until) == (utc("2023-05-07"), WED)


def test_before_starts_at_the_epoch() -> None:
    rng = parse_time_range("before last month", WED)

    assert rng is not None
    assert (rng.since, rng.until) == (EPOCH, utc("2024-02-01"))


def test_span_points_into_the_query() -> None:
    query = "What did Caroline say 3 days ago about the trip?"

    rng = parse_time_range(query, WED)

    assert rng is not None
    assert (rng.start, rng.end) == (query.index("3 days ago"), query.index(" about"))


@pytest.mark.parametrize(
    ("query", "stripped"),
    [
        ("What did we discuss last week?", "What did we discuss?"),
        ("What did I say on Tuesday about the trip?", "What did I say about the trip?"),
        ("Yesterday, what did I eat?", "what did I eat?"),
        ("in the last 3 days what happened", "what happened"),
        ("上周我们讨论了什么项目", "我们讨论了什么项目"),
        ("我三天前说过什么", "我说过什么"),
        ("我在上周三说了什么", "我说了什么"),
    ],
)
def test_strip_removes_the_expression(query: str, stripped: str) -> None:
    rng = parse_time_range(query, WED)

    assert rng is not None
    assert strip_time_expression(query, rng) == stripped


def test_strip_finds_the_expression_when_the_span_is_stale() -> None:
    rng = TimeRange(since=EPOCH, until=WED, expression="last week", start=0, end=9)

    assert strip_time_expression("tell me about last week", rng) == "tell me about"


def test_strip_leaves_text_without_the_expression_alone() -> None:
    rng = TimeRange(since=EPOCH, until=WED, expression="last week", start=0, end=9)

    assert strip_time_expression("nothing here", rng) == "nothing here"
