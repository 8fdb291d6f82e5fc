"""AccessService: creating keys, authenticating Bearer headers, authorising namespaces and permissions."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from rearview.adapters.sqlite import SqliteKeyStore
from rearview.clock import ManualClock
from rearview.domain.access import ALL_NAMESPACES, Principal
from rearview.domain.permissions import Permission
from rearview.errors import InvalidInput, NamespaceForbidden, NotFound, Unauthorized
from rearview.service.access import AccessGate, AccessService, split_key

pytestmark = pytest.mark.unit

ADMIN_TOKEN = "bootstrap-admin-token-for-tests"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteKeyStore]:
    keys = SqliteKeyStore.in_data_dir(tmp_path / "data")
    yield keys
    keys.close()


@pytest.fixture
def access(store: SqliteKeyStore, clock: ManualClock) -> AccessService:
    return AccessService(store, clock, admin_token=ADMIN_TOKEN)


def bearer(key: str) -> str:
    return f"Bearer {key}"


def test_create_returns_the_plaintext_once_and_stores_only_a_hash(access: AccessService, store: SqliteKeyStore) -> None:
    key, plaintext = access.create_key("acme", ["write", "read"], description="agent")
    key_id, secret = split_key(plaintext)
    assert plaintext.startswith("rv_") and key_id == key.key_id
    assert len(secret) >= 40, "32 random bytes, url-safe base64"
    stored = store.get(key.key_id)
    assert stored == key
    assert secret not in stored.secret_hash and secret not in stored.model_dump_json()
    assert stored.permissions == [Permission.READ, Permission.WRITE]


def test_two_keys_never_share_an_id_or_secret(access: AccessService) -> None:
    made = [access.create_key("acme", ["read"])[1] for _ in range(20)]
    assert len({split_key(p)[0] for p in made}) == 20
    assert len({split_key(p)[1] for p in made}) == 20


def test_authenticate_returns_the_keys_principal(access: AccessService) -> None:
    key, plaintext = access.create_key("acme:u-42", ["read", "forget"])
    principal = access.authenticate(bearer(plaintext))
    assert principal == Principal(key.key_id, "acme:u-42", frozenset({Permission.READ, Permission.FORGET}))
    assert access.authenticate(f"bearer   {plaintext}  ") == principal


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "missing"),
        ("", "missing"),
        ("Basic dXNlcjpwYXNz", "expected 'Authorization: Bearer"),
        ("Bearer", "expected 'Authorization: Bearer"),
        ("Bearer not-a-key", "malformed"),
        ("Bearer rv_short_secret", "malformed"),
        ("Bearer rv_0123456789abcdef", "malformed"),
        ("Bearer rv_0123456789abcdef_unknown-secret", "unknown or invalid"),
    ],
)
def test_authenticate_refuses_missing_malformed_and_unknown(
    access: AccessService, header: str | None, message: str
) -> None:
    with pytest.raises(Unauthorized, match=message):
        access.authenticate(header)


def test_a_wrong_secret_reads_like_an_unknown_key(access: AccessService) -> None:
    key, plaintext = access.create_key("acme", ["read"])
    with pytest.raises(Unauthorized) as wrong:
        access.authenticate(bearer(plaintext[:-2] + ("AA" if not plaintext.endswith("AA") else "BB")))
    with pytest.raises(Unauthorized) as unknown:
        access.authenticate(bearer(f"rv_{'f' * 16}_{split_key(plaintext)[1]}"))
    assert wrong.value.message == unknown.value.message


def test_revoked_and_expired_keys_are_refused(access: AccessService, clock: ManualClock) -> None:
    _, revoked = access.create_key("acme", ["read"])
    access.revoke(split_key(revoked)[0])
    with pytest.raises(Unauthorized, match="revoked"):
        access.authenticate(bearer(revoked))
    _, expiring = access.create_key("acme", ["read"], expires_at=clock.now() + timedelta(days=1))
    assert access.authenticate(bearer(expiring)).scope == "acme"
    clock.advance(days=1)
    with pytest.raises(Unauthorized, match="expired"):
        access.authenticate(bearer(expiring))


def test_the_bootstrap_token_is_an_admin_over_every_namespace(access: AccessService) -> None:
    principal = access.authenticate(bearer(ADMIN_TOKEN))
    assert principal.scope == ALL_NAMESPACES and Permission.ADMIN in principal.permissions
    access.authorize(principal, "anyone:at-all", Permission.FORGET)
    with pytest.raises(Unauthorized):
        access.authenticate(bearer(ADMIN_TOKEN + "x"))


@pytest.mark.parametrize(
    ("scope", "namespace", "allowed"),
    [
        ("acme", "acme", True),
        ("acme", "acme:u-42", True),
        ("acme", "acme:u-42:s-1", True),
        ("acme", "acme2", False),
        ("acme", "acm", False),
        ("acme:u-42", "acme", False),
        ("acme:u-42", "acme:u-420", False),
        ("acme:u-42", "acme:u-4", False),
        ("acme:u-42", "acme:u-42:s-1", True),
    ],
)
def test_authorize_follows_the_namespace_tree(access: AccessService, scope: str, namespace: str, allowed: bool) -> None:
    principal = Principal("0123456789abcdef", scope, frozenset({Permission.READ}))
    if allowed:
        access.authorize(principal, namespace, Permission.READ)
        return
    with pytest.raises(NamespaceForbidden) as denied:
        access.authorize(principal, namespace, Permission.READ)
    assert denied.value.status == 403
    assert "exist" not in denied.value.message


def test_authorize_requires_the_permission(access: AccessService) -> None:
    principal = Principal("0123456789abcdef", "acme", frozenset({Permission.READ}))
    with pytest.raises(NamespaceForbidden, match="'write'"):
        access.authorize(principal, "acme", Permission.WRITE)


def test_create_key_validates_its_input(access: AccessService, clock: ManualClock) -> None:
    with pytest.raises(InvalidInput, match="namespace"):
        access.create_key("not a namespace", ["read"])
    with pytest.raises(InvalidInput, match="unknown permission"):
        access.create_key("acme", ["read", "sudo"])
    with pytest.raises(InvalidInput, match="at least one"):
        access.create_key("acme", [])
    with pytest.raises(InvalidInput, match="future"):
        access.create_key("acme", ["read"], expires_at=clock.now())


def test_a_key_creates_keys_only_within_its_scope_and_permissions(access: AccessService) -> None:
    parent = Principal("0123456789abcdef", "acme", frozenset({Permission.READ, Permission.WRITE, Permission.ADMIN}))
    child, _ = access.create_key_as(parent, "acme:u-42", ["read"])
    assert child.scope == "acme:u-42"
    with pytest.raises(NamespaceForbidden, match="scope"):
        access.create_key_as(parent, "acme2", ["read"])
    with pytest.raises(NamespaceForbidden, match="forget"):
        access.create_key_as(parent, "acme:u-42", ["read", "forget"])
    reader = Principal("0123456789abcdef", "acme", frozenset({Permission.READ}))
    with pytest.raises(NamespaceForbidden, match="admin"):
        access.create_key_as(reader, "acme", ["read"])


def test_list_and_revoke_within_a_scope(access: AccessService) -> None:
    acme, _ = access.create_key("acme:u-42", ["read"])
    other, _ = access.create_key("acme2", ["read"])
    assert [k.key_id for k in access.list_keys("acme")] == [acme.key_id]
    assert {k.key_id for k in access.list_keys()} == {acme.key_id, other.key_id}
    admin = Principal("0123456789abcdef", "acme", frozenset({Permission.ADMIN}))
    with pytest.raises(NotFound):
        access.revoke_as(admin, other.key_id)  # outside the scope reads like unknown
    assert access.revoke_as(admin, acme.key_id).revoked_at is not None
    with pytest.raises(NotFound):
        access.revoke("0123456789abcdef")


def test_open_gate_latches_shut_once_a_key_exists(store: SqliteKeyStore, clock: ManualClock) -> None:
    access = AccessService(store, clock)
    gate = AccessGate(access, allow_open=True)
    assert gate.is_open and gate.principal(None) == Principal.open_local()
    _, plaintext = access.create_key("acme", ["read"])
    assert not gate.is_open
    with pytest.raises(Unauthorized):
        gate.principal(None)
    access.revoke(split_key(plaintext)[0])
    assert not gate.is_open, "revoking the last key must not reopen the server"
    assert not AccessGate(access, allow_open=True).is_open


def test_a_gate_with_an_admin_token_or_not_allowed_open_is_enforced(store: SqliteKeyStore, clock: ManualClock) -> None:
    assert not AccessGate(AccessService(store, clock, admin_token=ADMIN_TOKEN), allow_open=True).is_open
    assert not AccessGate(AccessService(store, clock), allow_open=False).is_open


def test_authorizer_context_round_trips_and_fails_closed() -> None:
    principal = Principal("0123456789abcdef", "acme:u-42", frozenset({Permission.READ, Permission.ADMIN}))
    context = principal.authorizer_context()
    assert context == {"key_id": "0123456789abcdef", "scope": "acme:u-42", "permissions": "read,admin"}
    assert Principal.from_authorizer_context(context) == principal
    for broken in ({}, {**context, "scope": "not a ns"}, {**context, "permissions": "read,root"}):
        with pytest.raises(Unauthorized):
            Principal.from_authorizer_context(broken)
