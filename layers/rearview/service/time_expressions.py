"""Time expressions in recall queries ("last week", "3 days ago", "上周三") turned into UTC time ranges.

Recall uses the range to filter memories by time and searches the rest of the query by keyword, so the parser
also reports where the expression sits in the query. English and Chinese are understood; both may be mixed.

Conventions (all in UTC, the time zone of every stored memory):
- days are UTC calendar days; weeks run Monday to Sunday; a weekend is the Saturday and Sunday of a week;
- a point in time ("yesterday", "May 7", "last month", "3 weeks ago") becomes the whole calendar day, week,
  month or year it names: `since` is its first instant, `until` the first instant after it (exclusive);
- a rolling window ("past 3 days", "最近三天", "earlier today") ends at `as_of`;
- "since X" / "自X以来" runs from the start of X to `as_of`; "before X" / "X之前" from the epoch to the
  start of X;
- "between X and Y" / "from X to Y" / "从X到Y" runs from the start of X to the end of Y; a first bound without a
  year that would fall after the second takes the year before ("between December 20 and January 5");
- a date without a year ("May 7", "5月7日", "in May") is the most recent such date or month not after `as_of`;
- memory is about the past, so future words ("tomorrow", "next week", "下周") are not understood.

When several expressions occur, the one that starts first in the query wins; of expressions starting at the
same place, the longest (the most specific) wins: "the day before yesterday" beats "yesterday", "last weekend"
beats "last week", "May 7, 2023" beats "May 7", "上周三" beats "上周".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import Enum

from rearview.domain.timestamps import as_utc

# "before X" needs a lower bound; no memory predates the Unix epoch.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class TimeRange:
    """A half-open UTC interval [since, until) and the words of the query that named it."""

    since: datetime
    until: datetime
    expression: str
    start: int
    end: int


class _Kind(Enum):
    WINDOW = "window"  # ends at as_of already: "since"/"before" make no sense around it
    RELATIVE = "relative"  # counted back from as_of ("3 days ago"); "三天之前" is itself "ago", not "before"
    PERIOD = "period"  # a named day, week, month or year, relative or explicit


@dataclass(frozen=True)
class _Context:
    text: str
    as_of: datetime
    today: date


_Span = tuple[datetime, datetime]
_Resolver = Callable[[re.Match[str], _Context], _Span | None]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    resolve: _Resolver
    kind: _Kind


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    since: datetime
    until: datetime
    order: int  # rule position, the last tie-breaker, so results never depend on set ordering


# --- calendar arithmetic ---


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _days(first: date, count: int = 1) -> _Span:
    return _midnight(first), _midnight(first + timedelta(days=count))


def _monday_of(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _week(day: date, weeks_back: int = 0) -> _Span:
    return _days(_monday_of(day) - timedelta(weeks=weeks_back), 7)


def _weekend(day: date, weeks_back: int = 0) -> _Span:
    return _days(_monday_of(day) - timedelta(weeks=weeks_back) + timedelta(days=5), 2)


def _shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _month(year: int, month: int) -> _Span:
    if not 1 <= month <= 12:
        raise ValueError(f"no month {month}")
    next_year, next_month = _shift_month(year, month, 1)
    return _midnight(date(year, month, 1)), _midnight(date(next_year, next_month, 1))


def _year(year: int) -> _Span:
    return _midnight(date(year, 1, 1)), _midnight(date(year + 1, 1, 1))


def _months_before(moment: datetime, months: int) -> datetime:
    """`moment` moved back by calendar months, the day clamped to the month's length (Mar 31 -> Feb 29)."""
    year, month = _shift_month(moment.year, moment.month, -months)
    day = moment.day
    while True:
        try:
            return moment.replace(year=year, month=month, day=day)
        except ValueError:
            if day <= 28:
                raise
            day -= 1


