"""API keys and principals: who calls, which namespaces they reach, and what they may do there.

A key reads `rv_<key id>_<secret>`; only a hash of the secret is stored. A key's scope is a namespace: the key
reaches that namespace and every namespace under it (`acme` reaches `acme:u-42`, not `acme2`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rearview.domain.namespaces import namespace_within, validate_namespace
from rearview.domain.permissions import ALL_PERMISSIONS, Permission, canonical_permissions, parse_permissions
from rearview.domain.quota import MAX_REQUESTS_PER_MINUTE, check_requests_per_minute
from rearview.domain.timestamps import UtcDatetime
from rearview.errors import InvalidInput, Unauthorized

KEY_PREFIX = "rv_"
# 16 hex characters (64 bits): unique enough that a collision is a retry, short enough to read in a log line.
KEY_ID_PATTERN = r"^[0-9a-f]{16}$"
# The scope of the bootstrap admin token and of the open mode. Not a namespace (validate_namespace refuses
# '*'), so no key can be given it and no namespace can be mistaken for it.
ALL_NAMESPACES = "*"
BOOTSTRAP_KEY_ID = "bootstrap-admin-token"
OPEN_LOCAL_KEY_ID = "open-local"


class ApiKey(BaseModel):
    """A stored key: everything but the secret itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key_id: str = Field(pattern=KEY_ID_PATTERN)
    scope: str = Field(description="The namespace the key reaches, with every namespace under it")
    permissions: list[Permission] = Field(min_length=1)
    created_at: UtcDatetime
    expires_at: UtcDatetime | None = None
    revoked_at: UtcDatetime | None = None
    secret_hash: str
    description: str | None = Field(None, max_length=200)
    # The key's own request limit (rearview.domain.quota); None: the deployment's default; 0: unlimited.
    requests_per_minute: int | None = Field(None, ge=0, le=MAX_REQUESTS_PER_MINUTE)

    @field_validator("scope")
    @classmethod
    def _scope_is_a_namespace(cls, value: str) -> str:
        return validate_namespace(value)

    @field_validator("permissions")
    @classmethod
    def _canonical(cls, value: list[Permission]) -> list[Permission]:
        return canonical_permissions(value)

    def active_at(self, now: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)


_LIMIT_CONTEXT_KEY = "requests_per_minute"


def _context_limit(value: Any) -> int | None:
    """The key's own limit as the authorizer passed it (absent: none of its own); Unauthorized if malformed."""
    if value is None or value == "":
        return None
    try:
        return check_requests_per_minute(int(str(value)))
    except (ValueError, InvalidInput):
        raise Unauthorized("authorization: the authorizer context carries an invalid requests_per_minute") from None


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key (or bootstrap token, or open mode) behind a request, its scope and permissions."""

    key_id: str
    scope: str
    permissions: frozenset[Permission]
    # True only in the open loopback development mode, so edges can say that nobody was authenticated.
    open: bool = False
    # The key's own request limit; None: the deployment's default (see rearview.domain.quota).
    requests_per_minute: int | None = None

    @classmethod
    def open_local(cls) -> Principal:
        """The open loopback development mode: no keys configured, so every request may do everything."""
        return cls(key_id=OPEN_LOCAL_KEY_ID, scope=ALL_NAMESPACES, permissions=ALL_PERMISSIONS, open=True)

    @classmethod
    def bootstrap_admin(cls) -> Principal:
        """The static admin credential (REARVIEW_API_TOKEN): every namespace, every permission."""
        return cls(key_id=BOOTSTRAP_KEY_ID, scope=ALL_NAMESPACES, permissions=ALL_PERMISSIONS)

    @classmethod
    def of_key(cls, key: ApiKey) -> Principal:
        return cls(
            key_id=key.key_id,
            scope=key.scope,
            permissions=frozenset(key.permissions),
            requests_per_minute=key.requests_per_minute,
        )

    @classmethod
    def from_authorizer_context(cls, context: Mapping[str, Any]) -> Principal:
        """The principal a Lambda authorizer put in `requestContext.authorizer.lambda`.

        Raises Unauthorized if the context lacks a field: a half-filled context is a misconfigured authorizer,
        and failing closed is the only safe answer.
        """
        key_id, scope, permissions = (context.get(name) for name in ("key_id", "scope", "permissions"))
        if not isinstance(key_id, str) or not isinstance(scope, str) or not isinstance(permissions, str):
            raise Unauthorized("authorization: the authorizer context lacks key_id, scope or permissions")
        if scope != ALL_NAMESPACES:
            try:
                validate_namespace(scope)
            except InvalidInput:
                raise Unauthorized("authorization: the authorizer context carries an invalid scope") from None
        try:
            granted = frozenset(parse_permissions(permissions))
        except InvalidInput:
            raise Unauthorized("authorization: the authorizer context carries an unknown permission") from None
        limit = _context_limit(context.get(_LIMIT_CONTEXT_KEY))
        return cls(key_id=key_id, scope=scope, permissions=granted, requests_per_minute=limit)

    def authorizer_context(self) -> dict[str, str]:
        """What a Lambda authorizer passes on (values must be strings, numbers or booleans). The key's own request
        limit goes along when it has one, so the functions throttle without reading the key again."""
        context = {
            "key_id": self.key_id,
            "scope": self.scope,
            "permissions": ",".join(p.value for p in Permission if p in self.permissions),
        }
        if self.requests_per_minute is not None:
            context[_LIMIT_CONTEXT_KEY] = str(self.requests_per_minute)
        return context

    def reaches(self, namespace: str) -> bool:
        """True if `namespace` lies within this principal's scope."""
        return self.scope == ALL_NAMESPACES or namespace_within(namespace, self.scope)
