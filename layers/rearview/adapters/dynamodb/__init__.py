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

from rearview.adapters.dynamodb.hindsight_ledger import DynamoDBHindsightLedger
from rearview.adapters.dynamodb.items import is_memory_item, iso, memory_from_item, vector_from_item
from rearview.adapters.dynamodb.key_store import DynamoDBKeyStore
from rearview.adapters.dynamodb.memory_store import MAX_TRANSACTION_ACTIONS, DynamoDBMemoryStore
from rearview.adapters.dynamodb.quota import DynamoDBRequestQuota
from rearview.adapters.dynamodb.stream_records import change_from_record, expired_session, is_ttl_expiry
from rearview.adapters.dynamodb.table import TTL_ATTRIBUTE, create_table, table_definition

__all__ = [
    "MAX_TRANSACTION_ACTIONS",
    "TTL_ATTRIBUTE",
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
