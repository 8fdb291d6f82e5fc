"""OpenSearchIndex: the SearchIndex (and its IndexMaintenance write side) over one OpenSearch index."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from rearview.adapters.opensearch.client import OpenSearchConnection
from rearview.adapters.opensearch.documents import (
    VECTOR_FIELD,
    KnnEngine,
    bulk_delete_lines,
    bulk_upsert_lines,
    document_id,
    index_mapping,
    unit_vector,
)
from rearview.adapters.opensearch.queries import (
    candidates_from_hits,
    doc_key_lookup_query,
    entity_shares_from_response,
    entity_shares_query,
    keyword_query,
    knn_query,
    namespace_lookup_query,
)
from rearview.domain.memory import Memory, StoredLayer
from rearview.domain.search import Candidate, EntityShares, MemoryFilter, SearchTraits
from rearview.errors import ConfigurationError, EmbeddingMismatch, InvalidInput, SearchUnavailable
from rearview.ports import SearchIndex

if TYPE_CHECKING:
    from opensearchpy import OpenSearch

# Largest `_bulk` this adapter sends (documents per request): ~1 MB with 512-dimensional vectors as JSON.
BULK_DOCUMENTS = 200
# Page size of the server-id look-ups (`aoss` mode).
LOOKUP_PAGE = 1000
# Entity shares: how long a process keeps a namespace's count, and how many counts it keeps.
ENTITY_SHARES_TTL_SECONDS = 300.0
ENTITY_SHARES_CACHED = 4096

_LAYERS: tuple[StoredLayer, ...] = ("episodic", "semantic")


class OpenSearchBulkError(RuntimeError):
    """Some actions of a `_bulk` failed; `failures` holds each failed item as OpenSearch reported it."""

    def __init__(self, failures: list[dict[str, Any]]) -> None:
        first = failures[0] if failures else {}
        super().__init__(f"{len(failures)} bulk action(s) failed; first: {first}")
        self.failures = failures


class OpenSearchSearchError(SearchUnavailable):
    """One search of an `_msearch` failed (the others may have succeeded): the index is missing, or the cluster
    refused or throttled it."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _unavailable_on_transport_error(
    read: Callable[Concatenate[OpenSearchIndex, _P], _R],
) -> Callable[Concatenate[OpenSearchIndex, _P], _R]:
    """A read the cluster cannot answer (the index missing, the cluster unreachable, refusing or throttling: any
    transport error) raises SearchUnavailable, which the core answers from the store instead."""

    @functools.wraps(read)
    def guarded(self: OpenSearchIndex, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        from opensearchpy.exceptions import TransportError

        try:
            return read(self, *args, **kwargs)
        except TransportError as exc:
            raise SearchUnavailable(f"opensearch index {self.index_name}: {type(exc).__name__}: {exc}") from exc

    return guarded


class OpenSearchIndex(SearchIndex):
    """SearchIndex on OpenSearch k-NN, plus the write side (IndexMaintenance) for index sync and reindex."""

    # Every search is a network round trip.
    traits = SearchTraits(round_trip=True)

    def maintenance(self) -> OpenSearchIndex:
        """This index is kept apart from the store (index sync keeps it in step): it is its own write side."""
        return self

    def __init__(
        self,
        connection: OpenSearchConnection,
        index_name: str,
        dim: int,
        *,
        client: OpenSearch | None = None,
        custom_ids: bool | None = None,
        engine: KnnEngine = "faiss",
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`client` is built from `connection` on first use unless given. `custom_ids` defaults to False on `aoss`
        (see the package doc). `engine` is the k-NN engine of an index this creates (an existing index keeps its
        own). `monotonic` times the entity-share cache (a test passes its own)."""
        if dim < 1:
            raise ConfigurationError(f"opensearch index: dimension must be positive, got {dim}")
        self.connection = connection
        self.endpoint = connection.endpoint
        self.service = connection.service
        self.index_name = index_name
        self.dim = int(dim)
        self.custom_ids = connection.service != "aoss" if custom_ids is None else custom_ids
        self.engine: KnnEngine = engine
        self._client = client
        self._monotonic = monotonic
        # namespace -> (counted at, monotonic seconds; shares): a warm Lambda counts a namespace once in a while.
        self._entity_shares: dict[str, tuple[float, EntityShares]] = {}

    @property
    def client(self) -> OpenSearch:
        """The opensearch-py client, built on first use (so a cold start that never searches pays nothing)."""
        if self._client is None:
            self._client = self.connection.client()
        return self._client

    # index management

    def ensure_index(self) -> bool:
        """Create the index with `index_mapping(dim, engine)` unless it exists; True if created.

        An existing index made for another vector dimension raises EmbeddingMismatch; one made before a field was
        added to the mapping gets the field (new documents carry it; `rearview reindex` fills the old ones).
        """
        if self.client.indices.exists(index=self.index_name):
            self._reconcile_mapping()
            return False
        self.client.indices.create(index=self.index_name, body=index_mapping(self.dim, self.engine))
        return True

    def _reconcile_mapping(self) -> None:
        """Refuse an index of another vector dimension; add the fields of `index_mapping` it lacks."""
        wanted: dict[str, Any] = index_mapping(self.dim, self.engine)["mappings"]["properties"]
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

    @_unavailable_on_transport_error
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

    @_unavailable_on_transport_error
    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]:
        """BM25 candidates (raw `_score`), best first; [] when the text has no content words."""
        body = keyword_query(namespace, text, flt, limit, context_weight)
        if body is None:
            return []
        response = self.client.search(index=self.index_name, body=body)
        return candidates_from_hits(response["hits"]["hits"], vector=False, limit=limit)

    @_unavailable_on_transport_error
    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]:
        """Cosine candidates (whatever the query's norm), best first."""
        unit = self._unit_query(vector)
        body = None if unit is None else knn_query(namespace, unit.tolist(), flt, limit)
        if body is None:
            return []
        response = self.client.search(index=self.index_name, body=body)
        return candidates_from_hits(response["hits"]["hits"], vector=True, limit=limit)

    @_unavailable_on_transport_error
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
