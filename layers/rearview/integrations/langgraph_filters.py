"""LangGraph's store filters: which part Rearview's metadata filter can match (`pushed_down`: equality of a top-level
scalar), and the whole filter checked on an item's value (`matches`), as LangGraph's stores define it: a value, or
operators `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte` (numbers), on a top-level key or a dotted path; nested objects
and lists compare as wholes. And a namespace against a `list_namespaces` condition, with `*` for any label."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langgraph.store.base import MatchCondition

_MISSING = object()
_ORDER: dict[str, Callable[[float, float], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def pushed_down(filter: Mapping[str, Any] | None) -> dict[str, Any]:  # noqa: A002 - LangGraph's name
    """The conditions Rearview's metadata filter matches alike: a top-level key equal to a string, number or
    boolean. (Rearview also matches a list holding the value, which `matches` then leaves out.)"""
    pushed: dict[str, Any] = {}
    for key, wanted in (filter or {}).items():
        if isinstance(wanted, Mapping) and set(wanted) == {"$eq"}:
            wanted = wanted["$eq"]
        if "." not in key and _scalar(wanted):
            pushed[key] = wanted
    return pushed


def matches(filter: Mapping[str, Any] | None, value: Mapping[str, Any]) -> bool:  # noqa: A002 - LangGraph's name
    """Whether an item's value meets every condition of the filter."""
    return all(_meets(_at(value, key), wanted) for key, wanted in (filter or {}).items())


def _at(value: Mapping[str, Any], key: str) -> Any:
    """The value at a top-level key, else at the dotted path (`"author.name"`); _MISSING when there is none."""
    if key in value:
        return value[key]
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return _MISSING
        found = found[part]
    return found


def _meets(found: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
        return all(_operator(found, op, operand) for op, operand in wanted.items())
    if isinstance(wanted, Mapping):
        return isinstance(found, Mapping) and all(_meets(found.get(k, _MISSING), v) for k, v in wanted.items())
    return found is not _MISSING and _equal(found, wanted)


def _equal(found: Any, wanted: Any) -> bool:
    if isinstance(wanted, list | tuple):
        return (
            isinstance(found, list | tuple)
            and len(found) == len(wanted)
            and all(_equal(f, w) for f, w in zip(found, wanted, strict=True))
        )
    return bool(found == wanted)


def _operator(found: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return found is not _MISSING and _equal(found, operand)
    if op == "$ne":
        return found is _MISSING or not _equal(found, operand)
    compare = _ORDER.get(op)
    if compare is None:
        raise ValueError(f"filter: unknown operator {op!r} (use $eq, $ne, $gt, $gte, $lt, $lte)")
    try:
        return compare(float(found), float(operand))
    except (TypeError, ValueError):
        return False


def namespace_matches(labels: tuple[str, ...], condition: MatchCondition) -> bool:
    """Whether a namespace meets a `list_namespaces` condition (a prefix or suffix, `*` any one label)."""
    path = tuple(condition.path)
    if len(labels) < len(path):
        return False
    ends = labels[: len(path)] if condition.match_type == "prefix" else labels[len(labels) - len(path) :]
    return all(p in ("*", label) for p, label in zip(path, ends, strict=True))
