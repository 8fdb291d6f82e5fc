"""The HTTP API: one route table, served by Lambda behind API Gateway (HTTP API, payload v2) and by the
local server.

Each route parses its request into a model (Powertools validates it against the OpenAPI schema),
calls one service, and returns a model. Every failure leaves as JSON `{error, message, field?}` through
the handlers at the bottom of `create_resolver`: domain errors by their status, validation errors as 422
naming the field and the limit, malformed JSON as 400, unknown routes as 404, a known path with the wrong
method as 405, and anything unexpected as a bare 500.
"""

# No `from __future__ import annotations` here: Powertools reads the route functions' annotations when
# they are registered and resolves string annotations against module globals only.

import base64
import json
import logging
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from http import HTTPStatus
from typing import Annotated, Any, Literal
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from rearview import __version__
from rearview.bootstrap import Services
from rearview.domain.access import KEY_ID_PATTERN, ApiKey, Principal
from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.forget import ForgetReceipt, ForgetRequest
from rearview.domain.memory import Episode, Fact
from rearview.domain.namespaces import validate_namespace
from rearview.domain.permissions import Permission
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.stats import Stats
from rearview.domain.timestamps import UtcDatetime
from rearview.domain.working import WorkingEntry, WorkingView, WorkingWrite
from rearview.domain.write import BatchResult, BatchWrite, MemoryWrite, WriteResult
from rearview.errors import ConfigurationError, NotFound, RearviewError, Unauthorized
from rearview.service.access import AccessGate

logger = logging.getLogger(__name__)

# Larger bodies are refused before parsing. The biggest legitimate request, a batch of 100 episodes of 2000
# characters with labels, stays far below it; API Gateway's own ceiling (10 MB) is much higher.
MAX_BODY_BYTES = 1024 * 1024

API_TITLE = "Rearview"
API_DESCRIPTION = (
    "Long-term memory for LLM agents: working memory per session, episodic and semantic memories, "
    "hybrid recall, forgetting with cascade, and consolidation of episodes into facts."
)
DOCS_PATH = "/docs"
OPENAPI_PATH = "/openapi.json"
HEALTH_PATH = "/v1/health"

KEYS_PATH = "/v1/keys"

# The route table: (method, path) -> the permission a caller needs, None for the public routes. A namespaced
# route is checked against its `<ns>` segment; the key routes need admin (and check scopes in the service).
# create_resolver refuses to start if it registers a route missing here, so no route can go unguarded; the
# 404 handler also uses the table to tell "no such path" (404) from "no such method on this path" (405).
ROUTE_PERMISSIONS: dict[tuple[str, str], Permission | None] = {
    ("GET", HEALTH_PATH): None,
    ("PUT", "/v1/namespaces/<ns>/sessions/<sid>/working/<key>"): Permission.WRITE,
    ("GET", "/v1/namespaces/<ns>/sessions/<sid>/working"): Permission.READ,
    ("DELETE", "/v1/namespaces/<ns>/sessions/<sid>/working"): Permission.FORGET,
    ("POST", "/v1/namespaces/<ns>/memories"): Permission.WRITE,
    ("POST", "/v1/namespaces/<ns>/memories/batch"): Permission.WRITE,
    ("GET", "/v1/namespaces/<ns>/memories/<id>"): Permission.READ,
    ("DELETE", "/v1/namespaces/<ns>/memories/<id>"): Permission.FORGET,
    ("POST", "/v1/namespaces/<ns>/recall"): Permission.READ,
    ("POST", "/v1/namespaces/<ns>/forget"): Permission.FORGET,
    ("POST", "/v1/namespaces/<ns>/consolidate"): Permission.CONSOLIDATE,
    ("GET", "/v1/namespaces/<ns>/stats"): Permission.READ,
    ("POST", KEYS_PATH): Permission.ADMIN,
    ("GET", KEYS_PATH): Permission.ADMIN,
    ("DELETE", KEYS_PATH + "/<key_id>"): Permission.ADMIN,
    ("GET", OPENAPI_PATH): None,
    ("GET", DOCS_PATH): None,
}
ROUTES: tuple[tuple[str, str], ...] = tuple(ROUTE_PERMISSIONS)


def _route_pattern(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"<(\w+)>", r"(?P<\1>[^/]+)", path) + "$")


