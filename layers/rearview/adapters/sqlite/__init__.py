"""The embedded backend: one SQLite file (WAL, FTS5) as MemoryStore, SearchIndex, KeyStore and HindsightLedger;
vectors in numpy (exact) and usearch (HNSW, for large namespaces).

One module per job:

- `schema`: the tables, the FTS5 tokenizer and the migrations (`MIGRATIONS`, `SCHEMA_VERSION`).
- `connection`: `SqliteDatabase`, the file itself: per-thread connections, transactions, snapshots, the
  migration runner, the embedder check, and the change notices a store publishes to the caches.
- `rows`: an Episode or a Fact as a row (a bulk chunk of episodes as columns, from models or from a bulk load's
  `EpisodeColumns`), and a MemoryFilter as a WHERE clause.
- `memory_store`: `SqliteMemoryStore`; `read_cache`: the memories and vectors it read recently, each kept with the
  namespace's generation it was read at; `access_log`: the accesses recalls count, logged a row a recall and
  folded into the memories in batches; `management`: its pages of memories, version history and namespace erasure.
- `bulk_insert`: a large change set's rows and statements made on a helper thread a chunk ahead of SQLite, a chunk
  per statement, each value bound once where the chunk allows.
- `namespace_fts`: which FTS5 table holds a namespace (the shared one, or its own past `OWN_FTS_EPISODES`),
  and the store's one-statement indexing of the episodes a change set inserts.
- `vector_cache`: one namespace's vectors of one layer (float16) with its filter columns, searched exactly or
  through its graph; `vector_caches`: every cache of the file, loaded in chunks, within a byte budget.
- `ann_index`: the HNSW graph (usearch) of a large namespace, saved in `<data_dir>/ann/`, repaired or rebuilt
  from the store when stale or missing.
- `graph_keeper`: the background thread that builds the graphs (after a bulk load, past the threshold) and adds
  each write's rows to them, off the write path (rows not in a graph yet are searched exactly meanwhile).
- `coarse_cells`: while a graph is built, the cells (an inverted file) the write path's duplicate check searches
  instead of every row.
- `search_index`: `SqliteSearchIndex`: BM25 keyword search over FTS5, entity shares, vector search.
- `index_replica`: `SqliteIndexReplica`, the same search kept apart from the store and written by index sync, as
  `rearview emulate` searches when no OpenSearch node is reachable.
- `key_store`: `SqliteKeyStore`, the API keys in the same file.
- `hindsight_ledger`: `SqliteHindsightLedger`, consolidation's lease, runs, spend and totals in the same file.
- `retention_policies`: `SqliteRetentionPolicies`, each namespace's retention policy in the same file.
- `quota`: `SqliteRequestQuota`, the API keys' request counters (per-key throttling) in the same file.

A store, an index, a key store and a ledger share one `SqliteDatabase`, so the index is written in the store's own
transaction and never lags it.
"""

from rearview.adapters.sqlite.ann_index import AnnParams
from rearview.adapters.sqlite.connection import DB_FILENAME, SqliteDatabase
from rearview.adapters.sqlite.hindsight_ledger import SqliteHindsightLedger
from rearview.adapters.sqlite.key_store import SqliteKeyStore
from rearview.adapters.sqlite.memory_store import SqliteMemoryStore
from rearview.adapters.sqlite.quota import SqliteRequestQuota
from rearview.adapters.sqlite.retention_policies import SqliteRetentionPolicies
from rearview.adapters.sqlite.rows import namespace_token
from rearview.adapters.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, Migration
from rearview.adapters.sqlite.search_index import SqliteSearchIndex
from rearview.adapters.sqlite.vector_caches import VectorOptions

# The HNSW graphs' folder, beside the database file.
ANN_DIRNAME = "ann"

__all__ = [
    "ANN_DIRNAME",
    "AnnParams",
    "DB_FILENAME",
    "MIGRATIONS",
    "Migration",
    "SCHEMA_VERSION",
    "SqliteDatabase",
    "SqliteHindsightLedger",
    "SqliteKeyStore",
    "SqliteRequestQuota",
    "SqliteMemoryStore",
    "SqliteRetentionPolicies",
    "SqliteSearchIndex",
    "VectorOptions",
    "namespace_token",
]
