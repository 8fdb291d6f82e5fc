"""A recall's time budget (`timeout_ms`), on the embedded backend with a ManualClock: fakes that take "time" by
moving the clock forward stand for a slow embedder and a slow reranker, so nothing sleeps and nothing is flaky."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings

pytestmark = pytest.mark.unit
NS = "acme:ops"

OPTIONAL = ["feedback", "neighbours", "entities", "lessons", "time_answers", "questions", "rerank"]


class SlowEmbedder:
    """The hashing embedder, taking `seconds` of the clock's time per call once `seconds` is set."""

    def __init__(self, clock: ManualClock) -> None:
        self._inner = HashingEmbedder(dim=512)
        self._clock = clock
        self.name, self.dim, self.scale = self._inner.name, self._inner.dim, self._inner.scale
        self.seconds = 0.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self._clock.advance(seconds=self.seconds)
        return self._inner.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


class SlowReranker:
    """Reverses the order it is given, taking `seconds` of the clock's time; counts its calls."""

    name = "slow-fake"

    def __init__(self, clock: ManualClock, seconds: float) -> None:
        self._clock, self.seconds, self.calls = clock, seconds, 0

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        self.calls += 1
        self._clock.advance(seconds=self.seconds)
        return [float(i) for i in range(len(documents))]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 10, 12, 0, tzinfo=UTC))


@pytest.fixture
def slow_embedder(clock: ManualClock) -> SlowEmbedder:
    return SlowEmbedder(clock)


@pytest.fixture
def reranker(clock: ManualClock) -> SlowReranker:
    return SlowReranker(clock, seconds=0.0)


@pytest.fixture
def services(
    tmp_path: Path, clock: ManualClock, slow_embedder: SlowEmbedder, reranker: SlowReranker
) -> Iterator[Services]:
    svc = build(Settings(data_dir=tmp_path / "data"), clock=clock, embedder=slow_embedder, reranker=reranker)
    start = clock.now()
    for i, content in enumerate(
        [
            "Deployed the billing service; the migration timed out and we rolled back",
            "Deployed the billing service again after splitting the migration",
            "The billing dashboard shows invoices per customer",
            "Lunch with the design team about the new logo",
        ]
    ):
        svc.writer.write(NS, MemoryWrite(content=content, occurred_at=start - timedelta(days=4 - i)))
    yield svc
    svc.close()


def recall(services: Services, **kw: Any) -> RecallResponse:
    return services.recaller.recall(NS, RecallQuery(query="billing service deploy migration", explain=True, **kw))


def stages(response: RecallResponse) -> list[str]:
    assert response.trace is not None
    return [s.stage for s in response.trace.stages]


def deadline(response: RecallResponse) -> dict[str, Any]:
    assert response.trace is not None
    (entry,) = [s for s in response.trace.stages if s.stage == "deadline"]
    return entry.detail


def test_a_slow_embedding_spends_the_budget_and_keyword_results_come_back(
    services: Services, slow_embedder: SlowEmbedder, reranker: SlowReranker
) -> None:
    slow_embedder.seconds = 1.0

    response = recall(services, timeout_ms=500)

    assert response.timed_out and response.trace is not None and response.trace.timed_out
    assert response.results and not response.no_relevant_memory
    assert all("billing" in h.content.lower() for h in response.results)
    ran = stages(response)
    assert "keyword" in ran and "vector" not in ran
    assert not set(OPTIONAL) & set(ran)
    assert ran[-4:] == ["collapse", "relevance", "budget", "deadline"]
    assert reranker.calls == 0
    detail = deadline(response)
    assert detail["timed_out"] and detail["ran_out_before"] == "vector search"
    assert detail["skipped"] == ["vector search", *OPTIONAL]


def test_a_budget_that_is_not_spent_changes_nothing(services: Services, slow_embedder: SlowEmbedder) -> None:
    slow_embedder.seconds = 1.0
    unbounded = recall(services)

    bounded = recall(services, timeout_ms=5_000)

    assert not bounded.timed_out and not unbounded.timed_out
    assert [h.id for h in bounded.results] == [h.id for h in unbounded.results]
    assert deadline(bounded)["skipped"] == [] and deadline(bounded)["left_ms"] == pytest.approx(4_000)
    assert "deadline" not in stages(unbounded)


def test_the_budget_running_out_in_the_reranker_keeps_its_order_and_says_so(
    services: Services, reranker: SlowReranker
) -> None:
    reranker.seconds = 2.0
    plain = recall(services, rerank=False)

    response = recall(services, timeout_ms=1_000)

    # The re-ordering that took the time is kept (the reranker reversed the head); nothing was left to skip.
    assert reranker.calls == 1 and response.timed_out
    assert [h.id for h in response.results] != [h.id for h in plain.results]
    assert deadline(response)["skipped"] == [] and deadline(response)["ran_out_before"] == "the response"


def test_a_budget_spent_before_any_search_returns_nothing_yet_does_not_fail(
    services: Services, slow_embedder: SlowEmbedder
) -> None:
    slow_embedder.seconds = 1.0

    response = services.recaller.recall(NS, RecallQuery(query="what happened?", timeout_ms=1))

    assert response.timed_out and response.results == [] and response.no_relevant_memory


def test_the_manual_clocks_monotonic_time_moves_only_forward() -> None:
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    assert clock.monotonic() == 0.0
    clock.advance(seconds=1.5)
    clock.set(datetime(2025, 1, 1, tzinfo=UTC))
    assert clock.monotonic() == 1.5
    clock.set(datetime(2025, 1, 1, 0, 0, 2, tzinfo=UTC))
    assert clock.monotonic() == 3.5
