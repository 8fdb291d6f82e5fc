"""Reading a query's forms from its words: "last time" and exclusions, English and Chinese, and the phrases that
must not be taken for either."""

from __future__ import annotations

import pytest

from rearview.domain.recall import RecallQuery
from rearview.service.recall.query_forms import (
    holds_terms,
    read_query_forms,
    requested_exclusion,
    sets_apart,
)

pytestmark = pytest.mark.unit


# --- last time ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "words", "rest"),
    [
        (
            "what happened last time I deployed the billing service",
            "last time",
            "what happened I deployed the billing service",
        ),
        ("When was the last time we deployed?", "the last time", "When was we deployed?"),
        ("What broke the previous time we migrated?", "the previous time", "What broke we migrated?"),
        ("the most recent outage of the payments API", "the most recent", "outage of the payments API"),
        ("what did I most recently deploy?", "most recently", "what did I deploy?"),
        ("Last time, what did the user order?", "Last time", "what did the user order?"),
        ("上次部署账单服务的时候出了什么问题", "上次", "部署账单服务的时候出了什么问题"),
        ("上回说的那家餐厅叫什么", "上回", "说的那家餐厅叫什么"),
        ("上一次的会议说了什么", "上一次", "会议说了什么"),
        ("最近一次部署失败的原因", "最近一次", "部署失败的原因"),
        ("最后一次备份是什么时候", "最后一次", "备份是什么时候"),
    ],
)
def test_last_time_is_read_and_its_words_leave_the_search(query: str, words: str, rest: str) -> None:
    forms = read_query_forms(query)

    assert forms.last_time == words
    assert forms.text == rest
    assert forms.exclusions == ()


@pytest.mark.parametrize(
    "query",
    [
        "what happened last week",  # a time range, parsed by time_expressions
        "what did we deploy last Friday?",
        "last night's incident",
        "上周发生了什么",
        "上个月的账单",
        "at last the deploy worked, what fixed it?",
        "what is the user's last name?",
        "the last step of the recipe",
        "the last item on the list",
        "what was the last time step of the simulation?",  # a compound noun
        "which time zone does the user live in?",
        "what did we do recently?",  # a window of time, not the latest occurrence
        "三次以上次数的失败",  # 以上 + 次数
        "上海的天气怎么样",
    ],
)
def test_no_last_time_where_the_words_mean_something_else(query: str) -> None:
    forms = read_query_forms(query)

    assert forms.last_time is None
    assert forms.text == query


# --- exclusions ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "phrase", "terms", "rest"),
    [
        (
            "What did we try other than the retry approach for the flaky upload?",
            "the retry approach",
            ("retri",),
            "What did we try for the flaky upload?",
        ),
        (
            "except the retry approach, what fixed the upload?",
            "the retry approach",
            ("retri",),
            "what fixed the upload?",
        ),
        ("except for retries, how did we fix it?", "retries", ("retri",), "how did we fix it?"),
        ("How else can we cache this besides Redis?", "Redis", ("redi",), "How else can we cache this?"),
        ("apart from yoga, what does she do?", "yoga", ("yoga",), "what does she do?"),
        ("Which tournaments does John plan besides CS:GO?", "CS:GO", ("cs", "go"), "Which tournaments does John plan?"),
        ("what changed besides v1.2, if anything?", "v1.2", ("v1", "2"), "what changed, if anything?"),
        ("aside from the billing service, what failed?", "the billing service", ("bill", "servic"), "what failed?"),
        ("we can try anything but the retry approach", "the retry approach", ("retri",), "we can try"),
        ("excluding the staging cluster, which deploys failed", "the staging cluster", ("stage", "cluster"), ""),
        ("除了重试之外还有什么办法", "重试", ("重试",), "还有什么办法"),
        ("除了重试，还能怎么修复上传", "重试", ("重试",), "还能怎么修复上传"),
        ("除了外卖还吃什么", "外卖", ("外卖",), "还吃什么"),
        ("不要重试那个，换个办法", "重试", ("重试",), "换个办法"),
    ],
)
def test_an_exclusion_is_read_with_its_words(query: str, phrase: str, terms: tuple[str, ...], rest: str) -> None:
    forms = read_query_forms(query)

    (excluded,) = forms.exclusions
    assert excluded.phrase == phrase and excluded.terms[: len(terms)] == terms
    assert not excluded.refers_back and excluded.source == "query"
    if rest:
        assert forms.text == rest


