"""The KeyStore contract, against every key store: SQLite (the data directory), DynamoDB (on moto) and the
in-memory fake."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from rearview.adapters.dynamodb import DynamoDBKeyStore
from rearview.adapters.in_memory import InMemoryData, InMemoryKeyStore
from rearview.adapters.sqlite import SqliteKeyStore
from rearview.domain.access import ApiKey
from rearview.domain.permissions import Permission
from rearview.errors import ConcurrentUpdate
from rearview.ports import KeyStore

pytestmark = pytest.mark.contract

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def _sqlite(tmp_path: Path) -> Iterator[KeyStore]:
    store = SqliteKeyStore.in_data_dir(tmp_path / "data")
    yield store
    store.close()


def _dynamodb(tmp_path: Path) -> Iterator[KeyStore]:
    from rearview.adapters.dynamodb import create_table

    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        create_table(client, "rearview-test")
        yield DynamoDBKeyStore("rearview-test", client=client)


def _memory(tmp_path: Path) -> Iterator[KeyStore]:
    yield InMemoryKeyStore(InMemoryData())


STORES: dict[str, Callable[[Path], Iterator[KeyStore]]] = {"sqlite": _sqlite, "dynamodb": _dynamodb, "memory": _memory}


@pytest.fixture(params=list(STORES))
def keys(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KeyStore]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    yield from STORES[request.param](tmp_path)


def make_key(key_id: str = "0123456789abcdef", **fields: Any) -> ApiKey:
    values: dict[str, Any] = {
        "key_id": key_id,
        "scope": "acme",
        "permissions": [Permission.WRITE, Permission.READ],
        "created_at": T0,
        "secret_hash": "sha256:" + "ab" * 32,
    }
    values.update(fields)
    return ApiKey(**values)


def test_empty_store_has_no_keys(keys: KeyStore) -> None:
    assert not keys.has_any()
    assert keys.list() == []
    assert keys.get("0123456789abcdef") is None


def test_put_then_get_round_trips_every_field(keys: KeyStore) -> None:
    key = make_key(
        scope="acme:u-42",
        expires_at=T0 + timedelta(days=30),
        description="support agent — 支持",
        permissions=[Permission.ADMIN, Permission.CONSOLIDATE, Permission.FORGET],
    )
    keys.put(key)
    assert keys.has_any()
    assert keys.get(key.key_id) == key
    assert keys.list() == [key]


def test_put_refuses_an_existing_id(keys: KeyStore) -> None:
    keys.put(make_key())
    with pytest.raises(ConcurrentUpdate):
        keys.put(make_key(scope="other"))
    stored = keys.get("0123456789abcdef")
    assert stored is not None and stored.scope == "acme"


def test_list_is_every_key_oldest_first(keys: KeyStore) -> None:
    later = make_key("fedcba9876543210", created_at=T0 + timedelta(minutes=5))
    keys.put(later)
    keys.put(make_key())
    assert [k.key_id for k in keys.list()] == ["0123456789abcdef", "fedcba9876543210"]


def test_revoke_keeps_the_first_revocation_and_counts_as_a_key(keys: KeyStore) -> None:
    keys.put(make_key())
    first = keys.revoke("0123456789abcdef", T0 + timedelta(hours=1))
    assert first is not None and first.revoked_at == T0 + timedelta(hours=1)
    again = keys.revoke("0123456789abcdef", T0 + timedelta(hours=2))
    assert again is not None and again.revoked_at == T0 + timedelta(hours=1)
    stored = keys.get("0123456789abcdef")
    assert stored is not None and stored.revoked_at == T0 + timedelta(hours=1)
    assert keys.has_any(), "a revoked key still counts: revoking the last key must not reopen a server"


def test_revoke_of_an_unknown_key_is_none_and_creates_nothing(keys: KeyStore) -> None:
    assert keys.revoke("0123456789abcdef", T0) is None
    assert not keys.has_any()


def test_a_keys_own_request_limit_round_trips_and_can_be_set_and_cleared(keys: KeyStore) -> None:
    keys.put(make_key(requests_per_minute=30))
    assert (stored := keys.get("0123456789abcdef")) is not None and stored.requests_per_minute == 30
    raised = keys.set_requests_per_minute("0123456789abcdef", 0)
    assert raised is not None and raised.requests_per_minute == 0, "0: unlimited, stated"
    cleared = keys.set_requests_per_minute("0123456789abcdef", None)
    assert cleared is not None and cleared.requests_per_minute is None, "None: back to the default"
    stored = keys.get("0123456789abcdef")
    assert stored is not None and stored.requests_per_minute is None
    assert stored == make_key(), "nothing else changed"


def test_setting_the_limit_of_an_unknown_key_is_none_and_creates_nothing(keys: KeyStore) -> None:
    assert keys.set_requests_per_minute("0123456789abcdef", 10) is None
    assert not keys.has_any()
