"""Namespaces: `tenant:user:project`-style names that isolate everything, and how they nest."""

from __future__ import annotations

import re
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from rearview.errors import InvalidInput

NAMESPACE_SEGMENT = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
MAX_NAMESPACE_SEGMENTS = 4


class Namespace(str):
    """A namespace that was checked (1 to 4 `:`-separated segments of `[A-Za-z0-9_.@-]{1,64}`). An edge makes one of
    what a caller sent, once (`Namespace(value)`, InvalidInput naming `namespace` otherwise); what it is handed on to
    does not check it again (`validate_namespace` returns a Namespace as it is). As a model's field it is checked the
    same way, and written as a plain string."""

    __slots__ = ()

    def __new__(cls, value: str) -> Namespace:
        if isinstance(value, Namespace):
            return value
        _check(value)
        return super().__new__(cls, value)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            cls, core_schema.str_schema(), serialization=core_schema.to_string_ser_schema()
        )


def validate_namespace(value: str) -> Namespace:
    """`value` as a Namespace: checked, unless it is one already."""
    return Namespace(value)


def _check(value: str) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidInput("namespace: must be 1 to 4 segments separated by ':'", field="namespace")
    segments = value.split(":")
    if len(segments) > MAX_NAMESPACE_SEGMENTS:
        raise InvalidInput(
            f"namespace: at most {MAX_NAMESPACE_SEGMENTS} segments separated by ':' (got {len(segments)})",
            field="namespace",
        )
    for segment in segments:
        if not NAMESPACE_SEGMENT.fullmatch(segment):
            raise InvalidInput(
                f"namespace: each segment must be 1 to 64 characters of A-Z a-z 0-9 _ . @ - (got {segment[:80]!r})",
                field="namespace",
            )


def namespace_within(namespace: str, scope: str) -> bool:
    """True if `namespace` is `scope` itself or lies under it (`acme` holds `acme:u-42`, not `acme2`)."""
    return namespace == scope or namespace.startswith(scope + ":")
