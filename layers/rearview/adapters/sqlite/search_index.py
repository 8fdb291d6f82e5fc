"""SqliteSearchIndex: keyword search (BM25 over FTS5, with term-count caching to keep common terms cheap),
entity shares, and vector search over the per-namespace vector caches."""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from itertools import repeat
from typing import NamedTuple, TypeVar

import numpy as np

from rearview.adapters.sqlite.connection import SqliteDatabase
from rearview.adapters.sqlite.namespace_fts import FtsTable, alone_in, episodes_at_least, fts_table
from rearview.adapters.sqlite.rows import TABLE, epoch, filter_clause, json_list, unique_layers
from rearview.adapters.sqlite.vector_cache import Hits, VectorCache, normalised_rows
from rearview.adapters.sqlite.vector_caches import VectorCaches, VectorOptions
from rearview.domain.memory import StoredLayer
from rearview.domain.search import Candidate, EntityShares, MemoryFilter, SearchTraits
from rearview.errors import InvalidInput
from rearview.ports import SearchIndex
from rearview.text_analysis import query_terms

# The FTS5 columns keyword search matches in an episode when it weighs the context (facts have no context).
_TEXT_AND_CONTEXT = "{search_text context_text}"
# Entity shares are counted over the latest _ENTITY_SAMPLE episodes, again after 1/20 of that in change sets.
_ENTITY_SAMPLE = 5000
_ENTITY_RECOUNT_DIVISOR = 20
_ENTITY_SHARES_CACHED = 4096
# Term match counts are kept for this many namespaces, and at most this many counts in one (then counted afresh).
_TERM_COUNTS_NAMESPACES = 1024
_TERM_COUNTS_PER_NAMESPACE = 4096
# (fts table, columns, count cap, term or None for the whole namespace) -> matches, counted up to cap + 1.
_TermCounts = dict[tuple[str, str, int, str | None], int]
# The expired refs of this many (namespace, layer) are kept (see _expired_refs).
_EXPIRED_CACHED = 4096


class _Expired(NamedTuple):
    """A layer's refs expired by `since`, read at `generation`: the same refs for any time from `since` up to
    `until`, the next expiry then (None: nothing else expires)."""

    generation: int
    since: float
    until: float | None
    refs: np.ndarray


_K = TypeVar("_K")
_V = TypeVar("_V")


