"""Search that degrades instead of failing: the OpenSearch adapter says when the index cannot answer
(SearchUnavailable), FallbackSearchIndex answers from the store's own search meanwhile (StoreScanIndex), reports it
once in the log and every time to its listener, and leaves the index alone for a while; bootstrap wires it for an
index kept apart from the store."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.in_memory import InMemoryData, InMemoryMemoryStore, InMemorySearchIndex
from rearview.adapters.store_scan_index import StoreScanIndex
from rearview.bootstrap import build
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.recall import RecallQuery
from rearview.domain.search import Candidate, EntityShares, MemoryFilter, SearchTraits
from rearview.errors import SearchUnavailable
from rearview.ports import IndexMaintenance, SearchIndex
from rearview.service.search_fallback import FallbackSearchIndex
from rearview.settings import Settings
from support.contract_backends import FILTERS, expected_ids, filter_dataset

pytestmark = pytest.mark.unit

NS = "acme:u-1"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=64)


class MissingIndex(SearchIndex):
    """An index kept apart from the store that has gone (every search refused), until `restore()`."""

    traits = SearchTraits(round_trip=True)

    def __init__(self) -> None:
        self.calls = 0
        self.missing = True
        self.written: list[str] = []

    def restore(self) -> None:
        self.missing = False

    def _ask(self) -> None:
        self.calls += 1
        if self.missing:
            raise SearchUnavailable(
                "opensearch index rearview-memories: NotFoundError(404, 'index_not_found_exception')"
            )

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]:
        self._ask()
        return []

    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]:
        self._ask()
        return []

    def entity_shares(self, namespace: str) -> EntityShares:
        self._ask()
        return EntityShares(episodes=0, shares={})

    def maintenance(self) -> IndexMaintenance | None:
        return self  # type: ignore[return-value]  # a separate index: bootstrap wraps it


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _store(*memories: Memory) -> InMemoryMemoryStore:
    store = InMemoryMemoryStore(InMemoryData(), embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    if memories:
        store.apply(NS, _changes(memories))
    return store


def _episode(memory_id: str, content: str, minutes: int = 0) -> Episode:
    at = T0 + timedelta(minutes=minutes)
    return Episode(id=memory_id, namespace=NS, content=content, occurred_at=at, created_at=at)


def _fact(memory_id: str, content: str) -> Fact:
    return Fact(id=memory_id, namespace=NS, content=content, created_at=T0, last_confirmed_at=T0)


STORE_MEMORIES = (
    _episode("e1", "Booked the night train to Vienna for the summit", 1),
    _episode("e2", "The espresso machine in the office is broken again", 2),
    _fact("f1", "The user prefers aisle seats on trains"),
)


def test_the_store_scan_searches_recent_episodes_and_facts_like_the_in_memory_index() -> None:
    store = _store(*STORE_MEMORIES)
    scan = StoreScanIndex(store, scan_limit=50)
    everything = MemoryFilter()
    keyword = scan.keyword_search(NS, "train to Vienna", everything, 10)
    assert [c.id for c in keyword][0] == "e1"
    query = EMBEDDER.embed(["aisle seats on trains"])[0]
    assert scan.vector_search(NS, query, everything, 1)[0].id == "f1"
    words, vectors = scan.hybrid_search(NS, "espresso machine", query, everything, 10)
    assert words[0].id == "e2" and {c.id for c in vectors} == {"e1", "e2", "f1"}
    # Filters hold: the layer, and ids (pseudo-relevance feedback's second pass).
    assert {c.id for c in scan.keyword_search(NS, "trains Vienna", MemoryFilter(layers=("semantic",)), 10)} == {"f1"}
    assert [c.id for c in scan.vector_search(NS, query, MemoryFilter(ids=("e2",)), 5)] == ["e2"]
    assert scan.entity_shares(NS) == EntityShares(episodes=0, shares={})


@pytest.mark.parametrize("name", list(FILTERS))
def test_the_store_scan_honours_every_filter_as_every_backend_does(name: str) -> None:
    """The fallback is held to the contract's filters (metadata, entities and expiry among them): what it finds
    in a sample holding the whole dataset is what `MemoryFilter.matches` says."""
    data = filter_dataset(NS)
    store = InMemoryMemoryStore(InMemoryData(), embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store.apply(NS, _changes(tuple(data)))
    scan = StoreScanIndex(store, scan_limit=50)
    flt = FILTERS[name]
    words, vectors = scan.hybrid_search(NS, "Berlin hotel rent novel Paris vegetarian cache", EMBEDDER.embed(["x"])[0],
                                        flt, 100)  # fmt: skip
    assert {c.id for c in words} == {c.id for c in vectors} == expected_ids(data, flt)


def test_the_store_scan_reads_only_the_newest_episodes() -> None:
    store = _store(*(_episode(f"e{i}", f"walked the dog in the park, day {i}", i) for i in range(10)))
    scan = StoreScanIndex(store, scan_limit=3)
    found = scan.keyword_search(NS, "dog park", MemoryFilter(), 10)
    assert {c.id for c in found} == {"e7", "e8", "e9"}


def test_a_missing_index_is_answered_from_the_store_reported_once_and_left_alone_a_while(
    caplog: pytest.LogCaptureFixture,
) -> None:
    missing, clock, heard = MissingIndex(), Clock(), []
    store = _store(*STORE_MEMORIES)
    index = FallbackSearchIndex(
        missing,
        StoreScanIndex(store),
        retry_after_seconds=30,
        on_fallback=lambda operation, reason: heard.append((operation, reason)),
        monotonic=clock,
    )
    assert index.traits == missing.traits and index.maintenance() is missing
    with caplog.at_level(logging.WARNING, logger="rearview.service.search_fallback"):
        first = index.keyword_search(NS, "night train", MemoryFilter(), 5)
        second = index.keyword_search(NS, "espresso", MemoryFilter(), 5)
    assert first[0].id == "e1" and second[0].id == "e2"
    assert missing.calls == 1 and index.degraded  # the index was asked once; then left alone
    assert [operation for operation, _ in heard] == ["keyword_search", "keyword_search"]
    assert "index_not_found_exception" in heard[0][1] and heard[1][1] == "retry_after"
    (record,) = [r for r in caplog.records if "search index unavailable" in r.getMessage()]
    assert record.levelno == logging.WARNING

    missing.restore()
    clock.now += 31
    assert index.keyword_search(NS, "night train", MemoryFilter(), 5) == []  # the index again (empty here)
    assert missing.calls == 2 and not index.degraded and len(heard) == 2


def test_a_listener_that_fails_never_fails_the_search() -> None:
    def broken(operation: str, reason: str) -> None:
        raise RuntimeError("metrics are down")

    index = FallbackSearchIndex(MissingIndex(), StoreScanIndex(_store(*STORE_MEMORIES)), on_fallback=broken)
    assert index.keyword_search(NS, "espresso", MemoryFilter(), 5)[0].id == "e2"


def test_an_index_that_answers_is_all_that_is_asked() -> None:
    data = InMemoryData()
    healthy = InMemorySearchIndex(data)
    heard: list[Any] = []
    index = FallbackSearchIndex(healthy, StoreScanIndex(_store()), on_fallback=lambda *a: heard.append(a))
    assert index.vector_search_many(NS, EMBEDDER.embed(["a", "b"]), MemoryFilter(), 3) == [[], []]
    assert heard == [] and not index.degraded


def test_bootstrap_wraps_an_index_kept_apart_from_the_store_and_recall_survives_it_missing() -> None:
    heard: list[tuple[str, str]] = []
    settings = Settings(backend="memory", embedder="hashing", hashing_dim=64)
    services = build(settings, embedder=EMBEDDER, index=MissingIndex(), on_search_fallback=lambda *a: heard.append(a))
    assert isinstance(services.index, FallbackSearchIndex)
    services.store.apply(NS, _changes(STORE_MEMORIES))

    response = services.recaller.recall(NS, RecallQuery(query="when is the night train to Vienna?"))

    assert response.results and response.results[0].id == "e1"
    assert heard and {operation for operation, _ in heard} <= {"hybrid_search", "entity_shares", "vector_search"}
    off = Settings(backend="memory", embedder="hashing", hashing_dim=64, aws={"search_fallback_scan": 0})
    assert isinstance(build(off, embedder=EMBEDDER, index=MissingIndex()).index, MissingIndex)


def _changes(memories: tuple[Memory, ...]) -> ChangeSet:
    vectors = EMBEDDER.embed([m.content for m in memories])
    return ChangeSet(upserts=[(m, v) for m, v in zip(memories, vectors, strict=True)])


class RefusingClient:
    """An opensearch-py client whose searches fail as the transport reports them."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def search(self, **_: Any) -> Any:
        raise self.error

    def msearch(self, **_: Any) -> Any:
        raise self.error


