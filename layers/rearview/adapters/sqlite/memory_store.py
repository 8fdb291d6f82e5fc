"""SqliteMemoryStore: the embedded backend's MemoryStore, over a SqliteDatabase."""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from typing import Any, TypeVar

import numpy as np

from rearview.adapters.sqlite import access_log, management
from rearview.adapters.sqlite.access_log import AccessLog
from rearview.adapters.sqlite.bulk_insert import PIPELINED_FROM, made_ahead, statement
from rearview.adapters.sqlite.connection import AppliedChanges, CachedRow, SqliteDatabase
from rearview.adapters.sqlite.namespace_fts import (
    episodes_at_least,
    fts_table,
    index_inserted,
    merge_segments,
    promote,
)
from rearview.adapters.sqlite.read_cache import (
    MEMORIES_CACHED,
    VECTORS_CACHED,
    CachedMemory,
    GenerationCache,
    copied,
)
from rearview.adapters.sqlite.rows import (
    EPISODE_COLUMNS,
    FACT_COLUMNS,
    LAYERS,
    SELECT_COLUMNS,
    TABLE,
    TIME_COLUMN,
    cached_row,
    datetime_or_none,
    episode_columns,
    episode_from_row,
    episode_values,
    epoch,
    fact_columns,
    fact_from_row,
    fact_values,
    filter_clause,
    insert_sql,
    json_list,
    loaded_cached_rows,
    loaded_episode_columns,
    memory_from_row,
    namespace_token,
    unique_layers,
    update_sql,
)
from rearview.adapters.sqlite.schema import ACCESS_LOG, FTS_MERGED, STORE_INDEXES_INSERTS, STORE_TAGS_INSERTS
from rearview.adapters.sqlite.working_memory import SqliteWorkingMemory
from rearview.clock import SystemClock
from rearview.collector import paused
from rearview.domain.changes import ChangeSet, PendingUpsert
from rearview.domain.episode_columns import EpisodeColumns, checked_vectors
from rearview.domain.erase import ErasedCounts
from rearview.domain.history import ArchivedVersion, archived_versions
from rearview.domain.listing import PagePosition
from rearview.domain.memory import Episode, Fact, Memory, StoredLayer
from rearview.domain.search import MemoryFilter
from rearview.domain.stats import NamespaceUsage, RecallDay
from rearview.domain.timestamps import as_utc
from rearview.errors import ConcurrentUpdate, InvalidInput
from rearview.ports import Clock

# The tags of the episodes one statement inserted (refs ?1..?2), as the insert trigger before migration 13 wrote them.
# `+e.namespace`: read by the range of refs, not by the namespace's index (namespace_fts.index_inserted says why).
_EPISODE_TAGS_INSERTED = (
    "INSERT OR IGNORE INTO memory_tags(namespace, tag, layer, ref) "
    "SELECT e.namespace, t.value, 'episodic', e.ref FROM episodes AS e, json_each(e.tags_json) AS t "
    "WHERE e.ref BETWEEN ? AND ? AND +e.namespace = ? AND e.tags_json <> '[]'"
)

# The metadata terms of the episodes one statement inserted (refs ?1..?2), as their tags are written.
_EPISODE_METADATA_INSERTED = (
    "INSERT OR IGNORE INTO memory_metadata(namespace, term, layer, ref) "
    "SELECT e.namespace, t.value, 'episodic', e.ref FROM episodes AS e, json_each(e.metadata_terms) AS t "
    "WHERE e.ref BETWEEN ? AND ? AND +e.namespace = ? AND e.metadata_terms <> '[]'"
)

# How the store keeps a vector: float32, little-endian.
_FLOAT32 = np.dtype("<f4")
# What a bulk insert makes rows of: memories (apply) or row numbers of columns (load_episodes).
_Item = TypeVar("_Item")


# A namespace with at least this many episodes gets a full-text table of its own, so that keyword search reads only
# its postings (and its BM25 statistics are its own); smaller ones share one table.
OWN_FTS_EPISODES = 20_000


