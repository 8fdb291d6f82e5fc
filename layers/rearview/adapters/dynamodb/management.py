"""The AWS backend's management queries, mixed into DynamoDBMemoryStore: pages of memories newest first (the
`by_time` index, walked backwards: a query, never a scan), version history (`VER#<id>/<version>` items beside the
memory), the facts a fact superseded, and erasing a namespace (its whole `NS#<namespace>` partition).

History items hold an `ArchivedVersion` as JSON. The index sync's filter (`EP#`, `FACT#`) passes them by.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from rearview.adapters.dynamodb.items import MEMORY_ATTRIBUTES, iso, memory_from_item
from rearview.adapters.dynamodb.table import (
    BY_TIME_INDEX,
    ERASED_SK,
    EXPIRING_INDEX,
    EXPIRING_SHARDS,
    SK_PREFIX,
    TTL_ATTRIBUTE,
    Item,
    item_key,
    namespace_pk,
)
from rearview.domain.changes import ChangeSet
from rearview.domain.erase import ErasedCounts
from rearview.domain.history import ArchivedVersion, archived_versions
from rearview.domain.listing import PagePosition, sort_key
from rearview.domain.memory import Fact, Memory, StoredLayer
from rearview.domain.search import MemoryFilter
from rearview.domain.timestamps import as_utc
from rearview.errors import ConcurrentUpdate

VERSION_SK_PREFIX = "VER#"
_ERASED_PREFIXES: tuple[tuple[str, str], ...] = (("EP#", "episodic"), ("FACT#", "semantic"), ("WM#", "working"))


def version_prefix(memory_id: str) -> str:
    # '/' never occurs in an id (ID_PATTERN), so one id's prefix never covers another's items.
    return f"{VERSION_SK_PREFIX}{memory_id}/"


def version_sk(memory_id: str, version: int) -> str:
    return f"{version_prefix(memory_id)}{version:010d}"


class DynamoDBManagement:
    """The management half of DynamoDBMemoryStore (which provides the client, the table and the low-level reads)."""

    _client: Any
    _table: str

    def _batch_get(self, keys: Sequence[Item], attributes: str | Sequence[str]) -> Iterator[Item]:
        raise NotImplementedError

    def _query_pages(self, **request: Any) -> Iterator[list[Item]]:
        raise NotImplementedError

    def get_many(self, namespace: str, ids: Sequence[str], *, shared: bool = False) -> dict[str, Memory]:
        raise NotImplementedError

    def _facts(self, namespace: str) -> list[Fact]:
        raise NotImplementedError

    # pages

    def page_memories(
        self, namespace: str, flt: MemoryFilter, limit: int, after: PagePosition | None = None
    ) -> list[Memory]:
        """At most `limit` matching memories, newest first, strictly after `after`."""
        if limit <= 0:
            return []
        if flt.ids is not None:
            chosen = [m for m in self.get_many(namespace, flt.ids).values() if flt.matches(m)]
            chosen = [m for m in chosen if after is None or sort_key(m) < after.key()]
            return sorted(chosen, key=sort_key, reverse=True)[:limit]
        streams = [self._newest(namespace, layer, flt, after, limit) for layer in flt.matchable_layers()]
        return list(itertools.islice(heapq.merge(*streams, key=sort_key, reverse=True), limit))

    def _newest(
        self, namespace: str, layer: StoredLayer, flt: MemoryFilter, after: PagePosition | None, limit: int
    ) -> Iterator[Memory]:
        """One layer's matching memories, newest first: the `by_time` index walked backwards from the upper bound
        (the cursor or `until`, both exclusive), stopping at `since`; each page read back consistently."""
        bounds = [f"{iso(flt.until)}" if flt.until is not None else None, "#".join(after.key()) if after else None]
        upper = min((b for b in bounds if b is not None), default=None)
        condition = "gsi_time_pk = :p"
        values: Item = {":p": {"S": f"NS#{namespace}#{layer}"}}
        if upper is not None:
            condition += " AND gsi_time_sk < :upper"
            values[":upper"] = {"S": upper}
        since = iso(flt.since) if flt.since is not None else None
        request = {
            "IndexName": BY_TIME_INDEX,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": min(max(limit + 1, 25), 1000),
        }
        for page in self._query_pages(**request):
            keys = [{"pk": i["pk"], "sk": i["sk"]} for i in page if since is None or i["gsi_time_sk"]["S"] >= since]
            found = {m.id: m for m in map(memory_from_item, self._batch_get(keys, MEMORY_ATTRIBUTES))}
            ordered = sorted(found.values(), key=sort_key, reverse=True)
            yield from (m for m in ordered if m.layer == layer and flt.matches(m))
            if len(keys) < len(page):
                return  # walked past `since`

    # history

    def history(self, namespace: str, memory_id: str) -> list[ArchivedVersion]:
        """The archived versions of a memory, oldest first."""
        items = self._partition(namespace, version_prefix(memory_id), "archive_json")
        return [ArchivedVersion.model_validate_json(item["archive_json"]["S"]) for item in items]

    def facts_superseded_by(self, namespace: str, fact_id: str) -> list[Fact]:
        """The facts that `fact_id` superseded, oldest first (a query of the namespace's facts)."""
        found = [f for f in self._facts(namespace) if f.superseded_by == fact_id]
        return sorted(found, key=lambda f: (f.created_at, f.id))

    def _history_actions(
        self, namespace: str, changes: ChangeSet, updates: Mapping[str, Memory], at: Any
    ) -> list[Item]:
        """The puts of this change set's archives and the deletes of the history it purges (transaction actions).
        The archived states are read consistently first; a state that moved on refuses the set, as its update's
        condition would."""
        previous = self.get_many(namespace, list(updates)) if changes.cause != "forget" else {}
        for memory_id, current in updates.items():
            found = previous.get(memory_id)
            if found is not None and found.version != current.version - 1:
                raise ConcurrentUpdate(f"memory {memory_id}: changed while this change set was applied")
        archives = [*changes.archived, *archived_versions(updates, previous, changes.cause, at, changes.actor)]
        kept = {version_sk(a.memory.id, a.version) for a in archives}
        # An archive of a memory that expires goes with it: it carries the memory's TTL as this change leaves it.
        expiry = {memory.id: memory.expires_at for memory, _ in changes.upserts}
        actions: list[Item] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        **item_key(namespace, version_sk(a.memory.id, a.version)),
                        "archive_json": {"S": a.model_dump_json()},
                        **_ttl(expiry.get(a.memory.id, a.memory.expires_at)),
                    },
                }
            }
            for a in archives
        ]
        for memory_id in changes.history_purged():
            for item in self._partition(namespace, version_prefix(memory_id), "sk"):
                if item["sk"]["S"] not in kept:
                    actions.append({"Delete": {"TableName": self._table, "Key": item_key(namespace, item["sk"]["S"])}})
        return actions

    def expired_memories(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        """(namespace, id) of at most `limit` memories whose `expires_at` is at or before `now`, soonest expired
        first: one query per shard of the sparse `expiring` index, its entries up to `now`, merged. A memory whose
        item was written before the index existed is not found: DynamoDB's TTL deletes it, without the cascade."""
        if limit <= 0:
            return []
        bound = f"{iso(now)}#\uffff"
        found: list[tuple[str, str, str]] = []
        for shard in range(EXPIRING_SHARDS):
            items = self._client.query(
                TableName=self._table,
                IndexName=EXPIRING_INDEX,
                KeyConditionExpression="exp_pk = :p AND exp_sk <= :now",
                ExpressionAttributeValues={":p": {"S": f"EXP#{shard}"}, ":now": {"S": bound}},
                Limit=limit,
            ).get("Items", [])
            for item in items:
                sk = item["sk"]["S"]
                prefix = next(p for p in SK_PREFIX.values() if sk.startswith(p))
                found.append((item["exp_sk"]["S"], item["pk"]["S"].removeprefix("NS#"), sk[len(prefix) :]))
        return [(namespace, memory_id) for _, namespace, memory_id in sorted(found)[:limit]]

    # erase

    def erase_namespace(self, namespace: str) -> ErasedCounts:
        """Every item of the namespace's partition deleted (memories, working memory, history, its state and the
        ledger's items), 25 to a call; the stream then takes its memories out of the search index."""
        counts = ErasedCounts()
        keys: list[Item] = []
        for item in self._partition(namespace, "", "sk"):
            sk = item["sk"]["S"]
            if sk == ERASED_SK:
                continue  # the mark that keeps queued writes from bringing the namespace back
            keys.append(item_key(namespace, sk))
            layer = next((name for prefix, name in _ERASED_PREFIXES if sk.startswith(prefix)), None)
            if layer is not None:
                setattr(counts, layer, getattr(counts, layer) + 1)
            elif sk.startswith(VERSION_SK_PREFIX):
                counts.versions += 1
        for start in range(0, len(keys), 25):
            request: Item = {self._table: [{"DeleteRequest": {"Key": key}} for key in keys[start : start + 25]]}
            while request:
                request = self._client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
        return counts

    def _partition(self, namespace: str, prefix: str, attributes: str) -> Iterator[Item]:
        """The items of the namespace's partition whose sort key starts with `prefix`, in key order."""
        wanted = dict.fromkeys(["sk", *(a.strip() for a in attributes.split(","))])
        names = {f"#a{i}": name for i, name in enumerate(wanted)}
        condition = "pk = :pk" + (" AND begins_with(sk, :prefix)" if prefix else "")
        values: Item = {":pk": {"S": namespace_pk(namespace)}}
        if prefix:
            values[":prefix"] = {"S": prefix}
        for page in self._query_pages(
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ProjectionExpression=", ".join(names),
            ExpressionAttributeNames=names,
        ):
            yield from page


def _ttl(expires_at: datetime | None) -> Item:
    """The table's TTL attribute of an item that expires then (none for one that never does)."""
    if expires_at is None:
        return {}
    return {TTL_ATTRIBUTE: {"N": str(math.ceil(as_utc(expires_at).timestamp()))}}
