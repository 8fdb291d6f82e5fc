"""Lambda's event filtering (an event source mapping's `FilterCriteria`): a record is delivered when any pattern
matches it. The pattern language's parts the stack uses, and the common rest: nested objects, lists of exact
values, `prefix`, `suffix`, `exists`, `anything-but`, `numeric` comparisons and `equals-ignore-case`."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

_MISSING = object()
_NUMERIC: dict[str, Callable[[float, float], bool]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def matches_any(patterns: list[dict[str, Any]], record: dict[str, Any]) -> bool:
    """True when there are no patterns or one of them matches the record."""
    return not patterns or any(matches(p, record) for p in patterns)


def matches(pattern: dict[str, Any], value: Any) -> bool:
    """Whether `value` (an object) matches `pattern`: every key's condition holds."""
    if not isinstance(value, dict):
        return False
    for key, condition in pattern.items():
        inner = value.get(key, _MISSING)
        if isinstance(condition, dict):
            if inner is _MISSING or not matches(condition, inner):
                return False
        elif not _any_rule(condition, inner):
            return False
    return True


def _any_rule(rules: list[Any], value: Any) -> bool:
    values = value if isinstance(value, list) else [value]
    return any(_rule(rule, v) for rule in rules for v in values)


def _rule(rule: Any, value: Any) -> bool:
    if not isinstance(rule, dict):
        return value is not _MISSING and value == rule
    ((kind, argument),) = rule.items()
    if kind == "exists":
        return (value is not _MISSING) == bool(argument)
    test = _RULES.get(kind)
    if test is None:
        raise ValueError(f"the emulator does not know the filter rule {kind!r}")
    return value is not _MISSING and test(argument, value)


def _anything_but(argument: Any, value: Any) -> bool:
    return value not in (argument if isinstance(argument, list) else [argument])


def _numeric(argument: list[Any], value: Any) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    pairs = zip(argument[::2], argument[1::2], strict=True)
    return all(_NUMERIC[op](float(value), float(bound)) for op, bound in pairs)


_RULES: dict[str, Callable[[Any, Any], bool]] = {
    "prefix": lambda argument, value: isinstance(value, str) and value.startswith(argument),
    "suffix": lambda argument, value: isinstance(value, str) and value.endswith(argument),
    "equals-ignore-case": lambda argument, value: isinstance(value, str) and value.lower() == str(argument).lower(),
    "anything-but": _anything_but,
    "numeric": _numeric,
}