class SqliteMemoryStore(SqliteWorkingMemory):
    """MemoryStore over SqliteDatabase. Every query is restricted by `namespace = ?`."""

    db: SqliteDatabase

    def __init__(
        self, db: SqliteDatabase, *, clock: Clock | None = None, own_fts_episodes: int = OWN_FTS_EPISODES
    ) -> None:
        self.db = db
        self.embedder_name = db.embedder_name
        self.dim = db.dim
        # Only for namespace_state.last_write_at: apply() carries no time of its own.
        self._clock: Clock = clock or SystemClock()
        # A namespace with this many episodes gets a full-text table of its own (namespace_fts); 0: never.
        self.own_fts_episodes = own_fts_episodes
        # Memories and vectors read recently, for the namespace's generation they were read at (see read_cache).
        self._memories: GenerationCache[CachedMemory] = GenerationCache(MEMORIES_CACHED)
        self._vectors: GenerationCache[tuple[int, np.ndarray]] = GenerationCache(VECTORS_CACHED)
        # The namespaces whose accesses this process logged and has not folded yet (access_log), and the UTC day
        # each namespace's recall days were last pruned on (once a day is enough).
        self._access_log = AccessLog()
        self._days_pruned: dict[str, date] = {}
        # Since migration 11 the store indexes the episodes it inserts, since 13 it writes their tags (no trigger
        # does either), since 14 it merges the full-text segments each change set left (namespace_fts.merge_segments).
        version = db.schema_version
        self._index_inserts = version >= STORE_INDEXES_INSERTS
        self._tag_inserts = version >= STORE_TAGS_INSERTS
        self._merge_segments = version >= FTS_MERGED
        # Since 17 recalls log their accesses (access_log); before, they update the rows.
        self._logs_access = version >= ACCESS_LOG

    # writes

    def _vector_blob(self, vector: np.ndarray) -> bytes:
        if type(vector) is np.ndarray and vector.dtype == _FLOAT32 and vector.shape == (self.dim,):
            return vector.tobytes()  # the embedders' own output: a third of the time of the general case
        array = np.asarray(vector, dtype=_FLOAT32).reshape(-1)
        if array.shape[0] != self.dim:
            raise InvalidInput(f"vector: expected dimension {self.dim}, got {array.shape[0]}", field="vector")
        return array.tobytes()

    def apply(self, namespace: str, changes: ChangeSet) -> None:
        """Apply every upsert, then every delete, in one transaction; ConcurrentUpdate rolls back all. The garbage
        collector waits meanwhile (`collector.paused`): a change set makes no cycles, and the collections its
        allocations triggered walked the caller's live objects too (a bulk load's batch of models)."""
        if not changes:
            return
        with paused():
            self._apply(namespace, changes)

    def load_episodes(self, namespace: str, rows: EpisodeColumns, vectors: np.ndarray | None) -> None:
        """Insert the rows as new episodes in one transaction, column by column: no `Episode` is made for a row
        (`rows.loaded_episode_columns`); a bulk load's chunks are made ahead as `apply`'s are. An id stored
        already refuses the load (ConcurrentUpdate)."""
        checked = checked_vectors(rows, vectors, self.dim)
        count = len(rows)
        blobs: list[bytes | None] = [None] * count if checked is None else [row.tobytes() for row in checked]
        token = namespace_token(namespace)

        def columns_of(part: Sequence[int]) -> list[list[Any]]:
            start, stop = part[0], part[-1] + 1
            size = stop - start
            values = loaded_episode_columns(rows, start, stop)
            return [[namespace] * size, rows.id[start:stop], [token] * size, *values, blobs[start:stop]]

        with paused():
            with self.db.transaction() as conn:
                stored = self._stored_versions(conn, namespace, rows.id)
                if stored:
                    first = next(memory_id for memory_id in rows.id if memory_id in stored)
                    raise ConcurrentUpdate(f"memory {first} already exists; a load inserts new episodes only")
                tagged = rows.tags is not None and any(rows.tags)
                refs = self._insert_columns(conn, namespace, "episodic", range(count), columns_of, tagged)
                if self._merge_segments:
                    merge_segments(conn, fts_table(conn, "episodic", namespace).name)
                generation = self._next_generation(conn, namespace)
            self._own_fts_if_due(namespace, generation)

            def upserted() -> tuple[CachedRow, ...]:
                return loaded_cached_rows(rows, refs, checked)

            written: dict[StoredLayer, int] = {"episodic": 0 if checked is None else count, "semantic": 0}
            self.db.publish(AppliedChanges(namespace, generation - 1, generation, (), upserted, written))

    def _apply(self, namespace: str, changes: ChangeSet) -> None:
        pending = changes.collapsed(namespace)
        # Encoded, and their dimension checked, before the transaction begins.
        blobs = {memory_id: self._vector_blob(p.vector) for memory_id, p in pending.items() if p.vector is not None}
        deletes = list(dict.fromkeys(changes.deletes))
        updates = {memory_id: p.memory for memory_id, p in pending.items() if p.first_version > 1}
        with self.db.transaction() as conn:
            # The accesses logged first: a memory read with `get` holds them already, and an id deleted takes them.
            if self._logs_access:
                access_log.fold(conn, namespace)
            previous = management.stored_memories(conn, namespace, list(updates))
            refs = self._write_upserts(conn, namespace, pending, blobs)
            now = self._clock.now()
            archives = [*changes.archived, *archived_versions(updates, previous, changes.cause, now, changes.actor)]
            management.write_history(conn, namespace, archives, changes.history_purged())
            deleted = self._delete(conn, namespace, deletes)
            if self._merge_segments:
                self._merge_written(conn, namespace, pending, deleted)
            generation = self._next_generation(conn, namespace)
        self._access_log.folded(namespace)
        for _, memory_id in deleted:
            refs.pop(memory_id, None)  # upserted, then deleted by the same change set
        self._own_fts_if_due(namespace, generation)
        vectors_written: dict[StoredLayer, int] = dict.fromkeys(LAYERS, 0)
        for memory_id in blobs:
            vectors_written[pending[memory_id].memory.layer] += 1

        def upserted() -> tuple[CachedRow, ...]:
            return tuple(
                cached_row(item.memory, refs[memory_id], blobs.get(memory_id))
                for memory_id, item in pending.items()
                if memory_id in refs
            )

        self.db.publish(
            AppliedChanges(namespace, generation - 1, generation, tuple(deleted), upserted, vectors_written)
        )

    def _next_generation(self, conn: sqlite3.Connection, namespace: str) -> int:
        """Count a change to the namespace (its generation, which the caches key on, and its last write time)."""
        (generation,) = conn.execute(
            "INSERT INTO namespace_state(namespace, generation, last_write_at) VALUES (?, 1, ?) "
            "ON CONFLICT(namespace) DO UPDATE SET generation = generation + 1, "
            "last_write_at = excluded.last_write_at RETURNING generation",
            (namespace, epoch(self._clock.now())),
        ).fetchone()
        return int(generation)

    @staticmethod
    def _merge_written(
        conn: sqlite3.Connection,
        namespace: str,
        pending: dict[str, PendingUpsert],
        deleted: list[tuple[StoredLayer, str]],
    ) -> None:
        """Merge the segments of the full-text tables the change set wrote (a bounded step each)."""
        written = {item.memory.layer for item in pending.values()}.union(layer for layer, _ in deleted)
        for layer in LAYERS:
            if layer in written:
                merge_segments(conn, fts_table(conn, layer, namespace).name)

    def _own_fts_if_due(self, namespace: str, generation: int) -> None:
        """Move a namespace that has grown past `own_fts_episodes` by small change sets to a full-text table of its
        own, in a transaction of its own after the write (checked every 16th change set). A bulk insert that crosses
        the threshold is moved inside its own transaction, before its rows are indexed (`_own_fts_before_bulk`)."""
        threshold = self.own_fts_episodes
        if threshold <= 0 or generation % 16:
            return
        conn = self.db.connection()
        if fts_table(conn, "episodic", namespace).token is None or not episodes_at_least(conn, namespace, threshold):
            return
        with self.db.transaction() as conn:
            promote(conn, namespace)

    def _own_fts_before_bulk(self, conn: sqlite3.Connection, namespace: str, inserting: int) -> None:
        """Give the namespace its own full-text table before a bulk insert (1,000 episodes or the threshold's worth)
        takes it past `own_fts_episodes`: the change set's rows are then indexed once, in their own table, rather
        than in the shared one and moved after the commit (a bulk load crossing the threshold indexed them twice
        and deleted them once)."""
        threshold = self.own_fts_episodes
        if threshold <= 0 or inserting < min(1000, threshold) or fts_table(conn, "episodic", namespace).token is None:
            return
        if episodes_at_least(conn, namespace, max(0, threshold - inserting)):
            promote(conn, namespace)

    def _write_upserts(
        self, conn: sqlite3.Connection, namespace: str, pending: dict[str, PendingUpsert], blobs: dict[str, bytes]
    ) -> dict[str, int]:
        """Insert the new memories and update the others, each checked against its stored version; the refs of
        both (an update keeps the ref its row was read with)."""
        stored = self._stored_versions(conn, namespace, list(pending))
        inserts: dict[str, list[Memory]] = {"episodic": [], "semantic": []}
        updates: dict[str, list[tuple[Any, ...]]] = {"episodic": [], "semantic": []}
        refs: dict[str, int] = {}
        for memory_id, item in pending.items():
            memory = item.memory
            current = stored.get(memory_id)
            if item.first_version <= 1:
                if current is not None:
                    raise ConcurrentUpdate(f"memory {memory_id} already exists; version 1 is an insert")
                inserts[memory.layer].append(memory)
            else:
                expected = item.first_version - 1
                if current is None or current[:2] != (memory.layer, expected):
                    found = "nothing" if current is None else f"{current[0]} version {current[1]}"
                    raise ConcurrentUpdate(
                        f"memory {memory_id}: expected stored {memory.layer} version {expected}, found {found}"
                    )
                values = episode_values(memory) if isinstance(memory, Episode) else fact_values(memory)
                updates[memory.layer].append((*values, blobs.get(memory_id), namespace, memory_id, expected))
                refs[memory_id] = current[2]
        for layer in LAYERS:
            if inserts[layer]:
                refs.update(self._insert(conn, namespace, layer, inserts[layer], blobs))
            if updates[layer]:
                cursor = conn.executemany(update_sql(layer), updates[layer])
                if cursor.rowcount != len(updates[layer]):
                    raise ConcurrentUpdate("a memory changed while this change set was applied")
        return refs

    def _insert(
        self,
        conn: sqlite3.Connection,
        namespace: str,
        layer: StoredLayer,
        memories: list[Memory],
        blobs: dict[str, bytes],
    ) -> dict[str, int]:
        """Insert the memories (`_insert_columns`); their refs by id."""
        token = namespace_token(namespace)
        # By layer, not by each memory's type: a layer's memories are all of one type.
        value_columns: Callable[[Any], list[list[Any]]] = episode_columns if layer == "episodic" else fact_columns

        def columns_of(part: Sequence[Memory]) -> list[list[Any]]:
            count = len(part)
            ids = [m.id for m in part]
            return [[namespace] * count, ids, [token] * count, *value_columns(part), list(map(blobs.get, ids))]

        tagged = any(memory.tags for memory in memories)
        inserted = self._insert_columns(conn, namespace, layer, memories, columns_of, tagged)
        if layer == "episodic" and any(memory.metadata for memory in memories):
            conn.execute(_EPISODE_METADATA_INSERTED, (inserted[0], inserted[-1], namespace))
        return {memory.id: ref for memory, ref in zip(memories, inserted, strict=True)}

    def _insert_columns(
        self,
        conn: sqlite3.Connection,
        namespace: str,
        layer: StoredLayer,
        items: Sequence[_Item],
        columns_of: Callable[[Sequence[_Item]], list[list[Any]]],
        tagged: bool,
    ) -> range:
        """Insert a row for each of `items` (in this write transaction, which no other writer shares), whose
        columns `columns_of` makes for a run of them; their refs, read off the table instead of looked up id by
        id: AUTOINCREMENT gives each row one more than the largest ref the table has ever had, that is one more
        than the row before it, so the rows inserted hold consecutive refs ending at the table's largest. A bulk
        insert's rows and their statement are made a chunk ahead on a helper thread while SQLite inserts the chunk
        before (`bulk_insert`)."""
        if layer == "episodic":
            self._own_fts_before_bulk(conn, namespace, len(items))
        sql = insert_sql(layer)
        if len(items) < PIPELINED_FROM:
            statement(sql, columns_of(items)).run(conn)
        else:
            for chunk in made_ahead(items, lambda part: statement(sql, columns_of(part))):
                chunk.run(conn)
        (last,) = conn.execute(f"SELECT max(ref) FROM {TABLE[layer]}").fetchone()
        inserted = range(last - len(items) + 1, last + 1)
        if layer == "episodic" and self._index_inserts:
            index_inserted(conn, namespace, inserted)
        if layer == "episodic" and self._tag_inserts and tagged:
            conn.execute(_EPISODE_TAGS_INSERTED, (inserted[0], inserted[-1], namespace))
        return inserted

    def _delete(self, conn: sqlite3.Connection, namespace: str, ids: list[str]) -> list[tuple[StoredLayer, str]]:
        """Delete the memories of either layer among `ids`; the (layer, id) of each one deleted."""
        deleted: list[tuple[StoredLayer, str]] = []
        if ids:
            ids_json = json_list(ids)
            for layer in LAYERS:
                rows = conn.execute(
                    f"DELETE FROM {TABLE[layer]} WHERE namespace = ? "
                    "AND id IN (SELECT value FROM json_each(?)) RETURNING id",
                    (namespace, ids_json),
                ).fetchall()
                deleted.extend((layer, row[0]) for row in rows)
        return deleted

    def _stored_versions(
        self, conn: sqlite3.Connection, namespace: str, ids: list[str]
    ) -> dict[str, tuple[str, int, int]]:
        """(layer, version, ref) of those of `ids` stored."""
        if not ids:
            return {}
        ids_json = json_list(ids)
        found: dict[str, tuple[str, int, int]] = {}
        for layer in LAYERS:
            for memory_id, version, ref in conn.execute(
                f"SELECT id, version, ref FROM {TABLE[layer]} WHERE namespace = ? "
                "AND id IN (SELECT value FROM json_each(?))",
                (namespace, ids_json),
            ):
                found[memory_id] = (layer, version, ref)
        return found

    # reads

    def get(self, namespace: str, memory_id: str) -> Memory | None:
        """The memory with this id in this namespace, of either layer, with the accesses logged and not folded
        into it yet (access_log)."""
        with self.db.snapshot() as conn:
            for layer in LAYERS:
                row = conn.execute(
                    f"SELECT {SELECT_COLUMNS[layer]} FROM {TABLE[layer]} WHERE namespace = ? AND id = ?",
                    (namespace, memory_id),
                ).fetchone()
                if row is None:
                    continue
                memory = memory_from_row(layer, row)
                logged = access_log.pending(conn, namespace, memory_id) if self._logs_access else None
                if logged is not None:
                    count, last = logged
                    memory.access_count += count
                    memory.last_accessed_at = max(last, memory.last_accessed_at or last)
                return memory
        return None

    def get_many(self, namespace: str, ids: Sequence[str], *, shared: bool = False) -> dict[str, Memory]:
        """The memories found among `ids`, by id (missing ids are absent): episodes, then facts, each in id order.

        Recall asks for the same candidates query after query: a memory read at the namespace's current
        generation comes from `read_cache` (a copy, or with `shared` the cached memory itself, with the access
        columns read afresh: the access log's fold changes them without a new generation); only the others' whole
        rows are read and turned into memories. Accesses not folded yet are not counted (`get` counts them)."""
        if not ids:
            return {}
        with self.db.snapshot() as conn:
            generation = self.db.generation(namespace, conn)
            cached = self._memories.found(namespace, generation, ids)
            if not cached:
                return self._read_memories(conn, namespace, generation, ids, shared)
            found = self._cached_memories(conn, namespace, generation, cached, shared)
            missing = [i for i in dict.fromkeys(ids) if i not in cached]
            if not missing:
                return found  # in order already
            found.update(self._read_memories(conn, namespace, generation, missing, shared))
        return {m.id: m for m in sorted(found.values(), key=_layer_then_id)}

    def _cached_memories(
        self, conn: sqlite3.Connection, namespace: str, generation: int, cached: dict[str, CachedMemory], shared: bool
    ) -> dict[str, Memory]:
        """The cached memories (copies unless `shared`), with their access columns as they are now: episodes,
        then facts, each in id order. Only the tables of the cached memories' layers are read: an id is one
        memory's in a namespace, of one layer (an insert of an id either layer holds is refused), and an entry of
        the current generation is its row as it is."""
        found: dict[str, Memory] = {}
        refreshed: dict[str, CachedMemory] = {}
        ids_json = json_list(list(cached))
        layers = {entry.memory.layer for entry in cached.values()}
        for layer in (layer for layer in LAYERS if layer in layers):
            for memory_id, count, last in conn.execute(
                f"SELECT id, access_count, last_accessed_at FROM {TABLE[layer]} WHERE namespace = ? "
                "AND id IN (SELECT value FROM json_each(?)) ORDER BY id",
                (namespace, ids_json),
            ):
                entry = cached[memory_id]
                if entry.access_count == count and entry.last_accessed == last:
                    found[memory_id] = entry.memory if shared else copied(entry.memory)
                    continue
                access = {"access_count": count, "last_accessed_at": datetime_or_none(last)}
                memory = found[memory_id] = copied(entry.memory, access)
                refreshed[memory_id] = CachedMemory(memory if shared else copied(memory), count, last)
        self._memories.keep(namespace, generation, refreshed)
        return found

    def _read_memories(
        self, conn: sqlite3.Connection, namespace: str, generation: int, ids: Sequence[str], shared: bool = False
    ) -> dict[str, Memory]:
        """The memories of `ids` read from their rows (episodes, then facts, each in id order: the IN list is an
        ordered index), and kept in the cache: as copies, or with `shared` (a caller that changes nothing it
        gets) the memories themselves, as a cached one is given to such a caller."""
        found: dict[str, Memory] = {}
        read: dict[str, CachedMemory] = {}
        ids_json = json_list(ids)
        for layer in LAYERS:
            for row in conn.execute(
                f"SELECT {SELECT_COLUMNS[layer]} FROM {TABLE[layer]} WHERE namespace = ? "
                "AND id IN (SELECT value FROM json_each(?)) ORDER BY id",
                (namespace, ids_json),
            ):
                memory = found[row[0]] = memory_from_row(layer, row)
                read[row[0]] = CachedMemory(memory if shared else copied(memory), row[5], row[6])
        self._memories.keep(namespace, generation, read)
        return found

    def get_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors (float32) of those of `ids` that have one, the episodes' then the facts', each in id
        order: those read at the namespace's current generation from `read_cache` (copies), the others from
        their rows."""
        if not ids:
            return {}
        with self.db.snapshot() as conn:
            generation = self.db.generation(namespace, conn)
            cached = self._vectors.found(namespace, generation, ids)
            missing = [i for i in dict.fromkeys(ids) if i not in cached]
            read: dict[str, tuple[int, np.ndarray]] = {}
            if missing:
                ids_json = json_list(missing)
                for position, layer in enumerate(LAYERS):
                    for memory_id, blob in conn.execute(
                        f"SELECT id, vector FROM {TABLE[layer]} WHERE namespace = ? "
                        "AND id IN (SELECT value FROM json_each(?)) AND vector IS NOT NULL ORDER BY id",
                        (namespace, ids_json),
                    ):
                        read[memory_id] = (position, np.frombuffer(blob, dtype="<f4"))  # read only, over the bytes
                self._vectors.keep(namespace, generation, read)
        both = {**cached, **read} if cached else read
        order = sorted(both, key=lambda i: (both[i][0], i)) if cached else both
        return {i: both[i][1].astype(np.float32) for i in order}  # each a copy of its own

    def list_memories(self, namespace: str, flt: MemoryFilter, limit: int | None = None) -> list[Memory]:
        """Matching memories, oldest first (episodes by occurred_at, facts by last_confirmed_at)."""
        per_layer: list[list[tuple[float, int, Memory]]] = []
        with self.db.snapshot() as conn:
            for layer in unique_layers(flt.layers):
                clause = filter_clause(layer, namespace, flt, "m")
                if clause is None:
                    continue
                where, params = clause
                time_column = TIME_COLUMN[layer]
                rows = conn.execute(
                    f"SELECT {SELECT_COLUMNS[layer]}, m.{time_column}, m.ref FROM {TABLE[layer]} AS m "
                    f"WHERE {where} ORDER BY m.{time_column}, m.ref LIMIT ?",
                    (*params, -1 if limit is None else limit),
                )
                per_layer.append([(row[-2], row[-1], memory_from_row(layer, row)) for row in rows])
        merged = [memory for _, _, memory in heapq.merge(*per_layer, key=lambda item: (item[0], item[1]))]
        return merged if limit is None else merged[:limit]

    def active_fact_for_dimension(self, namespace: str, dimension: str) -> Fact | None:
        """The active fact on this dimension (the latest confirmed if, against the rules, several are)."""
        row = (
            self.db.connection()
            .execute(
                f"SELECT {FACT_COLUMNS} FROM facts WHERE namespace = ? AND dimension = ? "
                "AND status = 'active' "
                "ORDER BY last_confirmed_at DESC, ref DESC LIMIT 1",
                (namespace, dimension),
            )
            .fetchone()
        )
        return None if row is None else fact_from_row(row)

    def facts_citing(self, namespace: str, episode_ids: Iterable[str]) -> list[Fact]:
        """Facts (active or superseded) whose provenance names any of the episodes, oldest first."""
        ids = list(episode_ids)
        if not ids:
            return []
        rows = self.db.connection().execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE namespace = ? AND ref IN ("
            "SELECT ref FROM fact_sources WHERE namespace = ? "
            "AND episode_id IN (SELECT value FROM json_each(?))"
            ") ORDER BY last_confirmed_at, ref",
            (namespace, namespace, json_list(ids)),
        )
        return [fact_from_row(row) for row in rows]

    def record_access(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """Count one access of each memory; neither the version nor the namespace generation changes: one row in
        the access log, folded into the memories with the others (access_log)."""
        if ids:
            with self.db.transaction() as conn:
                self._count_access(conn, namespace, ids, at)

    def record_recall(self, namespace: str, hit: bool, at: datetime, accessed: Sequence[str] = ()) -> None:
        """Count one recall (and whether it found anything) for the namespace's hit rate, in total and by UTC day,
        and the accesses: one transaction. The days past the retention are pruned on a namespace's first recall of
        a day (in this process)."""
        day = as_utc(at).date()
        with self.db.transaction() as conn:
            if accessed:
                self._count_access(conn, namespace, accessed, at)
            management.record_recall(conn, namespace, hit, at, prune=self._days_pruned.get(namespace) != day)
        if len(self._days_pruned) >= _DAYS_PRUNED_KEPT:
            self._days_pruned.clear()
        self._days_pruned[namespace] = day

    def _count_access(self, conn: sqlite3.Connection, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """An access of each of `ids`: logged, and the log folded when it is due (access_log); on a schema before
        the log, one UPDATE per table of the two access columns (no trigger watches them)."""
        if not self._logs_access:
            for table in TABLE.values():
                conn.execute(
                    f"UPDATE {table} SET access_count = access_count + 1, last_accessed_at = ? "
                    "WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))",
                    (epoch(at), namespace, json_list(list(dict.fromkeys(ids)))),
                )
            return
        access_log.log(conn, namespace, ids, at)
        if self._access_log.note(namespace, at):
            access_log.fold(conn, namespace)
            self._access_log.folded(namespace)

    def settle_access(self, namespace: str, now: datetime) -> int:
        """Fold the namespace's logged accesses into its memories (access_log); how many memories changed."""
        if not self._logs_access:
            return 0
        with self.db.transaction() as conn:
            changed = access_log.fold(conn, namespace)
        self._access_log.folded(namespace)
        return changed

    def recent_episodes(self, namespace: str, since: datetime, limit: int = 200) -> list[Episode]:
        """Episodes created at or after `since`, newest first. (Recall does not need it here: this index is
        written in the store's own transaction, so it is never behind.)"""
        rows = self.db.connection().execute(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE namespace = ? AND created_at >= ? "
            "ORDER BY created_at DESC, ref DESC LIMIT ?",
            (namespace, epoch(since), limit),
        )
        return [episode_from_row(row) for row in rows]

    def list_namespaces(self, prefix: str = "") -> list[str]:
        """The namespaces written or recalled in since they were last erased whose name starts with `prefix`, in
        name order (for `rearview reindex` of everything, the namespace listing and a subtree's erase)."""
        rows = (
            self.db.connection()
            .execute(
                "SELECT namespace FROM namespace_state WHERE (last_write_at IS NOT NULL OR recall_count > 0) "
                "AND substr(namespace, 1, ?) = ? ORDER BY namespace",
                (len(prefix), prefix),
            )
            .fetchall()
        )
        return [row[0] for row in rows]

    # management

    def page_memories(
        self, namespace: str, flt: MemoryFilter, limit: int, after: PagePosition | None = None
    ) -> list[Memory]:
        """At most `limit` matching memories, newest first, strictly after `after`."""
        with self.db.snapshot() as conn:
            return management.page(conn, namespace, flt, limit, after)

    def history(self, namespace: str, memory_id: str) -> list[ArchivedVersion]:
        """The archived versions of a memory, oldest first."""
        return management.history(self.db.connection(), namespace, memory_id)

    def facts_superseded_by(self, namespace: str, fact_id: str) -> list[Fact]:
        """The facts that `fact_id` superseded, oldest first."""
        return management.superseded_by(self.db.connection(), namespace, fact_id)

    def erase_namespace(self, namespace: str) -> ErasedCounts:
        """Every row of the namespace gone, in one transaction; the vector caches drop what went."""
        with self.db.transaction() as conn:
            counts, deleted, generation = management.erase(conn, namespace)
            if self._logs_access:
                conn.execute("DELETE FROM access_log WHERE namespace = ?", (namespace,))
        self._access_log.folded(namespace)
        if generation:
            self.db.publish(AppliedChanges(namespace, generation - 1, generation, tuple(deleted)))
        return counts

    def expired_memories(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        """(namespace, id) of at most `limit` memories that expired by `now`, soonest expired first."""
        return management.expired(self.db.connection(), now, limit)

    def namespaces_with_unconsolidated(self) -> list[str]:
        """Every namespace holding an unconsolidated episode (a partial index holds only those rows)."""
        rows = (
            self.db.connection()
            .execute("SELECT DISTINCT namespace FROM episodes WHERE consolidated = 0 ORDER BY namespace")
            .fetchall()
        )
        return [row[0] for row in rows]

    def unconsolidated_count(self, namespace: str, at_most: int | None = None) -> int:
        """How many of the namespace's episodes no run has seen (up to `at_most`): a count over the partial index
        `episodes_unconsolidated`, which holds those rows alone."""
        rows = (
            self.db.connection()
            .execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM episodes WHERE namespace = ? AND consolidated = 0 LIMIT ?)",
                (namespace, -1 if at_most is None else max(at_most, 0)),
            )
            .fetchall()
        )
        return int(rows[0][0])

    def close(self) -> None:
        """Close the database (idempotent)."""
        self.db.close()

    def usage(self, namespace: str, now: datetime) -> NamespaceUsage:
        """Counts: working (unexpired), episodic, semantic (active), semantic_superseded; recall counters."""
        with self.db.snapshot() as conn:
            return management.usage(conn, namespace, now)

    def recall_days(self, namespace: str, since: date) -> list[RecallDay]:
        """The namespace's recall counters per UTC day from `since` on, oldest first."""
        with self.db.snapshot() as conn:
            return management.recall_days(conn, namespace, since)


# The namespaces whose recall days were pruned today are forgotten past this many (each is pruned again then).
_DAYS_PRUNED_KEPT = 10_000


def _layer_then_id(memory: Memory) -> tuple[int, str]:
    """The order reads return memories in: episodes, then facts, each by id."""
    return (memory.layer != "episodic", memory.id)
