"""Access counts on DynamoDB, aggregated: a recall writes one item, never the memories it returned.

A memory's item is a few KB (its vector), and every write of it costs its size in write units and a stream record.
So a recall (or a brief) adds its counts to one small item of its namespace's partition, the window of the current
UTC minute (`ACCESS#<minute>`): the recall counters (`recall_count`, `recall_hits`) and, per memory returned, a
count (`c#<id>`) and the last access (`t#<id>`): one UpdateItem, about 1 write unit.

The windows are folded into the memories later (`settle`, run by the hourly retention sweep and before a namespace's
retention is applied): each window is claimed by deleting it (DeleteItem with ALL_OLD returns what it held, so two
folds never count one window twice), its counts added to the memories (one UpdateItem per memory per fold, however
often it was recalled), the recall counters to the namespace's STATE and to its days (`recall_days`). Until then,
`get`, `usage` and `recall_days` add what the unfolded windows hold, so the count a caller reads is the same as if
each recall had written each memory. A window the fold never reaches expires with the table's TTL after
`WINDOW_KEPT` (its counts are lost, never a memory).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from rearview.adapters.dynamodb.items import iso, parse_iso
from rearview.adapters.dynamodb.recall_days import add_day
from rearview.adapters.dynamodb.table import NAMESPACES_PK, STATE_SK, TTL_ATTRIBUTE, Item, item_key, namespace_pk
from rearview.domain.timestamps import as_utc

WINDOW_SK_PREFIX = "ACCESS#"
_COUNT, _LAST = "c#", "t#"
# A window the hourly fold has not reached in a week expires (the fold runs hourly; a week covers an outage).
WINDOW_KEPT = timedelta(days=7)


def window_sk(at: datetime) -> str:
    return WINDOW_SK_PREFIX + as_utc(at).strftime("%Y-%m-%dT%H:%M")


def window_day(sk: str) -> date:
    """The UTC day of a window's sort key."""
    return date.fromisoformat(sk[len(WINDOW_SK_PREFIX) : len(WINDOW_SK_PREFIX) + 10])


def window_update(table: str, namespace: str, at: datetime, accessed: Sequence[str], hit: bool | None) -> Item:
    """The one UpdateItem of a recall (`hit` given) or a brief (`hit` None): the namespace's current window."""
    names: dict[str, str] = {"#ttl": TTL_ATTRIBUTE}
    # The namespace listing's keys (the sparse `by_namespace` index), so a namespace recalled in is listed before the
    # fold puts them on its STATE; set once per window, and the listing reads each namespace once.
    values: Item = {":one": {"N": "1"}, ":ns_pk": {"S": NAMESPACES_PK}, ":ns_sk": {"S": namespace}}
    adds: list[str] = []
    sets = [
        "#ttl = if_not_exists(#ttl, :ttl)",
        "ns_pk = if_not_exists(ns_pk, :ns_pk)",
        "ns_sk = if_not_exists(ns_sk, :ns_sk)",
    ]
    values[":ttl"] = {"N": str(math.ceil((as_utc(at) + WINDOW_KEPT).timestamp()))}
    if hit is not None:
        adds += ["recall_count :one", "recall_hits :hit"]
        values[":hit"] = {"N": "1" if hit else "0"}
    for i, memory_id in enumerate(dict.fromkeys(accessed)):
        values[":at"] = {"S": iso(at)}
        names[f"#c{i}"], names[f"#t{i}"] = _COUNT + memory_id, _LAST + memory_id
        adds.append(f"#c{i} :one")
        sets.append(f"#t{i} = :at")
    request: Item = {
        "TableName": table,
        "Key": item_key(namespace, window_sk(at)),
        "UpdateExpression": "ADD " + ", ".join(adds) + " SET " + ", ".join(sets) if adds else "SET " + ", ".join(sets),
        "ExpressionAttributeValues": values,
    }
    request["ExpressionAttributeNames"] = names
    return request