_ROUTE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (method, _route_pattern(path)) for method, path in ROUTES
)
_GUARDS: tuple[tuple[str, re.Pattern[str], Permission | None], ...] = tuple(
    (method, _route_pattern(path), permission) for (method, path), permission in ROUTE_PERMISSIONS.items()
)
# Where the resolver keeps the request's principal for the routes that need it (the key routes).
PRINCIPAL_CONTEXT_KEY = "principal"
BEARER_SCHEME = "bearer"
SECURITY_SCHEMES: dict[str, Any] = {
    BEARER_SCHEME: HTTPBearer(
        bearerFormat="rv_<key id>_<secret>",
        description="An API key (`rearview keys create`), or the bootstrap admin token REARVIEW_API_TOKEN",
    )
}


# --- response and error bodies ------------------------------------------------------------------------------


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    embedder: str
    dim: int


class Cleared(BaseModel):
    cleared: int = Field(description="How many working-memory keys were removed")


class KeyCreate(BaseModel):
    """A new API key: its scope, its permissions, optionally an expiry and a note."""

    model_config = ConfigDict(extra="forbid")

    namespace: str = Field(
        max_length=300, description="The key's scope: this namespace and every namespace under it, e.g. `acme`"
    )
    permissions: list[Permission] = Field(
        min_length=1, max_length=len(Permission), description="Any of read, write, forget, consolidate, admin"
    )
    expires_at: UtcDatetime | None = Field(None, description="When the key stops working (UTC); default never")
    description: str | None = Field(None, max_length=200, description="A note for people: who or what uses the key")


class KeyInfo(BaseModel):
    """A key as listed: never its secret, never the secret's hash."""

    key_id: str
    namespace: str = Field(description="The key's scope")
    permissions: list[Permission]
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    description: str | None = None
    status: Literal["active", "revoked", "expired"]

    @classmethod
    def of(cls, key: ApiKey, now: datetime) -> "KeyInfo":
        if key.revoked_at is not None:
            status: Literal["active", "revoked", "expired"] = "revoked"
        elif key.expires_at is not None and now >= key.expires_at:
            status = "expired"
        else:
            status = "active"
        return cls(
            key_id=key.key_id,
            namespace=key.scope,
            permissions=list(key.permissions),
            created_at=key.created_at,
            expires_at=key.expires_at,
            revoked_at=key.revoked_at,
            description=key.description,
            status=status,
        )


class KeyCreated(KeyInfo):
    key: str = Field(description="The API key, `rv_<key id>_<secret>`: shown this once, never again")


class KeyList(BaseModel):
    keys: list[KeyInfo]


class ErrorBody(BaseModel):
    """Every error the API returns."""

    error: str = Field(
        description="A stable code: invalid_input, too_large, not_found, invalid_json, unauthorized, forbidden, ..."
    )
    message: str = Field(description="What was wrong, naming the field and the limit")
    field: str | None = Field(None, description="Dotted path of the offending field, when there is one")


StoredMemory = Annotated[Episode | Fact, Field(discriminator="layer")]

_ERROR_CODES = (
    (400, "Malformed JSON"),
    (401, "Missing, malformed, unknown, revoked or expired API key"),
    (403, "The API key's scope does not include the namespace, or it lacks the permission"),
    (404, "Not found"),
    (413, f"Body larger than {MAX_BODY_BYTES} bytes"),
    (422, "A field breaks a rule; `field` names it and the message gives the limit"),
    (500, "Internal error (details are logged, never returned)"),
)


def _responses(*success: tuple[int, str]) -> dict[int, OpenAPIResponse]:
    """A route's OpenAPI responses: its success codes (schema from the return annotation) and the errors."""
    json_type = content_types.APPLICATION_JSON
    documented: dict[int, OpenAPIResponse] = {
        code: {"description": desc, "content": {json_type: {"model": ErrorBody}}} for code, desc in _ERROR_CODES
    }
    for code, desc in success or ((200, "OK"),):
        documented[code] = {"description": desc}
    return documented


# Path parameters, URL-decoded by the routes (API Gateway and the local server pass the raw, encoded path).
NamespacePath = Annotated[
    str, Path(description="1 to 4 `:`-separated segments of `[A-Za-z0-9_.@-]{1,64}`, e.g. `acme:u-42`")
]
SessionPath = Annotated[str, Path(description="Session id: 1 to 128 characters of `A-Z a-z 0-9 _ . : @ -`")]
MemoryIdPath = Annotated[str, Path(description="The memory's id (as returned by a write)")]


