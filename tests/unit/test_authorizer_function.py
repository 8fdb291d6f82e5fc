"""functions/authorizer: the API Gateway HTTP API Lambda authorizer over DynamoDB (moto), simple responses."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from rearview.adapters.dynamodb import DynamoDBKeyStore
from rearview.api.local_server import local_context
from rearview.clock import ManualClock
from rearview.domain.access import Principal
from rearview.service.access import AccessService, split_key
from support.events import load_event
from support.modules import load_module

pytestmark = pytest.mark.unit

TABLE = "rearview-authorizer-test"


handler_module = load_module("functions/authorizer/handler.py", "authorizer_handler_unit")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "REARVIEW_AWS__TABLE_NAME": TABLE,
        "REARVIEW_AWS__REGION": "eu-west-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("REARVIEW_API_TOKEN", raising=False)
    monkeypatch.delenv("REARVIEW_AWS__ORIGIN_SECRET_ARN", raising=False)
    with mock_aws():
        from rearview.adapters.dynamodb import create_table

        client = boto3.client("dynamodb", region_name="eu-west-1")
        create_table(client, TABLE)
        handler_module.access_service.cache_clear()
        handler_module.origin_secret.cache_clear()
        yield client
        handler_module.access_service.cache_clear()
        handler_module.origin_secret.cache_clear()


@pytest.fixture
def access(aws: Any, clock: ManualClock) -> AccessService:
    return AccessService(DynamoDBKeyStore(TABLE, client=aws), clock)


def event_with(token: str | None) -> dict[str, Any]:
    if token is None:
        return load_event("request_without_token", kind="authorizer")
    event = load_event("request", kind="authorizer")
    event["identitySource"] = [f"Bearer {token}"]
    event["headers"]["authorization"] = f"Bearer {token}"
    return event


def test_a_valid_key_is_authorized_with_its_scope_and_permissions(access: AccessService) -> None:
    key, plaintext = access.create_key("acme", ["write", "read"])
    decision = handler_module.authorize(event_with(plaintext), access)
    assert decision == {
        "isAuthorized": True,
        "context": {"key_id": key.key_id, "scope": "acme", "permissions": "read,write"},
    }
    assert Principal.from_authorizer_context(decision["context"]) == Principal.of_key(key)


def test_the_handler_builds_its_service_from_the_environment(access: AccessService) -> None:
    _, plaintext = access.create_key("acme:u-42", ["read"])
    decision = handler_module.handler(event_with(plaintext), local_context("req-1"))
    assert decision["isAuthorized"] is True and decision["context"]["scope"] == "acme:u-42"
    assert handler_module.handler(event_with(plaintext + "x"), local_context("req-2")) == {"isAuthorized": False}


def test_missing_malformed_unknown_revoked_and_expired_are_refused(access: AccessService, clock: ManualClock) -> None:
    _, plaintext = access.create_key("acme", ["read"])
    _, revoked = access.create_key("acme", ["read"])
    access.revoke(split_key(revoked)[0])
    _, expiring = access.create_key("acme", ["read"], expires_at=clock.now() + timedelta(minutes=5))
    assert handler_module.authorize(event_with(expiring), access)["isAuthorized"] is True
    clock.advance(minutes=5)
    refused = [None, "not-a-key", f"rv_{'0' * 16}_{split_key(plaintext)[1]}", plaintext[:-1] + "?", revoked, expiring]
    for token in refused:
        assert handler_module.authorize(event_with(token), access) == {"isAuthorized": False}, token


def test_the_header_is_used_when_there_is_no_identity_source(access: AccessService) -> None:
    _, plaintext = access.create_key("acme", ["read"])
    event = event_with(plaintext)
    event["identitySource"] = []
    assert handler_module.authorize(event, access)["isAuthorized"] is True


def test_the_bootstrap_token_is_authorized_over_every_namespace(aws: Any, clock: ManualClock) -> None:
    access = AccessService(DynamoDBKeyStore(TABLE, client=aws), clock, admin_token="admin-token-for-tests")
    decision = handler_module.authorize(event_with("admin-token-for-tests"), access)
    assert decision["isAuthorized"] is True
    assert decision["context"]["scope"] == "*"
    assert set(decision["context"]["permissions"].split(",")) == {"read", "write", "forget", "consolidate", "admin"}


def test_a_keys_own_request_limit_rides_the_context(access: AccessService) -> None:
    key, plaintext = access.create_key("acme", ["read"], requests_per_minute=90)
    decision = handler_module.authorize(event_with(plaintext), access)
    assert decision["context"]["requests_per_minute"] == "90"
    assert Principal.from_authorizer_context(decision["context"]).requests_per_minute == 90


def test_behind_the_edge_a_request_without_the_origin_secret_is_refused(access: AccessService) -> None:
    _, plaintext = access.create_key("acme", ["read"])
    secret = "s3cretFromSecretsManager0123456789abcdefghijklmn"
    event = event_with(plaintext)
    assert handler_module.authorize(event, access, secret) == {"isAuthorized": False}, "straight to the API's URL"
    event["headers"]["x-rearview-origin"] = secret[:-1] + "X"
    assert handler_module.authorize(event, access, secret) == {"isAuthorized": False}, "a guessed secret"
    event["headers"]["X-Rearview-Origin"] = secret
    del event["headers"]["x-rearview-origin"]
    assert handler_module.authorize(event, access, secret)["isAuthorized"] is True, "through CloudFront"
    assert handler_module.authorize(event_with("not-a-key") | {"headers": event["headers"]}, access, secret) == {
        "isAuthorized": False
    }, "the secret is no credential: a key is still needed"


def test_the_handler_reads_the_origin_secret_from_secrets_manager(
    access: AccessService, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = boto3.client("secretsmanager", region_name="eu-west-1")
    arn = secrets.create_secret(Name="rearview-origin", SecretString="from-secrets-manager-0123456789")["ARN"]
    monkeypatch.setenv("REARVIEW_AWS__ORIGIN_SECRET_ARN", arn)
    handler_module.origin_secret.cache_clear()
    try:
        _, plaintext = access.create_key("acme", ["read"])
        event = event_with(plaintext)
        assert handler_module.handler(event, local_context("req-3")) == {"isAuthorized": False}
        event["headers"]["x-rearview-origin"] = "from-secrets-manager-0123456789"
        assert handler_module.handler(event, local_context("req-4"))["isAuthorized"] is True
    finally:
        handler_module.origin_secret.cache_clear()
