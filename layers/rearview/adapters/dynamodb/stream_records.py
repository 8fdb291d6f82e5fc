"""DynamoDB Streams records (as Lambda delivers them) -> IndexChanges for the index sync service.

Items are decoded by the DynamoDB store's own item codec (`items.memory_from_item` and `items.vector_from_item`),
the one place that knows how a memory is laid out in the table; this module only reads the record's envelope.
Items that are not memories (working memory `WM#`, namespace `STATE`, `APIKEY#`, `META`) give None: the index
holds episodes and facts only. `expired_session` reads the one other record consolidation cares about: working
memory removed by the TTL process, which means its session timed out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rearview.adapters.dynamodb.items import is_memory_item, memory_from_item, vector_from_item
from rearview.adapters.dynamodb.table import SK_PREFIX
from rearview.domain.changes import IndexChange
from rearview.domain.memory import StoredLayer

_LAYER_OF_SK: dict[str, StoredLayer] = {prefix: layer for layer, prefix in SK_PREFIX.items()}
# The principal DynamoDB's TTL process deletes items as (a REMOVE with this userIdentity is an expiry).
TTL_PRINCIPAL = "dynamodb.amazonaws.com"
WORKING_SK_PREFIX = "WM#"


def is_ttl_expiry(record: Mapping[str, Any]) -> bool:
    """True for a REMOVE made by DynamoDB's TTL process rather than by a caller."""
    identity = record.get("userIdentity") or {}
    return identity.get("type") == "Service" and identity.get("principalId") == TTL_PRINCIPAL


def change_from_record(record: Mapping[str, Any]) -> IndexChange | None:
    """The IndexChange of one stream record, or None when the item is not an episode or a fact."""
    change = record["dynamodb"]
    keys = change["Keys"]
    if not is_memory_item(keys):
        return None
    namespace = keys["pk"]["S"].removeprefix("NS#")
    sk = keys["sk"]["S"]
    prefix = next(p for p in _LAYER_OF_SK if sk.startswith(p))
    layer, memory_id = _LAYER_OF_SK[prefix], sk[len(prefix) :]
    if record["eventName"] == "REMOVE":
        return IndexChange(namespace, layer, memory_id, expired=is_ttl_expiry(record))
    new = change["NewImage"]
    old = change.get("OldImage")
    return IndexChange(
        namespace,
        layer,
        memory_id,
        memory=memory_from_item(new),
        vector=vector_from_item(new),
        previous=memory_from_item(old) if old else None,
        previous_vector=vector_from_item(old) if old else None,
    )


def expired_session(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """(namespace, session id) when the record is a working-memory item removed by the TTL process (the session
    timed out), else None. A caller's delete (clearing or ending the session) is not one: that path sends its own
    session-end job."""
    if record.get("eventName") != "REMOVE" or not is_ttl_expiry(record):
        return None
    change = record.get("dynamodb") or {}
    keys = change.get("Keys") or {}
    pk, sk = keys.get("pk", {}).get("S", ""), keys.get("sk", {}).get("S", "")
    if not pk.startswith("NS#") or not sk.startswith(WORKING_SK_PREFIX):
        return None
    # The old image names the session; without one, the key does (`WM#<session id>#<key>`; a session id holds no `#`).
    session = (change.get("OldImage") or {}).get("session_id", {}).get("S")
    session = session or sk[len(WORKING_SK_PREFIX) :].split("#", 1)[0]
    return (pk.removeprefix("NS#"), session) if session else None