def _keep(cache: OrderedDict[_K, _V], key: _K, value: _V, capacity: int) -> None:
    """`value` as the most recently used entry of `cache`, the least recently used ones out past `capacity`."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > capacity:
        cache.popitem(last=False)


def _candidates(layer: StoredLayer, hits: Hits) -> list[Candidate]:
    """`Candidate(id, layer, score)` for each hit, without the named tuple's `__new__` (a Python function): the same
    tuples, built in C. A local vector search builds up to `feedback_pool` (1,000) of them for recall's wide first
    pass."""
    scores, ids = hits
    return list(map(tuple.__new__, repeat(Candidate), zip(ids, repeat(layer), scores)))


class SqliteSearchIndex(SearchIndex):
    """SearchIndex over SqliteDatabase: BM25 over FTS5, and cosine over cached vectors: exact below
    `vectors.ann_threshold` vectors in a namespace's layer, through an HNSW graph above (saved in `ann_dir`).

    The vector caches (`VectorCaches`) are checked against the namespace's generation on every search (one
    indexed lookup), so writes by other processes are seen. At most `vectors.max_bytes` stay cached.
    BM25 statistics (IDF, average length) are those of the whole table, not of one namespace: scores are
    comparable within a query, which is all fusion needs.
    """

    # Written in the store's own transaction, with vector search a scan of a cached float16 matrix in this process.
    traits = SearchTraits(local_scan=True, cosine_error=2e-3)

    def __init__(
        self,
        db: SqliteDatabase,
        *,
        vectors: VectorOptions | None = None,
        common_term_matches: int = 2000,
        scored_matches_budget: int = 5000,
        recent_matches: int = 2000,
        max_query_terms: int = 32,
        term_count_commits: int = 32,
    ) -> None:
        self.db = db
        # See IndexTuning in settings for the defaults. Least recently used namespaces leave the budget first.
        self._vectors = VectorCaches(db, vectors or VectorOptions())
        # FTS5's bm25() costs about 2.5 us per matching row plus a pass over each term's whole doclist (its
        # IDF), so one term found in most of a 100k-memory namespace costs a quarter of a second. Such a term
        # says little (its IDF is near zero) next to a rarer one: a term matching more than
        # `common_term_matches` memories of the namespace is left out of the scored query when rarer terms
        # exist, and the rarer terms are scored up to `scored_matches_budget` matches in all. When every term
        # is common, the rarest is scored over its `recent_matches` most recent matches only.
        self.common_term_matches = common_term_matches
        self.scored_matches_budget = scored_matches_budget
        self.recent_matches = recent_matches
        self.max_query_terms = max_query_terms
        # How many matches a term has in a namespace only decides which terms are scored (their scores come from
        # bm25() itself), so the counts are reused until the namespace has seen `term_count_commits` more commits:
        # counting one term costs up to `common_term_matches` rows of FTS5 doclist merging (about 1 ms each at
        # 100k memories in a namespace, several per query).
        self.term_count_commits = term_count_commits
        # namespace -> (generation counted at, its counts).
        self._term_counts: OrderedDict[str, tuple[int, _TermCounts]] = OrderedDict()
        self._lock = threading.Lock()
        # namespace -> (generation counted at, shares); see entity_shares.
        self._entity_shares: OrderedDict[str, tuple[int, EntityShares]] = OrderedDict()
        # (namespace, layer) -> what expired by a time, and until when that holds; see _expired_refs.
        self._expired: OrderedDict[tuple[str, StoredLayer], _Expired] = OrderedDict()

    # entity statistics

    def entity_shares(self, namespace: str) -> EntityShares:
        """Shares among the namespace's latest `_ENTITY_SAMPLE` episodes (one aggregate: 25 ms in a namespace of
        100k episodes, where counting all of them took 0.4 s), counted again once 1/20 of the sample's size in
        change sets has been committed since: shares move slowly."""
        generation = self.db.generation(namespace)
        with self._lock:
            cached = self._entity_shares.get(namespace)
            if cached is not None:
                sampled = min(cached[1].episodes, _ENTITY_SAMPLE)
                if 0 <= generation - cached[0] <= sampled // _ENTITY_RECOUNT_DIVISOR:
                    self._entity_shares.move_to_end(namespace)
                    return cached[1]
        with self.db.snapshot() as conn:
            generation = self.db.generation(namespace, conn)
            count = conn.execute("SELECT count(*) FROM episodes WHERE namespace = ?", (namespace,)).fetchone()
            episodes = int(count[0])
            rows = conn.execute(
                "SELECT entity.value, count(DISTINCT e.ref) FROM (SELECT ref, entities_json FROM episodes "
                "WHERE namespace = ? ORDER BY created_at DESC LIMIT ?) AS e, json_each(e.entities_json) AS entity "
                "GROUP BY entity.value",
                (namespace, _ENTITY_SAMPLE),
            ).fetchall()
        sampled = min(episodes, _ENTITY_SAMPLE)
        shares = {str(name): n / sampled for name, n in rows} if sampled else {}
        counted = EntityShares(episodes=episodes, shares=shares)
        with self._lock:
            _keep(self._entity_shares, namespace, (generation, counted), _ENTITY_SHARES_CACHED)
        return counted

    # keyword search

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]:
        """BM25 over the analysed text (and an episode's context column, weighted): any query term matches; best
        first. No terms (stop words only): []."""
        terms = query_terms(text)[: self.max_query_terms]
        if not terms or limit <= 0:
            return []
        found: list[Candidate] = []
        with self.db.snapshot() as conn:
            counts = self._term_counts_of(namespace)
            for layer in unique_layers(flt.layers):
                clause = filter_clause(layer, namespace, flt, "m")
                if clause is None:
                    continue
                table = fts_table(conn, layer, namespace)
                columns = _TEXT_AND_CONTEXT if layer == "episodic" and context_weight > 0 else "search_text"
                scored, recent_only = self._scored_terms(conn, namespace, table, terms, columns, counts)
                if scored:
                    query = _KeywordQuery(conn, namespace, layer, table, scored, columns, context_weight, clause)
                    rows = query.rows(limit, self.recent_matches if recent_only else None, _loose(flt))
                    found.extend(Candidate(memory_id, layer, float(score)) for memory_id, score in rows)
        found.sort(key=lambda c: c.score, reverse=True)
        return found[:limit]

    def _term_counts_of(self, namespace: str) -> _TermCounts:
        """The namespace's cached match counts, emptied once it has seen more than `term_count_commits` commits
        since they were counted (called inside the caller's snapshot, which this thread's connection holds)."""
        generation = self.db.generation(namespace)
        with self._lock:
            cached = self._term_counts.get(namespace)
            if cached is None or not 0 <= generation - cached[0] <= self.term_count_commits:
                cached = (generation, {})
            elif len(cached[1]) > _TERM_COUNTS_PER_NAMESPACE:
                cached = (cached[0], {})
            _keep(self._term_counts, namespace, cached, _TERM_COUNTS_NAMESPACES)
            return cached[1]

    def _count_matches(self, conn: sqlite3.Connection, fts: str, match: str, cap: int) -> int:
        """How many rows match, counting no further than `cap` + 1 (so a common term costs no more)."""
        (count,) = conn.execute(
            f"SELECT count(*) FROM (SELECT rowid FROM {fts} WHERE {fts} MATCH ? LIMIT ?)", (match, cap + 1)
        ).fetchone()
        return int(count)

    def _scored_terms(
        self,
        conn: sqlite3.Connection,
        namespace: str,
        table: FtsTable,
        terms: list[str],
        columns: str,
        counts: _TermCounts,
    ) -> tuple[list[str], bool]:
        """The terms to score and whether to score only the most recent matches (see __init__); `counts` caches
        the match counts (capped, as `_count_matches` returns them) across queries."""

        def count(term: str | None, cap: int) -> int:
            key = (table.name, columns, cap, term)
            found = counts.get(key)
            if found is None:
                if term is not None:
                    found = self._count_matches(conn, table.name, table.match([term], columns), cap)
                elif table.token is not None:
                    found = self._count_matches(conn, table.name, f'ns_token : "{table.token}"', cap)
                else:  # an own table holds the namespace's episodes and nothing else
                    found = cap + 1 if episodes_at_least(conn, namespace, cap + 1) else cap
                counts[key] = found
            return found

        budget = self.scored_matches_budget
        if count(None, budget) <= budget:
            return terms, False  # a namespace this small is cheap to score whole
        cap = self.common_term_matches
        counted = sorted((n, position, term) for position, term in enumerate(terms) if (n := count(term, cap)))
        if not counted:
            return [], False
        if counted[0][0] > cap:
            return [counted[0][2]], True
        scored: list[str] = []
        total = 0
        for n, _, term in counted:
            if n > cap or (scored and total + n > budget):
                break
            scored.append(term)
            total += n
        return scored, False

    # vector search

    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]:
        """Exact cosine against every vector of the namespace that passes the filter; best first."""
        if limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.db.dim:
            raise InvalidInput(f"vector: expected dimension {self.db.dim}, got {query.shape[0]}", field="vector")
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            return []
        query = query / norm
        per_layer = [
            _candidates(layer, cache.search(query, mask, limit))
            for layer, cache, mask in self._searchable_caches(namespace, flt)
        ]
        return _best_of(per_layer, limit)

    def searches_all(self, namespace: str, flt: MemoryFilter, limit: int) -> bool | None:
        """No more than `limit` rows of the namespace's vector caches pass the filter: counted from the caches'
        sizes where they are that small, else from the masks a search would score. None until the caches are
        loaded (the search loads them; a cache above the byte budget is loaded for each search and dropped)."""
        generation = self.db.generation(namespace)
        alive = 0
        for layer in unique_layers(flt.layers):
            cache = self._vectors.loaded(namespace, layer, generation)
            if cache is None:
                return None
            alive += cache.alive_count
        if alive <= limit:
            return True
        masks = self._searchable_caches(namespace, flt, generation)
        return sum(int(np.count_nonzero(mask)) for _, _, mask in masks) <= limit

    def scans_exactly(self, namespace: str, flt: MemoryFilter) -> bool:
        """True unless a layer's cache, loaded and current, has a graph that the search walks (the filter passes
        most of its rows): the graph's cost grows with the width asked for (at 100k, 1,000 keys 9.8 ms against
        2.0 for 60). A cache not loaded yet counts as scanned, as its first search is until its graph is built."""
        generation = self.db.generation(namespace)
        with_graph = {
            layer
            for layer in unique_layers(flt.layers)
            if (cache := self._vectors.loaded(namespace, layer, generation)) is not None and cache.ann is not None
        }
        if not with_graph:
            return True
        walks = [
            cache.walks_graph(int(np.count_nonzero(mask)))
            for layer, cache, mask in self._searchable_caches(namespace, flt, generation)
            if layer in with_graph
        ]
        return not any(walks)

    def vector_search_many(
        self, namespace: str, vectors: np.ndarray, flt: MemoryFilter, limit: int
    ) -> list[list[Candidate]]:
        """`vector_search` for each row of `vectors` in one pass over the namespace (the write path's dedup check
        of a whole batch: one matrix product instead of one scan per item)."""
        queries = np.asarray(vectors, dtype=np.float32).reshape(-1, self.db.dim)
        results: list[list[Candidate]] = [[] for _ in range(queries.shape[0])]
        if limit <= 0 or queries.shape[0] == 0:
            return results
        queries = normalised_rows(queries)
        per_layer: list[list[list[Candidate]]] = [[] for _ in results]
        for layer, cache, mask in self._searchable_caches(namespace, flt):
            self._vectors.note_write(cache)
            per_query = cache.search_many(queries, mask, limit, self._vectors.ann.ann_params.expansion_batch)
            for found, hits in zip(per_layer, per_query, strict=True):
                found.append(_candidates(layer, hits))
        return [_best_of(found, limit) for found in per_layer]

    def _searchable_caches(
        self, namespace: str, flt: MemoryFilter, generation: int | None = None
    ) -> Iterator[tuple[StoredLayer, VectorCache, np.ndarray]]:
        """Each layer the filter can match, with its vector cache at `generation` (the current one unless the caller
        read it already) and the filter's row mask; the cache stays locked while the caller searches it, until the
        next layer is asked for."""
        if generation is None:
            generation = self.db.generation(namespace)
        for layer in unique_layers(flt.layers):
            if flt.ids is not None and not flt.ids:
                continue
            chosen = self._chosen_refs(namespace, layer, flt)
            expired = self._expired_refs(namespace, layer, flt, generation)
            cache = self._vectors.get(namespace, layer, generation)
            with cache.lock:
                yield layer, cache, cache.mask(flt, chosen, expired)

    def _chosen_refs(self, namespace: str, layer: StoredLayer, flt: MemoryFilter) -> np.ndarray | None:
        """The refs the conditions a vector cache does not hold allow (tags, metadata, entities), looked up in the
        database; None without such conditions."""
        if not (flt.tags or flt.metadata or flt.entities):
            return None
        conn = self.db.connection()
        lookups: list[tuple[str, tuple[object, ...]]] = []
        if flt.tags:
            lookups.append(
                (
                    "SELECT DISTINCT ref FROM memory_tags WHERE namespace = ? AND layer = ? "
                    "AND tag IN (SELECT value FROM json_each(?))",
                    (namespace, layer, json_list(flt.tags)),
                )
            )
        lookups.extend(
            (
                "SELECT DISTINCT ref FROM memory_metadata WHERE namespace = ? AND layer = ? "
                "AND term IN (SELECT value FROM json_each(?))",
                (namespace, layer, json_list(terms)),
            )
            for terms in flt.metadata
        )
        if flt.entities:
            lookups.append(
                (
                    f"SELECT m.ref FROM {TABLE[layer]} AS m WHERE m.namespace = ? AND m.entities_json <> '[]' AND "
                    "EXISTS (SELECT 1 FROM json_each(m.entities_json) WHERE value IN (SELECT value FROM json_each(?)))",
                    (namespace, json_list(flt.entities)),
                )
            )
        chosen: np.ndarray | None = None
        for sql, params in lookups:
            rows = conn.execute(sql, params).fetchall()
            refs = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            chosen = refs if chosen is None else np.intersect1d(chosen, refs)
        return chosen

    def _expired_refs(
        self, namespace: str, layer: StoredLayer, flt: MemoryFilter, generation: int
    ) -> np.ndarray | None:
        """The refs of the namespace's memories expired by `flt.alive_at` (lookups of the partial index of the
        memories that expire, which is empty for most namespaces); None when expiry is not asked about. Kept with
        the next expiry after that time: until the generation moves or that next expiry comes, every search
        (three a recall, at the recall's time) gets the same refs without a lookup."""
        if flt.alive_at is None:
            return None
        at = epoch(flt.alive_at)
        key = (namespace, layer)
        with self._lock:
            kept = self._expired.get(key)
            if (
                kept is not None
                and kept.generation == generation
                and kept.since <= at
                and (kept.until is None or at < kept.until)
            ):
                self._expired.move_to_end(key)
                return kept.refs
        table = TABLE[layer]
        with self.db.snapshot() as conn:
            rows = conn.execute(
                f"SELECT ref FROM {table} WHERE namespace = ? AND expires_at <= ?", (namespace, at)
            ).fetchall()
            (until,) = conn.execute(
                f"SELECT MIN(expires_at) FROM {table} WHERE namespace = ? AND expires_at > ?", (namespace, at)
            ).fetchone()
            current = self.db.generation(namespace, conn)
        refs = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        refs.flags.writeable = False  # shared by every search that gets it from the cache
        with self._lock:
            _keep(self._expired, key, _Expired(current, at, until, refs), _EXPIRED_CACHED)
        return refs

    def cached_vector_count(self) -> int:
        """How many vectors the caches hold now (for tests and the stats page)."""
        return self._vectors.vector_count()

    def cached_bytes(self) -> int:
        """What the vector caches and their graphs hold in memory now."""
        return self._vectors.cached_bytes()

    def graph_count(self) -> int:
        """How many cached namespaces' layers are searched through an HNSW graph now."""
        return self._vectors.graph_count()

    def wait_for_graphs(self, timeout: float | None = None) -> bool:
        """Block until the background graph work (builds, pending rows) is done; False if `timeout` passed first.
        Without background work (the default) there is never any: True."""
        return self._vectors.wait_for_graphs(timeout)

    def save_graphs(self) -> None:
        """Save every HNSW graph changed since it was last saved (at shutdown; a graph not saved is repaired
        from the store when next loaded)."""
        self._vectors.save_all()


def _loose(flt: MemoryFilter) -> bool:
    """True if the filter asks for nothing but its layers (and facts' status and what has not expired): what
    recall's own searches ask. The match itself keeps a search to its namespace, and few memories expire, so nearly
    every ranked hit passes such a filter."""
    return flt == MemoryFilter(layers=flt.layers, include_superseded=flt.include_superseded, alive_at=flt.alive_at)


class _KeywordQuery:
    """One layer's ranked keyword query: bm25 over the FTS table's matches of the scored terms, joined to the
    memories' table for their ids and the filter."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        namespace: str,
        layer: StoredLayer,
        table: FtsTable,
        terms: list[str],
        columns: str,
        context_weight: float,
        clause: tuple[str, list[object]],
    ) -> None:
        self.conn, self.namespace, self.layer, self.table = conn, namespace, layer, table
        self.terms, self.columns = terms, columns
        self.weights = table.weights(layer, context_weight)
        self.where, self.params = clause

    def _hits(self, table: FtsTable, recent: int | None) -> tuple[str, str]:
        """The hits' subquery (ref, score) and its match expression; `recent`: only the most recent matches."""
        fts = table.name
        order = f"ORDER BY rowid DESC LIMIT {int(recent)}" if recent is not None else ""
        sql = f"SELECT rowid AS ref, -bm25({fts}, {self.weights}) AS score FROM {fts} WHERE {fts} MATCH ? {order}"
        return sql, table.match(self.terms, self.columns)

    def rows(self, limit: int, recent: int | None, loose: bool) -> list[tuple[str, float]]:
        """(id, score) of the best `limit`, best first: the hits ranked before the join where the filter is loose,
        without the namespace's token where the namespace has the shared table to itself; else the full query.
        Matched with or without the token, those are the same hits with the same scores: one ranked attempt."""
        if loose:
            table = self.table
            if table.token is not None and recent is None and alone_in(self.conn, self.layer, self.namespace):
                table = table.unrestricted()
            found = self._ranked_first(*self._hits(table, recent), limit)
            if found is not None:
                return found
        hits, match = self._hits(self.table, recent)
        # CROSS JOIN pins the hits as the outer loop: the match is what narrows the rows.
        return self.conn.execute(
            f"SELECT m.id, hits.score FROM ({hits}) AS hits CROSS JOIN {TABLE[self.layer]} AS m ON m.ref = hits.ref "
            f"WHERE {self.where} ORDER BY hits.score DESC LIMIT ?",
            (match, *self.params, limit),
        ).fetchall()

    def _ranked_first(self, hits: str, match: str, limit: int) -> list[tuple[str, float]] | None:
        """The hits ranked and cut to `limit` before the join to the memories' table, so only those rows are read
        (each is a page of its own: a vector lies in every row), not every match's; None when the filter (or the
        namespace) removed one of the `limit` best of more, where only the full query (the join, then the ranking)
        is exact.

        The same rows in the same order as the full query: both rank the hits in the order FTS5 yields them
        (SQLite's sorter keeps the first of equal scores, at the cut too), and a filter that keeps every one of the
        best keeps their order."""
        rows = self.conn.execute(
            f"SELECT m.id, hits.score FROM (SELECT ref, score FROM ({hits}) ORDER BY score DESC LIMIT ?) AS hits "
            f"LEFT JOIN {TABLE[self.layer]} AS m ON m.ref = hits.ref AND {self.where}",
            (match, limit, *self.params),
        ).fetchall()
        kept = [row for row in rows if row[0] is not None]
        # Fewer hits than `limit`: every match was ranked, and the filter's survivors are the answer.
        return None if len(kept) < len(rows) == limit else kept


def _best_of(per_layer: list[list[Candidate]], limit: int) -> list[Candidate]:
    """The best `limit` of each layer's hits (each best first); a layer alone is already in order."""
    nonempty = [hits for hits in per_layer if hits]
    if len(nonempty) == 1:
        return nonempty[0][:limit]
    merged = [c for hits in nonempty for c in hits]
    merged.sort(key=lambda c: c.score, reverse=True)
    return merged[:limit]
