"""`field: reason` messages for pydantic validation errors: the words of HTTP's 422 and of MCP's tool errors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Where Powertools says a value came from; the caller named only the field.
_REQUEST_PARTS = ("body", "query", "path", "header", "cookie")


def field_path(loc: Sequence[Any], *, request_part_first: bool = False) -> str:
    """`("items", 3, "content")` -> `items.3.content`. With `request_part_first` (Powertools' locations), a
    leading `body`/`query`/... is dropped unless it is all there is (`("body",)` stays `body`)."""
    parts = [str(p) for p in loc]
    if request_part_first and len(parts) > 1 and parts[0] in _REQUEST_PARTS:
        parts = parts[1:]
    return ".".join(parts)


def reason(err: Mapping[str, Any]) -> str:
    """The error's message without the prefix pydantic puts before our validators' own words."""
    msg = str(err.get("msg") or err.get("type") or "invalid")
    # Our validators raise ValueError("must be at most 2000 characters ..."); pydantic prefixes it.
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    return msg


def describe(
    errors: Iterable[Mapping[str, Any]], *, request_part_first: bool = False, nameless: str = "body"
) -> tuple[str, str | None]:
    """(`field: reason` for each error, `;`-joined; the first field named), the way the API's 422 reads.
    `nameless` stands for an error located nowhere more precise."""
    parts: list[str] = []
    first_field: str | None = None
    for err in errors:
        field = field_path(err.get("loc") or (), request_part_first=request_part_first) or nameless
        first_field = first_field or field
        parts.append(f"{field}: {reason(err)}")
    return "; ".join(parts), first_field
