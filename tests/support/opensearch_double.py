"""A TEST DOUBLE of an OpenSearch endpoint: a real HTTP server on 127.0.0.1 (ephemeral port, in a thread), in
memory, implementing only what `rearview.adapters.opensearch.OpenSearchIndex` sends. It is not OpenSearch.

Supported (anything else is answered 400 with the reason, so the adapter cannot come to rely on a feature the
double does not check):

- `PUT /<index>` with `settings` (`index.knn`, a custom analyzer of the standard tokenizer and the known token
  filters) and `mappings` (`dynamic: strict`; keyword, text, boolean, date_nanos, date, long, knn_vector with
  `method` hnsw on faiss or lucene and a dimension); `HEAD /<index>`, `GET /<index>/_mapping`,
  `PUT /<index>/_mapping` (new keyword, boolean or long fields only), `DELETE /<index>`.
- `POST [/<index>]/_bulk` (NDJSON `index` with or without `_id`, and `delete`), `DELETE /<index>/_doc/<id>`,
  `POST /<index>/_delete_by_query`, `POST /<index>/_refresh`; `GET /` (the version, distribution `opensearch`).
- `POST /<index>/_search` and `POST [/<index>]/_msearch` with bodies of `size`, `track_total_hits`, `_source`
  (a field list or false) and `query`: `bool` (must, filter, must_not, should, minimum_should_match), `match`
  (OR of the analysed terms; `boost` multiplies its score), `term`, `terms`, `range` (gte/gt/lt/lte), `exists`, and a
  top-level `knn` with `vector`, `k` and an efficient `filter`; `aggs` of `terms` aggregations on keyword fields
  (`field`, `size`).
- Documents are checked against the strict mapping (unknown fields, wrong types, wrong vector dimension).

How it computes:
- Text analysis imitates the adapter's analyzer: `rearview.text_analysis.tokens` (lowercased words; CJK runs
  as overlapping bigrams, like `cjk_bigram`), Lucene's `_english_` stop words removed, then a crude suffix
  stemmer (hiking/hike -> hik, dinners -> dinner). Not Porter: only the same on both sides, which is all a
  BM25 match needs.
- BM25 as Lucene (k1 = 1.2, b = 0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5))) over the whole index, like a
  single shard; exact document lengths (Lucene rounds them).
- k-NN is exact (numpy) over the documents that pass the filter, scored as faiss (and Lucene) score `innerproduct`:
  ip + 1 if ip >= 0, else 1 / (1 - ip). Every write is visible at once (as if refreshed after each request).

Not supported: scoring options, aggregations other than `terms`, sorting, pagination, highlighting, aliases,
templates, routing, versioning/optimistic concurrency, `update`/`create` bulk actions, scripts, ingest pipelines,
nested documents, any analyzer other than the one described, and k-NN inside a bool.

`serverless=True` imitates an OpenSearch Serverless VECTORSEARCH collection where this adapter cares: a bulk
`index` with an `_id` fails (item status 400), and `_delete_by_query` and `_refresh` answer 404.
`path_prefix="/opensearch/us-east-1/domain"` serves the cluster under that path only (as LocalStack's `path`
endpoint strategy does) and answers 404 elsewhere. `set_down(True)` makes every request answer 503 (an index that
is down). `requests` logs (method, path) of every request and `bodies` its raw body, for tests that assert what
went over the wire.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import numpy as np

from rearview.text_analysis import tokens

# Lucene's EnglishAnalyzer stop set (`_english_`).
ENGLISH_STOP_WORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
        "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
        "will", "with",
    }
)  # fmt: skip
BM25_K1 = 1.2
BM25_B = 0.75
FIELD_TYPES = frozenset({"keyword", "text", "boolean", "date_nanos", "date", "long", "knn_vector"})
TOKEN_FILTERS = frozenset({"cjk_width", "lowercase", "cjk_bigram"})
STEMMER_LANGUAGES = frozenset({"english", "possessive_english"})


class DoubleError(Exception):
    """A request the double refuses: answered with `status` and an OpenSearch-shaped error body."""

    def __init__(self, status: int, error_type: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.error_type = error_type
        self.reason = reason

    def body(self) -> dict[str, Any]:
        cause = {"type": self.error_type, "reason": self.reason}
        return {"error": {"root_cause": [cause], **cause}, "status": self.status}


def _bad(reason: str, error_type: str = "parsing_exception") -> DoubleError:
    return DoubleError(400, error_type, f"[opensearch double] {reason}")


def stem(token: str) -> str:
    """A crude English suffix stemmer (plural, -ing, -ed, final e/y); CJK and digits untouched."""
    if not token.isascii() or not token.isalpha() or len(token) <= 3:
        return token
    t = token
    if t.endswith("ies") and len(t) > 4:
        t = t[:-3] + "y"
    elif t.endswith("sses"):
        t = t[:-2]
    elif t.endswith("s") and not t.endswith(("ss", "us", "is")):
        t = t[:-1]
    for suffix in ("ing", "ed"):
        stem_part = t[: -len(suffix)]
        if t.endswith(suffix) and len(stem_part) >= 3 and any(v in stem_part for v in "aeiouy"):
            t = stem_part
            if len(t) > 3 and t[-1] == t[-2] and t[-1] not in "lsz":
                t = t[:-1]  # running -> runn -> run
            break
    if len(t) > 3 and t.endswith("e"):
        t = t[:-1]
    if len(t) > 3 and t.endswith("y"):
        t = t[:-1] + "i"
    return t


def analyze(text: str) -> list[str]:
    """The double's text analysis (see the module doc)."""
    return [stem(t) for t in tokens(text) if t not in ENGLISH_STOP_WORDS]


