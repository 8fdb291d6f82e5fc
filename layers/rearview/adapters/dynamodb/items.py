"""Memories as DynamoDB items, in DynamoDB's typed JSON (a client request or response, or a stream image).

Every model field is an attribute (datetimes as fixed-width ISO 8601 UTC strings, so they sort as text; lists as
L; the metadata as its JSON text; absent optional fields are absent attributes), plus `occurred_epoch` (episode's
occurred_at or fact's last_confirmed_at) for range filters, the keys of the secondary indexes (see `table`), the
table's TTL attribute for a memory that expires, and `vec`, the embedding as float32 little-endian bytes. This is
the one place that knows how a memory is laid out in the table: the store and the stream decoding both use it.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

from rearview.adapters.dynamodb.table import (
    EXPIRY_GRACE,
    SK_PREFIX,
    TTL_ATTRIBUTE,
    Item,
    expiring_shard,
    namespace_pk,
    uc_shard,
)
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.metadata import metadata_json
from rearview.domain.timestamps import as_utc

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

_DATETIME_FIELDS = frozenset(
    {"last_accessed_at", "created_at", "occurred_at", "last_confirmed_at", "superseded_at", "last_occurred_at",
     "first_seen_at", "expires_at"}
)  # fmt: skip
# A memory's metadata is kept as its JSON text: a map would lose the difference between 2 and 2.0, a list's
# numbers, and nulls (`_encode` writes lists of strings and leaves nulls out).
_JSON_TEXT_FIELDS = frozenset({"metadata"})

_FIELDS: dict[str, frozenset[str]] = {
    "episodic": frozenset(Episode.model_fields),
    "semantic": frozenset(Fact.model_fields),
}
# Optional attributes of each layer: absent from the item when None (an update REMOVEs them).
OPTIONAL_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "episodic": (
        "last_accessed_at",
        "event_type",
        "outcome",
        "outcome_status",
        "session_id",
        "last_occurred_at",
        "uc_pk",
        "uc_sk",
        "source",
        "expires_at",
        TTL_ATTRIBUTE,
        "exp_pk",
        "exp_sk",
        "parent_id",
        "chunk_index",
        "chunk_count",
    ),
    "semantic": (
        "last_accessed_at",
        "dimension",
        "superseded_by",
        "superseded_at",
        "evidence",
        "induced_by",
        "first_seen_at",
        "source",
        "expires_at",
        TTL_ATTRIBUTE,
        "exp_pk",
        "exp_sk",
    ),
}
# Everything a memory is read back from (never `vec`, which only get_vectors reads).
MEMORY_ATTRIBUTES = tuple(sorted(_FIELDS["episodic"] | _FIELDS["semantic"]))


def iso(value: datetime) -> str:
    """A UTC datetime as fixed-width ISO 8601 text (microseconds, `Z`), which sorts like the instants."""
    return as_utc(value).strftime(_TIME_FORMAT)


def parse_iso(text: str) -> datetime:
    return datetime.strptime(text, _TIME_FORMAT).replace(tzinfo=UTC)


def _number(value: float) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def _attribute(name: str, value: Any) -> dict[str, Any]:
    """A model field as its attribute."""
    return {"S": metadata_json(value)} if name in _JSON_TEXT_FIELDS else _encode(name, value)


def _field(name: str, value: Mapping[str, Any]) -> Any:
    """A model field from its attribute."""
    return json.loads(value["S"]) if name in _JSON_TEXT_FIELDS else _decode(name, value)


def _encode(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, datetime):
        return {"S": iso(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, list):
        return {"L": [{"S": str(v)} for v in value]}
    if isinstance(value, dict):
        # A fact's facets and evidence: a map, its unset members left out (the model's defaults fill them back).
        return {"M": {k: _encode(f"{name}.{k}", v) for k, v in value.items() if v is not None}}
    raise TypeError(f"attribute {name}: cannot store {type(value).__name__}")


def _decode(name: str, value: Mapping[str, Any]) -> Any:
    if "S" in value:
        return parse_iso(value["S"]) if name in _DATETIME_FIELDS else value["S"]
    if "N" in value:
        text = value["N"]
        return float(text) if any(c in text for c in ".eE") else int(text)
    if "BOOL" in value:
        return bool(value["BOOL"])
    if "L" in value:
        return [element["S"] for element in value["L"]]
    if "M" in value:
        return {k: _decode(f"{name}.{k}", v) for k, v in value["M"].items()}
    if "NULL" in value:
        return None
    raise TypeError(f"attribute {name}: unexpected attribute value {sorted(value)}")


def memory_attributes(memory: Memory) -> Item:
    """Every attribute of a memory's item except its key and vector: model fields and index keys."""
    namespace = memory.namespace
    item: Item = {
        name: _attribute(name, value) for name, value in memory.model_dump(mode="python").items() if value is not None
    }
    when = iso(memory.occurred_at)
    item["occurred_epoch"] = _number(as_utc(memory.occurred_at).timestamp())
    item["gsi_time_pk"] = {"S": f"NS#{namespace}#{memory.layer}"}
    item["gsi_time_sk"] = {"S": f"{when}#{memory.id}"}
    if memory.expires_at is not None:
        # Reads leave it out from `expires_at` on; the retention sweep finds it by the `expiring` index and forgets
        # it with forget's cascade; DynamoDB's TTL deletes it a grace later if the sweep did not (its stream tells
        # index sync, which drops the document either way).
        item["exp_pk"] = {"S": expiring_shard(namespace)}
        item["exp_sk"] = {"S": f"{iso(memory.expires_at)}#{memory.id}"}
        item[TTL_ATTRIBUTE] = {"N": str(math.ceil(as_utc(memory.expires_at + EXPIRY_GRACE).timestamp()))}
    if isinstance(memory, Episode):
        item["gsi_created_pk"] = {"S": namespace_pk(namespace)}
        item["gsi_created_sk"] = {"S": f"{iso(memory.created_at)}#{memory.id}"}
        if not memory.consolidated:
            item["uc_pk"] = {"S": uc_shard(namespace)}
            item["uc_sk"] = {"S": f"{namespace}#{when}#{memory.id}"}
    return item


def is_memory_item(item: Mapping[str, Any]) -> bool:
    """True for an episode or fact item (not working memory, namespace state, API keys or metadata)."""
    sk = item.get("sk", {}).get("S", "")
    return str(item.get("pk", {}).get("S", "")).startswith("NS#") and sk.startswith(tuple(SK_PREFIX.values()))


def memory_from_item(item: Mapping[str, Any]) -> Memory:
    """The memory stored in an item in DynamoDB's typed JSON (a client response or a stream image)."""
    layer = item["layer"]["S"]
    fields = {name: _field(name, value) for name, value in item.items() if name in _FIELDS[layer]}
    if layer == "episodic":
        return Episode.model_validate(fields)
    return Fact.model_validate(fields)


def vector_from_item(item: Mapping[str, Any]) -> np.ndarray | None:
    """The item's vector (float32), or None. Accepts bytes (a client response) or base64 (a Lambda stream event)."""
    value = item.get("vec")
    if value is None:
        return None
    raw = value["B"]
    data = base64.b64decode(raw) if isinstance(raw, str) else bytes(raw)
    return np.frombuffer(data, dtype="<f4").astype(np.float32)
