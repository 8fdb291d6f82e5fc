"""The AWS backend's single DynamoDB table: its definition, and the keys of what it holds.

Items (`pk`, `sk` strings):

- working memory: `NS#<namespace>` / `WM#<session_id>#<key>`, with `ttl` (epoch seconds) for DynamoDB TTL. TTL
  deletion is lazy (up to 48 h), so every read also filters on `expires_at`.
- episodes: `NS#<namespace>` / `EP#<id>`; facts: `NS#<namespace>` / `FACT#<id>` (attributes: see `items`).
- namespace state: `NS#<namespace>` / `STATE`: generation, last_write_at, recall_count, recall_hits; the recall
  counters of each UTC day `NS#<namespace>` / `RECALLS#<YYYY-MM-DD>` with `ttl` (see `recall_days`).
- the embedder the vectors were made with: `META` / `EMBEDDER` (one table, one embedder).
- API keys: `APIKEY#<key id>` / `APIKEY` (see `key_store`), and their request counters
  `QUOTA#<key id>` / `WINDOW#<epoch seconds>` with `ttl` (see `quota`).
- consolidation's ledger (see `hindsight_ledger`), under the namespace's `NS#<namespace>`: the run lease `LEASE`,
  each run `RUN#<started ISO>#<run id>` (with `ttl`), the spend of a UTC day `SPEND#<YYYY-MM-DD>` (with `ttl`),
  and the running totals and feedback counts `HINDSIGHT`. None of them is a memory: the stream decoding, the index
  sync's event filter (`EP#`, `FACT#`) and the store's reads (by sort-key prefix or `STATE`) pass them by.

Global secondary indexes, all KEYS_ONLY (reads go back to the table with a consistent BatchGetItem, so a GSI entry
that lags a delete or an update is never returned as data, and adding a model field needs no index rebuild):

- `by_time`: `gsi_time_pk` = `NS#<namespace>#<layer>`, `gsi_time_sk` = `<time ISO>#<id>`: listing by time range.
- `by_created`: `gsi_created_pk` = `NS#<namespace>`, `gsi_created_sk` = `<created ISO>#<id>` (episodes only):
  the namespace's newest episodes, for read-your-writes while the search index catches up.
- `unconsolidated` (sparse): `uc_pk` = `UC#<0..3>` (shard by namespace), `uc_sk` = `<namespace>#<occurred ISO>#<id>`,
  present only while an episode is unconsolidated: which namespaces the scheduled consolidation has work in.
- `by_namespace` (sparse): `ns_pk` = `NAMESPACES`, `ns_sk` = `<namespace>`, on each namespace's `STATE` item only:
  the namespaces, in name order, found by prefix (the namespace listing, a subtree's erase) with a query. Its keys
  are set once, when the STATE item is first written, so a namespace's writes do not touch the index.
- `expiring` (sparse): `exp_pk` = `EXP#<0..3>` (shard by namespace), `exp_sk` = `<expires ISO>#<id>`, on memories
  that expire only: what the retention sweep forgets, soonest first, with forget's cascade (what was induced from
  an expired episode alone goes too). The TTL attribute of such a memory is set `EXPIRY_GRACE` later, so the sweep
  reaches it first and DynamoDB's TTL is the backstop.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from rearview.domain.memory import StoredLayer

Item = dict[str, Any]

TTL_ATTRIBUTE = "ttl"
BY_TIME_INDEX = "by_time"
BY_CREATED_INDEX = "by_created"
UNCONSOLIDATED_INDEX = "unconsolidated"
BY_NAMESPACE_INDEX = "by_namespace"
EXPIRING_INDEX = "expiring"
# The one partition of `by_namespace`: one entry per namespace, written once, read by prefix.
NAMESPACES_PK = "NAMESPACES"
UNCONSOLIDATED_SHARDS = 4
EXPIRING_SHARDS = 4
# How long after a memory's `expires_at` DynamoDB's TTL may delete it. The hourly retention sweep forgets it first,
# with the cascade a TTL delete cannot run; the TTL deletes what a sweep that fell this far behind left.
EXPIRY_GRACE = timedelta(days=1)

LAYERS: tuple[StoredLayer, ...] = ("episodic", "semantic")
SK_PREFIX: dict[StoredLayer, str] = {"episodic": "EP#", "semantic": "FACT#"}
STATE_SK = "STATE"
# The namespace's erasure mark (`erasure_marks`), which the erase of the partition keeps.
ERASED_SK = "ERASED"
LEASE_SK = "LEASE"
RUN_SK_PREFIX = "RUN#"
SPEND_SK_PREFIX = "SPEND#"
RECALL_DAY_SK_PREFIX = "RECALLS#"
HINDSIGHT_SK = "HINDSIGHT"
META_KEY: Item = {"pk": {"S": "META"}, "sk": {"S": "EMBEDDER"}}


def table_definition(table_name: str) -> dict[str, Any]:
    """The CreateTable request of the table this store expects (the CDK app declares the same; TTL is `ttl`)."""
    key_names = [
        *("pk", "sk", "gsi_time_pk", "gsi_time_sk", "gsi_created_pk", "gsi_created_sk", "uc_pk", "uc_sk"),
        *("ns_pk", "ns_sk", "exp_pk", "exp_sk"),
    ]

    def index(name: str, partition: str, sort: str) -> dict[str, Any]:
        return {
            "IndexName": name,
            "KeySchema": [
                {"AttributeName": partition, "KeyType": "HASH"},
                {"AttributeName": sort, "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }

    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": name, "AttributeType": "S"} for name in key_names],
        "GlobalSecondaryIndexes": [
            index(BY_TIME_INDEX, "gsi_time_pk", "gsi_time_sk"),
            index(BY_CREATED_INDEX, "gsi_created_pk", "gsi_created_sk"),
            index(UNCONSOLIDATED_INDEX, "uc_pk", "uc_sk"),
            index(BY_NAMESPACE_INDEX, "ns_pk", "ns_sk"),
            index(EXPIRING_INDEX, "exp_pk", "exp_sk"),
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    }


def create_table(client: Any, table_name: str) -> None:
    """Create the table with its TTL (for tests on moto and for a scratch account; production uses the CDK app)."""
    client.create_table(**table_definition(table_name))
    client.get_waiter("table_exists").wait(TableName=table_name)
    client.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )


def namespace_pk(namespace: str) -> str:
    return f"NS#{namespace}"


def memory_sk(layer: StoredLayer, memory_id: str) -> str:
    return SK_PREFIX[layer] + memory_id


def item_key(namespace: str, sk: str) -> Item:
    return {"pk": {"S": namespace_pk(namespace)}, "sk": {"S": sk}}


def memory_keys(namespace: str, ids: Iterable[str]) -> list[Item]:
    """Both keys each id may live at (`EP#` and `FACT#`), once per distinct id."""
    return [item_key(namespace, memory_sk(layer, memory_id)) for memory_id in dict.fromkeys(ids) for layer in LAYERS]


def uc_shard(namespace: str) -> str:
    # crc32, not hash(): the shard must be the same in every process.
    return f"UC#{zlib.crc32(namespace.encode('utf-8')) % UNCONSOLIDATED_SHARDS}"


def expiring_shard(namespace: str) -> str:
    return f"EXP#{zlib.crc32(namespace.encode('utf-8')) % EXPIRING_SHARDS}"