def _transport_errors() -> list[Exception]:
    from opensearchpy.exceptions import AuthorizationException, ConnectionError, NotFoundError, TransportError

    return [
        NotFoundError(404, "index_not_found_exception", {"error": {"type": "index_not_found_exception"}}),
        ConnectionError("N/A", "connection refused", OSError("refused")),
        AuthorizationException(403, "security_exception", {}),
        TransportError(429, "too_many_requests", {}),
    ]


@pytest.mark.parametrize("error", _transport_errors(), ids=lambda e: type(e).__name__)
def test_the_opensearch_adapter_says_an_index_it_cannot_reach_is_unavailable(error: Exception) -> None:
    from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex

    connection = OpenSearchConnection("http://127.0.0.1:1", service=None)
    index = OpenSearchIndex(connection, "mem", 64, client=RefusingClient(error))  # type: ignore[arg-type]
    query = EMBEDDER.embed(["train"])[0]
    with pytest.raises(SearchUnavailable, match="opensearch index mem"):
        index.keyword_search(NS, "night train", MemoryFilter(), 5)
    with pytest.raises(SearchUnavailable):
        index.hybrid_search(NS, "night train", query, MemoryFilter(), 5)
    with pytest.raises(SearchUnavailable):
        index.entity_shares(NS)


def test_a_failed_search_inside_msearch_is_unavailable_too() -> None:
    from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex, OpenSearchSearchError

    class MissingInsideMsearch(RefusingClient):
        def msearch(self, **_: Any) -> Any:
            return {"responses": [{"error": {"type": "index_not_found_exception"}, "status": 404}] * 2}

    index = OpenSearchIndex(
        OpenSearchConnection("http://127.0.0.1:1", service=None),
        "mem",
        64,
        client=MissingInsideMsearch(RuntimeError()),  # type: ignore[arg-type]
    )
    with pytest.raises(SearchUnavailable) as raised:
        index.hybrid_search(NS, "night train", EMBEDDER.embed(["train"])[0], MemoryFilter(), 5)
    assert isinstance(raised.value, OpenSearchSearchError)
