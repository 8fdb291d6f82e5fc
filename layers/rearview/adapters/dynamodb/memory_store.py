"""DynamoDBMemoryStore: the AWS backend's source of truth, a MemoryStore on one DynamoDB table (single-table
design; the layout is in `table` and `items`).

Lookup by id needs no index: an id lives at one of two keys (`EP#` or `FACT#`), and one consistent BatchGetItem
reads both, for up to 50 ids per call.

`apply` is one TransactWriteItems: puts for inserts (`attribute_not_exists(pk)`), updates conditioned on
`version = stored version` (optimistic locking), deletes, and the namespace state. A ChangeSet of more than
100 actions is split into consecutive transactions, each atomic on its own: a failure in a later one leaves the
earlier ones applied. The write path never builds such a set (a batch holds at most 100 memories); forgetting
thousands of memories at once can, and re-running it finishes the job.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np

from rearview.adapters.dynamodb import access_windows
from rearview.adapters.dynamodb.items import (
    MEMORY_ATTRIBUTES,
    OPTIONAL_ATTRIBUTES,
    iso,
    memory_attributes,
    memory_from_item,
    parse_iso,
    vector_from_item,
)
from rearview.adapters.dynamodb.management import DynamoDBManagement
from rearview.adapters.dynamodb.recall_days import read_days
from rearview.adapters.dynamodb.table import (
    BY_CREATED_INDEX,
    BY_NAMESPACE_INDEX,
    BY_TIME_INDEX,
    META_KEY,
    NAMESPACES_PK,
    STATE_SK,
    TTL_ATTRIBUTE,
    UNCONSOLIDATED_INDEX,
    UNCONSOLIDATED_SHARDS,
    Item,
    item_key,
    memory_keys,
    memory_sk,
    namespace_pk,
    uc_shard,
)
from rearview.clock import SystemClock
from rearview.domain.changes import ChangeSet, PendingUpsert
from rearview.domain.episode_columns import EpisodeColumns
from rearview.domain.memory import Episode, Fact, Memory, StoredLayer
from rearview.domain.search import MemoryFilter
from rearview.domain.stats import NamespaceUsage, RecallDay
from rearview.domain.timestamps import as_utc
from rearview.domain.working import WorkingEntry
from rearview.errors import ConcurrentUpdate, EmbeddingMismatch, InvalidInput
from rearview.ports import Clock
from rearview.settings import AwsSettings

MAX_TRANSACTION_ACTIONS = 100
_BATCH_GET_KEYS = 100
_BATCH_WRITE_ITEMS = 25


# Sets the namespace's `by_namespace` keys on its STATE item, once: the same values again change nothing, so the
# index is written only when the namespace first appears.
_LISTED = "ns_pk = if_not_exists(ns_pk, :ns_pk), ns_sk = if_not_exists(ns_sk, :ns_sk)"


def _listed_values(namespace: str) -> Item:
    return {":ns_pk": {"S": NAMESPACES_PK}, ":ns_sk": {"S": namespace}}


class DynamoDBMemoryStore(DynamoDBManagement):
    """MemoryStore on one DynamoDB table (the layout: `table` and `items`).

    `embedder_name` and `dim` are checked against the table's record of the embedder its vectors were made with
    (recorded by the first store that opens the table); without them the store adopts the recorded ones.
    """

    def __init__(
        self,
        table_name: str,
        *,
        client: Any = None,
        clock: Clock | None = None,
        settings: AwsSettings | None = None,
        embedder_name: str | None = None,
        dim: int | None = None,
    ) -> None:
        if client is None:
            from rearview.adapters.aws_clients import boto3_client

            client = boto3_client("dynamodb", settings)
        self._client = client
        self._table = table_name
        self._clock: Clock = clock or SystemClock()
        self.embedder_name, self.dim = self._check_embedder(embedder_name, dim)

    @property
    def client(self) -> Any:
        """The boto3 DynamoDB client (shared with the API-key store on the same table)."""
        return self._client

    @property
    def table_name(self) -> str:
        return self._table

    # embedder record

    def _check_embedder(self, name: str | None, dim: int | None) -> tuple[str, int]:
        stored = self._client.get_item(TableName=self._table, Key=META_KEY, ConsistentRead=True).get("Item")
        if stored is None:
            if name is None or dim is None:
                return name or "unknown", dim or 0
            record = {**META_KEY, "embedder_name": {"S": name}, "embedding_dim": {"N": str(dim)}}
            try:
                self._client.put_item(
                    TableName=self._table, Item=record, ConditionExpression="attribute_not_exists(pk)"
                )
                return name, dim
            except self._client.exceptions.ConditionalCheckFailedException:
                # Another process recorded its embedder first: check against that one.
                stored = self._client.get_item(TableName=self._table, Key=META_KEY, ConsistentRead=True)["Item"]
        stored_name = stored["embedder_name"]["S"]
        stored_dim = int(stored["embedding_dim"]["N"])
        if (name is not None and name != stored_name) or (dim is not None and dim != stored_dim):
            raise EmbeddingMismatch(
                f"table {self._table} holds vectors made by embedder {stored_name!r} (dim {stored_dim}), but the "
                f"configured embedder is {name!r} (dim {dim}). Configure the original embedder, or rebuild the "
                "vectors with `rearview reindex`.",
                field="embedder",
            )
        return stored_name, stored_dim

    # working memory

    def put_working(self, entry: WorkingEntry) -> None:
        """Insert or replace one entry; DynamoDB TTL removes it some time after it expires."""
        expires = as_utc(entry.expires_at)
        self._client.put_item(
            TableName=self._table,
            Item={
                **item_key(entry.namespace, f"WM#{entry.session_id}#{entry.key}"),
                "namespace": {"S": entry.namespace},
                "session_id": {"S": entry.session_id},
                "key": {"S": entry.key},
                "value_json": {"S": json.dumps(entry.value, ensure_ascii=False)},
                "updated_at": {"S": iso(entry.updated_at)},
                "expires_at": {"S": iso(expires)},
                TTL_ATTRIBUTE: {"N": str(math.ceil(expires.timestamp()))},
            },
        )

    def get_working(self, namespace: str, session_id: str, now: datetime) -> list[WorkingEntry]:
        """Unexpired entries of the session, by key (expired ones that TTL has not removed yet are filtered)."""
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            FilterExpression="expires_at > :now",
            ExpressionAttributeValues={
                ":pk": {"S": namespace_pk(namespace)},
                ":prefix": {"S": f"WM#{session_id}#"},
                ":now": {"S": iso(now)},
            },
        )
        return [
            WorkingEntry.model_construct(
                namespace=namespace,
                session_id=session_id,
                key=item["key"]["S"],
                value=json.loads(item["value_json"]["S"]),
                updated_at=parse_iso(item["updated_at"]["S"]),
                expires_at=parse_iso(item["expires_at"]["S"]),
            )
            for item in items
        ]

    def clear_working(self, namespace: str, session_id: str | None = None) -> int:
        """Delete the session's entries (every session's with None); return how many were unexpired."""
        prefix = "WM#" if session_id is None else f"WM#{session_id}#"
        items = list(
            self._query(
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={":pk": {"S": namespace_pk(namespace)}, ":prefix": {"S": prefix}},
                ProjectionExpression="pk, sk, expires_at",
            )
        )
        self._batch_delete([{"pk": item["pk"], "sk": item["sk"]} for item in items])
        now = iso(self._clock.now())
        return sum(1 for item in items if item["expires_at"]["S"] > now)

    def purge_expired_working(self, now: datetime) -> int:
        """Nothing to do: working-memory items carry the table's TTL attribute, and DynamoDB deletes them itself
        (reads skip expired ones before that)."""
        return 0

    # writes

    def _vector_bytes(self, vector: np.ndarray) -> bytes:
        array = np.asarray(vector, dtype="<f4").reshape(-1)
        if self.dim and array.shape[0] != self.dim:
            raise InvalidInput(f"vector: expected dimension {self.dim}, got {array.shape[0]}", field="vector")
        return array.tobytes()

    def load_episodes(self, namespace: str, rows: EpisodeColumns, vectors: np.ndarray | None) -> None:
        """The rows inserted as episodes, through `apply` (this store has no path of its own for columns). The ids
        are looked up first, so that one stored already refuses the load before anything is written: past 100
        actions, `apply` writes consecutive transactions, each atomic on its own (see the module docstring)."""
        changes = ChangeSet.loading(namespace, rows, vectors, self.dim)
        stored = self.get_many(namespace, rows.id)
        if stored:
            first = next(memory_id for memory_id in rows.id if memory_id in stored)
            raise ConcurrentUpdate(f"memory {first} already exists; a load inserts new episodes only")
        self.apply(namespace, changes)

    def apply(self, namespace: str, changes: ChangeSet) -> None:
        """Apply the upserts and deletes in one transaction (split past 100 actions; see the module docstring).

        A failed condition (an insert of an existing id, a stale version) raises ConcurrentUpdate.
        """
        if not changes:
            return
        pending = changes.collapsed(namespace)
        # Encoded, and their dimension checked, before anything is written.
        vectors = {memory_id: self._vector_bytes(p.vector) for memory_id, p in pending.items() if p.vector is not None}
        deletes = list(dict.fromkeys(changes.deletes))
        for memory_id in deletes:
            # Applied after the upserts in the other backends, so the delete wins; one transaction cannot
            # touch an item twice.
            pending.pop(memory_id, None)
        located = self._locate_checking_inserts(namespace, pending, deletes)
        actions = [self._upsert_action(namespace, item, vectors.get(memory_id)) for memory_id, item in pending.items()]
        updates = {memory_id: p.memory for memory_id, p in pending.items() if p.first_version > 1}
        actions.extend(self._history_actions(namespace, changes, updates, self._clock.now()))
        actions.extend(
            {"Delete": {"TableName": self._table, "Key": item_key(namespace, memory_sk(layer, memory_id))}}
            for memory_id in deletes
            for layer in located.get(memory_id, ())
        )
        self._write_with_state(namespace, actions)

    def _locate_checking_inserts(
        self, namespace: str, pending: Mapping[str, PendingUpsert], deletes: Sequence[str]
    ) -> dict[str, list[StoredLayer]]:
        """The layers the deleted ids are stored under, in the same read that makes sure no inserted id exists
        in the other layer (ConcurrentUpdate if one does: an id names one memory)."""
        inserts = [p.memory for p in pending.values() if p.first_version <= 1]
        other_layer = [(m.id, "semantic" if m.layer == "episodic" else "episodic") for m in inserts]
        located = self._locate(namespace, [memory_id for memory_id, _ in other_layer] + list(deletes))
        for memory_id, layer in other_layer:
            if layer in located.get(memory_id, ()):
                raise ConcurrentUpdate(f"memory {memory_id} already exists as a {layer} memory")
        return located

    def _write_with_state(self, namespace: str, actions: list[Item]) -> None:
        """Write the actions and bump the namespace's write generation, in as few calls as DynamoDB allows."""
        state = {
            "Update": {
                "TableName": self._table,
                "Key": item_key(namespace, STATE_SK),
                "UpdateExpression": f"ADD generation :one SET last_write_at = :now, {_LISTED}",
                "ExpressionAttributeValues": {
                    ":one": {"N": "1"},
                    ":now": {"S": iso(self._clock.now())},
                    **_listed_values(namespace),
                },
            }
        }
        if len(actions) <= 1:
            # One memory (the usual queued write): a conditional single-item write is atomic on its own and costs
            # half a transaction's capacity; the namespace counters follow in a second call.
            for action in actions:
                self._write_one(action)
            self._write_one(state)
            return
        chunks = [actions[i : i + MAX_TRANSACTION_ACTIONS] for i in range(0, len(actions), MAX_TRANSACTION_ACTIONS)]
        if len(chunks[-1]) < MAX_TRANSACTION_ACTIONS:
            chunks[-1].append(state)
        else:
            chunks.append([state])
        for chunk in chunks:
            self._transact(chunk)

    def _upsert_action(self, namespace: str, pending: PendingUpsert, vector: bytes | None) -> Item:
        memory = pending.memory
        attributes = memory_attributes(memory)
        if vector is not None:
            attributes["vec"] = {"B": vector}
        key = item_key(namespace, memory_sk(memory.layer, memory.id))
        if pending.first_version <= 1:
            item = {**key, **attributes}
            return {"Put": {"TableName": self._table, "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}}
        names: dict[str, str] = {}
        values: Item = {":expected": {"N": str(pending.first_version - 1)}}
        sets: list[str] = []
        for i, (name, value) in enumerate(attributes.items()):
            names[f"#a{i}"] = name
            values[f":a{i}"] = value
            sets.append(f"#a{i} = :a{i}")
        removes: list[str] = []
        for i, name in enumerate(n for n in OPTIONAL_ATTRIBUTES[memory.layer] if n not in attributes):
            names[f"#r{i}"] = name
            removes.append(f"#r{i}")
        names["#version"] = "version"
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        return {
            "Update": {
                "TableName": self._table,
                "Key": key,
                "UpdateExpression": expression,
                "ConditionExpression": "#version = :expected",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }

    def _write_one(self, action: Item) -> None:
        """One action of a transaction, sent as the equivalent single-item call."""
        (kind, request), *_ = action.items()
        call = {"Put": self._client.put_item, "Update": self._client.update_item, "Delete": self._client.delete_item}
        try:
            call[kind](**request)
        except self._client.exceptions.ConditionalCheckFailedException as exc:
            raise ConcurrentUpdate(
                f"write refused: {_describe_action(action)} changed or exists already (retry with fresh data)"
            ) from exc

    def _transact(self, actions: list[Item]) -> None:
        try:
            self._client.transact_write_items(TransactItems=actions)
        except self._client.exceptions.TransactionCanceledException as exc:
            reasons = [r.get("Code", "") for r in exc.response.get("CancellationReasons", [])]
            if "ConditionalCheckFailed" in reasons or "TransactionConflict" in reasons:
                failed = [
                    _describe_action(action)
                    for action, code in zip(actions, reasons, strict=False)
                    if code in ("ConditionalCheckFailed", "TransactionConflict")
                ]
                raise ConcurrentUpdate(
                    f"write refused: {', '.join(failed)} changed or exists already (retry with fresh data)"
                ) from exc
            raise

    # reads

    def _locate(self, namespace: str, ids: Sequence[str]) -> dict[str, list[StoredLayer]]:
        """The layers under which each id is stored (normally one)."""
        keys = memory_keys(namespace, ids)
        found: dict[str, list[StoredLayer]] = {}
        for item in self._batch_get(keys, "sk"):
            sk = item["sk"]["S"]
            layer: StoredLayer = "episodic" if sk.startswith("EP#") else "semantic"
            found.setdefault(sk.split("#", 1)[1], []).append(layer)
        return found

    def get(self, namespace: str, memory_id: str) -> Memory | None:
        """The memory with this id in this namespace, of either layer (a consistent read), with the accesses its
        namespace's unfolded windows hold (`access_windows`)."""
        memory = self.get_many(namespace, [memory_id]).get(memory_id)
        if memory is None:
            return None
        unfolded = access_windows.pending(self._client, self._table, namespace)
        count = unfolded.counts.get(memory_id, 0)
        if not count:
            return memory
        last = unfolded.last[memory_id]
        if memory.last_accessed_at is not None:
            last = max(last, memory.last_accessed_at)
        return memory.model_copy(update={"access_count": memory.access_count + count, "last_accessed_at": last})

    def get_many(self, namespace: str, ids: Sequence[str], *, shared: bool = False) -> dict[str, Memory]:
        """The memories found among `ids`, by id (missing ids are absent)."""
        keys = memory_keys(namespace, ids)
        memories = (memory_from_item(item) for item in self._batch_get(keys, MEMORY_ATTRIBUTES))
        return {m.id: m for m in memories}

    def get_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors (float32) of those of `ids` that have one."""
        keys = memory_keys(namespace, ids)
        vectors: dict[str, np.ndarray] = {}
        for item in self._batch_get(keys, ("id", "vec")):
            vector = vector_from_item(item)
            if vector is not None:
                vectors[item["id"]["S"]] = vector
        return vectors

    def list_memories(self, namespace: str, flt: MemoryFilter, limit: int | None = None) -> list[Memory]:
        """Matching memories, oldest first (episodes by occurred_at, facts by last_confirmed_at).

        Walks the `by_time` index (the time range is its key condition) and reads each page back from the table;
        the other conditions are evaluated on the items read.
        """
        if limit is not None and limit <= 0:
            return []
        if flt.ids is not None:
            chosen = [m for m in self.get_many(namespace, flt.ids).values() if flt.matches(m)]
            chosen.sort(key=lambda m: (iso(m.occurred_at), m.id))
            return chosen if limit is None else chosen[:limit]
        streams = [self._listed(namespace, layer, flt) for layer in dict.fromkeys(flt.layers)]
        merged = heapq.merge(*streams, key=lambda m: (iso(m.occurred_at), m.id))
        return list(itertools.islice(merged, limit))

    def _listed(self, namespace: str, layer: StoredLayer, flt: MemoryFilter) -> Iterator[Memory]:
        condition = "gsi_time_pk = :p"
        values: Item = {":p": {"S": f"NS#{namespace}#{layer}"}}
        if flt.since is not None and flt.until is not None:
            # `<until ISO>` sorts before every `<until ISO>#<id>`, so BETWEEN keeps the upper bound exclusive.
            condition += " AND gsi_time_sk BETWEEN :since AND :until"
            values.update({":since": {"S": iso(flt.since)}, ":until": {"S": iso(flt.until)}})
        elif flt.since is not None:
            condition += " AND gsi_time_sk >= :since"
            values[":since"] = {"S": iso(flt.since)}
        elif flt.until is not None:
            condition += " AND gsi_time_sk < :until"
            values[":until"] = {"S": iso(flt.until)}
        for page in self._query_pages(
            IndexName=BY_TIME_INDEX, KeyConditionExpression=condition, ExpressionAttributeValues=values
        ):
            keys = [{"pk": item["pk"], "sk": item["sk"]} for item in page]
            found = {m.id: m for m in map(memory_from_item, self._batch_get(keys, MEMORY_ATTRIBUTES))}
            ordered = sorted(found.values(), key=lambda m: (iso(m.occurred_at), m.id))
            yield from (m for m in ordered if m.layer == layer and flt.matches(m))

    def _facts(self, namespace: str) -> list[Fact]:
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": {"S": namespace_pk(namespace)}, ":prefix": {"S": "FACT#"}},
            **_projection(MEMORY_ATTRIBUTES),
        )
        return [m for m in map(memory_from_item, items) if isinstance(m, Fact)]

    def active_fact_for_dimension(self, namespace: str, dimension: str) -> Fact | None:
        """The active fact on this dimension (the latest confirmed if, against the rules, several are)."""
        active = [f for f in self._facts(namespace) if f.dimension == dimension and f.status == "active"]
        return max(active, key=lambda f: (f.last_confirmed_at, f.id), default=None)

    def facts_citing(self, namespace: str, episode_ids: Iterable[str]) -> list[Fact]:
        """Facts (active or superseded) whose provenance names any of the episodes, oldest first."""
        wanted = set(episode_ids)
        if not wanted:
            return []
        citing = [f for f in self._facts(namespace) if wanted.intersection(f.provenance)]
        return sorted(citing, key=lambda f: (f.last_confirmed_at, f.id))

    def recent_episodes(self, namespace: str, since: datetime, limit: int = 200) -> list[Episode]:
        """Episodes created at or after `since`, newest first (the `by_created` index, read back consistently)."""
        if limit <= 0:
            return []
        response = self._client.query(
            TableName=self._table,
            IndexName=BY_CREATED_INDEX,
            KeyConditionExpression="gsi_created_pk = :p AND gsi_created_sk >= :since",
            ExpressionAttributeValues={":p": {"S": namespace_pk(namespace)}, ":since": {"S": iso(since)}},
            ScanIndexForward=False,
            Limit=limit,
        )
        keys = [{"pk": item["pk"], "sk": item["sk"]} for item in response.get("Items", [])]
        episodes = [
            m for m in map(memory_from_item, self._batch_get(keys, MEMORY_ATTRIBUTES)) if isinstance(m, Episode)
        ]
        episodes = [e for e in episodes if e.created_at >= as_utc(since)]
        return sorted(episodes, key=lambda e: (e.created_at, e.id), reverse=True)

    def list_namespaces(self, prefix: str = "") -> list[str]:
        """The namespaces written or recalled in whose name starts with `prefix`, in name order: a query of the
        sparse `by_namespace` index (one entry per namespace), never a scan."""
        condition = "ns_pk = :p" + (" AND begins_with(ns_sk, :prefix)" if prefix else "")
        values: Item = {":p": {"S": NAMESPACES_PK}, **({":prefix": {"S": prefix}} if prefix else {})}
        items = self._query(IndexName=BY_NAMESPACE_INDEX, KeyConditionExpression=condition,
                            ExpressionAttributeValues=values)  # fmt: skip
        # A namespace's STATE and its access windows not yet folded (`access_windows`) each carry its entry.
        return list(dict.fromkeys(item["ns_sk"]["S"] for item in items))

    def namespaces_with_unconsolidated(self) -> list[str]:
        """Every namespace holding at least one unconsolidated episode (for the scheduled consolidation).

        A skip scan of the sparse `unconsolidated` index: one single-item query per namespace and shard, however
        many episodes each namespace holds.
        """
        found: list[str] = []
        for shard in range(UNCONSOLIDATED_SHARDS):
            after = ""
            while True:
                values: Item = {":p": {"S": f"UC#{shard}"}}
                condition = "uc_pk = :p"
                if after:
                    condition += " AND uc_sk > :after"
                    values[":after"] = {"S": after}
                items = self._client.query(
                    TableName=self._table,
                    IndexName=UNCONSOLIDATED_INDEX,
                    KeyConditionExpression=condition,
                    ExpressionAttributeValues=values,
                    Limit=1,
                ).get("Items", [])
                if not items:
                    break
                namespace = items[0]["uc_sk"]["S"].split("#", 1)[0]
                found.append(namespace)
                # '$' sorts right after '#' and before every character a namespace may contain next.
                after = namespace + "$"
        return sorted(set(found))

    def unconsolidated_count(self, namespace: str, at_most: int | None = None) -> int:
        """How many of the namespace's episodes no run has seen (up to `at_most`: the query reads no further): a
        COUNT query of the sparse `unconsolidated` index on the namespace's shard and prefix (never a scan; the
        index is eventually consistent, so an episode written a moment ago may not be counted yet)."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": UNCONSOLIDATED_INDEX,
            "KeyConditionExpression": "uc_pk = :p AND begins_with(uc_sk, :prefix)",
            "ExpressionAttributeValues": {":p": {"S": uc_shard(namespace)}, ":prefix": {"S": f"{namespace}#"}},
            "Select": "COUNT",
        }
        count = 0
        while True:
            if at_most is not None:
                if count >= at_most:
                    return at_most
                request["Limit"] = at_most - count
            response = self._client.query(**request)
            count += int(response.get("Count", 0))
            last = response.get("LastEvaluatedKey")
            if not last:
                return count if at_most is None else min(count, at_most)
            request["ExclusiveStartKey"] = last

    # counters

    def record_access(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """Count one access of each memory: one write, to the namespace's current window (`access_windows`); the
        memories themselves (and so their versions) are not written."""
        if ids:
            self._client.update_item(**access_windows.window_update(self._table, namespace, at, ids, None))

    def record_recall(self, namespace: str, hit: bool, at: datetime, accessed: Sequence[str] = ()) -> None:
        """Count one recall (and whether it found anything) and an access of each memory it returned: one write, to
        the namespace's current window."""
        self._client.update_item(**access_windows.window_update(self._table, namespace, at, accessed, hit))

    def settle_access(self, namespace: str, now: datetime) -> int:
        """Fold the namespace's closed access windows into its memories and recall counters; how many memories
        changed (one write each, however often they were recalled)."""

        def locate(ids: list[str]) -> dict[str, Item]:
            found = self._locate(namespace, ids)
            return {i: item_key(namespace, memory_sk(layers[0], i)) for i, layers in found.items() if layers}

        return access_windows.settle(self._client, self._table, namespace, locate)

    def recall_days(self, namespace: str, since: date) -> list[RecallDay]:
        """The namespace's recall counters per UTC day from `since` on, oldest first: the folded days and what its
        access windows hold still."""
        days = {d.day: [d.recalls, d.hits] for d in read_days(self._client, self._table, namespace, since)}
        for day, (recalls, hits) in access_windows.pending(self._client, self._table, namespace).days.items():
            if day >= since:
                counts = days.setdefault(day, [0, 0])
                counts[0] += recalls
                counts[1] += hits
        return [RecallDay(day=day, recalls=r, hits=h) for day, (r, h) in sorted(days.items())]

    def close(self) -> None:
        """Nothing to release: boto3 clients hold no connection that needs closing."""

    def usage(self, namespace: str, now: datetime) -> NamespaceUsage:
        """Counts: working (unexpired), episodic, semantic (active), semantic_superseded; recall counters."""
        pk = {":pk": {"S": namespace_pk(namespace)}}
        working = sum(
            1
            for _ in self._query(
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                FilterExpression="expires_at > :now",
                ExpressionAttributeValues={**pk, ":prefix": {"S": "WM#"}, ":now": {"S": iso(now)}},
                ProjectionExpression="sk",
            )
        )
        episodic = sum(
            1
            for _ in self._query(
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={**pk, ":prefix": {"S": "EP#"}},
                ProjectionExpression="sk",
            )
        )
        by_status: dict[str, int] = {}
        for item in self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={**pk, ":prefix": {"S": "FACT#"}},
            ProjectionExpression="#status",
            ExpressionAttributeNames={"#status": "status"},
        ):
            status = item["status"]["S"]
            by_status[status] = by_status.get(status, 0) + 1
        state = self._client.get_item(
            TableName=self._table, Key=item_key(namespace, STATE_SK), ConsistentRead=True
        ).get("Item", {})
        unfolded = access_windows.pending(self._client, self._table, namespace)
        recall_count = int(state.get("recall_count", {}).get("N", "0")) + unfolded.recalls
        recall_hits = int(state.get("recall_hits", {}).get("N", "0")) + unfolded.hits
        last_write = state.get("last_write_at", {}).get("S")
        return NamespaceUsage(
            working=working,
            episodic=episodic,
            semantic_active=by_status.get("active", 0),
            semantic_superseded=by_status.get("superseded", 0),
            last_write_at=parse_iso(last_write) if last_write else None,
            recall_count=recall_count,
            recall_hits=recall_hits,
        )

    # low-level helpers

    def _query_pages(self, **request: Any) -> Iterator[list[Item]]:
        """Every page of a query on the table (consistent unless it reads an index, which cannot be)."""
        request = {"TableName": self._table, **request}
        if "IndexName" not in request:
            request["ConsistentRead"] = True
        while True:
            response = self._client.query(**request)
            yield response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last

    def _query(self, **request: Any) -> Iterator[Item]:
        for page in self._query_pages(**request):
            yield from page

    def _batch_get(self, keys: Sequence[Item], attributes: str | Sequence[str]) -> Iterator[Item]:
        """The items that exist among `keys`, read consistently, in any order."""
        projection = _projection((attributes,) if isinstance(attributes, str) else attributes)
        for start in range(0, len(keys), _BATCH_GET_KEYS):
            request: Item = {
                self._table: {"Keys": list(keys[start : start + _BATCH_GET_KEYS]), "ConsistentRead": True, **projection}
            }
            while request:
                response = self._client.batch_get_item(RequestItems=request)
                yield from response.get("Responses", {}).get(self._table, [])
                # Unprocessed keys (throttling, the 16 MB response limit) are asked again; botocore's retries
                # already back off on throttling errors.
                request = response.get("UnprocessedKeys") or {}

    def _batch_delete(self, keys: Sequence[Item]) -> None:
        for start in range(0, len(keys), _BATCH_WRITE_ITEMS):
            request: Item = {
                self._table: [{"DeleteRequest": {"Key": key}} for key in keys[start : start + _BATCH_WRITE_ITEMS]]
            }
            while request:
                request = self._client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}


def _projection(attributes: Sequence[str]) -> dict[str, Any]:
    """A ProjectionExpression (with placeholders, as several field names are reserved words)."""
    names = {f"#p{i}": name for i, name in enumerate(attributes)}
    return {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}


def _describe_action(action: Mapping[str, Any]) -> str:
    (kind, body), *_ = action.items()
    sk = body.get("Key", body.get("Item", {})).get("sk", {}).get("S", "?")
    return f"{kind.lower()} of {sk}"
