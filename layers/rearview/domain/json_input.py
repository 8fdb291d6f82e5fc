"""What every JSON input must be before a model sees it: finite numbers, integers of sane size, text that is valid
Unicode, and nesting no deeper than a limit. HTTP bodies (`parse_json_body`) and MCP tool arguments
(`check_json_value`) pass the same checks and fail with the same `field: reason` messages.

Python's `json` accepts `NaN`, `Infinity` and `1e999` (as inf), lone surrogate escapes (`"\\ud800"`, a string no
UTF-8 encoder can write), integers of any length (whose conversion to text fails past 4,300 digits) and nesting up
to the interpreter's recursion limit; each of those used to end in a 500 somewhere past validation.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from rearview.errors import InvalidInput

# No request of the API nests deeper: a working-memory value is the only free-form JSON, and 32 levels hold any
# scratch state an agent keeps.
MAX_JSON_DEPTH = 32
# No field takes an integer longer than this; a 64-bit integer has 20 digits, and JSON readers lose precision past
# 2^53 anyway. (Python refuses to print integers of more than 4,300 digits.)
MAX_INTEGER_DIGITS = 40
_MAX_INTEGER = 10**MAX_INTEGER_DIGITS

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class _Refused:
    """A number the parser met that no field accepts; reported with its field by `check_json_value`."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parse_int(text: str) -> int | _Refused:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        return _Refused(f"must be an integer of at most {MAX_INTEGER_DIGITS} digits (got {len(text.lstrip('-'))})")
    return int(text)


def _parse_float(text: str) -> float | _Refused:
    value = float(text)
    if not math.isfinite(value):
        return _Refused(f"must be a finite number (got {text[:40]})")
    return value


def _parse_constant(name: str) -> _Refused:
    return _Refused(f"must be a finite number (got {name}, which JSON does not have)")


def nesting_depth(text: str) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings not counted)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub('""', text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse_json_body(text: str, *, field: str = "body", envelope: int = 0) -> Any:
    """The value of a JSON text, refusing what `check_json_value` refuses; InvalidInput names the field.
    `envelope` levels of wrapping are allowed on top of the limit (JSON-RPC puts arguments two levels down).
    Malformed JSON raises ValueError (json.JSONDecodeError), for the caller's own 400."""
    limit = MAX_JSON_DEPTH + envelope
    depth = nesting_depth(text)
    if depth > limit:
        raise InvalidInput(f"{field}: JSON nested {depth} levels deep; at most {limit}", field=field)
    value = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    check_json_value(value, max_depth=limit)
    return value


def _walk(value: Any, max_depth: int) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every value within `value` with its path, and every object key (as a value at its own path); iterative, so
    no input can exhaust the stack."""
    stack: list[tuple[tuple[Any, ...], Any, int]] = [((), value, 0)]
    while stack:
        path, item, depth = stack.pop()
        if depth > max_depth:
            raise InvalidInput(
                f"{_dotted(path) or 'body'}: nested more than {max_depth} levels deep",
                field=_dotted(path) or None,
            )
        yield path, item
        if isinstance(item, dict):
            for key, child in item.items():
                yield (*path, key), key
                stack.append(((*path, key), child, depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend(((*path, i), child, depth + 1) for i, child in enumerate(item))


def _dotted(path: tuple[Any, ...]) -> str:
    """The path as a field name; a key that is itself bad text is shown escaped (and cut), so the message is
    always valid UTF-8."""
    return ".".join(str(part).encode("utf-8", "backslashreplace").decode("utf-8")[:64] for part in path)


def _text_problem(item: str) -> str | None:
    try:
        item.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate U+{ord(item[exc.start]):04X} at position {exc.start} (not valid Unicode)"
    return None


def _problem(item: Any) -> str | None:
    if isinstance(item, _Refused):
        return item.reason
    if isinstance(item, str):
        return _text_problem(item)
    if isinstance(item, int) and not isinstance(item, bool) and abs(item) >= _MAX_INTEGER:
        return f"must be an integer of at most {MAX_INTEGER_DIGITS} digits"
    if isinstance(item, float) and not math.isfinite(item):
        return f"must be a finite number (got {item})"
    return None


def check_json_value(value: Any, *, root: str = "", max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise InvalidInput naming the first field whose value is not finite, too long an integer, not valid
    Unicode, or nested too deep. `root` prefixes the field names (`arguments`, `value`)."""
    for path, item in _walk(value, max_depth):
        problem = _problem(item)
        if problem is not None:
            field = ".".join(part for part in (root, _dotted(path)) if part) or "body"
            raise InvalidInput(f"{field}: {problem}", field=field)