@pytest.mark.parametrize(
    ("query", "phrase"),
    [
        ("除了之前那个方法，还有什么办法", "之前那个方法"),
        ("除了上次的方案还有别的吗", "上次的方案"),
        ("别再用之前那个办法了", "之前"),
        ("what else besides the previous approach", "the previous approach"),
        ("other than what you suggested before, how can I fix it?", "what you suggested before"),
        ("other than what we did last time, how can I fix it?", "what we did last time"),
        ("anything but the one we tried", "the one we tried"),
    ],
)
def test_an_exclusion_that_points_back_refers_back(query: str, phrase: str) -> None:
    forms = read_query_forms(query)

    (excluded,) = forms.exclusions
    assert excluded.phrase == phrase
    assert excluded.refers_back and excluded.terms == ()
    # "last time" inside the excluded phrase belongs to it, not to the query.
    assert forms.last_time is None


@pytest.mark.parametrize(
    "query",
    [
        "Other than that, what did we decide about the schema?",  # a turn of speech
        "and besides, what did we do?",
        "It was none other than Caroline who called",
        "What did we use instead of Redis?",  # asks for the replacement, whose memory names Redis
        "Why did we pick Postgres rather than MySQL?",
        "Did we not deploy on Friday?",
        "nothing but the truth",
        "what exceptions did the upload raise?",
        "要不要用重试那个方法",  # asks whether
        "这两个的区别那个是什么",
        "我们不用担心预算",
        "除此之外还有什么",
    ],
)
def test_no_exclusion_where_the_words_mean_something_else(query: str) -> None:
    forms = read_query_forms(query)

    assert forms.exclusions == ()
    assert forms.text == query


def test_both_forms_in_one_query() -> None:
    forms = read_query_forms("other than the retry approach, what worked the last time the upload failed?")

    assert forms.last_time == "the last time"
    assert [e.phrase for e in forms.exclusions] == ["the retry approach"]
    assert forms.text == "what worked the upload failed?"


def test_other_languages_pass_through() -> None:
    for query in (
        "¿Qué pasó la última vez que desplegamos?",
        "前回のデプロイで何が起きた？",
        "Was ist letztes Mal passiert?",
    ):
        forms = read_query_forms(query)
        assert forms.text == query and forms.last_time is None and forms.exclusions == ()


# --- phrases given in `exclude`, and what a memory is about -----------------------------------------------------


def test_a_requested_phrase_is_excluded_by_its_words_or_refers_back() -> None:
    assert requested_exclusion("the retry approach").terms == ("retri",)
    assert requested_exclusion("  that  ").refers_back
    assert requested_exclusion("之前那个方法").refers_back
    assert requested_exclusion("重试").source == "request"


def test_a_memory_holds_the_terms_as_the_index_stems_them() -> None:
    assert holds_terms("Retried the upload three times", ("retri",))
    assert holds_terms("Retries with backoff did not help", ("retri",))
    assert not holds_terms("Raised the chunk size", ("retri",))
    assert holds_terms("上传失败后重试了三次", ("重试",))


def test_a_memory_that_names_the_terms_only_to_set_them_apart() -> None:
    assert sets_apart("Besides retrying, we also tried a longer timeout", ("retri",))
    assert sets_apart("Lately I've been playing strategy games instead of my usual shooters.", ("shooter",))
    assert sets_apart("除了重试，我们还调大了超时", ("重试",))
    assert not sets_apart("Retried the upload three times; it still failed", ("retri",))


# --- the query model ----------------------------------------------------------------------------------------------


def test_exclude_and_timeout_are_bounded() -> None:
    assert RecallQuery(query="q", exclude=["the retry approach"], timeout_ms=250).timeout_ms == 250
    for bad in (
        {"timeout_ms": 0},
        {"timeout_ms": 60_001},
        {"exclude": ["x"] * 17},
        {"exclude": ["x" * 129]},
        {"exclude": ["line\nbreak"]},
        {"exclude": [""]},
    ):
        with pytest.raises(ValueError):
            RecallQuery.model_validate({"query": "q", **bad})