def _latest_date(month: int, day: int, today: date) -> date:
    """The most recent month/day not after `today`; Feb 29 may lie 8 years back (1900 and 2100 skip it)."""
    for year in range(today.year, today.year - 9, -1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate <= today:
            return candidate
    raise ValueError(f"no date {month}/{day}")


def _latest_month(month: int, today: date) -> _Span:
    year = today.year if month <= today.month else today.year - 1
    return _month(year, month)


def _weekday_on_or_before(weekday: int, today: date) -> date:
    return today - timedelta(days=(today.weekday() - weekday) % 7)


def _weekday_before(weekday: int, today: date) -> date:
    return today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)


# --- numbers ---

_EN_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "couple of": 2, "a couple": 2,
    "a couple of": 2, "few": 3, "a few": 3,
}  # fmt: skip
_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}


def _en_count(words: str) -> int:
    words = " ".join(words.lower().split())
    return int(words) if words.isdigit() else _EN_COUNTS[words]


def _zh_number(numeral: str) -> int:
    """1..99 in digits or Chinese numerals (三, 十一, 二十, 九十九); 几 ("a few") counts as 3."""
    if numeral.isdigit():
        return int(numeral)
    if numeral == "几":
        return 3
    tens, ten, ones = numeral.partition("十")
    try:
        if not ten:
            if len(numeral) != 1:
                raise ValueError(f"not a number: {numeral}")
            return _ZH_DIGITS[numeral]
        if len(tens) > 1 or len(ones) > 1:
            raise ValueError(f"not a number: {numeral}")
        return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)
    except KeyError as missing:
        raise ValueError(f"not a number: {numeral}") from missing


# --- resolvers shared by both languages ---


def _unit_of(word: str) -> str:
    """Normalise an English or Chinese unit word to hour/day/week/month/year."""
    word = word.lower().rstrip("s").replace("个", "")
    return {
        "小时": "hour", "天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month",
        "年": "year",
    }.get(word, word)  # fmt: skip


def _ago(count: int, unit: str, ctx: _Context) -> _Span:
    if unit == "day":
        return _days(ctx.today - timedelta(days=count))
    if unit == "week":
        return _week(ctx.today, count)
    if unit == "month":
        return _month(*_shift_month(ctx.today.year, ctx.today.month, -count))
    return _year(ctx.today.year - count)


def _window(count: int, unit: str, ctx: _Context) -> _Span:
    if unit == "hour":
        return ctx.as_of - timedelta(hours=count), ctx.as_of
    if unit == "day":
        return ctx.as_of - timedelta(days=count), ctx.as_of
    if unit == "week":
        return ctx.as_of - timedelta(weeks=count), ctx.as_of
    if unit == "month":
        return _months_before(ctx.as_of, count), ctx.as_of
    return _months_before(ctx.as_of, 12 * count), ctx.as_of


def _calendar(unit: str, back: int, ctx: _Context) -> _Span:
    """The day/week/weekend/month/year `back` units before the one holding as_of."""
    if unit == "day":
        return _days(ctx.today - timedelta(days=back))
    if unit == "week":
        return _week(ctx.today, back)
    if unit == "weekend":
        return _weekend(ctx.today, back)
    if unit == "month":
        return _month(*_shift_month(ctx.today.year, ctx.today.month, -back))
    return _year(ctx.today.year - back)


def _fixed(unit: str, back: int) -> _Resolver:
    return lambda _m, ctx: _calendar(unit, back, ctx)


def _day_of(year: str | None, month: int, day: int, ctx: _Context) -> _Span:
    if year is None:
        return _days(_latest_date(month, day, ctx.today))
    return _days(date(int(year), month, day))


def _plausible_year(year: int) -> int:
    if not 1900 <= year <= 2100:
        raise ValueError(f"not a year: {year}")
    return year


# --- English ---

