"""The AWS backend's DynamoDB side: one table (single-table design) holding the memories, working memory,
namespace state, API keys and consolidation's ledger, and the decoding of its stream for index sync.

- `table`: the table definition (`create_table`), its key schema and secondary indexes.
- `items`: a memory as an item and back, the one codec the store and the stream decoding share.
- `memory_store`: `DynamoDBMemoryStore`.
- `key_store`: `DynamoDBKeyStore`.
- `hindsight_ledger`: `DynamoDBHindsightLedger`, consolidation's lease, runs, spend and totals.
- `quota`: `DynamoDBRequestQuota`, the API keys' request counters (per-key throttling).
- `stream_records`: DynamoDB Streams records as `IndexChange`s.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rearview.adapters.dynamodb.hindsight_ledger import DynamoDBHindsightLedger
    from rearview.adapters.dynamodb.items import is_memory_item, iso, memory_from_item, vector_from_item
    from rearview.adapters.dynamodb.key_store import DynamoDBKeyStore
    from rearview.adapters.dynamodb.memory_store import MAX_TRANSACTION_ACTIONS, DynamoDBMemoryStore
    from rearview.adapters.dynamodb.quota import DynamoDBRequestQuota
    from rearview.adapters.dynamodb.stream_records import change_from_record, expired_session, is_ttl_expiry
    from rearview.adapters.dynamodb.table import TTL_ATTRIBUTE, create_table, table_definition

# Each name's module, imported when the name is first asked for: the authorizer needs the key store alone, and the
# memory codec behind the others (numpy, the domain models) was most of its cold start.
_MODULE_OF: dict[str, str] = {
    "DynamoDBHindsightLedger": "hindsight_ledger",
    "is_memory_item": "items",
    "iso": "items",
    "memory_from_item": "items",
    "vector_from_item": "items",
    "DynamoDBKeyStore": "key_store",
    "MAX_TRANSACTION_ACTIONS": "memory_store",
    "DynamoDBMemoryStore": "memory_store",
    "DynamoDBRequestQuota": "quota",
    "change_from_record": "stream_records",
    "expired_session": "stream_records",
    "is_ttl_expiry": "stream_records",
    "TTL_ATTRIBUTE": "table",
    "create_table": "table",
    "table_definition": "table",
    "DynamoDBErasureMarks": "erasure_marks",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "MAX_TRANSACTION_ACTIONS",
    "TTL_ATTRIBUTE",
    "DynamoDBErasureMarks",
    "DynamoDBHindsightLedger",
    "DynamoDBKeyStore",
    "DynamoDBMemoryStore",
    "DynamoDBRequestQuota",
    "change_from_record",
    "create_table",
    "expired_session",
    "is_memory_item",
    "is_ttl_expiry",
    "iso",
    "memory_from_item",
    "table_definition",
    "vector_from_item",
]
