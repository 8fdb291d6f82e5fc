"""OpenSearchIndex: the SearchIndex of the AWS backend, on OpenSearch k-NN (Serverless `aoss` or a domain `es`).

One index holds every namespace's episodes and facts, one document per memory:

- `doc_key` (keyword): `document_id(namespace, layer, id)`, the sha1 of `<namespace>|<layer>|<id>`;
  `namespace`, `layer`, `memory_id`, `tags`, `entities` (episodes; counted by `entity_shares` with a terms
  aggregation), `event_type`, `session_id`, `status` (keyword), `consolidated`
  (boolean), `occurred_at` (date_nanos: the episode's occurred_at or the fact's last_confirmed_at, kept to the
  microsecond so the half-open time filters agree with the store's), `version` (long);
- `search_text` (text): content, tags and entities, analysed for English (possessives, stop words, Porter
  stemming) and for Chinese and Japanese (`cjk_bigram`: overlapping character bigrams, as
  `rearview.text_analysis` does for the embedded backend);
- `vector` (knn_vector): faiss HNSW, inner product. Vectors are L2-normalised on the way in and the query on
  the way out, so the inner product IS the cosine. `cosine_from_knn_score` undoes faiss's score transform.

The two primitive searches are a BM25 `match` inside a `bool` filter and a `knn` query with an efficient
(pre-)filter; `hybrid_search` sends both in one `_msearch`. Fusion, decay and budgets stay in the core, so both
backends rank alike. Keyword queries are built from `text_analysis.query_terms` (stop words removed), the
terms the embedded backend matches too.

Document ids. A managed domain (`es`) takes our deterministic `_id` (= doc_key): an upsert is a bulk `index`,
idempotent under retries, and a delete is a bulk `delete` by id. An OpenSearch Serverless VECTORSEARCH
collection (`aoss`) refuses caller-chosen ids and `_delete_by_query`, so there (custom_ids=False) an upsert
looks up the server ids holding the doc_keys, deletes them and indexes the new documents without an id, in
one `_bulk`; searches collapse any duplicate doc_key that the collection's refresh lag let through (the
highest `version` wins). DynamoDB stays the source of truth: `rearview reindex` rebuilds the index from it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urlparse

import numpy as np

from rearview.domain.memory import Episode, Memory, StoredLayer
from rearview.domain.search import Candidate, EntityShares, MemoryFilter, SearchTraits
from rearview.errors import ConfigurationError, EmbeddingMismatch, InvalidInput
from rearview.ports import SearchIndex
from rearview.text_analysis import query_terms

if TYPE_CHECKING:
    from opensearchpy import OpenSearch

ANALYZER = "rearview_text"
TEXT_FIELD = "search_text"
# An episode's context (the turn before it in its session), matched at a lower weight (recall.context_weight).
CONTEXT_FIELD = "context"
VECTOR_FIELD = "vector"
# Fields a search returns: enough to name the memory and to collapse duplicates.
SOURCE_FIELDS = ["memory_id", "layer", "version"]
# The most query terms one keyword search sends (longer queries add little but cost a clause each).
MAX_QUERY_TERMS = 32
# HNSW graph parameters: faiss defaults raised a little for recall on 256..1024-dimensional text embeddings.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
# Largest `_bulk` this adapter sends (documents per request): ~1 MB with 512-dimensional vectors as JSON.
BULK_DOCUMENTS = 200
# Page size of the server-id look-ups (`aoss` mode).
LOOKUP_PAGE = 1000
# Entity shares: the most named entities counted per namespace, how long a process keeps a count, how many it keeps.
ENTITY_BUCKETS = 50
ENTITY_SHARES_TTL_SECONDS = 300.0
ENTITY_SHARES_CACHED = 4096

_LAYERS: tuple[StoredLayer, ...] = ("episodic", "semantic")


class OpenSearchBulkError(RuntimeError):
    """Some actions of a `_bulk` failed; `failures` holds each failed item as OpenSearch reported it."""

    def __init__(self, failures: list[dict[str, Any]]) -> None:
        first = failures[0] if failures else {}
        super().__init__(f"{len(failures)} bulk action(s) failed; first: {first}")
        self.failures = failures


class OpenSearchSearchError(RuntimeError):
    """One search of an `_msearch` failed (the others may have succeeded)."""


# --- pure request builders (unit-tested for their exact output) -------------------------------------------


def document_id(namespace: str, layer: StoredLayer, memory_id: str) -> str:
    """The deterministic document id of a memory: sha1 hex of `<namespace>|<layer>|<id>`.

    Hashed so it stays well under OpenSearch's 512-byte id limit and needs no escaping in a URL path.
    """
    return hashlib.sha1(f"{namespace}|{layer}|{memory_id}".encode()).hexdigest()


def iso_utc(value: datetime) -> str:
    """A datetime as the ISO 8601 UTC string the index stores and filters on, to the microsecond."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def index_mapping(dim: int) -> dict[str, Any]:
    """The body of `PUT <index>`: settings (k-NN on, the text analyzer) and the strict mapping."""
    return {
        "settings": {
            "index": {"knn": True},
            "analysis": {
                "filter": {
                    "rearview_possessive": {"type": "stemmer", "language": "possessive_english"},
                    "rearview_stop": {"type": "stop", "stopwords": "_english_"},
                    "rearview_stemmer": {"type": "stemmer", "language": "english"},
                },
                "analyzer": {
                    ANALYZER: {
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
            # A field the mapping does not name is refused, so the adapter and the mapping cannot drift apart.
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
                "version": {"type": "long"},
                TEXT_FIELD: {"type": "text", "analyzer": ANALYZER},
                CONTEXT_FIELD: {"type": "text", "analyzer": ANALYZER},
                VECTOR_FIELD: {
                    "type": "knn_vector",
                    "dimension": dim,
                    "method": {
                        "name": "hnsw",
                        "engine": "faiss",
                        "space_type": "innerproduct",
                        "parameters": {"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION},
                    },
                },
            },
        },
    }


def unit_vector(vector: np.ndarray | Sequence[float]) -> np.ndarray | None:
    """The vector scaled to length 1 (float64), or None for a zero vector (which has no direction)."""
    array = np.asarray(vector, dtype=np.float64).reshape(-1)
    norm = float(np.linalg.norm(array))
    if norm == 0.0 or not np.isfinite(norm):
        return None
    return array / norm


def search_text(memory: Memory) -> str:
    """What keyword search matches: the content, the tags and (episodes) the entities."""
    parts = [memory.content, *memory.tags]
    if isinstance(memory, Episode):
        parts.extend(memory.entities)
    return "\n".join(parts)


def index_document(memory: Memory, vector: np.ndarray | Sequence[float] | None) -> dict[str, Any]:
    """The indexed document (`_source`) of one memory; a zero or missing vector leaves it out of k-NN."""
    doc: dict[str, Any] = {
        "doc_key": document_id(memory.namespace, memory.layer, memory.id),
        "namespace": memory.namespace,
        "layer": memory.layer,
        "memory_id": memory.id,
        "tags": list(memory.tags),
        "occurred_at": iso_utc(memory.occurred_at),
        "version": memory.version,
        TEXT_FIELD: search_text(memory),
    }
    if isinstance(memory, Episode):
        doc["entities"] = list(memory.entities)
        if memory.event_type is not None:
            doc["event_type"] = memory.event_type
        if memory.session_id is not None:
            doc["session_id"] = memory.session_id
        doc["consolidated"] = memory.consolidated
        if memory.context:
            doc[CONTEXT_FIELD] = memory.context
        if memory.outcome_status is not None:
            doc["outcome_status"] = memory.outcome_status
    else:
        doc["status"] = memory.status
        doc["kind"] = memory.kind
    unit = None if vector is None else unit_vector(vector)
    if unit is not None:
        doc[VECTOR_FIELD] = unit.tolist()
    return doc


def _effective_layers(flt: MemoryFilter) -> list[StoredLayer]:
    layers = list(dict.fromkeys(flt.layers))
    if flt.event_types or flt.session_id is not None or flt.outcomes:
        # Facts have no event type, session or outcome: such a filter never matches a fact.
        layers = [layer for layer in layers if layer == "episodic"]
    if flt.kinds:
        # Only facts have a kind.
        layers = [layer for layer in layers if layer == "semantic"]
    return layers


def filter_clauses(namespace: str, flt: MemoryFilter) -> list[dict[str, Any]] | None:
    """The `bool.filter` clauses of a MemoryFilter in a namespace; None when nothing can match.

    Same semantics as the embedded backend: time is half-open (`since <= t < until`), t being the episode's
    occurred_at or the fact's last_confirmed_at; tags and event types are any-of; `consolidated` only
    constrains episodes; superseded facts are left out unless asked for.
    """
    if flt.ids is not None and not flt.ids:
        return None
    layers = _effective_layers(flt)
    if not layers:
        return None
    clauses: list[dict[str, Any]] = [
        {"term": {"namespace": namespace}},
        {"terms": {"layer": layers}},
    ]
    if flt.ids is not None:
        clauses.append({"terms": {"memory_id": list(dict.fromkeys(flt.ids))}})
    if flt.since is not None or flt.until is not None:
        bounds: dict[str, str] = {}
        if flt.since is not None:
            bounds["gte"] = iso_utc(flt.since)
        if flt.until is not None:
            bounds["lt"] = iso_utc(flt.until)
        clauses.append({"range": {"occurred_at": bounds}})
    if flt.tags:
        clauses.append({"terms": {"tags": list(flt.tags)}})
    if flt.event_types:
        clauses.append({"terms": {"event_type": list(flt.event_types)}})
    if flt.session_id is not None:
        clauses.append({"term": {"session_id": flt.session_id}})
    if flt.outcomes:
        clauses.append({"terms": {"outcome_status": list(flt.outcomes)}})
    if flt.kinds:
        clauses.append(_kinds_clause(flt.kinds))
    if "semantic" in layers and not flt.include_superseded:
        clauses.append({"bool": {"must_not": [{"term": {"status": "superseded"}}]}})
    if "episodic" in layers and flt.consolidated is not None:
        consolidated = {"term": {"consolidated": flt.consolidated}}
        if "semantic" in layers:
            # Only episodes are constrained: a fact passes whatever its (absent) consolidated flag.
            clauses.append(
                {"bool": {"should": [{"term": {"layer": "semantic"}}, consolidated], "minimum_should_match": 1}}
            )
        else:
            clauses.append(consolidated)
    return clauses


def _kinds_clause(kinds: Sequence[str]) -> dict[str, Any]:
    """Facts of these kinds; a fact indexed before kinds existed has none, and is a plain fact."""
    wanted: dict[str, Any] = {"terms": {"kind": list(kinds)}}
    if "fact" not in kinds:
        return wanted
    unkinded = {"bool": {"must_not": [{"exists": {"field": "kind"}}]}}
    return {"bool": {"should": [wanted, unkinded], "minimum_should_match": 1}}


def keyword_query(
    namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
) -> dict[str, Any] | None:
    """The `_search` body of a keyword (BM25) search; None when it cannot find anything.

    Any query term matches (`match`'s default OR); the terms are `query_terms(text)` (stop words removed). With a
    `context_weight` above 0 a memory matches in its text or in its context, scored as the text's BM25 plus the
    context's times the weight (SQLite's bm25() with column weights does the same).
    """
    terms = query_terms(text)[:MAX_QUERY_TERMS]
    clauses = filter_clauses(namespace, flt)
    if not terms or clauses is None or limit <= 0:
        return None
    query = " ".join(terms)
    matches: dict[str, Any]
    if context_weight > 0:
        matches = {
            "should": [
                {"match": {TEXT_FIELD: {"query": query}}},
                {"match": {CONTEXT_FIELD: {"query": query, "boost": context_weight}}},
            ],
            "minimum_should_match": 1,
        }
    else:
        matches = {"must": [{"match": {TEXT_FIELD: {"query": query}}}]}
    return {
        "size": limit,
        "track_total_hits": False,
        "_source": SOURCE_FIELDS,
        "query": {"bool": {**matches, "filter": clauses}},
    }


def knn_query(namespace: str, vector: Sequence[float], flt: MemoryFilter, limit: int) -> dict[str, Any] | None:
    """The `_search` body of a k-NN search with an efficient filter; None when it cannot find anything.

    `vector` must already be unit length (see `unit_vector`): the index scores by inner product.
    """
    clauses = filter_clauses(namespace, flt)
    if clauses is None or limit <= 0:
        return None
    return {
        "size": limit,
        "track_total_hits": False,
        "_source": SOURCE_FIELDS,
        "query": {"knn": {VECTOR_FIELD: {"vector": list(vector), "k": limit, "filter": {"bool": {"filter": clauses}}}}},
    }


def cosine_from_knn_score(score: float) -> float:
    """The cosine of a k-NN hit, from the score faiss gives for `innerproduct`.

    faiss scores an inner product ip as `ip + 1` when ip >= 0 and `1 / (1 - ip)` when ip < 0 (scores must be
    positive); on unit vectors ip is the cosine. So cosine = score - 1 for score >= 1, else 1 - 1 / score.
    """
    if score >= 1.0:
        return score - 1.0
    return 1.0 - 1.0 / score


def doc_key_lookup_query(doc_keys: Sequence[str], size: int) -> dict[str, Any]:
    """The `_search` body that finds the server ids of documents by doc_key (`aoss` mode)."""
    return {
        "size": size,
        "track_total_hits": False,
        "_source": ["doc_key"],
        "query": {"bool": {"filter": [{"terms": {"doc_key": list(doc_keys)}}]}},
    }


def namespace_lookup_query(namespace: str, size: int) -> dict[str, Any]:
    """The `_search` body that pages through a namespace's documents (`aoss` mode's delete_namespace)."""
    return {
        "size": size,
        "track_total_hits": False,
        "_source": False,
        "query": {"bool": {"filter": [{"term": {"namespace": namespace}}]}},
    }


def bulk_upsert_lines(
    index_name: str,
    docs: Sequence[tuple[Memory, np.ndarray | Sequence[float] | None]],
    *,
    custom_ids: bool,
    replaced_ids: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """The NDJSON lines (as dicts) of a `_bulk` that upserts `docs`.

    custom_ids: one `index` action per document with `_id` = doc_key. Otherwise (`aoss`): a `delete` of each
    server id in `replaced_ids`, then `index` actions without an id.
    """
    lines: list[dict[str, Any]] = [{"delete": {"_index": index_name, "_id": i}} for i in replaced_ids]
    for memory, vector in docs:
        document = index_document(memory, vector)
        action: dict[str, Any] = {"_index": index_name}
        if custom_ids:
            action["_id"] = document["doc_key"]
        lines.append({"index": action})
        lines.append(document)
    return lines


def bulk_delete_lines(index_name: str, ids: Iterable[str]) -> list[dict[str, Any]]:
    """The NDJSON lines of a `_bulk` that deletes documents by `_id`."""
    return [{"delete": {"_index": index_name, "_id": i}} for i in ids]


def candidates_from_hits(hits: Sequence[Mapping[str, Any]], *, vector: bool, limit: int) -> list[Candidate]:
    """Candidates of a search response's hits, best first, one per memory.

    Keyword scores are BM25 `_score`s as they are; vector scores are converted to cosines. A memory met twice
    (possible only in `aoss` mode, while the collection catches up) counts once, with its newest version.
    """
    chosen: dict[tuple[str, str], tuple[int, float]] = {}
    for hit in hits:
        source = hit.get("_source") or {}
        key = (str(source["layer"]), str(source["memory_id"]))
        raw = float(hit["_score"])
        score = cosine_from_knn_score(raw) if vector else raw
        version = int(source.get("version", 0))
        seen = chosen.get(key)
        if seen is None or version > seen[0]:
            chosen[key] = (version, score)
    ranked = sorted(chosen.items(), key=lambda item: -item[1][1])
    return [
        Candidate(id=memory_id, layer=cast(StoredLayer, layer), score=score)
        for (layer, memory_id), (_, score) in ranked[:limit]
    ]


# --- the client -------------------------------------------------------------------------------------------


def build_opensearch_client(
    endpoint: str,
    *,
    service: Literal["aoss", "es"] | None,
    region: str | None = None,
    timeout_seconds: float = 10.0,
    max_retries: int = 2,
) -> OpenSearch:
    """An opensearch-py client for `endpoint` (https://host[:port] or http://... for a local cluster).

    service `aoss`/`es`: requests signed with SigV4 (`RequestsAWSV4SignerAuth`, the non-deprecated name of
    `AWSV4SignerAuth`) with the default boto3 credentials; None: unsigned (a local cluster or the test double;
    user:password in the URL is sent as basic auth).
    """
    from opensearchpy import OpenSearch, RequestsHttpConnection

    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    if not parsed.hostname:
        raise ConfigurationError(f"opensearch endpoint: no host in {endpoint!r}", field="opensearch_endpoint")
    use_ssl = parsed.scheme == "https"
    port = parsed.port or (443 if use_ssl else 80)
    auth: Any = None
    if service is not None:
        import boto3
        from opensearchpy import RequestsAWSV4SignerAuth

        session = boto3.Session(region_name=region) if region else boto3.Session()
        credentials = session.get_credentials()
        signing_region = region or session.region_name
        if credentials is None or not signing_region:
            raise ConfigurationError("opensearch: no AWS credentials or region to sign requests with")
        auth = RequestsAWSV4SignerAuth(credentials, signing_region, service)
    elif parsed.username:
        auth = (parsed.username, parsed.password or "")
    return OpenSearch(
        hosts=[{"host": parsed.hostname, "port": port}],
        http_auth=auth,
        use_ssl=use_ssl,
        verify_certs=use_ssl,
        connection_class=RequestsHttpConnection,
        timeout=timeout_seconds,
        max_retries=max_retries,
        retry_on_timeout=True,
        pool_maxsize=16,
    )


def entity_shares_query(namespace: str) -> dict[str, Any]:
    """How many of the namespace's episodes there are, and how many name each of its most named entities."""
    return {
        "size": 0,
        "track_total_hits": True,
        "query": {"bool": {"filter": [{"term": {"namespace": namespace}}, {"term": {"layer": "episodic"}}]}},
        "aggs": {"entities": {"terms": {"field": "entities", "size": ENTITY_BUCKETS}}},
    }


def entity_shares_from_response(response: Mapping[str, Any]) -> EntityShares:
    total = int(response["hits"]["total"]["value"])
    buckets = response.get("aggregations", {}).get("entities", {}).get("buckets", [])
    shares = {str(b["key"]): int(b["doc_count"]) / total for b in buckets} if total else {}
    return EntityShares(episodes=total, shares=shares)


class OpenSearchIndex(SearchIndex):
    """SearchIndex on OpenSearch k-NN, plus the write side (IndexMaintenance) for index sync and reindex."""

    # Every search is a network round trip.
    traits = SearchTraits(round_trip=True)

    def maintenance(self) -> OpenSearchIndex:
        """This index is kept apart from the store (index sync keeps it in step): it is its own write side."""
        return self

    def __init__(
        self,
        endpoint: str,
        index_name: str,
        dim: int,
        *,
        client: OpenSearch | None = None,
        service: Literal["aoss", "es"] | None = "aoss",
        region: str | None = None,
        custom_ids: bool | None = None,
        timeout_seconds: float = 10.0,
        max_retries: int = 2,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`service` signs requests (None: unsigned). `custom_ids` defaults to False on `aoss` (see module doc).
        `monotonic` times the entity-share cache (a test passes its own)."""
        if dim < 1:
            raise ConfigurationError(f"opensearch index: dimension must be positive, got {dim}")
        self.endpoint = endpoint
        self.index_name = index_name
        self.dim = int(dim)
        self.service = service
        self.region = region
        self.custom_ids = service != "aoss" if custom_ids is None else custom_ids
        self._timeout_seconds = timeout_seconds
        self._max_retries = max_retries
        self._client = client
        self._monotonic = monotonic
        # namespace -> (counted at, monotonic seconds; shares): a warm Lambda counts a namespace once in a while.
        self._entity_shares: dict[str, tuple[float, EntityShares]] = {}

    @property
    def client(self) -> OpenSearch:
        """The opensearch-py client, built on first use (so a cold start that never searches pays nothing)."""
        if self._client is None:
            self._client = build_opensearch_client(
                self.endpoint,
                service=self.service,
                region=self.region,
                timeout_seconds=self._timeout_seconds,
                max_retries=self._max_retries,
            )
        return self._client

    # index management

    def ensure_index(self) -> bool:
        """Create the index with `index_mapping(dim)` unless it exists; True if created.

        An existing index made for another vector dimension raises EmbeddingMismatch; one made before a field was
        added to the mapping gets the field (new documents carry it; `rearview reindex` fills the old ones).
        """
        if self.client.indices.exists(index=self.index_name):
            self._reconcile_mapping()
            return False
        self.client.indices.create(index=self.index_name, body=index_mapping(self.dim))
        return True

    def _reconcile_mapping(self) -> None:
        """Refuse an index of another vector dimension; add the fields of `index_mapping` it lacks."""
        wanted: dict[str, Any] = index_mapping(self.dim)["mappings"]["properties"]
        found = self.client.indices.get_mapping(index=self.index_name)
        for body in found.values():
            present = body.get("mappings", {}).get("properties", {})
            stored = present.get(VECTOR_FIELD, {}).get("dimension")
            if stored is not None and int(stored) != self.dim:
                raise EmbeddingMismatch(
                    f"opensearch index {self.index_name} holds vectors of dimension {stored}, "
                    f"the embedder makes {self.dim}"
                )
            missing = {name: spec for name, spec in wanted.items() if name not in present}
            if missing:
                self.client.indices.put_mapping(index=self.index_name, body={"properties": missing})

    def entity_shares(self, namespace: str) -> EntityShares:
        """One aggregation over the namespace's episodes, kept for `ENTITY_SHARES_TTL_SECONDS` by this process."""
        now = self._monotonic()
        cached = self._entity_shares.get(namespace)
        if cached is not None and now - cached[0] < ENTITY_SHARES_TTL_SECONDS:
            return cached[1]
        response = self.client.search(index=self.index_name, body=entity_shares_query(namespace))
        counted = entity_shares_from_response(response)
        if len(self._entity_shares) >= ENTITY_SHARES_CACHED:
            self._entity_shares.pop(next(iter(self._entity_shares)))
        self._entity_shares[namespace] = (now, counted)
        return counted

    def delete_index(self) -> None:
        """Drop the whole index (tests and teardown; a rebuild is `ensure_index` + reindex)."""
        self.client.indices.delete(index=self.index_name, ignore_unavailable=True)

    def refresh(self) -> None:
        """Make every write so far searchable (a domain only; Serverless refreshes on its own schedule)."""
        if self.service != "aoss":
            self.client.indices.refresh(index=self.index_name)

    # writes

    def upsert(self, docs: Sequence[tuple[Memory, np.ndarray | None]]) -> int:
        """Index (or replace) each memory with its vector (None: keyword search only), in bulk; returns how many."""
        for start in range(0, len(docs), BULK_DOCUMENTS):
            chunk = docs[start : start + BULK_DOCUMENTS]
            replaced: list[str] = []
            if not self.custom_ids:
                keys = [document_id(m.namespace, m.layer, m.id) for m, _ in chunk]
                replaced = self._server_ids(keys)
            self._bulk(bulk_upsert_lines(self.index_name, chunk, custom_ids=self.custom_ids, replaced_ids=replaced))
        return len(docs)

    def delete(self, namespace: str, ids: Sequence[str], layer: StoredLayer | None = None) -> None:
        """Remove memories from the index by id (of `layer`, or of both layers when not known)."""
        layers = _LAYERS if layer is None else (layer,)
        keys = [document_id(namespace, each, memory_id) for memory_id in dict.fromkeys(ids) for each in layers]
        for start in range(0, len(keys), LOOKUP_PAGE):
            chunk = keys[start : start + LOOKUP_PAGE]
            targets = chunk if self.custom_ids else self._server_ids(chunk)
            if targets:
                self._bulk(bulk_delete_lines(self.index_name, targets))

    def delete_namespace(self, namespace: str) -> int:
        """Remove every document of a namespace; returns how many were deleted."""
        if self.custom_ids:
            response = self.client.delete_by_query(
                index=self.index_name,
                body={"query": {"bool": {"filter": [{"term": {"namespace": namespace}}]}}},
                params={"conflicts": "proceed"},
            )
            return int(response.get("deleted", 0))
        # Serverless has no _delete_by_query: page through the server ids and delete them in bulk. A page that
        # brings back only ids already deleted (the collection has not refreshed yet) ends the loop.
        deleted: set[str] = set()
        while True:
            response = self.client.search(index=self.index_name, body=namespace_lookup_query(namespace, LOOKUP_PAGE))
            fresh = [hit["_id"] for hit in response["hits"]["hits"] if hit["_id"] not in deleted]
            if not fresh:
                return len(deleted)
            self._bulk(bulk_delete_lines(self.index_name, fresh))
            deleted.update(fresh)

    def _server_ids(self, doc_keys: Sequence[str]) -> list[str]:
        if not doc_keys:
            return []
        # A doc_key has one document, more only while Serverless catches up: 4 per key is ample headroom.
        size = min(10_000, 4 * len(doc_keys))
        response = self.client.search(index=self.index_name, body=doc_key_lookup_query(doc_keys, size))
        return [hit["_id"] for hit in response["hits"]["hits"]]

    def _bulk(self, lines: list[dict[str, Any]]) -> None:
        if not lines:
            return
        response = self.client.bulk(body=lines)
        if not response.get("errors"):
            return
        failures = []
        for item in response.get("items", []):
            (action, result), *_ = item.items()
            # Deleting what is already gone is what a delete wants.
            if action == "delete" and result.get("status") == 404:
                continue
            if result.get("status", 500) >= 300:
                failures.append({action: result})
        if failures:
            raise OpenSearchBulkError(failures)

    # searches

    def _unit_query(self, vector: np.ndarray) -> np.ndarray | None:
        array = np.asarray(vector).reshape(-1)
        if array.shape[0] != self.dim:
            raise InvalidInput(f"vector: expected dimension {self.dim}, got {array.shape[0]}", field="vector")
        return unit_vector(array)

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]:
        """BM25 candidates (raw `_score`), best first; [] when the text has no content words."""
        body = keyword_query(namespace, text, flt, limit, context_weight)
        if body is None:
            return []
        response = self.client.search(index=self.index_name, body=body)
        return candidates_from_hits(response["hits"]["hits"], vector=False, limit=limit)

    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]:
        """Cosine candidates (whatever the query's norm), best first."""
        unit = self._unit_query(vector)
        body = None if unit is None else knn_query(namespace, unit.tolist(), flt, limit)
        if body is None:
            return []
        response = self.client.search(index=self.index_name, body=body)
        return candidates_from_hits(response["hits"]["hits"], vector=True, limit=limit)

    def hybrid_search(
        self,
        namespace: str,
        text: str,
        vector: np.ndarray,
        flt: MemoryFilter,
        limit: int,
        context_weight: float = 0.0,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Both candidate lists, (keyword, vector), from one `_msearch` round trip."""
        unit = self._unit_query(vector)
        searches: list[tuple[str, dict[str, Any]]] = []
        keyword_body = keyword_query(namespace, text, flt, limit, context_weight)
        if keyword_body is not None:
            searches.append(("keyword", keyword_body))
        vector_body = None if unit is None else knn_query(namespace, unit.tolist(), flt, limit)
        if vector_body is not None:
            searches.append(("vector", vector_body))
        found: dict[str, list[Candidate]] = {"keyword": [], "vector": []}
        if not searches:
            return [], []
        lines: list[dict[str, Any]] = []
        for _, body in searches:
            lines.extend([{}, body])
        response = self.client.msearch(body=lines, index=self.index_name)
        for (kind, _), result in zip(searches, response["responses"], strict=True):
            if "error" in result:
                raise OpenSearchSearchError(f"{kind} search failed: {result['error']}")
            found[kind] = candidates_from_hits(result["hits"]["hits"], vector=kind == "vector", limit=limit)
        return found["keyword"], found["vector"]