@dataclass
class AccessCounts:
    """What some windows hold: accesses and the last access per memory id, and the recall counters."""

    counts: dict[str, int] = field(default_factory=dict)
    last: dict[str, datetime] = field(default_factory=dict)
    recalls: int = 0
    hits: int = 0
    # The recall counters by the UTC day of their window: [recalls, hits].
    days: dict[date, list[int]] = field(default_factory=dict)

    def add(self, window: Item) -> None:
        recalls = int(window.get("recall_count", {}).get("N", "0"))
        hits = int(window.get("recall_hits", {}).get("N", "0"))
        self.recalls += recalls
        self.hits += hits
        if recalls:
            day = self.days.setdefault(window_day(window["sk"]["S"]), [0, 0])
            day[0] += recalls
            day[1] += hits
        for name, value in window.items():
            if name.startswith(_COUNT):
                memory_id = name[len(_COUNT) :]
                self.counts[memory_id] = self.counts.get(memory_id, 0) + int(value["N"])
            elif name.startswith(_LAST):
                memory_id, at = name[len(_LAST) :], parse_iso(value["S"])
                self.last[memory_id] = max(at, self.last.get(memory_id, at))


def windows(client: Any, table: str, namespace: str) -> Iterator[Item]:
    """The namespace's windows, oldest first."""
    values: Item = {":pk": {"S": namespace_pk(namespace)}, ":first": {"S": WINDOW_SK_PREFIX}}
    request: Item = {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :first)",
        "ExpressionAttributeValues": values,
        "ConsistentRead": True,
    }
    while True:
        response = client.query(**request)
        yield from response.get("Items", [])
        if not response.get("LastEvaluatedKey"):
            return
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def pending(client: Any, table: str, namespace: str) -> AccessCounts:
    """What the namespace's unfolded windows hold."""
    counts = AccessCounts()
    for window in windows(client, table, namespace):
        counts.add(window)
    return counts


def settle(client: Any, table: str, namespace: str, locate: Callable[[list[str]], dict[str, Item]]) -> int:
    """Fold the namespace's windows into its memories and STATE; how many memories changed. `locate(ids)` gives the
    keys of the memories' items that still exist. The current minute's window is folded too: a recall that adds to
    it after the claim makes it anew, for the next fold."""
    claimed = AccessCounts()
    for window in windows(client, table, namespace):
        gone = client.delete_item(TableName=table, Key={"pk": window["pk"], "sk": window["sk"]}, ReturnValues="ALL_OLD")
        if "Attributes" in gone:  # else another fold claimed it first
            claimed.add(gone["Attributes"])
    changed = 0
    for memory_id, key in locate(list(claimed.counts)).items():
        if _add_accesses(client, table, key, claimed.counts[memory_id], claimed.last[memory_id]):
            changed += 1
    if claimed.recalls:
        client.update_item(
            TableName=table,
            Key=item_key(namespace, STATE_SK),
            UpdateExpression="ADD recall_count :n, recall_hits :h "
            "SET ns_pk = if_not_exists(ns_pk, :ns_pk), ns_sk = if_not_exists(ns_sk, :ns_sk)",
            ExpressionAttributeValues={
                ":n": {"N": str(claimed.recalls)},
                ":h": {"N": str(claimed.hits)},
                ":ns_pk": {"S": NAMESPACES_PK},
                ":ns_sk": {"S": namespace},
            },
        )
        for day, (recalls, hits) in sorted(claimed.days.items()):
            add_day(client, table, namespace, day, recalls, hits)
    return changed


def _add_accesses(client: Any, table: str, key: Item, count: int, last: datetime) -> bool:
    """`count` accesses added to a memory, and its last access moved to `last` unless it is later already."""
    values = {":n": {"N": str(count)}, ":at": {"S": iso(last)}}
    try:
        client.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="ADD access_count :n SET last_accessed_at = :at",
            ConditionExpression="attribute_exists(pk) AND (attribute_not_exists(last_accessed_at) OR "
            "last_accessed_at < :at)",
            ExpressionAttributeValues=values,
        )
        return True
    except client.exceptions.ConditionalCheckFailedException:
        pass
    try:  # a later access is recorded already (or the memory is gone): the count alone
        client.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="ADD access_count :n",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":n": values[":n"]},
        )
        return True
    except client.exceptions.ConditionalCheckFailedException:
        return False  # deleted since it was recalled: nothing to count
