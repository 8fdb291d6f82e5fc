"""The HTTP API: the routes of `rearview.api.routes`, served by Lambda behind API Gateway (HTTP API, payload v2)
and by the local server.

`create_resolver` registers each route of the table with its function: the one made from the operation catalogue
(`rearview.api.http_handlers`), or the one HTTP shapes itself (`rearview.api.http_manage`); it refuses to start if
a route has no function or a function no route. The access
check in front of routing reads the same table; failures leave through `rearview.api.http_errors`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer, Tag
from aws_lambda_powertools.utilities.typing import LambdaContext

from rearview import __version__
from rearview.api.admission import admitted_principal, authorization_header
from rearview.api.http_errors import (
    MAX_BODY_BYTES,
    documented_responses,
    gateway_error,
    invalid_encoding,
    payload_too_large,
    register_error_handlers,
    unauthorized_response,
)
from rearview.api.http_handlers import route_function
from rearview.api.http_manage import shaped_routes
from rearview.api.request_checks import request_refusal
from rearview.api.resolver_threads import PerThreadRequests
from rearview.api.routes import API_ROUTES, DOCS_PATH, SWAGGER_UI_OPERATION, Route, route_permission
from rearview.bootstrap import Services
from rearview.domain.access import Principal
from rearview.domain.namespaces import Namespace, validate_namespace
from rearview.errors import ConfigurationError, RearviewError, Unauthorized
from rearview.operations.catalogue import OPERATIONS, TAGS
from rearview.service.access import AccessGate
from rearview.service.redaction import check_verbatim

API_TITLE = "Rearview"
API_DESCRIPTION = (
    "Long-term memory for LLM agents: working memory per session, episodic and semantic memories, "
    "hybrid recall, forgetting with cascade, and consolidation of episodes into facts."
)
# Where the resolver keeps the request's principal for the routes that need it (the key routes).
PRINCIPAL_CONTEXT_KEY = "principal"
# Where it keeps the request's namespace, validated by the access check, for the route functions.
NAMESPACE_CONTEXT_KEY = "namespace"
BEARER_SCHEME = "bearer"
SECURITY_SCHEMES: dict[str, Any] = {
    BEARER_SCHEME: HTTPBearer(
        bearerFormat="rv_<key id>_<secret>",
        description="An API key (`rearview keys create`), or the bootstrap admin token REARVIEW_API_TOKEN",
    )
}
_DOCUMENT: dict[str, Any] = {
    "title": API_TITLE,
    "version": __version__,
    "description": API_DESCRIPTION,
    "security_schemes": SECURITY_SCHEMES,
    "security": [{BEARER_SCHEME: []}],
    "tags": [Tag(name=name, description=description) for name, description in TAGS.items()],
}


def request_body_bytes(event: Mapping[str, Any]) -> int:
    """Size of the event's body once decoded, in bytes."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        # Exact without decoding: four base64 characters carry three bytes, minus the padding.
        stripped = body.rstrip("=")
        return len(stripped) * 3 // 4
    return len(body.encode("utf-8"))


def decode_response_body(response: Mapping[str, Any]) -> bytes:
    """The body of a resolver response as bytes (base64 undone)."""
    body = response.get("body") or ""
    if response.get("isBase64Encoded"):
        return base64.b64decode(body)
    return str(body).encode("utf-8")


def _refused_admission(exc: RearviewError, event: Mapping[str, Any]) -> dict[str, Any]:
    """A 401 with its challenge, or the error's own response with its headers (429 with Retry-After)."""
    if isinstance(exc, Unauthorized):
        return unauthorized_response(exc, bool(authorization_header(event)))
    return gateway_error(exc.status, exc.to_dict(), exc.headers())


