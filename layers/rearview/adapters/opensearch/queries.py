"""The search requests: the filter every search carries, the keyword and k-NN bodies, the look-ups and the
entity-share aggregation, and how a response's hits become candidates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from rearview.adapters.opensearch.documents import CONTEXT_FIELD, METADATA_FIELD, TEXT_FIELD, VECTOR_FIELD, iso_utc
from rearview.domain.memory import StoredLayer
from rearview.domain.search import Candidate, EntityShares, MemoryFilter
from rearview.text_analysis import query_terms

# Fields a search returns: enough to name the memory and to collapse duplicates.
SOURCE_FIELDS = ["memory_id", "layer", "version"]
# The most query terms one keyword search sends (longer queries add little but cost a clause each).
MAX_QUERY_TERMS = 32
# Entity shares: the most named entities counted per namespace.
ENTITY_BUCKETS = 50


def filter_clauses(namespace: str, flt: MemoryFilter) -> list[dict[str, Any]] | None:
    """The `bool.filter` clauses of a MemoryFilter in a namespace; None when nothing can match.

    Same semantics as the embedded backend: time is half-open (`since <= t < until`), t being the episode's
    occurred_at or the fact's last_confirmed_at; tags, event types and entities are any-of; `consolidated` only
    constrains episodes; superseded facts are left out unless asked for; each metadata condition is any of its
    terms; what expired by `alive_at` is left out.
    """
    layers = list(flt.matchable_layers())
    if not layers:
        return None
    clauses: list[dict[str, Any]] = [
        {"term": {"namespace": namespace}},
        {"terms": {"layer": layers}},
    ]
    if flt.ids is not None:
        clauses.append({"terms": {"memory_id": list(dict.fromkeys(flt.ids))}})
    if flt.since is not None or flt.until is not None:
        clauses.append({"range": {"occurred_at": _time_bounds(flt)}})
    clauses.extend(_attribute_clauses(flt))
    clauses.extend(_state_clauses(flt, layers))
    clauses.extend({"terms": {METADATA_FIELD: list(terms)}} for terms in flt.metadata)
    if flt.alive_at is not None:
        # Never expires, or not yet: a document without `expires_at` passes.
        later = {"range": {"expires_at": {"gt": iso_utc(flt.alive_at)}}}
        unset = {"bool": {"must_not": [{"exists": {"field": "expires_at"}}]}}
        clauses.append({"bool": {"should": [unset, later], "minimum_should_match": 1}})
    return clauses


def _time_bounds(flt: MemoryFilter) -> dict[str, str]:
    bounds: dict[str, str] = {}
    if flt.since is not None:
        bounds["gte"] = iso_utc(flt.since)
    if flt.until is not None:
        bounds["lt"] = iso_utc(flt.until)
    return bounds


def _attribute_clauses(flt: MemoryFilter) -> list[dict[str, Any]]:
    """Tags, event types, session, outcomes, kinds and entities: each any-of its values."""
    clauses: list[dict[str, Any]] = []
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
    if flt.entities:
        clauses.append({"terms": {"entities": list(flt.entities)}})
    return clauses


def _state_clauses(flt: MemoryFilter, layers: Sequence[StoredLayer]) -> list[dict[str, Any]]:
    """Superseded facts left out unless asked for; episodes by consolidation, facts passing that condition."""
    clauses: list[dict[str, Any]] = []
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
    """The cosine of a k-NN hit, from the score faiss (or lucene) gives for `innerproduct`.

    Both engines score an inner product ip as `ip + 1` when ip >= 0 and `1 / (1 - ip)` when ip < 0 (scores must
    be positive); on unit vectors ip is the cosine. So cosine = score - 1 for score >= 1, else 1 - 1 / score.
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
