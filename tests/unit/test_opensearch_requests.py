"""OpenSearchIndex: the exact mapping, request bodies and wire format it sends, and how it reads responses."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from rearview.adapters.opensearch import (
    OpenSearchBulkError,
    OpenSearchConnection,
    OpenSearchIndex,
    build_opensearch_client,
)
from rearview.adapters.opensearch.documents import bulk_upsert_lines, document_id, index_document, index_mapping
from rearview.adapters.opensearch.queries import (
    candidates_from_hits,
    cosine_from_knn_score,
    filter_clauses,
    keyword_query,
    knn_query,
)
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.search import Candidate, EntityShares, MemoryFilter
from rearview.errors import EmbeddingMismatch, InvalidInput
from support.opensearch_double import OpenSearchDouble, faiss_innerproduct_score

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
T0_TEXT = "2026-03-01T09:30:00.000000Z"
SOURCE = ["memory_id", "layer", "version"]
NS = {"term": {"namespace": "acme"}}
BOTH = {"terms": {"layer": ["episodic", "semantic"]}}
EPISODES = {"terms": {"layer": ["episodic"]}}
NOT_SUPERSEDED = {"bool": {"must_not": [{"term": {"status": "superseded"}}]}}


def _episode(memory_id: str = "e1", **fields: Any) -> Episode:
    fields.setdefault("occurred_at", T0)
    fields.setdefault("created_at", T0)
    namespace = fields.pop("namespace", "acme")
    return Episode(id=memory_id, namespace=namespace, content=fields.pop("content", "Went hiking"), **fields)


def _fact(memory_id: str = "f1", **fields: Any) -> Fact:
    fields.setdefault("last_confirmed_at", T0)
    fields.setdefault("created_at", T0)
    return Fact(id=memory_id, namespace="acme", content=fields.pop("content", "Likes tea"), **fields)


# --- ids and the mapping --------------------------------------------------------------------------------------


def test_document_ids_are_the_sha1_of_namespace_layer_and_id() -> None:
    assert document_id("acme", "episodic", "e1") == hashlib.sha1(b"acme|episodic|e1").hexdigest()
    assert document_id("acme", "episodic", "e1") == document_id("acme", "episodic", "e1")
    others = {
        document_id("acme", "semantic", "e1"),
        document_id("acme:u-42", "episodic", "e1"),
        document_id("acme", "episodic", "e2"),
    }
    assert document_id("acme", "episodic", "e1") not in others
    assert len(others) == 3


def test_index_mapping_is_exactly_the_documented_one() -> None:
    assert index_mapping(512) == {
        "settings": {
            "index": {"knn": True},
            "analysis": {
                "filter": {
                    "rearview_possessive": {"type": "stemmer", "language": "possessive_english"},
                    "rearview_stop": {"type": "stop", "stopwords": "_english_"},
                    "rearview_stemmer": {"type": "stemmer", "language": "english"},
                },
                "analyzer": {
                    "rearview_text": {
                        "type": "custom",
                        "tokenizer": "standard",
                        "filter": [
                            "cjk_width",
                            "lowercase",
                            "cjk_bigram",
                            "rearview_possessive",
                            "rearview_stop",
                            "rearview_stemmer",
                        ],
                    }
                },
            },
        },
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "doc_key": {"type": "keyword"},
                "namespace": {"type": "keyword"},
                "layer": {"type": "keyword"},
                "memory_id": {"type": "keyword"},
                "tags": {"type": "keyword"},
                "entities": {"type": "keyword"},
                "event_type": {"type": "keyword"},
                "session_id": {"type": "keyword"},
                "status": {"type": "keyword"},
                "outcome_status": {"type": "keyword"},
                "kind": {"type": "keyword"},
                "consolidated": {"type": "boolean"},
                "occurred_at": {"type": "date_nanos"},
                "metadata_terms": {"type": "keyword"},
                "expires_at": {"type": "date_nanos"},
                "version": {"type": "long"},
                "search_text": {"type": "text", "analyzer": "rearview_text"},
                "context": {"type": "text", "analyzer": "rearview_text"},
                "vector": {
                    "type": "knn_vector",
                    "dimension": 512,
                    "method": {
                        "name": "hnsw",
                        "engine": "faiss",
                        "space_type": "innerproduct",
                        "parameters": {"m": 16, "ef_construction": 128},
                    },
                },
            },
        },
    }
    assert index_mapping(1024)["mappings"]["properties"]["vector"]["dimension"] == 1024


# --- documents --------------------------------------------------------------------------------------------------


def test_an_episode_document_carries_every_filtered_field_and_a_unit_vector() -> None:
    episode = _episode(
        content="Met Dana in Lisbon",
        tags=["work"],
        entities=["Dana", "Lisbon office"],
        event_type="meeting",
        session_id="s-9",
        context="Who did you see in Portugal?",
        consolidated=True,
        version=3,
        occurred_at=datetime(2026, 1, 31, 23, 59, 59, 999999, tzinfo=UTC),
    )

    doc = index_document(episode, np.array([3.0, 4.0]))

    assert doc == {
        "doc_key": document_id("acme", "episodic", "e1"),
        "namespace": "acme",
        "layer": "episodic",
        "memory_id": "e1",
        "tags": ["work"],
        "occurred_at": "2026-01-31T23:59:59.999999Z",
        "version": 3,
        "search_text": "Met Dana in Lisbon\nwork\nDana\nLisbon office",
        "entities": ["Dana", "Lisbon office"],
        "event_type": "meeting",
        "session_id": "s-9",
        "consolidated": True,
        "context": "Who did you see in Portugal?",
        "vector": [0.6, 0.8],
    }


def test_a_fact_document_is_dated_by_its_last_confirmation_and_has_a_status() -> None:
    fact = _fact(tags=["diet"], status="superseded", last_confirmed_at=T0 + timedelta(days=1))

    doc = index_document(fact, None)

    assert doc == {
        "doc_key": document_id("acme", "semantic", "f1"),
        "namespace": "acme",
        "layer": "semantic",
        "memory_id": "f1",
        "tags": ["diet"],
        "occurred_at": "2026-03-02T09:30:00.000000Z",
        "version": 1,
        "search_text": "Likes tea\ndiet",
        "entities": [],
        "status": "superseded",
        "kind": "fact",
    }
    assert "vector" not in index_document(fact, np.zeros(4))
    described = fact.model_copy(
        update={"metadata": {"project": "apollo", "n": 2.0}, "expires_at": T0 + timedelta(days=3), "entities": ["Ana"]}
    )
    doc = index_document(described, None)
    assert doc["metadata_terms"] == ["project\x1fs:apollo", "n\x1fn:2"] and doc["entities"] == ["Ana"]
    assert doc["expires_at"] == "2026-03-04T09:30:00.000000Z" and doc["search_text"] == "Likes tea\ndiet\nAna"


def test_bulk_upsert_lines_with_deterministic_ids() -> None:
    episode, fact = _episode(), _fact()
    lines = bulk_upsert_lines("mem", [(episode, np.array([1.0, 0.0])), (fact, np.array([0.0, 2.0]))], custom_ids=True)

    assert lines == [
        {"index": {"_index": "mem", "_id": document_id("acme", "episodic", "e1")}},
        index_document(episode, np.array([1.0, 0.0])),
        {"index": {"_index": "mem", "_id": document_id("acme", "semantic", "f1")}},
        index_document(fact, np.array([0.0, 1.0])),
    ]


def test_bulk_upsert_lines_for_serverless_delete_the_old_server_ids_and_send_no_id() -> None:
    episode = _episode()
    lines = bulk_upsert_lines("mem", [(episode, np.array([1.0]))], custom_ids=False, replaced_ids=["x1", "x2"])

    assert lines == [
        {"delete": {"_index": "mem", "_id": "x1"}},
        {"delete": {"_index": "mem", "_id": "x2"}},
        {"index": {"_index": "mem"}},
        index_document(episode, np.array([1.0])),
    ]


# --- filters and queries ----------------------------------------------------------------------------------------

FILTER_CASES: list[tuple[str, MemoryFilter, list[dict[str, Any]] | None]] = [
    ("default", MemoryFilter(), [NS, BOTH, NOT_SUPERSEDED]),
    ("episodes only", MemoryFilter(layers=("episodic",)), [NS, EPISODES]),
    ("facts only", MemoryFilter(layers=("semantic",)), [NS, {"terms": {"layer": ["semantic"]}}, NOT_SUPERSEDED]),
    ("include superseded", MemoryFilter(include_superseded=True), [NS, BOTH]),
    (
        "since and until",
        MemoryFilter(since=T0, until=T0 + timedelta(days=2, microseconds=5), include_superseded=True),
        [NS, BOTH, {"range": {"occurred_at": {"gte": T0_TEXT, "lt": "2026-03-03T09:30:00.000005Z"}}}],
    ),
    (
        "since in another zone",
        MemoryFilter(since=datetime(2026, 3, 1, 11, 30, tzinfo=UTC).astimezone(), include_superseded=True),
        [NS, BOTH, {"range": {"occurred_at": {"gte": "2026-03-01T11:30:00.000000Z"}}}],
    ),
    (
        "tags",
        MemoryFilter(tags=("travel", "money"), include_superseded=True),
        [NS, BOTH, {"terms": {"tags": ["travel", "money"]}}],
    ),
    (
        "event types: episodes only",
        MemoryFilter(event_types=("trip", "payment")),
        [NS, EPISODES, {"terms": {"event_type": ["trip", "payment"]}}],
    ),
    ("session: episodes only", MemoryFilter(session_id="s1"), [NS, EPISODES, {"term": {"session_id": "s1"}}]),
    (
        "consolidated on both layers",
        MemoryFilter(consolidated=False, include_superseded=True),
        [
            NS,
            BOTH,
            {
                "bool": {
                    "should": [{"term": {"layer": "semantic"}}, {"term": {"consolidated": False}}],
                    "minimum_should_match": 1,
                }
            },
        ],
    ),
    (
        "consolidated on episodes",
        MemoryFilter(layers=("episodic",), consolidated=True),
        [NS, EPISODES, {"term": {"consolidated": True}}],
    ),
    ("consolidated on facts is no condition", MemoryFilter(layers=("semantic",), consolidated=True,
                                                            include_superseded=True),
     [NS, {"terms": {"layer": ["semantic"]}}]),
    (
        "ids",
        MemoryFilter(ids=("e2", "f1", "e2"), include_superseded=True),
        [NS, BOTH, {"terms": {"memory_id": ["e2", "f1"]}}],
    ),
    ("no ids", MemoryFilter(ids=()), None),
    ("facts with a session", MemoryFilter(layers=("semantic",), session_id="s1"), None),
    ("facts with event types", MemoryFilter(layers=("semantic",), event_types=("trip",)), None),
    (
        "combined",
        MemoryFilter(layers=("episodic",), tags=("money",), since=T0, session_id="s2", event_types=("pay",)),
        [
            NS,
            EPISODES,
            {"range": {"occurred_at": {"gte": T0_TEXT}}},
            {"terms": {"tags": ["money"]}},
            {"terms": {"event_type": ["pay"]}},
            {"term": {"session_id": "s2"}},
        ],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("flt", "expected"), [(f, e) for _, f, e in FILTER_CASES], ids=[n for n, _, _ in FILTER_CASES])
def test_filter_clauses(flt: MemoryFilter, expected: list[dict[str, Any]] | None) -> None:
    assert filter_clauses("acme", flt) == expected


def test_keyword_query_matches_the_query_terms_without_stop_words_in_the_text_or_the_context() -> None:
    flt = MemoryFilter(tags=("travel",))

    body = keyword_query("acme", "What did I do on the hiking trip to 北京?", flt, 25, context_weight=0.4)

    assert body == {
        "size": 25,
        "track_total_hits": False,
        "_source": SOURCE,
        "query": {
            "bool": {
                "should": [
                    {"match": {"search_text": {"query": "hiking trip 北京"}}},
                    {"match": {"context": {"query": "hiking trip 北京", "boost": 0.4}}},
                ],
                "minimum_should_match": 1,
                "filter": [NS, BOTH, {"terms": {"tags": ["travel"]}}, NOT_SUPERSEDED],
            }
        },
    }


def test_keyword_query_without_context_weight_matches_the_text_only() -> None:
    body = keyword_query("acme", "hiking trip", MemoryFilter(), 10, context_weight=0.0)

    assert body is not None
    assert body["query"]["bool"] == {
        "must": [{"match": {"search_text": {"query": "hiking trip"}}}],
        "filter": [NS, BOTH, NOT_SUPERSEDED],
    }


@pytest.mark.parametrize(
    ("text", "flt", "limit"),
    [("what did I do?", MemoryFilter(), 10), ("hiking", MemoryFilter(ids=()), 10), ("hiking", MemoryFilter(), 0)],
)
def test_keyword_query_is_none_when_nothing_can_match(text: str, flt: MemoryFilter, limit: int) -> None:
    assert keyword_query("acme", text, flt, limit) is None


def test_knn_query_puts_every_filter_in_the_efficient_filter() -> None:
    flt = MemoryFilter(layers=("episodic",), session_id="s1", until=T0)

    body = knn_query("acme", [0.6, 0.8], flt, 7)

    assert body == {
        "size": 7,
        "track_total_hits": False,
        "_source": SOURCE,
        "query": {
            "knn": {
                "vector": {
                    "vector": [0.6, 0.8],
                    "k": 7,
                    "filter": {
                        "bool": {
                            "filter": [
                                NS,
                                EPISODES,
                                {"range": {"occurred_at": {"lt": T0_TEXT}}},
                                {"term": {"session_id": "s1"}},
                            ]
                        }
                    },
                }
            }
        },
    }
    assert knn_query("acme", [1.0], MemoryFilter(ids=()), 7) is None


# --- scores -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cosine", [-1.0, -0.73, -0.2, 0.0, 1e-9, 0.31, 0.999, 1.0])
def test_cosine_from_knn_score_inverts_the_faiss_innerproduct_score(cosine: float) -> None:
    assert cosine_from_knn_score(faiss_innerproduct_score(cosine)) == pytest.approx(cosine, abs=1e-12)


def test_cosine_from_knn_score_on_known_points() -> None:
    assert cosine_from_knn_score(2.0) == 1.0
    assert cosine_from_knn_score(1.0) == 0.0
    assert cosine_from_knn_score(0.5) == -1.0
    assert cosine_from_knn_score(1.25) == pytest.approx(0.25)


def test_candidates_keep_bm25_scores_convert_knn_scores_and_collapse_duplicates() -> None:
    hits = [
        {"_id": "a", "_score": 1.9, "_source": {"memory_id": "e1", "layer": "episodic", "version": 1}},
        {"_id": "b", "_score": 1.5, "_source": {"memory_id": "f1", "layer": "semantic", "version": 1}},
        # The same memory again, newer (a Serverless collection that has not dropped the old copy yet).
        {"_id": "c", "_score": 1.2, "_source": {"memory_id": "e1", "layer": "episodic", "version": 2}},
        {"_id": "d", "_score": 0.8, "_source": {"memory_id": "e1", "layer": "semantic", "version": 1}},
    ]

    assert candidates_from_hits(hits, vector=False, limit=10) == [
        Candidate("f1", "semantic", 1.5),
        Candidate("e1", "episodic", 1.2),
        Candidate("e1", "semantic", 0.8),
    ]
    vector = candidates_from_hits(hits, vector=True, limit=2)
    assert [(c.id, c.layer) for c in vector] == [("f1", "semantic"), ("e1", "episodic")]
    assert [c.score for c in vector] == pytest.approx([0.5, 0.2])


# --- on the wire (opensearch-py against the test double) --------------------------------------------------------


@pytest.fixture
def double() -> Iterator[OpenSearchDouble]:
    with OpenSearchDouble() as server:
        yield server


@pytest.fixture
def serverless_double() -> Iterator[OpenSearchDouble]:
    with OpenSearchDouble(serverless=True) as server:
        yield server


def _index(double: OpenSearchDouble, dim: int = 3, service: Any = "es") -> OpenSearchIndex:
    index = OpenSearchIndex(
        OpenSearchConnection(double.url, service=service),
        "mem",
        dim,
        client=build_opensearch_client(double.url, service=None),
    )
    index.ensure_index()
    return index


def _ndjson(raw: bytes) -> list[Any]:
    text = raw.decode("utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_ensure_index_creates_the_mapping_once(double: OpenSearchDouble) -> None:
    index = OpenSearchIndex(
        OpenSearchConnection(double.url), "mem", 3, client=build_opensearch_client(double.url, service=None)
    )

    assert index.ensure_index() is True
    assert index.ensure_index() is False

    creates = [body for (method, path), body in zip(double.requests, double.bodies, strict=True) if method == "PUT"]
    assert [json.loads(body) for body in creates] == [index_mapping(3)]


def test_ensure_index_adds_the_fields_an_older_index_lacks(double: OpenSearchDouble) -> None:
    client = build_opensearch_client(double.url, service=None)
    old = index_mapping(3)
    del old["mappings"]["properties"]["entities"]
    client.indices.create(index="mem", body=old)
    index = OpenSearchIndex(OpenSearchConnection(double.url), "mem", 3, client=client)

    assert index.ensure_index() is False

    puts = [json.loads(b) for (m, p), b in zip(double.requests, double.bodies, strict=True) if p == "/mem/_mapping"
            and m == "PUT"]  # fmt: skip
    assert puts == [{"properties": {"entities": {"type": "keyword"}}}]
    index.ensure_index()
    assert len([r for r in double.requests if r == ("PUT", "/mem/_mapping")]) == 1, "nothing left to add"


def test_entity_shares_is_one_terms_aggregation_over_the_namespace_episodes_cached_a_while(
    double: OpenSearchDouble,
) -> None:
    now = [1000.0]
    index = OpenSearchIndex(
        OpenSearchConnection(double.url),
        "mem",
        2,
        client=build_opensearch_client(double.url, service=None),
        monotonic=lambda: now[0],
    )
    index.ensure_index()
    episodes = [_episode(f"e{i}", entities=["Dana"] + (["Lisbon"] if i % 2 else [])) for i in range(4)]
    index.upsert([(e, np.array([1.0, 0.0])) for e in episodes] + [(_fact(), np.array([0.0, 1.0]))])
    index.upsert([(_episode("x1", namespace="other", entities=["Dana"]), np.array([1.0, 0.0]))])
    start = len(double.requests)

    shares = index.entity_shares("acme")

    assert shares == EntityShares(episodes=4, shares={"Dana": 1.0, "Lisbon": 0.5})
    assert json.loads(double.bodies[start]) == {
        "size": 0,
        "track_total_hits": True,
        "query": {"bool": {"filter": [{"term": {"namespace": "acme"}}, {"term": {"layer": "episodic"}}]}},
        "aggs": {"entities": {"terms": {"field": "entities", "size": 50}}},
    }
    index.upsert([(_episode("e9", entities=["Noor"]), np.array([1.0, 0.0]))])
    assert index.entity_shares("acme") == shares, "kept for a while"
    now[0] += 301
    assert index.entity_shares("acme").episodes == 5, "counted again after the TTL"


def test_ensure_index_refuses_an_index_of_another_dimension(double: OpenSearchDouble) -> None:
    _index(double, dim=3)

    with pytest.raises(EmbeddingMismatch, match="dimension 3"):
        _index(double, dim=4)


def test_upsert_sends_one_bulk_of_ndjson_with_deterministic_ids(double: OpenSearchDouble) -> None:
    index = _index(double)
    episode, fact = _episode(), _fact()
    docs: list[tuple[Memory, np.ndarray | None]] = [
        (episode, np.array([1.0, 2.0, 2.0])),
        (fact, np.array([0.0, 0.0, 5.0])),
    ]

    index.upsert(docs)
    index.upsert(docs)  # idempotent

    bulks = [body for (_, path), body in zip(double.requests, double.bodies, strict=True) if path == "/_bulk"]
    assert len(bulks) == 2
    assert _ndjson(bulks[0]) == bulk_upsert_lines("mem", docs, custom_ids=True)
    assert sorted(d["doc_key"] for d in double.documents("mem")) == sorted(
        [document_id("acme", "episodic", "e1"), document_id("acme", "semantic", "f1")]
    )


def test_upsert_on_serverless_replaces_the_documents_found_by_doc_key(serverless_double: OpenSearchDouble) -> None:
    index = _index(serverless_double, service="aoss")
    episode = _episode()

    index.upsert([(episode, np.array([1.0, 0.0, 0.0]))])
    index.upsert([(episode.model_copy(update={"content": "Went climbing", "version": 2}), np.array([0.0, 1.0, 0.0]))])

    documents = serverless_double.documents("mem")
    assert [(d["memory_id"], d["version"], d["search_text"]) for d in documents] == [("e1", 2, "Went climbing")]
    assert index.keyword_search("acme", "hiking", MemoryFilter(), 10) == []


def test_hybrid_search_is_one_msearch_with_both_bodies(double: OpenSearchDouble) -> None:
    index = _index(double)
    index.upsert([(_episode(content="long hike in the Alps"), np.array([1.0, 0.0, 0.0])),
                  (_fact(content="prefers short walks"), np.array([0.6, 0.8, 0.0]))])  # fmt: skip
    before = len(double.requests)
    flt = MemoryFilter(layers=("episodic", "semantic"))

    keyword, vector = index.hybrid_search("acme", "the hiking", np.array([2.0, 0.0, 0.0]), flt, 5)

    assert double.requests[before:] == [("POST", "/mem/_msearch")]
    assert _ndjson(double.bodies[-1]) == [
        {},
        keyword_query("acme", "the hiking", flt, 5),
        {},
        knn_query("acme", [1.0, 0.0, 0.0], flt, 5),
    ]
    assert keyword == index.keyword_search("acme", "the hiking", flt, 5)
    assert [c.id for c in keyword] == ["e1"]
    assert vector == index.vector_search("acme", np.array([1.0, 0.0, 0.0]), flt, 5)
    assert [(c.id, round(c.score, 6)) for c in vector] == [("e1", 1.0), ("f1", 0.6)]


def test_hybrid_search_without_content_words_sends_only_the_knn_search(double: OpenSearchDouble) -> None:
    index = _index(double)
    before = len(double.requests)

    keyword, vector = index.hybrid_search("acme", "what did I do?", np.array([0.0, 1.0, 0.0]), MemoryFilter(), 5)

    assert (keyword, vector) == ([], [])
    assert double.requests[before:] == [("POST", "/mem/_msearch")]
    assert [list(line) for line in _ndjson(double.bodies[-1])] == [[], ["size", "track_total_hits", "_source", "query"]]
    assert "knn" in _ndjson(double.bodies[-1])[1]["query"]


def test_an_endpoint_with_a_path_keeps_it_on_every_request() -> None:
    # LocalStack's `path` endpoint strategy serves a domain under /opensearch/<region>/<domain>.
    prefix = "/opensearch/us-east-1/rearview"
    with OpenSearchDouble(path_prefix=prefix) as server:
        index = OpenSearchIndex(OpenSearchConnection(f"{server.url}{prefix}/", service=None), "mem", 3)
        flt = MemoryFilter()

        index.ensure_index()
        index.ensure_index()
        index.upsert([(_episode(content="long hike", entities=["Alps"]), np.ones(3)), (_fact(), np.ones(3))])
        index.refresh()
        found = [
            index.keyword_search("acme", "hiking", flt, 5),
            index.vector_search("acme", np.ones(3), flt, 5),
            *index.hybrid_search("acme", "hiking", np.ones(3), flt, 5),
        ]
        shares = index.entity_shares("acme")
        index.delete("acme", ["f1"])
        deleted = index.delete_namespace("acme")
        index.delete_index()

        assert [[c.id for c in each] for each in found] == [["e1"], ["e1", "f1"], ["e1"], ["e1", "f1"]]
        assert shares.shares == {"Alps": 1.0}
        assert deleted == 1
        paths = [path for _, path in server.requests]
        assert {path.removeprefix(prefix) for path in paths} >= {"/mem", "/mem/_mapping", "/_bulk", "/mem/_search",
                                                                  "/mem/_msearch", "/mem/_delete_by_query"}  # fmt: skip
        assert all(path.startswith(f"{prefix}/") for path in paths), paths


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:{port}", "http://127.0.0.1:{port}/"])
def test_an_endpoint_without_a_path_is_served_at_the_root(endpoint: str, double: OpenSearchDouble) -> None:
    port = double.url.rsplit(":", 1)[1]

    OpenSearchIndex(OpenSearchConnection(endpoint.format(port=port), service=None), "mem", 3).ensure_index()

    assert double.requests[0] == ("HEAD", "/mem")


def test_the_k_nn_engine_is_a_choice_of_the_index(double: OpenSearchDouble) -> None:
    index = OpenSearchIndex(
        OpenSearchConnection(double.url), "mem", 3, client=build_opensearch_client(double.url, service=None),
        engine="lucene",
    )  # fmt: skip

    index.ensure_index()

    (create,) = [json.loads(b) for (m, _), b in zip(double.requests, double.bodies, strict=True) if m == "PUT"]
    assert create == index_mapping(3, "lucene")
    assert create["mappings"]["properties"]["vector"]["method"]["engine"] == "lucene"
    assert index_mapping(3)["mappings"]["properties"]["vector"]["method"]["engine"] == "faiss"


def test_a_query_vector_of_the_wrong_dimension_is_refused(double: OpenSearchDouble) -> None:
    index = _index(double)

    with pytest.raises(InvalidInput, match="dimension 3"):
        index.vector_search("acme", np.ones(4), MemoryFilter(), 5)
    assert index.vector_search("acme", np.zeros(3), MemoryFilter(), 5) == []


def test_delete_removes_both_layers_candidates_and_tolerates_missing_ids(double: OpenSearchDouble) -> None:
    index = _index(double)
    index.upsert([(_episode(), np.ones(3)), (_fact(), np.ones(3))])

    index.delete("acme", ["e1", "never-indexed"])

    assert _ndjson(double.bodies[-1]) == [
        {"delete": {"_index": "mem", "_id": document_id("acme", layer, memory_id)}}
        for memory_id in ("e1", "never-indexed")
        for layer in ("episodic", "semantic")
    ]
    assert [d["memory_id"] for d in double.documents("mem")] == ["f1"]


@pytest.mark.parametrize("serverless", [False, True])
def test_delete_namespace_leaves_other_namespaces(serverless: bool) -> None:
    with OpenSearchDouble(serverless=serverless) as server:
        index = _index(server, service="aoss" if serverless else "es")
        other = Episode(id="e1", namespace="acme:u-42", content="x", occurred_at=T0, created_at=T0)
        index.upsert([(_episode(), np.ones(3)), (_fact(), np.ones(3)), (other, np.ones(3))])

        assert index.delete_namespace("acme") == 2

        assert [d["namespace"] for d in server.documents("mem")] == ["acme:u-42"]


def test_a_failed_bulk_item_raises_with_the_reason(serverless_double: OpenSearchDouble) -> None:
    # Serverless refuses caller-chosen ids: an index configured for a domain fails loudly there.
    index = _index(serverless_double, service="es")

    with pytest.raises(OpenSearchBulkError, match="Document ID is not supported") as raised:
        index.upsert([(_episode(), np.ones(3))])

    assert len(raised.value.failures) == 1


def test_the_double_refuses_request_shapes_it_does_not_implement(double: OpenSearchDouble) -> None:
    index = _index(double)
    client = index.client
    from opensearchpy.exceptions import RequestError

    with pytest.raises(RequestError, match="unsupported keys"):
        client.search(index="mem", body={"query": {"match_all": {}}, "sort": ["_score"]})
    with pytest.raises(RequestError, match="unsupported query"):
        client.search(index="mem", body={"query": {"fuzzy": {"search_text": "hike"}}})
    with pytest.raises(RequestError, match="unsupported request PUT /mem/_doc/x"):
        client.index(index="mem", id="x", body={"memory_id": "x"})
    response = client.bulk(body=[{"index": {"_index": "mem", "_id": "x"}}, {"unknown": 1}])
    assert response["errors"] is True
    assert response["items"][0]["index"]["error"]["type"] == "strict_dynamic_mapping_exception"
