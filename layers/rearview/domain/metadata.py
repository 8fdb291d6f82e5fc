"""Free-form metadata on a memory, and the filter on it.

A memory may carry `metadata`, a JSON object the caller chooses (`{"project": "apollo", "priority": 2}`), stored
and returned as given. It is bounded: at most `MAX_METADATA_KEYS` keys at the top level, each 1 to
`MAX_METADATA_KEY_CHARS` characters without control characters; values nested at most `MAX_METADATA_DEPTH` levels
deep (the object itself is one); at most `MAX_METADATA_BYTES` bytes as compact UTF-8 JSON.

Recall and listing filter on it (`MetadataFilter`): each key of the filter names a top-level key of the memory's
metadata and the value it must have (`{"project": "apollo"}`), or the values it may have (`{"priority": {"in":
[1, 2]}}`, or the list alone); the keys are ANDed. A key matches a value when the memory's value is that string,
number or boolean, or a list holding it. Numbers compare by value (2 equals 2.0), never equal to a string or a
boolean ("2", true).

Every backend matches through the same terms (`metadata_terms`): one per top-level scalar value and per scalar of a
top-level list, `<key><US><type>:<value>`. SQLite keeps them in a table of their own, OpenSearch as a keyword
field, and the Python backends compare them; so every backend matches alike.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StrictBool, StrictFloat, StrictInt, StrictStr, WithJsonSchema

MAX_METADATA_KEYS = 32
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_DEPTH = 4
MAX_METADATA_BYTES = 4096
# A filter names at most this many keys, and an `in` at most this many values.
MAX_METADATA_CONDITIONS = 16
MAX_METADATA_IN_VALUES = 32

# Between a key and its value in a term: a control character, which no key may hold.
_SEPARATOR = "\x1f"
_CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7F))
# Integers and floats of the same value are one number (JSON has one kind): floats are written as integers up to
# the largest a float holds exactly.
_EXACT_INTEGERS = 2**53


def _json_text(value: Any) -> Any:
    """An object given as its JSON text (a command-line option, a query string) parsed; anything else as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise ValueError(f"must be a JSON object (got text that is not JSON: {value[:40]!r})") from None


def _depth(value: Any) -> int:
    """How many levels of objects and lists `value` nests (a scalar: 0); ValueError for what JSON cannot hold."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                raise ValueError("object keys must be strings")
            children: list[Any] = list(item.values())
        elif isinstance(item, list):
            children = item
        elif item is None or isinstance(item, str | bool | int) or (isinstance(item, float) and math.isfinite(item)):
            continue
        else:
            raise ValueError(f"must hold JSON values only (got {type(item).__name__})")
        deepest = max(deepest, level)
        if level <= MAX_METADATA_DEPTH:  # no deeper than needed to know the limit is broken
            stack.extend((child, level + 1) for child in children)
    return deepest


def check_key(key: str) -> str:
    """ValueError unless `key` may name metadata: 1 to 64 characters, none of them a control character."""
    if not 1 <= len(key) <= MAX_METADATA_KEY_CHARS:
        raise ValueError(f"key {key[:40]!r}: must be 1 to {MAX_METADATA_KEY_CHARS} characters (got {len(key)})")
    if _CONTROL.intersection(key):
        raise ValueError(f"key {key[:40]!r}: must not hold control characters")
    return key


def check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """The metadata, if it keeps within the limits (module doc); ValueError naming the limit otherwise."""
    if len(value) > MAX_METADATA_KEYS:
        raise ValueError(f"at most {MAX_METADATA_KEYS} keys (got {len(value)})")
    for key in value:
        check_key(key)
    depth = _depth(value)
    if depth > MAX_METADATA_DEPTH:
        raise ValueError(f"nested at most {MAX_METADATA_DEPTH} levels deep, the object itself one (got {depth})")
    size = len(metadata_json(value).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"at most {MAX_METADATA_BYTES} bytes as JSON (got {size})")
    return value


def metadata_json(value: Mapping[str, Any]) -> str:
    """Metadata as compact JSON text (what the limit of bytes counts, and what the stores keep)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _checked(value: Any) -> Any:
    parsed = _json_text(value)
    if not isinstance(parsed, dict):
        raise ValueError(f"must be a JSON object (got {type(parsed).__name__})")
    return check_metadata(parsed)


