"""What every request model shares: an unknown field is refused, and a value is taken as the type it was sent as.

pydantic coerces by default: `true` becomes 1 for an integer field, `"5"` becomes 5, `5.0` becomes 5, `1` becomes
true. A caller that sends `requests_per_minute: true` has made a mistake the API should name, not a limit of one
request a minute. `RequestModel` refuses, per field, a boolean where a number is expected, a number where a boolean
is, a string where either is, and a fraction where a whole number is; times keep their two forms (ISO 8601 text, or
epoch seconds), and strings stay strings.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

_SCALARS = (bool, int, float, str)


def _kinds(annotation: Any) -> frozenset[type]:
    """The scalar types (bool, int, float, str) a field's annotation admits; empty when it admits another kind."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _kinds(annotation.__origin__)
    if origin in (typing.Union, types.UnionType):
        found: set[type] = set()
        for member in typing.get_args(annotation):
            if member is type(None):
                continue
            kinds = _kinds(member)
            if not kinds:
                return frozenset()
            found |= kinds
        return frozenset(found)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return frozenset()
    return frozenset({annotation}) if annotation in _SCALARS else frozenset()


def sent_as(value: Any, kinds: frozenset[type]) -> str | None:
    """Why `value` is not of the scalar `kinds` a field takes (None when it is, or the field takes other kinds)."""
    numbers = kinds & {int, float}
    if not kinds or str in kinds:
        return None
    if isinstance(value, bool):
        return None if bool in kinds else "must be a number, not true or false"
    if isinstance(value, str):
        return "must be a number, not a string" if numbers else "must be true or false, not a string"
    if isinstance(value, int | float) and not numbers:
        return "must be true or false"
    if isinstance(value, float) and numbers == {int}:
        return None if value != value else f"must be a whole number (got {value!r:.40})"
    return None


_KINDS: dict[tuple[type, str], frozenset[type] | None] = {}


def _field_kinds(model: type[BaseModel], name: str) -> frozenset[type] | None:
    key = (model, name)
    if key not in _KINDS:
        field = model.model_fields.get(name)
        _KINDS[key] = _kinds(field.annotation) if field is not None else None
    return _KINDS[key]


class RequestModel(BaseModel):
    """A request's body or arguments: unknown fields refused, nothing coerced from another type."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _as_sent(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name is None or not isinstance(value, _SCALARS):
            return value
        kinds = _field_kinds(cls, info.field_name)
        reason = sent_as(value, kinds) if kinds is not None else None
        if reason is not None:
            raise ValueError(reason)
        return value
