"""OpenSearchIndex: the SearchIndex of the AWS backend, on OpenSearch k-NN (Serverless `aoss` or a domain `es`).

`documents` holds the mapping and what one memory is in the index, `queries` the search requests and how their
hits become candidates, `client` how the cluster is reached, `index` the OpenSearchIndex that sends them.

One index holds every namespace's episodes and facts, one document per memory:

- `doc_key` (keyword): `document_id(namespace, layer, id)`, the sha1 of `<namespace>|<layer>|<id>`;
  `namespace`, `layer`, `memory_id`, `tags`, `entities` (episodes; counted by `entity_shares` with a terms
  aggregation), `event_type`, `session_id`, `status` (keyword), `consolidated`
  (boolean), `occurred_at` (date_nanos: the episode's occurred_at or the fact's last_confirmed_at, kept to the
  microsecond so the half-open time filters agree with the store's), `version` (long);
- `search_text` (text): content, tags and entities, analysed for English (possessives, stop words, Porter
  stemming) and for Chinese and Japanese (`cjk_bigram`: overlapping character bigrams, as
  `rearview.text_analysis` does for the embedded backend);
- `vector` (knn_vector): HNSW, inner product, on faiss (or on lucene, pure Java, where faiss's native libraries
  are missing: `aws.opensearch_engine`). Vectors are L2-normalised on the way in and the query on the way out,
  so the inner product IS the cosine. `cosine_from_knn_score` undoes the engines' (common) score transform.

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

from rearview.adapters.opensearch.client import OpenSearchConnection, build_opensearch_client
from rearview.adapters.opensearch.index import OpenSearchBulkError, OpenSearchIndex, OpenSearchSearchError

__all__ = [
    "OpenSearchBulkError",
    "OpenSearchConnection",
    "OpenSearchIndex",
    "OpenSearchSearchError",
    "build_opensearch_client",
]