# Word edges that also hold next to CJK characters ("yesterday我们"), where \b would not.
_L = r"(?<![A-Za-z0-9])"
_R = r"(?![A-Za-z0-9])"
_COUNT = (
    r"(?P<count>\d{1,3}|a\s+couple\s+of|a\s+couple|couple\s+of|couple|a\s+few|few|an|a|one|two|three|four|five|"
    r"six|seven|eight|nine|ten|eleven|twelve)"
)
_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december",
)  # fmt: skip
_MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES, start=1)} | {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10,
    "nov": 11, "dec": 12,
}  # fmt: skip
_FULL_MONTH = "(?P<month>" + "|".join(_MONTH_NAMES) + ")"
# Abbreviations only appear next to a day or a year, where "mar", "may" or "dec" cannot be ordinary words.
_ANY_MONTH = "(?P<month>" + "|".join([*_MONTH_NAMES, "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sept",
                                      "sep", "oct", "nov", "dec"]) + r")\.?"  # fmt: skip
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
# In `date.weekday()` order; service/voice.py reads them as no one's name.
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# A bare month name or year is a date only after one of these ("in May", "since 2021"), so that "May I ask",
# "the mayor" and "2023 people" are left alone.
_DATE_LEAD = re.compile(
    r"(?<![A-Za-z])(?:in|during|since|before|of|from|between|until|till|through|early|mid|late)[\s-]+$",
    re.IGNORECASE,
)
# The second bound of a range ("from March to May", "between 2021 and 2022"), after "between" or "from": a month
# only when capitalised, so that "want to march" stays a verb.
_DATE_LEAD_JOIN = re.compile(r"(?<![A-Za-z])(?:and|to)\s+$", re.IGNORECASE)
_RANGE_OPENER_NEAR = re.compile(r"(?<![A-Za-z])(?:between|from)\s", re.IGNORECASE)
_QUESTION_END = re.compile(r"\s*[?.!。？！]*\s*")
_FOLLOWED_BY_NUMBER = re.compile(r"\s*(?:,|of)?\s*\d", re.IGNORECASE)


def _en(pattern: str) -> re.Pattern[str]:
    return re.compile(_L + "(?:" + pattern + ")" + _R, re.IGNORECASE)


def _led_by_date_word(m: re.Match[str], ctx: _Context) -> bool:
    head = ctx.text[max(0, m.start() - 12) : m.start()]
    if _DATE_LEAD.search(head) is not None:
        return True
    first = m.group(0)[:1]
    if not (first.isupper() or first.isdigit()) or _DATE_LEAD_JOIN.search(head) is None:
        return False
    return _RANGE_OPENER_NEAR.search(ctx.text[max(0, m.start() - 40) : m.start()]) is not None


def _en_ago(m: re.Match[str], ctx: _Context) -> _Span:
    return _ago(_en_count(m["count"]), _unit_of(m["unit"]), ctx)


def _en_window(m: re.Match[str], ctx: _Context) -> _Span:
    count = _en_count(m["count"]) if m["count"] else 1
    return _window(count, _unit_of(m["unit"]), ctx)


def _en_calendar(m: re.Match[str], ctx: _Context) -> _Span:
    return _calendar(m["unit"].lower(), 0 if m["mod"].lower() == "this" else 1, ctx)


def _en_before_last(m: re.Match[str], ctx: _Context) -> _Span:
    return _calendar(m["unit"].lower(), 2, ctx)


def _en_weekday(m: re.Match[str], ctx: _Context) -> _Span:
    weekday = WEEKDAYS.index(m["weekday"].lower())
    if m["mod"] and m["mod"].lower() in ("last", "previous"):
        return _days(_weekday_before(weekday, ctx.today))
    return _days(_weekday_on_or_before(weekday, ctx.today))


def _en_day(m: re.Match[str], ctx: _Context) -> _Span:
    groups = m.groupdict()
    return _day_of(groups.get("year"), _MONTHS[m["month"].lower()], int(m["day"]), ctx)


def _en_month_of_year(m: re.Match[str], _ctx: _Context) -> _Span:
    return _month(int(m["year"]), _MONTHS[m["month"].lower()])