# What a request's `metadata` holds, within the limits; it may send the object or its JSON text (a command-line
# option).
Metadata = Annotated[dict[str, Any], BeforeValidator(_checked), WithJsonSchema({"type": "object"})]
# What a stored memory holds: a request's metadata, redacted (a marker may be longer than what it replaced), read
# back without checking the limits again.
StoredMetadata = Annotated[dict[str, Any], WithJsonSchema({"type": "object"})]


# --- the terms every backend matches ------------------------------------------------------------------------------

Scalar = str | int | float | bool


def scalar_term(key: str, value: Scalar) -> str:
    """The term of one key holding one scalar."""
    if isinstance(value, bool):
        typed = "b:true" if value else "b:false"
    elif isinstance(value, int):
        typed = f"n:{value}"
    elif isinstance(value, float):
        exact = math.isfinite(value) and value.is_integer() and abs(value) < _EXACT_INTEGERS
        typed = f"n:{int(value)}" if exact else f"n:{value!r}"
    else:
        typed = f"s:{value}"
    return f"{key}{_SEPARATOR}{typed}"


def metadata_terms(metadata: Mapping[str, Any]) -> list[str]:
    """The terms a memory's metadata is matched by: one per top-level scalar and per scalar of a top-level list
    (objects, nulls and what lies deeper are kept, not matched), without repeats, in order."""
    terms: dict[str, None] = {}
    for key, value in metadata.items():
        for each in value if isinstance(value, list) else [value]:
            if isinstance(each, str | int | float | bool):
                terms[scalar_term(key, each)] = None
    return list(terms)


# --- the filter ---------------------------------------------------------------------------------------------------

FilterScalar = StrictStr | StrictBool | StrictInt | StrictFloat


_CONDITION = 'must be a string, number or boolean, or {"in": [values]}'


def _condition(value: Any) -> Any:
    """`{"in": [...]}` (or the list alone) as its list of values; a scalar as it is (the models check both). Null or
    another object is refused here, in one message (the union's own would list every arm)."""
    if isinstance(value, dict) and set(value) == {"in"}:
        value = value["in"]
    if isinstance(value, list):
        if not all(isinstance(v, str | int | float) for v in value):
            raise ValueError('"in": every value must be a string, number or boolean')
        return value
    if not isinstance(value, str | int | float):
        raise ValueError(_CONDITION)
    return value


MetadataCondition = Annotated[
    FilterScalar | Annotated[list[FilterScalar], Field(min_length=1, max_length=MAX_METADATA_IN_VALUES)],
    BeforeValidator(_condition),
]


def _checked_filter(value: Any) -> Any:
    parsed = _json_text(value)
    if not isinstance(parsed, dict):
        raise ValueError(f"must be a JSON object of conditions (got {type(parsed).__name__})")
    if len(parsed) > MAX_METADATA_CONDITIONS:
        raise ValueError(f"at most {MAX_METADATA_CONDITIONS} keys (got {len(parsed)})")
    for key in parsed:
        check_key(key)
    return parsed


# What recall and listing take: `{"project": "apollo", "priority": {"in": [1, 2]}}` (or its JSON text).
MetadataFilter = Annotated[dict[str, MetadataCondition], BeforeValidator(_checked_filter)]

METADATA_FILTER_DESCRIPTION = (
    'Only memories whose metadata matches: {"key": value} for a value it must have, {"key": {"in": [values]}} (or '
    '{"key": [values]}) for one of several; every key must match. A value is a string, number or boolean; a '
    f"memory's list holding it matches too (at most {MAX_METADATA_CONDITIONS} keys, {MAX_METADATA_IN_VALUES} "
    "values per `in`)"
)


def filter_terms(conditions: Mapping[str, Scalar | Sequence[Scalar]] | None) -> tuple[tuple[str, ...], ...]:
    """The filter as `MemoryFilter.metadata` holds it: per key, the terms of which one must be held."""
    if not conditions:
        return ()
    found: list[tuple[str, ...]] = []
    for key, wanted in conditions.items():
        values: Iterable[Scalar] = wanted if isinstance(wanted, list | tuple) else [wanted]  # type: ignore[list-item]
        found.append(tuple(dict.fromkeys(scalar_term(key, value) for value in values)))
    return tuple(found)


def matches_terms(held: Iterable[str], conditions: Sequence[Sequence[str]]) -> bool:
    """True if `held` (a memory's terms) holds one term of every condition."""
    if not conditions:
        return True
    have = set(held)
    return all(not have.isdisjoint(condition) for condition in conditions)
