"""Namespaces: `tenant:user:project`-style names that isolate everything, and how they nest."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from rearview.errors import InvalidInput

NAMESPACE_SEGMENT = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
MAX_NAMESPACE_SEGMENTS = 4


def validate_namespace(value: str) -> str:
    """Return `value` if it is a namespace (1 to 4 `:`-separated segments of `[A-Za-z0-9_.@-]{1,64}`)."""
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
    return value


def namespace_within(namespace: str, scope: str) -> bool:
    """True if `namespace` is `scope` itself or lies under it (`acme` holds `acme:u-42`, not `acme2`)."""
    return namespace == scope or namespace.startswith(scope + ":")


Namespace = Annotated[str, AfterValidator(validate_namespace)]