def _en_bare_month(m: re.Match[str], ctx: _Context) -> _Span | None:
    if not _led_by_date_word(m, ctx) or _FOLLOWED_BY_NUMBER.match(ctx.text, m.end()):
        return None
    return _latest_month(_MONTHS[m["month"].lower()], ctx.today)


def _en_this_or_last_month_name(m: re.Match[str], ctx: _Context) -> _Span | None:
    # "This may take a while": the modal verb is only ever a month here when capitalised.
    if m["month"].lower() == "may" and m["month"] != "May":
        return None
    if _FOLLOWED_BY_NUMBER.match(ctx.text, m.end()):
        return None
    month = _MONTHS[m["month"].lower()]
    if m["mod"].lower() == "this":
        return _month(ctx.today.year, month)
    year = ctx.today.year if month < ctx.today.month else ctx.today.year - 1
    return _month(year, month)


def _en_year(m: re.Match[str], ctx: _Context) -> _Span | None:
    year = _plausible_year(int(m["year"]))
    # A trailing number with no preposition is only taken for a year if that year has begun ("call 2045?").
    at_end = _QUESTION_END.fullmatch(ctx.text, m.end()) is not None and year <= ctx.today.year
    if not (at_end or _led_by_date_word(m, ctx)):
        return None
    return _year(year)


def _iso_day(m: re.Match[str], _ctx: _Context) -> _Span:
    return _days(date(int(m["year"]), int(m["month"]), int(m["day"])))


def _earlier_today(_m: re.Match[str], ctx: _Context) -> _Span:
    return _midnight(ctx.today), ctx.as_of


_EN_RULES: list[_Rule] = [
    _Rule(
        _en(r"(?:the\s+)?(?:last|past|previous)\s+" + _COUNT + r"\s+(?P<unit>hours?|days?|weeks?|months?|years?)"),
        _en_window,
        _Kind.WINDOW,
    ),
    _Rule(_en(r"(?:the\s+)?past\s+(?P<unit>hour|day|week|month|year)(?P<count>)"), _en_window, _Kind.WINDOW),
    _Rule(_en(r"earlier\s+today"), _earlier_today, _Kind.WINDOW),
    _Rule(_en(_COUNT + r"\s+(?P<unit>days?|weeks?|months?|years?)\s+ago"), _en_ago, _Kind.RELATIVE),
    _Rule(_en(r"(?:the\s+)?day\s+before\s+yesterday"), _fixed("day", 2), _Kind.PERIOD),
    _Rule(_en(r"today|tonight|this\s+(?:morning|afternoon|evening)"), _fixed("day", 0), _Kind.PERIOD),
    # Days are UTC calendar days, so last night is yesterday, as tonight is today.
    _Rule(_en(r"yesterday|last\s+night"), _fixed("day", 1), _Kind.PERIOD),
    _Rule(_en(r"(?P<mod>this|last|previous)\s+(?P<unit>weekend|week|month|year)"), _en_calendar, _Kind.PERIOD),
    _Rule(_en(r"(?:the\s+)?(?P<unit>week|month|year)\s+before\s+last"), _en_before_last, _Kind.PERIOD),
    _Rule(
        _en(r"(?:(?P<mod>last|this|previous)\s+)?(?P<weekday>" + "|".join(WEEKDAYS) + ")"),
        _en_weekday,
        _Kind.PERIOD,
    ),
    _Rule(
        re.compile(r"(?<![\d-])(?P<year>\d{4})(?P<sep>[-/])(?P<month>\d{1,2})(?P=sep)(?P<day>\d{1,2})(?![\d-])"),
        _iso_day,
        _Kind.PERIOD,
    ),
    _Rule(_en(r"(?:the\s+)?" + _DAY + r"(?:\s+of)?\s+" + _ANY_MONTH + r",?\s+" + _YEAR), _en_day, _Kind.PERIOD),
    _Rule(_en(_ANY_MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR), _en_day, _Kind.PERIOD),
    _Rule(_en(r"(?:the\s+)?" + _DAY + r"(?:\s+of)?\s+" + _ANY_MONTH), _en_day, _Kind.PERIOD),
    # Not followed by ":" so that a clock time ("May 7:30") is not read as a day.
    _Rule(_en(_ANY_MONTH + r"\s+" + _DAY + r"(?!:)"), _en_day, _Kind.PERIOD),
    _Rule(_en(_ANY_MONTH + r"(?:\s+of|,)?\s+" + _YEAR), _en_month_of_year, _Kind.PERIOD),
    _Rule(_en(r"(?P<mod>this|last)\s+" + _FULL_MONTH), _en_this_or_last_month_name, _Kind.PERIOD),
    _Rule(_en(_FULL_MONTH), _en_bare_month, _Kind.PERIOD),
    _Rule(re.compile(r"(?<![A-Za-z0-9/-])(?P<year>\d{4})(?![A-Za-z0-9/年-])"), _en_year, _Kind.PERIOD),
]

