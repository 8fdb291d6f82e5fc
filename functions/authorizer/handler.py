"""API Gateway HTTP API Lambda authorizer (payload 2.0, simple responses): `Authorization: Bearer <API key>` ->
`{"isAuthorized": bool, "context": {key_id, scope, permissions}}`.

It authenticates only (unknown, malformed, revoked, expired -> not authorized, which API Gateway answers with
403/401 without invoking a function). It does not look at the path: API Gateway caches the answer by identity
source (the Authorization header) for a short TTL, so a path-dependent answer would be replayed for other paths.
The functions check the namespace and the permission against the context on every request (defence in depth,
rearview.api.http). Keys come from the single DynamoDB table (DynamoDBKeyStore); no embedder, store or index is
built here, so a cold start costs one boto3 client.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from rearview.adapters.dynamodb import DynamoDBKeyStore
from rearview.api import snapstart
from rearview.api.snapstart import AUTHORIZER_MODULES
from rearview.clock import SystemClock
from rearview.errors import Unauthorized
from rearview.service.access import AccessService
from rearview.settings import Settings

logger = Logger(service="rearview-authorizer")
# With SnapStart, the snapshot holds the key store's modules and boto3 loaded; the client is built after a restore.
snapstart.register(lambda: snapstart.prime(AUTHORIZER_MODULES, optional=()))


@cache
def access_service() -> AccessService:
    """Built once per cold start, from the environment (REARVIEW_AWS__TABLE_NAME, REARVIEW_API_TOKEN)."""
    settings = Settings()
    keys = DynamoDBKeyStore(settings.aws.table_name, settings=settings.aws)
    return AccessService(keys, SystemClock(), admin_token=settings.api_token)


def authorization_header(event: Mapping[str, Any]) -> str | None:
    """The credential: the identity source API Gateway extracted, else the Authorization header itself."""
    sources = event.get("identitySource") or []
    if sources and isinstance(sources[0], str) and sources[0]:
        return sources[0]
    for name, value in (event.get("headers") or {}).items():
        if name.lower() == "authorization":
            return str(value)
    return None


def authorize(event: Mapping[str, Any], access: AccessService) -> dict[str, Any]:
    """The simple response for one authorizer event."""
    try:
        principal = access.authenticate(authorization_header(event))
    except Unauthorized as exc:
        # The reason goes to the log, never the key: API Gateway does not pass it on to the caller.
        logger.info("not authorized", extra={"reason": exc.message, "route": event.get("routeKey")})
        return {"isAuthorized": False}
    logger.append_keys(key_id=principal.key_id)
    return {"isAuthorized": True, "context": principal.authorizer_context()}


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return authorize(event, access_service())