def error_body(status: int, code: str, message: str, field: str | None = None) -> Response[dict[str, str]]:
    """A JSON error response in the API's one error shape."""
    body: dict[str, str] = {"error": code, "message": message}
    if field:
        body["field"] = field
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def request_body_bytes(event: Mapping[str, Any]) -> int:
    """Size of the event's body once decoded, in bytes."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        # Exact without decoding: four base64 characters carry three bytes, minus the padding.
        stripped = body.rstrip("=")
        return len(stripped) * 3 // 4
    return len(body.encode("utf-8"))


def payload_too_large(size: int) -> dict[str, Any]:
    """The API Gateway v2 response for a body over MAX_BODY_BYTES (also used by the local server)."""
    return {
        "statusCode": HTTPStatus.REQUEST_ENTITY_TOO_LARGE.value,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "cookies": [],
        "isBase64Encoded": False,
        "body": json.dumps(
            {
                "error": "too_large",
                "message": f"body: must be at most {MAX_BODY_BYTES} bytes (1 MiB) (got {size})",
                "field": "body",
            }
        ),
    }


def validation_error_body(exc: RequestValidationError) -> Response[dict[str, str]]:
    """Map Powertools' validation error: malformed JSON -> 400 invalid_json, the rest -> 422 invalid_input."""
    errors = list(exc.errors())
    for err in errors:
        if err.get("type") == "json_invalid":
            ctx = err.get("ctx") or {}
            loc: Sequence[Any] = err.get("loc") or ()
            where = f" at position {loc[1]}" if len(loc) > 1 else ""
            reason = ctx.get("error", "could not be parsed")
            return error_body(400, "invalid_json", f"body: malformed JSON ({reason}{where})", "body")
    parts: list[str] = []
    first_field: str | None = None
    for err in errors:
        field = _field_path(err.get("loc") or ())
        first_field = first_field or field
        parts.append(f"{field}: {_reason(err)}")
    message = "; ".join(parts) if parts else "request: invalid"
    return error_body(422, "invalid_input", message, first_field)


def _field_path(loc: Sequence[Any]) -> str:
    """`("body", "items", 3, "content")` -> `items.3.content`; a bare location (`("body",)`) stays."""
    parts = [str(p) for p in loc]
    if len(parts) > 1 and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def _reason(err: Mapping[str, Any]) -> str:
    msg = str(err.get("msg") or err.get("type") or "invalid")
    # Our own validators raise ValueError("must be at most 2000 characters ..."); pydantic prefixes it.
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    return msg


def _decoded(value: str) -> str:
    return unquote(value, errors="strict")


def _namespace(raw: str) -> str:
    """The URL-decoded namespace path segment (`acme%3Au-42` -> `acme:u-42`), validated."""
    return validate_namespace(_decoded(raw))


def _gateway_error(status: int, body: Mapping[str, str], headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An API Gateway v2 response in the API's one error shape, for answers given before routing."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON, **(headers or {})},
        "cookies": [],
        "isBase64Encoded": False,
        "body": json.dumps(dict(body)),
    }


def unauthorized_response(exc: Unauthorized, credential_sent: bool) -> dict[str, Any]:
    """401 with the RFC 6750 challenge (`error="invalid_token"` once a credential was sent)."""
    challenge = 'Bearer realm="rearview"' + (', error="invalid_token"' if credential_sent else "")
    return _gateway_error(401, exc.to_dict(), {"WWW-Authenticate": challenge})


