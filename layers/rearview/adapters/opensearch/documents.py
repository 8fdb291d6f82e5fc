"""The index's mapping and its documents: what one memory is in OpenSearch, and the `_bulk` lines that write it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from rearview.domain.memory import Episode, Memory, StoredLayer
from rearview.domain.metadata import metadata_terms

ANALYZER = "rearview_text"
TEXT_FIELD = "search_text"
# An episode's context (the turn before it in its session), matched at a lower weight (recall.context_weight).
CONTEXT_FIELD = "context"
VECTOR_FIELD = "vector"
METADATA_FIELD = "metadata_terms"
# HNSW graph parameters: faiss defaults raised a little for recall on 256..1024-dimensional text embeddings.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
# The k-NN engines the mapping may name: faiss (native, what AWS runs) or lucene (pure Java: a node without
# faiss's native libraries). Both score `innerproduct` alike, so `cosine_from_knn_score` serves both.
KnnEngine = Literal["faiss", "lucene"]


def document_id(namespace: str, layer: StoredLayer, memory_id: str) -> str:
    """The deterministic document id of a memory: sha1 hex of `<namespace>|<layer>|<id>`.

    Hashed so it stays well under OpenSearch's 512-byte id limit and needs no escaping in a URL path.
    """
    return hashlib.sha1(f"{namespace}|{layer}|{memory_id}".encode()).hexdigest()


def iso_utc(value: datetime) -> str:
    """A datetime as the ISO 8601 UTC string the index stores and filters on, to the microsecond."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def index_mapping(dim: int, engine: KnnEngine = "faiss") -> dict[str, Any]:
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
                # The terms a metadata filter matches (`rearview.domain.metadata`), and when the memory expires.
                METADATA_FIELD: {"type": "keyword"},
                "expires_at": {"type": "date_nanos"},
                "version": {"type": "long"},
                TEXT_FIELD: {"type": "text", "analyzer": ANALYZER},
                CONTEXT_FIELD: {"type": "text", "analyzer": ANALYZER},
                VECTOR_FIELD: {
                    "type": "knn_vector",
                    "dimension": dim,
                    "method": {
                        "name": "hnsw",
                        "engine": engine,
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
    """What keyword search matches: the content, the tags and the entities."""
    return "\n".join([memory.content, *memory.tags, *memory.entities])


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
        "entities": list(memory.entities),
    }
    if memory.metadata:
        doc[METADATA_FIELD] = metadata_terms(memory.metadata)
    if memory.expires_at is not None:
        doc["expires_at"] = iso_utc(memory.expires_at)
    if isinstance(memory, Episode):
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