def faiss_innerproduct_score(ip: float) -> float:
    """How faiss turns an inner product into a (positive) score."""
    return ip + 1.0 if ip >= 0 else 1.0 / (1.0 - ip)


def _parse_date(value: Any) -> datetime:
    if not isinstance(value, str):
        raise _bad(f"date value must be an ISO 8601 string, got {value!r}", "mapper_parsing_exception")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise _bad(f"cannot parse date {value!r}", "mapper_parsing_exception") from exc
    if parsed.tzinfo is None:
        raise _bad(f"date {value!r} has no time zone (the adapter must send UTC)", "mapper_parsing_exception")
    return parsed


# --- indices ----------------------------------------------------------------------------------------------


@dataclass
class _Index:
    name: str
    settings: dict[str, Any]
    mappings: dict[str, Any]
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    terms: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # _id -> text field -> terms
    # _id -> knn field -> vector as an array (converted once, at index time: k-NN over 10k documents stays cheap)
    arrays: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    # Bumped on every change; per-field BM25 statistics are cached against it.
    generation: int = 0
    stats_cache: dict[str, tuple[int, tuple[int, float, dict[str, int]]]] = field(default_factory=dict)

    def put(self, doc_id: str, source: dict[str, Any]) -> None:
        self.docs.pop(doc_id, None)  # a replaced document moves to the end, as a new Lucene doc would
        self.docs[doc_id] = source
        self.terms[doc_id] = {
            name: analyze("\n".join(v if isinstance(v, list) else [v]))
            for name, v in source.items()
            if self.properties[name]["type"] == "text" and v is not None
        }
        self.arrays[doc_id] = {
            name: np.asarray(v, dtype=np.float64)
            for name, v in source.items()
            if self.properties[name]["type"] == "knn_vector" and v is not None
        }
        self.generation += 1

    def remove(self, doc_id: str) -> bool:
        found = self.docs.pop(doc_id, None) is not None
        self.terms.pop(doc_id, None)
        self.arrays.pop(doc_id, None)
        self.generation += 1
        return found

    @property
    def properties(self) -> dict[str, dict[str, Any]]:
        props: dict[str, dict[str, Any]] = self.mappings["properties"]
        return props

    def field_type(self, name: str) -> str:
        spec = self.properties.get(name)
        if spec is None:
            raise _bad(f"no field [{name}] in the mapping of [{self.name}]", "query_shard_exception")
        return str(spec["type"])