def request_principal(event: Mapping[str, Any], gate: AccessGate) -> Principal:
    """Who sent the event: the Lambda authorizer's context when API Gateway ran one (on AWS), else the
    Authorization header checked against the key store (or the open mode of the local server)."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    context = authorizer.get("lambda") if isinstance(authorizer, Mapping) else None
    if isinstance(context, Mapping) and context:
        return Principal.from_authorizer_context(context)
    return gate.principal(_authorization_header(event))


def _authorization_header(event: Mapping[str, Any]) -> str | None:
    for name, value in (event.get("headers") or {}).items():
        if name.lower() == "authorization":
            return str(value)
    return None


def route_permission(method: str, path: str) -> tuple[Permission | None, str | None] | None:
    """(permission, raw `<ns>` segment) of the route a request goes to; None if no route matches."""
    for route_method, pattern, permission in _GUARDS:
        if route_method == method.upper():
            match = pattern.match(path)
            if match:
                return permission, match.groupdict().get("ns")
    return None


class _RearviewResolver(APIGatewayHttpResolver):
    """The resolver with the access check and a body-size guard in front. Powertools parses and validates the
    body before any middleware runs, so both happen before routing: an unauthenticated caller learns nothing
    about a request's shape, and a 403 does not depend on what the body holds."""

    def __init__(self, gate: AccessGate) -> None:
        super().__init__(enable_validation=True)
        self.gate = gate

    def check_access(self, event: Mapping[str, Any]) -> dict[str, Any] | None:
        """The 401/403 response for this event, or None when it may proceed (the principal then sits in
        `self.context["principal"]` until the end of `resolve`)."""
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
            principal = request_principal(event, self.gate)
        except Unauthorized as exc:
            return unauthorized_response(exc, bool(_authorization_header(event)))
        try:
            if raw_namespace is None:
                self.gate.access.require(principal, permission)
            else:
                try:
                    namespace = unquote(raw_namespace, errors="strict")
                except UnicodeDecodeError as exc:
                    return _gateway_error(
                        400, {"error": "invalid_encoding", "message": f"request: not valid UTF-8 ({exc.reason})"}
                    )
                # A malformed namespace exists nowhere, so saying so (422) tells nothing about any tenant.
                validate_namespace(namespace)
                self.gate.access.authorize(principal, namespace, permission)
        except RearviewError as exc:
            return _gateway_error(exc.status, exc.to_dict())
        self.append_context(**{PRINCIPAL_CONTEXT_KEY: principal})
        return None

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        denied = self.check_access(event)
        if denied is not None:
            return denied
        size = request_body_bytes(event)
        if size > MAX_BODY_BYTES:
            self.clear_context()
            return payload_too_large(size)
        return super().resolve(event, context)

    def principal(self) -> Principal:
        """The principal of the request being resolved (set by check_access)."""
        principal = self.context.get(PRINCIPAL_CONTEXT_KEY)
        if not isinstance(principal, Principal):
            raise Unauthorized("authorization: no authenticated principal for this request")
        return principal