# --- Chinese ---

_ZH_NUMERALS = "零〇一二三四五六七八九十两"
# A count starts where no other digit or numeral precedes it, so "30天前" is not read as "0天前".
_ZH_COUNT = rf"(?<![\d{_ZH_NUMERALS}几])(?P<count>\d{{1,3}}|[{_ZH_NUMERALS}]{{1,3}}|几)"
_ZH_MONTH = r"(?P<month>\d{1,2}|十[一二]?|[一二三四五六七八九])"
_ZH_DAY = r"(?P<day>\d{1,2}|[二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_WEEK = r"(?:周|星期|礼拜)"
# Characters that make 今天/今年 part of another word: 如今天气 (如今 + 天气), 至今年底 (至今 + 年底).
_NOT_AFTER_NOW = r"(?<![如至迄古现当])"
# ... and 前天/前年 part of another word: 之前天气, 以前年轻, 目前天色.
_NOT_AFTER_BEFORE = r"(?<![之以目当提眼从先空此大])"
# ... and 上周/上月 part of another word: 早上周末 (早上 + 周末), 马上月底.
_NOT_AFTER_UP = r"(?<![早晚马上])"
_UNITS_WITH_WEEKS = r"天|日|周|个?星期|个?礼拜"


def _zh_ago(m: re.Match[str], ctx: _Context) -> _Span:
    return _ago(_zh_number(m["count"]), _unit_of(m["unit"]), ctx)


def _zh_window(m: re.Match[str], ctx: _Context) -> _Span:
    return _window(_zh_number(m["count"]), _unit_of(m["unit"]), ctx)


def _zh_weekday_of_week(m: re.Match[str], ctx: _Context) -> _Span:
    # Unlike English "last Tuesday", 上周三 means the Wednesday of last calendar week.
    weeks_back = {"上上": 2, "上": 1}.get(m["mod"], 0)
    monday = _monday_of(ctx.today) - timedelta(weeks=weeks_back)
    return _days(monday + timedelta(days=_ZH_WEEKDAYS[m["weekday"]]))


def _zh_weekday(m: re.Match[str], ctx: _Context) -> _Span:
    return _days(_weekday_on_or_before(_ZH_WEEKDAYS[m["weekday"]], ctx.today))


def _zh_day(m: re.Match[str], ctx: _Context) -> _Span:
    return _day_of(m.groupdict().get("year"), _zh_number(m["month"]), _zh_number(m["day"]), ctx)


def _zh_month_of_year(m: re.Match[str], _ctx: _Context) -> _Span:
    return _month(int(m["year"]), _zh_number(m["month"]))


def _zh_bare_month(m: re.Match[str], ctx: _Context) -> _Span:
    month = _zh_number(m["month"])
    if not 1 <= month <= 12:
        raise ValueError(f"no month {month}")
    return _latest_month(month, ctx.today)


