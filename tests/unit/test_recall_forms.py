"""The query forms through the whole recall pipeline, on the embedded backend (SQLite, hashing embedder): "last
time" ranks the latest relevant episode first, exclusions leave out what the query excludes, both are traced and
reported in the response."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.write import MemoryWrite

pytestmark = pytest.mark.unit
NS = "acme:ops"


def remember(services: Services, clock: ManualClock, content: str, days_ago: float, **kw: Any) -> str:
    item = MemoryWrite(content=content, occurred_at=clock.now() - timedelta(days=days_ago), **kw)
    result = services.writer.write(NS, item)
    assert result.status == "stored", result
    return result.id


def recall(services: Services, query: str, **kw: Any) -> RecallResponse:
    return services.recaller.recall(NS, RecallQuery(query=query, **kw))


def ids(response: RecallResponse) -> list[str]:
    return [h.id for h in response.results]


def stage(response: RecallResponse, name: str) -> dict[str, Any]:
    assert response.trace is not None
    (entry,) = [s for s in response.trace.stages if s.stage == name]
    return entry.detail


# --- last time ----------------------------------------------------------------------------------------------------


@pytest.fixture
def deploys(services: Services, clock: ManualClock) -> dict[str, str]:
    return {
        # The older deploy says more of the query's words, and says them twice.
        "old": remember(
            services,
            clock,
            "Deployed the billing service to production; the billing service deploy failed because the "
            "billing database migration timed out",
            days_ago=40,
            tags=["deploy"],
        ),
        "new": remember(
            services, clock, "Deployed the billing service again; the cache warmed slowly afterwards", days_ago=3
        ),
        # Later, but another service: a deploy, not the billing service's.
        "search": remember(services, clock, "Deployed the search service; the index rebuilt overnight", days_ago=0.7),
        "zh_search": remember(services, clock, "部署搜索服务之后索引重建了一夜", days_ago=0.7),
        "lunch": remember(services, clock, "Lunch with the design team about the new logo", days_ago=1),
        "invoice": remember(services, clock, "Sent the monthly invoice reminder to the customer", days_ago=0.5),
        "zh_old": remember(services, clock, "部署账单服务的时候数据库迁移超时，账单服务部署失败，回滚了", days_ago=30),
        "zh_new": remember(services, clock, "部署账单服务之后缓存预热很慢", days_ago=2),
        "zh_other": remember(services, clock, "和设计团队讨论了新标志", days_ago=1),
    }


def test_without_the_form_the_older_deploy_matches_best(services: Services, deploys: dict[str, str]) -> None:
    response = recall(services, "what happened when I deployed the billing service")

    assert ids(response)[0] == deploys["old"]
    assert response.query_form is None


def test_last_time_ranks_the_latest_matching_episode_first(services: Services, deploys: dict[str, str]) -> None:
    response = recall(services, "what happened last time I deployed the billing service", explain=True)

    got = ids(response)
    assert got[0] == deploys["new"]
    # Recency decides among the relevant ones only: a later deploy of another service is not lifted.
    assert got.index(deploys["old"]) < got.index(deploys["search"])
    scores = [h.score for h in response.results]
    assert scores == sorted(scores, reverse=True)
    assert response.query_form is not None and response.query_form.last_time == "last time"
    parse = stage(response, "parse")
    assert parse["form"] == "last_time" and "last" not in parse["terms"] and "time" not in parse["terms"]
    assert stage(response, "latest_first")["latest"] == deploys["new"]


def test_last_time_in_chinese(services: Services, deploys: dict[str, str]) -> None:
    assert ids(recall(services, "部署账单服务的时候出了什么问题"))[0] == deploys["zh_old"]

    response = recall(services, "上次部署账单服务的时候出了什么问题")

    got = ids(response)
    assert got[0] == deploys["zh_new"]
    assert got.index(deploys["zh_old"]) < got.index(deploys["zh_search"])
    assert response.query_form is not None and response.query_form.last_time == "上次"


def test_a_merged_repeat_counts_when_it_last_happened(
    services: Services, clock: ManualClock, deploys: dict[str, str]
) -> None:
    # The old deploy happened again yesterday: merged into the old episode, which last happened then.
    again = services.writer.write(
        NS,
        MemoryWrite(
            content="Deployed the billing service to production; the billing service deploy failed because the "
            "billing database migration timed out",
            occurred_at=clock.now() - timedelta(days=1),
        ),
    )
    assert again.status == "merged"

    assert ids(recall(services, "what happened last time I deployed the billing service"))[0] == deploys["old"]


def test_last_week_is_a_time_range_not_the_last_time(services: Services, deploys: dict[str, str]) -> None:
    response = recall(services, "which deploy of the billing service failed last week?", explain=True)

    assert response.query_form is None
    assert response.time_range is not None and response.time_range["expression"] == "last week"
    assert stage(response, "parse")["form"] is None


# --- exclusions ---------------------------------------------------------------------------------------------------


@pytest.fixture
def uploads(services: Services, clock: ManualClock) -> dict[str, str]:
    return {
        "retry": remember(
            services,
            clock,
            "Retried the flaky upload three times with exponential backoff; the upload still failed",
            days_ago=9,
        ),
        "retry_loop": remember(
            services, clock, "Fixed the flaky upload for a day by wrapping the call in a retry loop", days_ago=8
        ),
        "chunks": remember(
            services, clock, "Fixed the flaky upload by raising the multipart chunk size to 16 MB", days_ago=6
        ),
        "endpoint": remember(
            services, clock, "Fixed the flaky upload by switching to the regional S3 endpoint", days_ago=4
        ),
        "besides": remember(
            services,
            clock,
            "Besides retrying, we also fixed the flaky upload with a longer socket timeout",
            days_ago=2,
        ),
        "zh_retry": remember(services, clock, "上传失败的时候重试了三次，最后成功了", days_ago=1),
        "zh_chunks": remember(services, clock, "上传失败的时候改用分片上传，问题解决了", days_ago=5),
    }


def test_without_an_exclusion_the_retries_are_found(services: Services, uploads: dict[str, str]) -> None:
    got = ids(recall(services, "how did we fix the flaky upload with the retry approach?"))

    assert {uploads["retry"], uploads["retry_loop"]} <= set(got)


def test_other_than_leaves_out_the_excluded_approach_and_keeps_the_others(
    services: Services, uploads: dict[str, str]
) -> None:
    response = recall(services, "how did we fix the flaky upload other than the retry approach?", explain=True)

    got = ids(response)
    assert uploads["retry"] not in got and uploads["retry_loop"] not in got
    assert {uploads["chunks"], uploads["endpoint"]} <= set(got[:4])
    # It names retrying only to set it apart from what it did.
    assert uploads["besides"] in got
    assert response.query_form is not None
    (exclusion,) = response.query_form.exclusions
    assert exclusion.phrase == "the retry approach" and exclusion.source == "query" and not exclusion.refers_back
    assert set(exclusion.left_out) >= {uploads["retry"], uploads["retry_loop"]}
    parse = stage(response, "parse")
    assert "retry" not in parse["terms"] and parse["exclude"][0]["phrase"] == "the retry approach"
    assert stage(response, "exclude")["left_out"] == len(exclusion.left_out)


def test_the_exclude_field_leaves_out_the_same(services: Services, uploads: dict[str, str]) -> None:
    response = recall(services, "how did we fix the flaky upload?", exclude=["retry"])

    got = ids(response)
    assert uploads["retry"] not in got and uploads["retry_loop"] not in got and uploads["chunks"] in got
    assert response.query_form is not None and response.query_form.exclusions[0].source == "request"


def test_an_exclusion_in_chinese(services: Services, uploads: dict[str, str]) -> None:
    got = ids(recall(services, "除了重试之外，上传失败还有什么办法"))

    assert uploads["zh_retry"] not in got and uploads["zh_chunks"] in got


def test_an_exclusion_that_refers_back_leaves_out_the_latest_match(services: Services, uploads: dict[str, str]) -> None:
    # The latest of the relevant Chinese memories is the retry; pointing back at "that method" leaves it out.
    assert ids(recall(services, "上传失败的时候怎么解决"))[:2].count(uploads["zh_retry"]) == 1

    response = recall(services, "除了之前那个方法，上传失败的时候还有什么办法")

    got = ids(response)
    assert uploads["zh_retry"] not in got and uploads["zh_chunks"] in got
    assert response.query_form is not None
    (exclusion,) = response.query_form.exclusions
    assert exclusion.refers_back and exclusion.left_out == [uploads["zh_retry"]]


def test_the_previous_approach_in_english(services: Services, uploads: dict[str, str]) -> None:
    response = recall(services, "how else can we fix the flaky upload, other than the previous approach?")

    got = ids(response)
    assert uploads["besides"] not in got  # the latest relevant one
    assert {uploads["chunks"], uploads["endpoint"]} <= set(got)


def test_last_time_and_an_exclusion_together(services: Services, uploads: dict[str, str]) -> None:
    response = recall(services, "other than the retry approach, how did we fix the flaky upload last time?")

    got = ids(response)
    assert got[0] == uploads["besides"]
    assert uploads["retry"] not in got and uploads["retry_loop"] not in got