def create_resolver(services: Services, *, gate: AccessGate | None = None) -> APIGatewayHttpResolver:
    """The API's routes over `services`; `.resolve(event, context)` takes an API Gateway HTTP API v2 event.

    Access is enforced unless `gate` says otherwise: the local server passes a gate that may be open (loopback,
    no keys); Lambda uses the default, which always authenticates.
    """
    app = _RearviewResolver(gate or AccessGate(services.access))
    app.enable_swagger(
        path=DOCS_PATH,
        title=API_TITLE,
        version=__version__,
        description=API_DESCRIPTION,
        security_schemes=SECURITY_SCHEMES,
        security=[{BEARER_SCHEME: []}],
    )

    # --- health and documents -------------------------------------------------------------------------------

    @app.get(
        HEALTH_PATH,
        summary="Liveness, version and the embedder in use",
        tags=["service"],
        responses=_responses(),
    )
    def health() -> Health:
        return Health(version=__version__, embedder=services.embedder.name, dim=services.embedder.dim)

    @app.get(OPENAPI_PATH, include_in_schema=False)
    def openapi_document() -> Response[str]:
        document = app.get_openapi_json_schema(
            title=API_TITLE,
            version=__version__,
            description=API_DESCRIPTION,
            security_schemes=SECURITY_SCHEMES,
            security=[{BEARER_SCHEME: []}],
        )
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=document)

    # --- working memory -------------------------------------------------------------------------------------

    @app.put(
        "/v1/namespaces/<ns>/sessions/<sid>/working/<key>",
        summary="Set one working-memory key of a session (the TTL restarts)",
        tags=["working memory"],
        responses=_responses(),
    )
    def put_working(
        ns: NamespacePath,
        sid: SessionPath,
        key: Annotated[str, Path(description="Up to 256 characters, no control characters or '/'")],
        write: Annotated[WorkingWrite, Body()],
    ) -> WorkingEntry:
        return services.working.put(_namespace(ns), _decoded(sid), _decoded(key), write)

    @app.get(
        "/v1/namespaces/<ns>/sessions/<sid>/working",
        summary="A session's unexpired working memory",
        tags=["working memory"],
        responses=_responses(),
    )
    def get_working(ns: NamespacePath, sid: SessionPath) -> WorkingView:
        return services.working.get(_namespace(ns), _decoded(sid))

    @app.delete(
        "/v1/namespaces/<ns>/sessions/<sid>/working",
        summary="Clear a session's working memory",
        tags=["working memory"],
        responses=_responses(),
    )
    def clear_working(ns: NamespacePath, sid: SessionPath) -> Cleared:
        return Cleared(cleared=services.working.clear(_namespace(ns), _decoded(sid)))

    # --- memories -------------------------------------------------------------------------------------------

    @app.post(
        "/v1/namespaces/<ns>/memories",
        summary="Write one memory: 201 when stored, 200 when merged, skipped or already written",
        tags=["memories"],
        responses=_responses(
            (201, "Stored"),
            (200, "Merged into a near-duplicate, skipped, or already written (same id)"),
            (202, "Accepted for asynchronous writing"),
        ),
    )
    def write_memory(ns: NamespacePath, item: Annotated[MemoryWrite, Body()]) -> Response[WriteResult]:
        result = services.submit(_namespace(ns), [item], field_prefix="")[0]
        return Response(
            status_code=_write_status(result),
            content_type=content_types.APPLICATION_JSON,
            body=result,
        )

    @app.post(
        "/v1/namespaces/<ns>/memories/batch",
        summary="Write up to 100 memories in one transaction (all or nothing)",
        tags=["memories"],
        responses=_responses(),
    )
    def write_batch(ns: NamespacePath, batch: Annotated[BatchWrite, Body()]) -> BatchResult:
        return BatchResult(results=services.submit(_namespace(ns), batch.items))

    @app.get(
        "/v1/namespaces/<ns>/memories/<id>",
        summary="One memory (episode or fact) by id",
        tags=["memories"],
        responses=_responses(),
    )
    def get_memory(ns: NamespacePath, id: MemoryIdPath) -> StoredMemory:
        namespace, memory_id = _namespace(ns), _decoded(id)
        memory = services.store.get(namespace, memory_id)
        if memory is None:
            raise NotFound(f"memory {memory_id!r} not found in namespace {namespace!r}", field="id")
        return memory

    @app.delete(
        "/v1/namespaces/<ns>/memories/<id>",
        summary="Forget one memory by id; with cascade, facts induced from it lose it (or go)",
        tags=["memories"],
        responses=_responses(),
    )
    def delete_memory(
        ns: NamespacePath,
        id: MemoryIdPath,
        cascade: Annotated[bool, Query(description="Also update or delete facts induced from it")] = True,
    ) -> ForgetReceipt:
        return services.forgetter.forget_one(_namespace(ns), _decoded(id), cascade)

    # --- the operations -------------------------------------------------------------------------------------

    @app.post(
        "/v1/namespaces/<ns>/recall",
        summary="Hybrid recall (keyword + vector, fused, decayed, collapsed, cut to a token budget)",
        tags=["operations"],
        responses=_responses(),
    )
    def recall(ns: NamespacePath, query: Annotated[RecallQuery, Body()]) -> RecallResponse:
        return services.recaller.recall(_namespace(ns), query)

    @app.post(
        "/v1/namespaces/<ns>/forget",
        summary="Forget by ids or by filter, with a receipt per layer",
        tags=["operations"],
        responses=_responses(),
    )
    def forget(ns: NamespacePath, request: Annotated[ForgetRequest, Body()]) -> ForgetReceipt:
        return services.forgetter.forget(_namespace(ns), request)

    @app.post(
        "/v1/namespaces/<ns>/consolidate",
        summary="Cluster unconsolidated episodes into facts (the body is optional)",
        tags=["operations"],
        responses=_responses(),
    )
    def consolidate(
        ns: NamespacePath, request: Annotated[ConsolidateRequest | None, Body()] = None
    ) -> ConsolidateResult:
        return services.consolidator.consolidate(_namespace(ns), request or ConsolidateRequest())

    @app.get(
        "/v1/namespaces/<ns>/stats",
        summary="Counts per layer, last write, recall hit rate",
        tags=["operations"],
        responses=_responses(),
    )
    def stats(ns: NamespacePath) -> Stats:
        return services.stats(_namespace(ns))

    # --- API keys (admin) ------------------------------------------------------------------------------------

    @app.post(
        KEYS_PATH,
        summary="Create an API key (within the caller's scope, with at most its permissions); shown once",
        tags=["keys"],
        responses=_responses((201, "Created: the response holds the key, which is never shown again")),
    )
    def create_key(request: Annotated[KeyCreate, Body()]) -> Response[KeyCreated]:
        key, plaintext = services.access.create_key_as(
            app.principal(), request.namespace, request.permissions, request.expires_at, request.description
        )
        info = KeyInfo.of(key, services.clock.now())
        return Response(
            status_code=HTTPStatus.CREATED.value,
            content_type=content_types.APPLICATION_JSON,
            body=KeyCreated(**info.model_dump(), key=plaintext),
            headers={"Cache-Control": "no-store"},
        )

    @app.get(
        KEYS_PATH,
        summary="The keys within the caller's scope (never secrets or their hashes)",
        tags=["keys"],
        responses=_responses(),
    )
    def list_keys() -> KeyList:
        now = services.clock.now()
        return KeyList(keys=[KeyInfo.of(key, now) for key in services.access.list_keys(app.principal().scope)])

    @app.delete(
        KEYS_PATH + "/<key_id>",
        summary="Revoke an API key, at once and for good",
        tags=["keys"],
        responses=_responses(),
    )
    def revoke_key(
        key_id: Annotated[str, Path(description=f"The key's id (`{KEY_ID_PATTERN}`), as listed")],
    ) -> KeyInfo:
        key = services.access.revoke_as(app.principal(), _decoded(key_id))
        return KeyInfo.of(key, services.clock.now())

    # --- the one exception table ----------------------------------------------------------------------------

    @app.exception_handler(RearviewError)
    def domain_error(exc: RearviewError) -> Response[dict[str, str]]:
        return Response(status_code=exc.status, content_type=content_types.APPLICATION_JSON, body=exc.to_dict())

    @app.exception_handler(RequestValidationError)
    def invalid_request(exc: RequestValidationError) -> Response[dict[str, str]]:
        if any(tuple(err.get("loc") or ())[:1] == ("response",) for err in exc.errors()):
            # Powertools reports a response that breaks its own schema this way too; that is our bug, not the
            # caller's, so it is a 500 like any other.
            return unexpected(exc)
        return validation_error_body(exc)

    @app.exception_handler(UnicodeDecodeError)
    def undecodable(exc: UnicodeDecodeError) -> Response[dict[str, str]]:
        # A path segment whose percent-escapes are not UTF-8, or a base64 body that is not text.
        return error_body(400, "invalid_encoding", f"request: not valid UTF-8 ({exc.reason})")

    @app.not_found
    def no_route(exc: NotFoundError) -> Response[dict[str, str]]:
        method = app.current_event.http_method.upper()
        path = app.current_event.path
        allowed = sorted({m for m, pattern in _ROUTE_PATTERNS if pattern.match(path)})
        if allowed:
            message = f"{method} {path}: method not allowed (allowed: {', '.join(allowed)})"
            response = error_body(405, "method_not_allowed", message)
            response.headers["Allow"] = ", ".join(allowed)
            return response
        return error_body(404, "not_found", f"{method} {path}: no such route")

    @app.exception_handler(Exception)
    def unexpected(exc: Exception) -> Response[dict[str, str]]:
        event = app.current_event
        logger.error("unhandled error in %s %s", event.http_method, event.path, exc_info=exc)
        return error_body(500, "internal", "internal error")

    _refuse_unguarded_routes(app)
    return app


def _refuse_unguarded_routes(app: APIGatewayHttpResolver) -> None:
    """Fail at start-up, not in production, if a registered route has no entry in ROUTE_PERMISSIONS."""
    registered = {(route.method, route.path) for route in (*app._static_routes, *app._dynamic_routes)}
    unguarded = sorted(registered - set(ROUTE_PERMISSIONS))
    if unguarded:
        raise ConfigurationError(f"routes without a permission in ROUTE_PERMISSIONS: {unguarded}")


def _write_status(result: WriteResult) -> int:
    if result.status == "accepted":
        return HTTPStatus.ACCEPTED.value
    if result.status == "stored" and result.reason is None:
        return HTTPStatus.CREATED.value
    return HTTPStatus.OK.value


def decode_response_body(response: Mapping[str, Any]) -> bytes:
    """The body of a resolver response as bytes (base64 undone)."""
    body = response.get("body") or ""
    if response.get("isBase64Encoded"):
        return base64.b64decode(body)
    return str(body).encode("utf-8")