def _validate_index_body(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    unknown = set(body) - {"settings", "mappings"}
    if unknown:
        raise _bad(f"create index: unsupported keys {sorted(unknown)}")
    settings = body.get("settings", {})
    mappings = body.get("mappings")
    if not isinstance(mappings, dict) or not isinstance(mappings.get("properties"), dict):
        raise _bad("create index: mappings.properties is required")
    if set(mappings) - {"dynamic", "properties"}:
        raise _bad(f"create index: unsupported mapping keys {sorted(set(mappings) - {'dynamic', 'properties'})}")
    if mappings.get("dynamic") != "strict":
        raise _bad("create index: the double only supports dynamic: strict mappings")
    if set(settings) - {"index", "analysis"}:
        raise _bad(f"create index: unsupported settings {sorted(set(settings) - {'index', 'analysis'})}")
    index_settings = settings.get("index", {})
    if set(index_settings) - {"knn"}:
        raise _bad(f"create index: unsupported index settings {sorted(index_settings)}")
    analyzers = _validate_analysis(settings.get("analysis", {}))
    has_knn = False
    for name, spec in mappings["properties"].items():
        kind = spec.get("type")
        if kind not in FIELD_TYPES:
            raise _bad(f"field [{name}]: unsupported type {kind!r}", "mapper_parsing_exception")
        if kind == "text":
            analyzer = spec.get("analyzer", "standard")
            if analyzer not in analyzers:
                raise _bad(f"field [{name}]: unknown analyzer {analyzer!r}", "mapper_parsing_exception")
            if set(spec) - {"type", "analyzer"}:
                raise _bad(f"field [{name}]: unsupported options {sorted(spec)}", "mapper_parsing_exception")
        elif kind == "knn_vector":
            has_knn = True
            _validate_knn_field(name, spec)
        elif set(spec) != {"type"}:
            raise _bad(f"field [{name}]: unsupported options {sorted(spec)}", "mapper_parsing_exception")
    if has_knn and index_settings.get("knn") is not True:
        raise _bad("knn_vector fields need settings.index.knn: true", "illegal_argument_exception")
    return settings, mappings


def _validate_analysis(analysis: dict[str, Any]) -> set[str]:
    if set(analysis) - {"filter", "analyzer"}:
        raise _bad(f"analysis: unsupported keys {sorted(analysis)}")
    custom_filters = analysis.get("filter", {})
    for name, spec in custom_filters.items():
        kind = spec.get("type")
        if kind == "stemmer" and spec.get("language") in STEMMER_LANGUAGES:
            continue
        if kind == "stop" and spec.get("stopwords") == "_english_":
            continue
        raise _bad(f"analysis filter [{name}]: unsupported definition {spec}")
    analyzers = {"standard"}
    for name, spec in analysis.get("analyzer", {}).items():
        if spec.get("type") != "custom" or spec.get("tokenizer") != "standard":
            raise _bad(f"analyzer [{name}]: only custom analyzers on the standard tokenizer are supported")
        for each in spec.get("filter", []):
            if each not in TOKEN_FILTERS and each not in custom_filters:
                raise _bad(f"analyzer [{name}]: unsupported token filter {each!r}")
        analyzers.add(name)
    return analyzers


def _validate_knn_field(name: str, spec: dict[str, Any]) -> None:
    if not isinstance(spec.get("dimension"), int) or spec["dimension"] < 1:
        raise _bad(f"knn_vector [{name}]: dimension must be a positive integer", "mapper_parsing_exception")
    method = spec.get("method", {})
    if method.get("name") != "hnsw" or method.get("engine") not in {"faiss", "lucene"}:
        raise _bad(f"knn_vector [{name}]: the double only supports hnsw on faiss or lucene", "mapper_parsing_exception")
    if method.get("space_type") != "innerproduct":
        raise _bad(f"knn_vector [{name}]: the double only scores innerproduct", "mapper_parsing_exception")
    if set(method.get("parameters", {})) - {"m", "ef_construction"}:
        raise _bad(f"knn_vector [{name}]: unsupported method parameters", "mapper_parsing_exception")


def _validate_document(index: _Index, source: Any) -> None:
    if not isinstance(source, dict):
        raise _bad("document must be a JSON object", "mapper_parsing_exception")
    for name, value in source.items():
        spec = index.properties.get(name)
        if spec is None:
            raise DoubleError(
                400,
                "strict_dynamic_mapping_exception",
                f"mapping set to strict, dynamic introduction of [{name}] within [_doc] is not allowed",
            )
        kind = spec["type"]
        values = value if isinstance(value, list) and kind != "knn_vector" else [value]
        for each in values:
            if each is None:
                continue
            ok = {
                "keyword": isinstance(each, str),
                "text": isinstance(each, str),
                "boolean": isinstance(each, bool),
                "long": isinstance(each, int) and not isinstance(each, bool),
                "date_nanos": isinstance(each, str),
                "date": isinstance(each, str),
                "knn_vector": isinstance(each, list)
                and len(each) == spec.get("dimension")
                and all(isinstance(x, int | float) and not isinstance(x, bool) for x in each),
            }[kind]
            if not ok:
                raise _bad(f"field [{name}] of type {kind}: bad value {str(each)[:80]}", "mapper_parsing_exception")
            if kind in {"date", "date_nanos"}:
                _parse_date(each)


# --- queries ----------------------------------------------------------------------------------------------

Matcher = Callable[[str, dict[str, Any]], bool]


class _Searcher:
    """Compiles and runs one search body against one index."""

    def __init__(self, index: _Index) -> None:
        self.index = index

    def run(self, body: dict[str, Any]) -> dict[str, Any]:
        unknown = set(body) - {"size", "track_total_hits", "_source", "query", "aggs"}
        if unknown:
            raise _bad(f"search: unsupported keys {sorted(unknown)}")
        size = body.get("size", 10)
        if not isinstance(size, int) or not 0 <= size <= 10_000:
            raise _bad(f"search: size must be 0..10000, got {size!r}")
        query = body.get("query", {"match_all": {}})
        if "knn" in query:
            if len(query) != 1:
                raise _bad("knn must be the only top-level query clause")
            scored = self._knn(query["knn"])
        else:
            matcher, scorer = self._compile(query)
            scored = [(scorer(doc_id, doc), doc_id) for doc_id, doc in self.index.docs.items() if matcher(doc_id, doc)]
        order = {doc_id: n for n, doc_id in enumerate(self.index.docs)}
        scored.sort(key=lambda pair: (-pair[0], order[pair[1]]))
        hits = [self._hit(doc_id, score, body.get("_source", True)) for score, doc_id in scored[:size]]
        result: dict[str, Any] = {"max_score": hits[0]["_score"] if hits else None, "hits": hits}
        if body.get("track_total_hits", True) is not False:
            result["total"] = {"value": len(scored), "relation": "eq"}
        response: dict[str, Any] = {"took": 0, "timed_out": False, "hits": result}
        if "aggs" in body:
            response["aggregations"] = self._aggregations(body["aggs"], [doc_id for _, doc_id in scored])
        return response

    def _aggregations(self, aggs: Any, doc_ids: list[str]) -> dict[str, Any]:
        """`terms` aggregations on keyword fields over the matching documents: a bucket per value, counting the
        documents holding it, most documents first (ties by value), at most `size` (default 10)."""
        if not isinstance(aggs, dict) or not aggs:
            raise _bad("aggs: an object of named aggregations")
        out: dict[str, Any] = {}
        for agg_name, spec in aggs.items():
            if not isinstance(spec, dict) or set(spec) != {"terms"}:
                raise _bad(f"aggs [{agg_name}]: the double supports only a terms aggregation")
            params = spec["terms"]
            if set(params) - {"field", "size"}:
                raise _bad(f"aggs [{agg_name}]: unsupported terms parameters {sorted(params)}")
            field_name = params.get("field")
            if self.index.field_type(field_name) != "keyword":
                raise _bad(f"aggs [{agg_name}]: [{field_name}] is not a keyword field", "illegal_argument_exception")
            size = params.get("size", 10)
            counts: dict[str, int] = {}
            for doc_id in doc_ids:
                value = self.index.docs[doc_id].get(field_name)
                values = value if isinstance(value, list) else [] if value is None else [value]
                for term in set(values):
                    counts[term] = counts.get(term, 0) + 1
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            shown = ranked[:size]
            out[agg_name] = {
                "doc_count_error_upper_bound": 0,
                "sum_other_doc_count": sum(n for _, n in ranked[size:]),
                "buckets": [{"key": term, "doc_count": n} for term, n in shown],
            }
        return out

    def _hit(self, doc_id: str, score: float, source_spec: Any) -> dict[str, Any]:
        hit: dict[str, Any] = {"_index": self.index.name, "_id": doc_id, "_score": score}
        doc = self.index.docs[doc_id]
        if source_spec is True:
            hit["_source"] = doc
        elif isinstance(source_spec, list) and all(isinstance(f, str) for f in source_spec):
            hit["_source"] = {k: v for k, v in doc.items() if k in source_spec}
        elif source_spec is not False:
            raise _bad(f"_source must be true, false or a list of field names, got {source_spec!r}")
        return hit

    # k-NN

    def _knn(self, spec: dict[str, Any]) -> list[tuple[float, str]]:
        if len(spec) != 1:
            raise _bad("knn: exactly one vector field")
        (name, params), *_ = spec.items()
        if self.index.field_type(name) != "knn_vector":
            raise _bad(f"knn: [{name}] is not a knn_vector field")
        if set(params) - {"vector", "k", "filter"}:
            raise _bad(f"knn: unsupported parameters {sorted(params)}")
        dimension = self.index.properties[name]["dimension"]
        vector = params.get("vector")
        if not isinstance(vector, list) or len(vector) != dimension:
            raise _bad(f"knn: query vector must have {dimension} numbers", "illegal_argument_exception")
        k = params.get("k")
        if not isinstance(k, int) or not 1 <= k <= 10_000:
            raise _bad(f"knn: k must be 1..10000, got {k!r}")
        matcher: Matcher = lambda _id, _doc: True  # noqa: E731
        if "filter" in params:
            matcher, _ = self._compile(params["filter"])
        query = np.asarray(vector, dtype=np.float64)
        scored = []
        for doc_id, doc in self.index.docs.items():
            stored = self.index.arrays.get(doc_id, {}).get(name)
            if stored is None or not matcher(doc_id, doc):
                continue
            ip = float(stored @ query)
            scored.append((faiss_innerproduct_score(ip), doc_id))
        scored.sort(key=lambda pair: -pair[0])
        return scored[:k]

    # boolean and leaf queries: (matcher, scorer)

    def _compile(self, query: Any) -> tuple[Matcher, Callable[[str, dict[str, Any]], float]]:
        if not isinstance(query, dict) or len(query) != 1:
            raise _bad(f"a query must be an object with one key, got {str(query)[:120]}")
        (kind, spec), *_ = query.items()
        zero: Callable[[str, dict[str, Any]], float] = lambda _id, _doc: 0.0  # noqa: E731
        if kind == "bool":
            return self._bool(spec)
        if kind == "match":
            return self._match(spec)
        if kind == "match_all" and spec == {}:
            return (lambda _id, _doc: True), (lambda _id, _doc: 1.0)
        if kind == "term":
            return self._terms_matcher(spec, single=True), zero
        if kind == "terms":
            return self._terms_matcher(spec, single=False), zero
        if kind == "range":
            return self._range(spec), zero
        if kind == "exists":
            return self._exists(spec), zero
        raise _bad(f"unsupported query [{kind}]")

    def _exists(self, spec: Any) -> Matcher:
        """A document with a value (not null, not an empty list) in the field, as OpenSearch's `exists`."""
        if not isinstance(spec, dict) or set(spec) != {"field"}:
            raise _bad("exists: exactly a `field`")
        name = spec["field"]
        self.index.field_type(name)  # refuses a field the mapping does not name

        def matcher(_doc_id: str, doc: dict[str, Any]) -> bool:
            value = doc.get(name)
            return value is not None and value != []

        return matcher

    def _bool(self, spec: Any) -> tuple[Matcher, Callable[[str, dict[str, Any]], float]]:
        if not isinstance(spec, dict) or set(spec) - {"must", "filter", "must_not", "should", "minimum_should_match"}:
            raise _bad(f"bool: unsupported keys {sorted(spec) if isinstance(spec, dict) else spec}")

        def compiled(key: str) -> list[tuple[Matcher, Callable[[str, dict[str, Any]], float]]]:
            clauses = spec.get(key, [])
            if isinstance(clauses, dict):
                clauses = [clauses]
            return [self._compile(c) for c in clauses]

        must, filters, must_not, should = (compiled(k) for k in ("must", "filter", "must_not", "should"))
        minimum = spec.get("minimum_should_match", 0 if (must or filters) else 1 if should else 0)
        if not isinstance(minimum, int):
            raise _bad("bool: minimum_should_match must be an integer")

        def matcher(doc_id: str, doc: dict[str, Any]) -> bool:
            if not all(m(doc_id, doc) for m, _ in must) or not all(m(doc_id, doc) for m, _ in filters):
                return False
            if any(m(doc_id, doc) for m, _ in must_not):
                return False
            return sum(1 for m, _ in should if m(doc_id, doc)) >= minimum

        def scorer(doc_id: str, doc: dict[str, Any]) -> float:
            total = sum(s(doc_id, doc) for _, s in must)
            return total + sum(s(doc_id, doc) for m, s in should if m(doc_id, doc))

        return matcher, scorer

    def _match(self, spec: Any) -> tuple[Matcher, Callable[[str, dict[str, Any]], float]]:
        if not isinstance(spec, dict) or len(spec) != 1:
            raise _bad("match: exactly one field")
        (name, params), *_ = spec.items()
        if self.index.field_type(name) != "text":
            raise _bad(f"match: the double only matches text fields, [{name}] is not one")
        if isinstance(params, str):
            params = {"query": params}
        if set(params) - {"query", "operator", "boost"} or params.get("operator", "or").lower() != "or":
            raise _bad(f"match: unsupported parameters {params}")
        boost = float(params.get("boost", 1.0))
        query_terms = analyze(params["query"])
        stats = self._field_stats(name)

        def matcher(doc_id: str, _doc: dict[str, Any]) -> bool:
            present = self.index.terms.get(doc_id, {}).get(name, [])
            return any(t in present for t in query_terms)

        def scorer(doc_id: str, _doc: dict[str, Any]) -> float:
            doc_terms = self.index.terms.get(doc_id, {}).get(name, [])
            n_docs, avg_len, df = stats
            total = 0.0
            for term in query_terms:
                tf = doc_terms.count(term)
                if tf == 0:
                    continue
                idf = math.log(1.0 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
                norm = BM25_K1 * (1.0 - BM25_B + BM25_B * len(doc_terms) / avg_len)
                total += idf * tf / (tf + norm)
            return boost * total

        return matcher, scorer

    def _field_stats(self, name: str) -> tuple[int, float, dict[str, int]]:
        cached = self.index.stats_cache.get(name)
        if cached is not None and cached[0] == self.index.generation:
            return cached[1]
        lengths = []
        df: dict[str, int] = {}
        for per_field in self.index.terms.values():
            terms = per_field.get(name)
            if terms is None:
                continue
            lengths.append(len(terms))
            for term in set(terms):
                df[term] = df.get(term, 0) + 1
        avg = (sum(lengths) / len(lengths)) if lengths else 1.0
        stats = (len(lengths), avg or 1.0, df)
        self.index.stats_cache[name] = (self.index.generation, stats)
        return stats

    def _terms_matcher(self, spec: Any, *, single: bool) -> Matcher:
        if not isinstance(spec, dict) or len(spec) != 1:
            raise _bad("term/terms: exactly one field")
        (name, wanted), *_ = spec.items()
        kind = self.index.field_type(name)
        if kind not in {"keyword", "boolean", "long"}:
            raise _bad(f"term/terms on [{name}] of type {kind}: the double supports keyword, boolean and long")
        if single:
            if isinstance(wanted, dict):
                wanted = wanted.get("value")
            if isinstance(wanted, list | dict):
                raise _bad("term: one value")
            values = [wanted]
        else:
            if not isinstance(wanted, list):
                raise _bad("terms: a list of values")
            values = wanted

        def matcher(_id: str, doc: dict[str, Any]) -> bool:
            stored = doc.get(name)
            stored_values = stored if isinstance(stored, list) else [stored]
            return any(v is not None and type(v) is type(w) and v == w for v in stored_values for w in values)

        return matcher

    def _range(self, spec: Any) -> Matcher:
        if not isinstance(spec, dict) or len(spec) != 1:
            raise _bad("range: exactly one field")
        (name, bounds), *_ = spec.items()
        kind = self.index.field_type(name)
        if kind not in {"date", "date_nanos", "long"} or set(bounds) - {"gte", "gt", "lt", "lte"}:
            raise _bad(f"range on [{name}]: unsupported {bounds}")
        convert: Callable[[Any], Any] = _parse_date if kind != "long" else int
        limits = {op: convert(value) for op, value in bounds.items()}

        def matcher(_id: str, doc: dict[str, Any]) -> bool:
            if doc.get(name) is None:
                return False
            value = convert(doc[name])
            return (
                ("gte" not in limits or value >= limits["gte"])
                and ("gt" not in limits or value > limits["gt"])
                and ("lt" not in limits or value < limits["lt"])
                and ("lte" not in limits or value <= limits["lte"])
            )

        return matcher


# --- the server -------------------------------------------------------------------------------------------


class OpenSearchDouble:
    """The double's state and routes; `start()` serves it on 127.0.0.1 until `close()`."""

    def __init__(self, *, serverless: bool = False, path_prefix: str = "") -> None:
        self.serverless = serverless
        self.path_prefix = path_prefix.rstrip("/")
        self.indices: dict[str, _Index] = {}
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[bytes] = []
        self._down = False
        self._lock = threading.RLock()
        self._next_id = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> OpenSearchDouble:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle's algorithm the client's delayed ACK would
            # hold the second back ~40 ms on every request.
            disable_nagle_algorithm = True

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, payload = double.handle(self.command, self.path, raw)
                data = b"" if payload is None else json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", "0" if self.command == "HEAD" else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval: close() waits up to one interval for the serving loop to notice.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="opensearch-double", daemon=True
        )
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the double is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> OpenSearchDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # test helpers

    def set_down(self, down: bool) -> None:
        """While down, every request answers 503 (an index that is unavailable)."""
        self._down = down

    def documents(self, index: str) -> list[dict[str, Any]]:
        """The stored documents of an index (copies), in insertion order."""
        with self._lock:
            return [json.loads(json.dumps(d)) for d in self.indices[index].docs.values()]

    # dispatch

    def handle(self, method: str, raw_path: str, raw_body: bytes) -> tuple[int, Any]:
        """Answer one request: (status, JSON payload or None)."""
        parsed = urlparse(raw_path)
        params = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        with self._lock:
            self.requests.append((method, parsed.path))
            self.bodies.append(raw_body)
            if self._down:
                return 503, DoubleError(503, "unavailable", "[opensearch double] the index is down").body()
            try:
                parts = [unquote(p) for p in self._unprefixed(parsed.path).split("/") if p]
                return self._route(method, parts, params, raw_body)
            except DoubleError as exc:
                return exc.status, exc.body()

    def _unprefixed(self, path: str) -> str:
        """The path under `path_prefix` (where a proxy routing by path would serve the cluster); 404 elsewhere."""
        prefix = self.path_prefix
        if prefix and path != prefix and not path.startswith(prefix + "/"):
            raise DoubleError(404, "no_handler_found", f"[opensearch double] {path} is not under {prefix}")
        return path[len(prefix) :]

    def _route(self, method: str, parts: list[str], params: dict[str, str], raw: bytes) -> tuple[int, Any]:
        if set(params) - {"conflicts", "ignore_unavailable"}:
            raise _bad(f"unsupported query parameters {sorted(params)}")
        if not parts and method == "GET":
            # The root: what a client (or the emulator's probe) asks to know it reaches OpenSearch.
            return 200, {"version": {"distribution": "opensearch", "number": "2.19.0-double"}}
        if len(parts) == 1 and parts[0] == "_bulk" and method in {"POST", "PUT"}:
            return 200, self._bulk(None, raw)
        if len(parts) == 1 and parts[0] == "_msearch" and method in {"POST", "GET"}:
            return 200, self._msearch(None, raw)
        if len(parts) == 1 and not parts[0].startswith("_"):
            return self._index_level(method, parts[0], raw)
        if len(parts) == 2 and not parts[0].startswith("_"):
            name, action = parts
            if action == "_mapping" and method == "GET":
                index = self._index(name)
                return 200, {name: {"mappings": index.mappings}}
            if action == "_mapping" and method in {"PUT", "POST"}:
                return 200, self._put_mapping(self._index(name), self._json(raw))
            if action == "_bulk" and method in {"POST", "PUT"}:
                return 200, self._bulk(name, raw)
            if action == "_msearch" and method in {"POST", "GET"}:
                return 200, self._msearch(name, raw)
            if action == "_search" and method in {"POST", "GET"}:
                return 200, _Searcher(self._index(name)).run(self._json(raw))
            if action == "_delete_by_query" and method == "POST":
                return self._delete_by_query(name, raw)
            if action == "_refresh" and method in {"POST", "GET"}:
                if self.serverless:
                    return 404, _bad("_refresh is not supported by the imitated Serverless collection").body()
                self._index(name)
                return 200, {"_shards": {"total": 1, "successful": 1, "failed": 0}}
        if len(parts) == 3 and parts[1] == "_doc" and method == "DELETE":
            index = self._index(parts[0])
            found = index.remove(parts[2])
            return (200 if found else 404), {
                "_index": parts[0],
                "_id": parts[2],
                "result": "deleted" if found else "not_found",
            }
        raise _bad(f"unsupported request {method} /{'/'.join(parts)}", "illegal_argument_exception")

    def _json(self, raw: bytes) -> dict[str, Any]:
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            raise _bad(f"body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise _bad("body must be a JSON object")
        return body

    def _ndjson(self, raw: bytes) -> list[Any]:
        text = raw.decode("utf-8")
        if text and not text.endswith("\n"):
            raise _bad("NDJSON body must end with a newline", "illegal_argument_exception")
        try:
            return [json.loads(line) for line in text.split("\n") if line.strip()]
        except json.JSONDecodeError as exc:
            raise _bad(f"NDJSON line is not JSON: {exc}") from exc

    def _index(self, name: str) -> _Index:
        index = self.indices.get(name)
        if index is None:
            raise DoubleError(404, "index_not_found_exception", f"no such index [{name}]")
        return index

    def _index_level(self, method: str, name: str, raw: bytes) -> tuple[int, Any]:
        if method == "HEAD":
            return (200 if name in self.indices else 404), None
        if method == "PUT":
            if name in self.indices:
                raise _bad(f"index [{name}] already exists", "resource_already_exists_exception")
            settings, mappings = _validate_index_body(self._json(raw))
            self.indices[name] = _Index(name, settings, mappings)
            return 200, {"acknowledged": True, "shards_acknowledged": True, "index": name}
        if method == "GET":
            index = self._index(name)
            return 200, {name: {"settings": index.settings, "mappings": index.mappings}}
        if method == "DELETE":
            self.indices.pop(name, None)
            return 200, {"acknowledged": True}
        raise _bad(f"unsupported request {method} /{name}", "illegal_argument_exception")

    def _put_mapping(self, index: _Index, body: dict[str, Any]) -> dict[str, Any]:
        """Add fields to a mapping, as OpenSearch does: new fields only; an existing field cannot change."""
        if set(body) != {"properties"} or not isinstance(body["properties"], dict):
            raise _bad("put mapping: only {properties: {...}} is supported")
        for name, spec in body["properties"].items():
            if name in index.properties and index.properties[name] != spec:
                raise _bad(f"mapper [{name}] cannot be changed", "illegal_argument_exception")
            if spec.get("type") not in {"keyword", "boolean", "long"}:
                raise _bad(f"put mapping: the double adds only keyword, boolean and long fields, not [{name}]")
        index.mappings["properties"].update(body["properties"])
        return {"acknowledged": True}

    # documents

    def _store(self, index: _Index, doc_id: str, source: dict[str, Any]) -> None:
        _validate_document(index, source)
        index.put(doc_id, source)

    def _bulk(self, path_index: str | None, raw: bytes) -> dict[str, Any]:
        lines = self._ndjson(raw)
        items: list[dict[str, Any]] = []
        position = 0
        while position < len(lines):
            action_line = lines[position]
            position += 1
            if not isinstance(action_line, dict) or len(action_line) != 1:
                raise _bad(f"bulk: malformed action line {str(action_line)[:120]}", "illegal_argument_exception")
            (action, meta), *_ = action_line.items()
            if action not in {"index", "delete"}:
                raise _bad(f"bulk: unsupported action [{action}]", "illegal_argument_exception")
            if set(meta) - {"_index", "_id"}:
                raise _bad(f"bulk: unsupported action metadata {sorted(meta)}", "illegal_argument_exception")
            name = meta.get("_index", path_index)
            if name is None:
                raise _bad("bulk: no index named", "action_request_validation_exception")
            if action == "index":
                if position >= len(lines):
                    raise _bad("bulk: index action without a document", "illegal_argument_exception")
                source = lines[position]
                position += 1
                items.append({"index": self._bulk_index(name, meta.get("_id"), source)})
            else:
                if "_id" not in meta:
                    raise _bad("bulk: delete needs an _id", "action_request_validation_exception")
                index = self._index(name)
                found = index.remove(meta["_id"])
                items.append(
                    {
                        "delete": {
                            "_index": name,
                            "_id": meta["_id"],
                            "status": 200 if found else 404,
                            "result": "deleted" if found else "not_found",
                        }
                    }
                )
        errors = any("error" in result for item in items for result in item.values())
        return {"took": 0, "errors": errors, "items": items}

    def _bulk_index(self, name: str, doc_id: str | None, source: Any) -> dict[str, Any]:
        index = self._index(name)
        if doc_id is not None and self.serverless:
            error = _bad("Document ID is not supported in create/index operation request", "illegal_argument_exception")
            return {"_index": name, "_id": doc_id, "status": 400, "error": error.body()["error"]}
        if doc_id is None:
            self._next_id += 1
            doc_id = f"auto-{self._next_id:08d}"
        created = doc_id not in index.docs
        try:
            self._store(index, doc_id, source)
        except DoubleError as exc:
            return {"_index": name, "_id": doc_id, "status": exc.status, "error": exc.body()["error"]}
        return {
            "_index": name,
            "_id": doc_id,
            "status": 201 if created else 200,
            "result": "created" if created else "updated",
        }

    def _delete_by_query(self, name: str, raw: bytes) -> tuple[int, Any]:
        if self.serverless:
            return 404, _bad("_delete_by_query is not supported by the imitated Serverless collection").body()
        index = self._index(name)
        body = self._json(raw)
        if set(body) != {"query"}:
            raise _bad(f"delete_by_query: unsupported keys {sorted(body)}")
        matcher, _ = _Searcher(index)._compile(body["query"])
        doomed = [doc_id for doc_id, doc in index.docs.items() if matcher(doc_id, doc)]
        for doc_id in doomed:
            index.remove(doc_id)
        return 200, {"took": 0, "deleted": len(doomed), "total": len(doomed), "failures": []}

    # searches

    def _msearch(self, path_index: str | None, raw: bytes) -> dict[str, Any]:
        lines = self._ndjson(raw)
        if len(lines) % 2:
            raise _bad("msearch: header and body lines must come in pairs", "illegal_argument_exception")
        responses = []
        for header, body in zip(lines[::2], lines[1::2], strict=True):
            if not isinstance(header, dict) or set(header) - {"index"}:
                raise _bad(f"msearch: unsupported header {header}")
            name = header.get("index", path_index)
            if name is None:
                raise _bad("msearch: no index named", "action_request_validation_exception")
            try:
                result = _Searcher(self._index(name)).run(body)
                result["status"] = 200
            except DoubleError as exc:
                result = exc.body()
            responses.append(result)
        return {"took": 0, "responses": responses}