def _zh_year(m: re.Match[str], _ctx: _Context) -> _Span:
    return _year(_plausible_year(int(m["year"])))


def _zh(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_ZH_RULES: list[_Rule] = [
    _Rule(_zh(_ZH_COUNT + rf"(?P<unit>{_UNITS_WITH_WEEKS}|个月|年)[之以]?前"), _zh_ago, _Kind.RELATIVE),
    _Rule(
        _zh(
            r"(?:最近|过去|(?<![将接附靠亲])近|这(?=[几两]))的?"
            + _ZH_COUNT
            + rf"(?P<unit>{_UNITS_WITH_WEEKS}|个?月|年|个?小时)(?:以来|之内|以内|内|里|来)?"
        ),
        _zh_window,
        _Kind.WINDOW,
    ),  # fmt: skip
    _Rule(_zh(_NOT_AFTER_NOW + r"今(?:天|日|早|晨|晚|夜|儿)"), _fixed("day", 0), _Kind.PERIOD),
    _Rule(_zh(r"昨(?:天|日|晚|夜|儿)"), _fixed("day", 1), _Kind.PERIOD),
    _Rule(_zh(_NOT_AFTER_BEFORE + r"前(?:天|晚)"), _fixed("day", 2), _Kind.PERIOD),
    _Rule(_zh(r"大前天"), _fixed("day", 3), _Kind.PERIOD),
    _Rule(_zh(r"(?<![早晚马])上上个?" + _ZH_WEEK), _fixed("week", 2), _Kind.PERIOD),
    _Rule(_zh(_NOT_AFTER_UP + r"上[个一]?" + _ZH_WEEK), _fixed("week", 1), _Kind.PERIOD),
    _Rule(_zh(r"(?:这[个一]?|本)" + _ZH_WEEK), _fixed("week", 0), _Kind.PERIOD),
    _Rule(_zh(_NOT_AFTER_UP + r"上个?周末"), _fixed("weekend", 1), _Kind.PERIOD),
    _Rule(_zh(r"(?:这个?|本)周末"), _fixed("weekend", 0), _Kind.PERIOD),
    _Rule(_zh(r"(?<![早晚马])上上个月"), _fixed("month", 2), _Kind.PERIOD),
    _Rule(_zh(_NOT_AFTER_UP + r"上个?月"), _fixed("month", 1), _Kind.PERIOD),
    _Rule(_zh(r"(?:这个?|本)月"), _fixed("month", 0), _Kind.PERIOD),
    _Rule(_zh(_NOT_AFTER_NOW + r"(?:今|本)年(?![轻纪])"), _fixed("year", 0), _Kind.PERIOD),
    _Rule(_zh(r"(?<![过失回])去年(?![轻纪])"), _fixed("year", 1), _Kind.PERIOD),
    _Rule(_zh(_NOT_AFTER_BEFORE + r"前年(?![轻纪])"), _fixed("year", 2), _Kind.PERIOD),
    _Rule(_zh(r"大前年"), _fixed("year", 3), _Kind.PERIOD),
    _Rule(
        _zh(r"(?<![早晚马])(?P<mod>上上|上|这|本)[个一]?" + _ZH_WEEK + r"(?P<weekday>[一二三四五六日天])"),
        _zh_weekday_of_week,
        _Kind.PERIOD,
    ),
    # Not after a count or 每/下: 一周一次 ("once a week"), 每周一 ("every Monday") and 下周一 are skipped.
    _Rule(
        _zh(rf"(?<![每{_ZH_NUMERALS}几个上下这本\d])" + _ZH_WEEK + r"(?P<weekday>[一二三四五六日天])"),
        _zh_weekday,
        _Kind.PERIOD,
    ),
    _Rule(
        _zh(r"(?<!\d)(?P<year>\d{4})\s*年\s*" + _ZH_MONTH + r"\s*月\s*" + _ZH_DAY + r"\s*[日号]"),
        _zh_day,
        _Kind.PERIOD,
    ),
    _Rule(_zh(r"(?<!\d)(?P<year>\d{4})\s*年\s*" + _ZH_MONTH + r"\s*月份?"), _zh_month_of_year, _Kind.PERIOD),
    _Rule(
        _zh(rf"(?<![\d{_ZH_NUMERALS}几第])" + _ZH_MONTH + r"\s*月\s*" + _ZH_DAY + r"\s*[日号]"),
        _zh_day,
        _Kind.PERIOD,
    ),
    _Rule(_zh(rf"(?<![\d{_ZH_NUMERALS}几第])" + _ZH_MONTH + r"月份?"), _zh_bare_month, _Kind.PERIOD),
    _Rule(_zh(r"(?<!\d)(?P<year>\d{4})\s*年(?!代)"), _zh_year, _Kind.PERIOD),
]

_RULES: list[_Rule] = _EN_RULES + _ZH_RULES

# --- since / before, and the prepositions that belong to the expression ---

_EN_SINCE_BEFORE = re.compile(r"(?<![A-Za-z])(?:ever\s+)?(?P<word>since|before)\s+$", re.IGNORECASE)
_ZH_SINCE_PREFIX = re.compile(r"(?:自从|自|从)$")
# 开始/起 only mean "since" after 从/自: 昨天起床 is "got up yesterday".
_ZH_SINCE_SUFFIX = re.compile(r"以来|至今|开始|起")
_ZH_BEFORE_SUFFIX = re.compile(r"之前|以前")
_PREPOSITION = re.compile(r"(?:(?<![A-Za-z])(?:on|in|during|over|within|from)\s+|在)$", re.IGNORECASE)
_LOOK_BACK = 12  # enough for "ever since " and any preposition


def _candidate(rule: _Rule, order: int, m: re.Match[str], span: _Span, ctx: _Context) -> _Candidate:
    """Widen a match by the words around it that change or belong to it: since/before, 自…以来, on/in/在."""
    start, end = m.span()
    since, until = span
    text = ctx.text
    head = text[max(0, start - _LOOK_BACK) : start]
    if rule.kind is not _Kind.WINDOW:
        en_word = _EN_SINCE_BEFORE.search(head)
        zh_prefix = _ZH_SINCE_PREFIX.search(head)
        zh_suffix = _ZH_SINCE_SUFFIX.match(text, end)
        zh_before = _ZH_BEFORE_SUFFIX.match(text, end)
        if en_word:
            start -= len(en_word.group(0))
            if en_word["word"].lower() == "since":
                until = ctx.as_of
            else:
                since, until = EPOCH, since
            return _Candidate(start, end, since, until, order)
        if zh_suffix and (zh_prefix or zh_suffix.group(0) in ("以来", "至今")):
            start -= len(zh_prefix.group(0)) if zh_prefix else 0
            return _Candidate(start, zh_suffix.end(), since, ctx.as_of, order)
        if zh_prefix and zh_prefix.group(0) == "自从":
            return _Candidate(start - 2, end, since, ctx.as_of, order)
        if zh_before and rule.kind is _Kind.PERIOD:
            return _Candidate(start, zh_before.end(), EPOCH, since, order)
    preposition = _PREPOSITION.search(head)
    if preposition:
        start -= len(preposition.group(0))
    return _Candidate(start, end, since, until, order)


def _better(new: _Candidate, best: _Candidate | None) -> bool:
    if best is None:
        return True
    return (new.start, best.end - best.start, new.order) < (best.start, new.end - new.start, best.order)


# "between X and Y", "from X to Y", "从X到Y": two expressions that bound one range.
_RANGE_OPEN = re.compile(r"(?:(?<![A-Za-z])between\s+|从|在)$", re.IGNORECASE)
_RANGE_OPEN_WORD = re.compile(r"from\s", re.IGNORECASE)
_RANGE_JOIN = re.compile(r"\s*(?:and|to|until|till|through|thru|-|–|—|到|至)\s*$", re.IGNORECASE)


def _between(text: str, candidates: list[_Candidate]) -> _Candidate | None:
    """The first "between X and Y" / "from X to Y" / "从X到Y" in `text`: from the start of X to the end of Y.

    A bound without a year takes Y's: "between December 20 and January 5, 2024" starts in December 2023."""
    for i, first in enumerate(candidates):
        head = text[max(0, first.start - _LOOK_BACK) : first.start]
        opened = _RANGE_OPEN.search(head)
        if opened is None and not _RANGE_OPEN_WORD.match(text, first.start):
            continue
        for second in candidates[i + 1 :]:
            if second.start < first.end:
                continue
            if _RANGE_JOIN.fullmatch(text, first.end, second.start) is None:
                break
            since = first.since
            if since >= second.until:
                # The first bound was resolved against "now"; against the end of the range it is the year before.
                earlier = parse_time_range(text[first.start : first.end], second.until - timedelta(microseconds=1))
                since = earlier.since if earlier is not None else second.since
            start = first.start - (len(opened.group(0)) if opened else 0)
            return _Candidate(start, second.end, min(since, second.since), second.until, first.order)
    return None


def parse_time_range(text: str, as_of: datetime) -> TimeRange | None:
    """The time range named by the first (then longest) time expression in `text`, resolved against `as_of`.

    `as_of` is "now": aware datetimes are converted to UTC, naive ones taken as UTC. Returns None when the
    text names no time the parser understands.
    """
    now = as_utc(as_of)
    ctx = _Context(text=text, as_of=now, today=now.date())
    best: _Candidate | None = None
    longest: dict[int, _Candidate] = {}  # the longest expression starting at each position
    for order, rule in enumerate(_RULES):
        for m in rule.pattern.finditer(text):
            try:
                span = rule.resolve(m, ctx)
                if span is None:
                    continue
                candidate = _candidate(rule, order, m, span, ctx)
            except (ValueError, OverflowError):
                # An impossible date ("Feb 30", "13月", "3000 years ago"), or one whose range would leave the
                # calendar ("9999-12-31" ends on a day that does not exist), is simply not a time expression.
                continue
            if _better(candidate, best):
                best = candidate
            if _better(candidate, longest.get(candidate.start)):
                longest[candidate.start] = candidate
    if best is None:
        return None
    ranged = _between(text, sorted(longest.values(), key=lambda c: c.start))
    if ranged is not None and ranged.start <= best.start:
        best = ranged
    return TimeRange(
        since=best.since,
        until=best.until,
        expression=text[best.start : best.end],
        start=best.start,
        end=best.end,
    )


_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
_CLOSING_PUNCTUATION = ",.;:!?)]}，。；：！？、）"
_LEADING_LEFTOVER = " \t\n,;:，；：、"


def strip_time_expression(text: str, rng: TimeRange) -> str:
    """`text` without the words of `rng`, tidied for keyword search ("what did we discuss last week?" ->
    "what did we discuss?").

    If the span of `rng` no longer holds its expression (the text was edited), the expression's first
    occurrence is removed instead; if it is not there at all, `text` is returned unchanged.
    """
    start, end = rng.start, rng.end
    if text[start:end] != rng.expression:
        start = text.find(rng.expression)
        if start < 0 or not rng.expression:
            return text
        end = start + len(rng.expression)
    before, after = text[:start].rstrip(), text[end:].lstrip()
    joined_without_space = (
        not before
        or not after
        or after[0] in _CLOSING_PUNCTUATION
        or _CJK.match(before[-1]) is not None
        or _CJK.match(after[0]) is not None
    )
    result = before + ("" if joined_without_space else " ") + after
    return result.lstrip(_LEADING_LEFTOVER).rstrip()
