"""What a caller may do. Standard library only, so the route table (and the CDK app that reads it) can import it
without the library's dependencies."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from rearview.errors import InvalidInput


class Permission(StrEnum):
    READ = "read"
    WRITE = "write"
    FORGET = "forget"
    CONSOLIDATE = "consolidate"
    ADMIN = "admin"


ALL_PERMISSIONS: frozenset[Permission] = frozenset(Permission)


def canonical_permissions(values: Iterable[str | Permission]) -> list[Permission]:
    """Deduplicated permissions in the enum's order (read, write, forget, consolidate, admin)."""
    wanted = set()
    for value in values:
        try:
            wanted.add(Permission(str(value).strip().lower()))
        except ValueError:
            allowed = ", ".join(p.value for p in Permission)
            raise InvalidInput(
                f"permissions: unknown permission {str(value)[:40]!r} (allowed: {allowed})", field="permissions"
            ) from None
    return [p for p in Permission if p in wanted]


def parse_permissions(text: str) -> list[Permission]:
    """`"read,write"` -> [read, write]; the comma-joined form of the CLI and of the authorizer context."""
    parts = [part for part in text.split(",") if part.strip()]
    return canonical_permissions(parts)
