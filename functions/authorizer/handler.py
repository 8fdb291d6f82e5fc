"""API Gateway HTTP API Lambda authorizer (payload 2.0, simple responses): `Authorization: Bearer <API key>` ->
`{"isAuthorized": bool, "context": {key_id, scope, permissions[, requests_per_minute]}}`.

It authenticates only (unknown, malformed, revoked, expired -> not authorized, which API Gateway answers with
403/401 without invoking a function). It does not look at the path: API Gateway caches the answer by identity
source (the Authorization header) for a short TTL, so a path-dependent answer would be replayed for other paths.
The functions check the namespace and the permission against the context on every request (defence in depth,
rearview.api.http), and count the request against the key's limit. Keys come from the single DynamoDB table,
through the composition root (`rearview.bootstrap.build_dynamodb_key_store`) like every other function's parts; no
embedder, store or index is built here, so a cold start costs one boto3 client. The composition root is imported on
the first invocation, not at init (it imports every service: about 0.36 s of CPU more than the key store alone,
which SnapStart's snapshot holds loaded; see infra/README.md, "Cold starts").

Behind the optional WAF with `rearview:wafOriginOnly`, it first checks the secret header CloudFront adds
(`x-rearview-origin`, the secret named by REARVIEW_AWS__ORIGIN_SECRET_ARN, a second identity source): a request to
the API's own URL skipped the WAF, and is refused.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from rearview.api import snapstart
from rearview.api.routes import EDGE_ORIGIN_HEADER
from rearview.api.snapstart import AUTHORIZER_MODULES
from rearview.clock import SystemClock
from rearview.errors import Unauthorized
from rearview.service.access import AccessService
from rearview.settings import Settings

logger = Logger(service="rearview-authorizer")
# With SnapStart, the snapshot holds the composition root, the key store's modules and boto3 loaded; the client is
# built after a restore.
snapstart.register(lambda: snapstart.prime(AUTHORIZER_MODULES, optional=()))


@cache
def access_service() -> AccessService:
    """Built once per cold start, from the environment (REARVIEW_AWS__TABLE_NAME, REARVIEW_API_TOKEN)."""
    from rearview import bootstrap

    settings = Settings()
    return AccessService(bootstrap.build_dynamodb_key_store(settings), SystemClock(), admin_token=settings.api_token)


@cache
def origin_secret() -> str | None:
    """The value CloudFront sends in EDGE_ORIGIN_HEADER, read once per cold start; None when not configured."""
    from rearview import bootstrap

    return bootstrap.read_origin_secret(Settings())


def through_the_edge(event: Mapping[str, Any], secret: str | None) -> bool:
    """True unless an origin secret is configured and the event does not carry it (compared in constant time)."""
    if secret is None:
        return True
    sent = next((str(v) for k, v in (event.get("headers") or {}).items() if k.lower() == EDGE_ORIGIN_HEADER), "")
    return hmac.compare_digest(sent.encode("utf-8", "surrogatepass"), secret.encode("utf-8", "surrogatepass"))


def authorization_header(event: Mapping[str, Any]) -> str | None:
    """The credential: the identity source API Gateway extracted, else the Authorization header itself."""
    sources = event.get("identitySource") or []
    if sources and isinstance(sources[0], str) and sources[0]:
        return sources[0]
    for name, value in (event.get("headers") or {}).items():
        if name.lower() == "authorization":
            return str(value)
    return None


def authorize(event: Mapping[str, Any], access: AccessService, secret: str | None = None) -> dict[str, Any]:
    """The simple response for one authorizer event (`secret`: the origin secret the edge must have sent)."""
    if not through_the_edge(event, secret):
        logger.info("not authorized", extra={"reason": "not through the edge", "route": event.get("routeKey")})
        return {"isAuthorized": False}
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
    return authorize(event, access_service(), origin_secret())