class RearviewResolver(PerThreadRequests, APIGatewayHttpResolver):  # type: ignore[misc]
    """The resolver with the access check, a body-size guard and the body checks (`rearview.api.request_checks`:
    JSON content type, JSON the API can take) in front. Powertools parses and validates the body before any
    middleware runs, so all happen before routing, access first: an unauthenticated caller learns nothing about a
    request's shape, and a 403 does not depend on what the body holds. Many threads may resolve at once
    (`PerThreadRequests`: each its own request)."""

    def __init__(self, gate: AccessGate) -> None:
        super().__init__(enable_validation=True)
        self.gate = gate

    def check_access(self, event: Mapping[str, Any]) -> dict[str, Any] | None:
        """The 401/429/403 response for this event, or None when it may proceed (the principal then sits in
        `self.context["principal"]` until the end of `resolve`). A request is counted against its key's limit
        once authenticated, before its namespace and permission are checked: refused requests count too."""
        http = (event.get("requestContext") or {}).get("http") or {}
        method = str(http.get("method") or "GET")
        path = str(event.get("rawPath") or http.get("path") or "/")
        guard = route_permission(method, path)
        if guard is None:
            return None  # no such route: 404 or 405 follow
        permission, raw_namespace = guard
        if permission is None:
            return None  # a public route
        try:
            principal = admitted_principal(event, self.gate)
        except RearviewError as exc:  # Unauthorized (401), Throttled (429)
            return _refused_admission(exc, event)
        namespace: Namespace | None = None
        try:
            if raw_namespace is None:
                self.gate.access.require(principal, permission)
            else:
                try:
                    decoded = unquote(raw_namespace, errors="strict")
                except UnicodeDecodeError as exc:
                    return gateway_error(400, invalid_encoding(exc))
                # A malformed namespace exists nowhere, so saying so (422) tells nothing about any tenant. One that
                # holds a secret is refused too: a namespace is stored, listed and logged as given. The one check of
                # the request's namespace: the route functions take it from here.
                namespace = validate_namespace(decoded)
                check_verbatim(namespace, "namespace")
                self.gate.access.authorize(principal, namespace, permission)
        except RearviewError as exc:
            return gateway_error(exc.status, exc.to_dict())
        self.append_context(**{PRINCIPAL_CONTEXT_KEY: principal, NAMESPACE_CONTEXT_KEY: namespace})
        return None

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        self.begin(event, context)
        denied = self.check_access(event)
        if denied is not None:
            return denied
        size = request_body_bytes(event)
        refused = payload_too_large(size) if size > MAX_BODY_BYTES else request_refusal(event)
        if refused is not None:
            self.clear_context()
            return refused
        return super().resolve(event, context)

    def principal(self) -> Principal:
        """The principal of the request being resolved (set by check_access)."""
        principal = self.context.get(PRINCIPAL_CONTEXT_KEY)
        if not isinstance(principal, Principal):
            raise Unauthorized("authorization: no authenticated principal for this request")
        return principal

    def namespace(self) -> Namespace:
        """The namespace of the request being resolved (validated by check_access)."""
        namespace = self.context.get(NAMESPACE_CONTEXT_KEY)
        if not isinstance(namespace, Namespace):
            raise Unauthorized("authorization: no namespace was checked for this request")
        return namespace

    def openapi_document(self) -> str:
        """The API's OpenAPI document, as JSON."""
        return self.get_openapi_json_schema(**_DOCUMENT)

    def request_body(self) -> str:
        """The body of the request being resolved, decoded ("" when there is none)."""
        return self.current_event.decoded_body or ""


def create_resolver(services: Services, *, gate: AccessGate | None = None) -> RearviewResolver:
    """The API's routes over `services`; `.resolve(event, context)` takes an API Gateway HTTP API v2 event.

    Access is enforced unless `gate` says otherwise: the local server passes a gate that may be open (loopback,
    no keys); Lambda uses the default, which always authenticates.
    """
    app = RearviewResolver(gate or AccessGate(services.access))
    app.enable_swagger(path=DOCS_PATH, **_DOCUMENT)
    shaped = shaped_routes(services, app)
    functions = {op.name: route_function(op, services, app) for op in OPERATIONS if op.name not in shaped}
    _register_routes(app, {**functions, **shaped})
    register_error_handlers(app)
    _refuse_unlisted_routes(app)
    return app


def _register_routes(app: RearviewResolver, functions: Mapping[str, Callable[..., Any]]) -> None:
    """Register every route of the table with its function; fail at start-up, not in production, if a route has
    no function or a function no route."""
    unused = dict(functions)
    for route in API_ROUTES:
        if route.operation == SWAGGER_UI_OPERATION:
            continue  # enable_swagger registered it
        function = unused.pop(route.operation, None)
        if function is None:
            raise ConfigurationError(f"route {route.route_key}: no route function named {route.operation!r}")
        app.route(route.powertools_path, route.method, **_openapi_operation(route))(function)
    if unused:
        raise ConfigurationError(f"route functions without a route in API_ROUTES: {sorted(unused)}")


def _openapi_operation(route: Route) -> dict[str, Any]:
    if not route.documented:
        return {"include_in_schema": False}
    return {
        "summary": route.summary,
        "tags": [route.tag],
        "operation_id": route.operation,
        "responses": documented_responses(route.success),
    }


def _refuse_unlisted_routes(app: APIGatewayHttpResolver) -> None:
    """Fail at start-up if anything registered a route the table does not list, so no route goes unguarded."""
    registered = {(route.method, route.path) for route in (*app._static_routes, *app._dynamic_routes)}
    unlisted = sorted(registered - {(route.method, route.powertools_path) for route in API_ROUTES})
    if unlisted:
        raise ConfigurationError(f"routes missing from API_ROUTES: {unlisted}")
