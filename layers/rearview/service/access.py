"""Tenancy and access control: API keys scoped to a namespace, with permissions, expiry and revocation.

A key reads `rv_<key id>_<secret>`. Only a hash of the secret is stored (SQLite locally, DynamoDB on AWS), so
the plaintext is shown once, at creation, and never again. A key's scope is a namespace: the key reaches that
namespace and every namespace under it (`acme` reaches `acme:u-42`, not `acme2`; see
`domain.namespaces.namespace_within`).

Two credentials are not stored keys: the bootstrap admin token (`REARVIEW_API_TOKEN`, every namespace, every
permission; it exists so the first keys can be created over HTTP) and the open loopback development mode of the
local server (no keys configured at all), represented by `Principal.open_local()`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from rearview.domain.access import ALL_NAMESPACES, KEY_ID_PATTERN, KEY_PREFIX, ApiKey, Principal
from rearview.domain.namespaces import namespace_within, validate_namespace
from rearview.domain.permissions import Permission, canonical_permissions
from rearview.domain.quota import RequestLimit, check_requests_per_minute
from rearview.errors import ConcurrentUpdate, InvalidInput, NamespaceForbidden, NotFound, Unauthorized

if TYPE_CHECKING:  # annotations only: the ports module pulls in numpy, which the authorizer and mcp never need
    from rearview.ports import Clock, KeyStore
    from rearview.service.throttle import RequestThrottle

_KEY_ID = re.compile(KEY_ID_PATTERN)
# 32 random bytes: a secret that cannot be guessed, which is what makes a fast hash safe (see _secret_hash).
_SECRET_BYTES = 32
_HASH_SCHEME = "sha256"
_CREATE_ATTEMPTS = 3


def _secret_hash(key_id: str, secret: str) -> str:
    """The stored form of a secret: SHA-256 over the key id and the secret.

    A slow password hash (bcrypt, scrypt, argon2) exists to make guessing a low-entropy password expensive. Our
    secrets are 256 random bits made by `secrets`, so there is nothing to guess: one SHA-256 is as strong here
    and keeps authentication (on every request, and in the Lambda authorizer) cheap. The key id is mixed in so
    that the same secret under two ids would hash differently.
    """
    digest = hashlib.sha256(f"{key_id}:{secret}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"{_HASH_SCHEME}:{digest}"


# Compared against when the key id is unknown, so that an unknown id costs the same time as a wrong secret.
_DUMMY_HASH = _secret_hash("0" * 16, "no-such-key")


def split_key(plaintext: str) -> tuple[str, str]:
    """`rv_<key id>_<secret>` -> (key id, secret); raises Unauthorized if it has another shape."""
    if not plaintext.startswith(KEY_PREFIX):
        raise Unauthorized("authorization: malformed API key (expected rv_<key id>_<secret>)")
    key_id, sep, secret = plaintext[len(KEY_PREFIX) :].partition("_")
    if not sep or not secret or not _KEY_ID.fullmatch(key_id):
        raise Unauthorized("authorization: malformed API key (expected rv_<key id>_<secret>)")
    return key_id, secret


class AccessService:
    """Creates, lists, limits and revokes keys; turns an Authorization header into a Principal; checks a request
    (namespace and permission) and admits it against its key's request limit (`throttle`; none: unlimited)."""

    def __init__(
        self,
        keys: KeyStore,
        clock: Clock,
        *,
        admin_token: str | None = None,
        throttle: RequestThrottle | None = None,
    ) -> None:
        self.keys = keys
        self.clock = clock
        self._admin_token = admin_token or None
        self.throttle = throttle

    @property
    def has_admin_token(self) -> bool:
        return self._admin_token is not None

    def keys_exist(self) -> bool:
        """True once any key was created (revoked or expired ones count: revoking must never reopen a server)."""
        return self.keys.has_any()

    # --- keys ---------------------------------------------------------------------------------------------

    def create_key(
        self,
        scope: str,
        permissions: Iterable[str | Permission],
        expires_at: datetime | None = None,
        description: str | None = None,
        requests_per_minute: int | None = None,
    ) -> tuple[ApiKey, str]:
        """Create a key; return it with its plaintext `rv_<key id>_<secret>`, which is never available again.
        `requests_per_minute`: the key's own request limit (None: the deployment's default; 0: unlimited)."""
        validate_namespace(scope)
        if requests_per_minute is not None:
            check_requests_per_minute(requests_per_minute)
        granted = canonical_permissions(permissions)
        if not granted:
            raise InvalidInput("permissions: at least one permission is required", field="permissions")
        now = self.clock.now()
        if expires_at is not None and expires_at <= now:
            raise InvalidInput("expires_at: must be in the future", field="expires_at")
        if description is not None and (len(description) > 200 or any(ord(c) < 32 for c in description)):
            raise InvalidInput("description: at most 200 characters, no control characters", field="description")
        # The scope is stored and listed as given: refused if it holds a secret; the description, shown too, is
        # redacted like any text a caller gives. Imported here: the authorizer, which imports this module, never
        # creates keys and should not load the detectors.
        from rearview.service.redaction import check_verbatim, redact_given_text

        check_verbatim(scope, "namespace")
        if description is not None:
            description, _ = redact_given_text(description)
        for _ in range(_CREATE_ATTEMPTS):
            key_id = secrets.token_hex(8)
            secret = secrets.token_urlsafe(_SECRET_BYTES)
            key = ApiKey(
                key_id=key_id,
                scope=scope,
                permissions=granted,
                created_at=now,
                expires_at=expires_at,
                secret_hash=_secret_hash(key_id, secret),
                description=description,
                requests_per_minute=requests_per_minute,
            )
            try:
                self.keys.put(key)
            except ConcurrentUpdate:
                continue  # a 64-bit id collided: draw another
            return key, f"{KEY_PREFIX}{key_id}_{secret}"
        raise ConcurrentUpdate("key_id: could not draw an unused key id; try again")

    def create_key_as(
        self,
        principal: Principal,
        scope: str,
        permissions: Iterable[str | Permission],
        expires_at: datetime | None = None,
        description: str | None = None,
        requests_per_minute: int | None = None,
    ) -> tuple[ApiKey, str]:
        """Create a key on behalf of `principal`: within its own scope and with at most its own permissions.

        The open local mode creates none: it means nobody authenticated, and a page of another site reaching the
        server could otherwise create the first key and lock its owner out. The first key comes from the command
        line (`rearview keys create`) or from a caller holding the admin token."""
        if principal.open:
            raise NamespaceForbidden(
                "keys: an open server creates no API key; create the first one with `rearview keys create`, or "
                "send the admin token (REARVIEW_API_TOKEN)",
                field="authorization",
            )
        self.require(principal, Permission.ADMIN)
        validate_namespace(scope)
        if not principal.reaches(scope):
            raise NamespaceForbidden(
                f"namespace: this key may only create keys within its own scope {principal.scope!r}",
                field="namespace",
            )
        granted = canonical_permissions(permissions)
        extra = [p.value for p in granted if p not in principal.permissions]
        if extra:
            raise NamespaceForbidden(
                f"permissions: this key may not grant permissions it does not hold ({', '.join(extra)})",
                field="permissions",
            )
        if requests_per_minute is not None:
            check_requests_per_minute(requests_per_minute)
        self._require_limit_within(principal, requests_per_minute)
        return self.create_key(scope, granted, expires_at, description, requests_per_minute)

    def list_keys(self, within_scope: str = ALL_NAMESPACES) -> list[ApiKey]:
        """Every key whose scope lies within `within_scope`, oldest first."""
        keys = self.keys.list()
        if within_scope != ALL_NAMESPACES:
            keys = [k for k in keys if namespace_within(k.scope, within_scope)]
        return sorted(keys, key=lambda k: (k.created_at, k.key_id))

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key (at once, for good); revoking a revoked key changes nothing. NotFound if unknown."""
        key = self.keys.get(key_id) if _KEY_ID.fullmatch(key_id) else None
        if key is None:
            raise NotFound(f"key_id: no key {key_id[:40]!r}", field="key_id")
        if key.revoked_at is not None:
            return key
        revoked = self.keys.revoke(key_id, self.clock.now())
        if revoked is None:
            raise NotFound(f"key_id: no key {key_id[:40]!r}", field="key_id")
        return revoked

    def revoke_as(self, principal: Principal, key_id: str) -> ApiKey:
        """Revoke on behalf of `principal`; a key outside its scope is reported as not found, like an unknown one."""
        self.require(principal, Permission.ADMIN)
        key = self.keys.get(key_id) if _KEY_ID.fullmatch(key_id) else None
        if key is None or not principal.reaches(key.scope):
            raise NotFound(f"key_id: no key {key_id[:40]!r}", field="key_id")
        return self.revoke(key_id)

    def set_requests_per_minute(self, key_id: str, requests_per_minute: int | None) -> ApiKey:
        """Set a key's own request limit (None: back to the deployment's default; 0: unlimited). NotFound if
        unknown. On AWS the gateway authorizer's cached answer carries the old limit until its TTL runs out."""
        if requests_per_minute is not None:
            check_requests_per_minute(requests_per_minute)
        updated = self.keys.set_requests_per_minute(key_id, requests_per_minute) if _KEY_ID.fullmatch(key_id) else None
        if updated is None:
            raise NotFound(f"key_id: no key {key_id[:40]!r}", field="key_id")
        return updated

    def set_requests_per_minute_as(self, principal: Principal, key_id: str, requests_per_minute: int | None) -> ApiKey:
        """Set a key's limit on behalf of `principal` (admin, the key within its scope, else not found; a limit no
        higher than its own)."""
        self.require(principal, Permission.ADMIN)
        key = self.keys.get(key_id) if _KEY_ID.fullmatch(key_id) else None
        if key is None or not principal.reaches(key.scope):
            raise NotFound(f"key_id: no key {key_id[:40]!r}", field="key_id")
        self._require_limit_within(principal, requests_per_minute)
        return self.set_requests_per_minute(key_id, requests_per_minute)

    def _require_limit_within(self, principal: Principal, requests_per_minute: int | None) -> None:
        """NamespaceForbidden unless the limit asked for is no higher than the principal's own: a tenant's admin key
        could otherwise lift its own throttle through a key it makes. The operator's credentials (every namespace:
        the admin token, the command line) may set any."""
        if self.throttle is None or principal.scope == ALL_NAMESPACES:
            return
        own = self.throttle.limit_for(principal)
        if own is None:
            return
        wanted = RequestLimit.effective(requests_per_minute, self.throttle.default_per_minute)
        if wanted is None or wanted.per_minute > own.per_minute:
            raise NamespaceForbidden(
                f"requests_per_minute: this key may not grant more than its own limit ({own.describe()})",
                field="requests_per_minute",
            )

    # --- requests -----------------------------------------------------------------------------------------

    def admit(self, principal: Principal) -> None:
        """Count one request of `principal` against its key's limit; Throttled (429) once the limit is reached."""
        if self.throttle is not None:
            self.throttle.admit(principal)

    def authenticate(self, authorization_header: str | None) -> Principal:
        """The principal behind an `Authorization: Bearer <key>` header; raises Unauthorized otherwise.

        Missing, malformed, unknown, wrong secret, revoked and expired all raise. An unknown id and a wrong secret
        get the same message and cost the same time, so probing cannot tell which key ids exist; revocation and
        expiry are only reported to a caller who holds the right secret.
        """
        if not authorization_header or not authorization_header.strip():
            raise Unauthorized("authorization: missing 'Authorization: Bearer <API key>' header")
        scheme, _, credential = authorization_header.strip().partition(" ")
        credential = credential.strip()
        # `Token` is how mem0's clients send a key (the mem0-compatible routes), the same key as a bearer token.
        if scheme.lower() not in ("bearer", "token") or not credential:
            raise Unauthorized("authorization: expected 'Authorization: Bearer <API key>'")
        if self._admin_token is not None and hmac.compare_digest(
            credential.encode("utf-8", "surrogatepass"), self._admin_token.encode("utf-8", "surrogatepass")
        ):
            return Principal.bootstrap_admin()
        key_id, secret = split_key(credential)
        key = self.keys.get(key_id)
        expected = key.secret_hash if key is not None else _DUMMY_HASH
        matches = hmac.compare_digest(_secret_hash(key_id, secret).encode("utf-8", "surrogatepass"), expected.encode())
        if key is None or not matches:
            raise Unauthorized("authorization: unknown or invalid API key")
        now = self.clock.now()
        if key.revoked_at is not None:
            raise Unauthorized("authorization: this API key was revoked")
        if key.expires_at is not None and now >= key.expires_at:
            raise Unauthorized("authorization: this API key has expired")
        return Principal.of_key(key)

    def authorize(self, principal: Principal, namespace: str, permission: Permission) -> None:
        """Raise NamespaceForbidden unless `principal` reaches `namespace` and holds `permission`.

        The message is the same whether or not the namespace holds anything, so a 403 tells nothing about it.
        """
        if not principal.reaches(namespace):
            raise NamespaceForbidden(
                f"namespace: this API key's scope does not include {namespace[:300]!r}", field="namespace"
            )
        self.require(principal, permission)

    @staticmethod
    def require(principal: Principal, permission: Permission) -> None:
        """Raise NamespaceForbidden unless `principal` holds `permission`."""
        if permission not in principal.permissions:
            raise NamespaceForbidden(
                f"permission: this API key lacks the {permission.value!r} permission", field="permission"
            )


class AccessGate:
    """Decides, per request, whether authentication is required.

    Enforced unless `allow_open` (the local server on loopback without REARVIEW_API_TOKEN) and no key exists.
    Open mode is re-checked on every request and latches shut: once a key exists, even if later revoked, every
    request must authenticate until the server restarts.
    """

    def __init__(self, access: AccessService, *, allow_open: bool = False) -> None:
        self.access = access
        self._open = allow_open and not access.has_admin_token and not access.keys_exist()

    @property
    def is_open(self) -> bool:
        """True while the open development mode holds (checks the key store, so it can close here)."""
        if self._open and self.access.keys_exist():
            self._open = False
        return self._open

    def principal(self, authorization_header: str | None) -> Principal:
        """The request's principal: the open-mode principal while open, else an authenticated key."""
        if self.is_open:
            return Principal.open_local()
        return self.access.authenticate(authorization_header)

    def admit(self, principal: Principal) -> Principal:
        """The principal, once its request is counted against its key's limit (Throttled, 429, past it)."""
        self.access.admit(principal)
        return principal
