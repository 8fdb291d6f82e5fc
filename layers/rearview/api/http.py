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
from http import HTTPStatus
from typing import Annotated, Any, Literal
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from rearview import __version__
from rearview.bootstrap import Services
from rearview.errors import NotFound, RearviewError
from rearview.model import (
    BatchResult,
    BatchWrite,
    ConsolidateRequest,
    ConsolidateResult,
    Episode,
    Fact,
    ForgetReceipt,
    ForgetRequest,
    MemoryWrite,
    RecallQuery,
    RecallResponse,
    Stats,
    WorkingEntry,
    WorkingView,
    WorkingWrite,
    WriteResult,
    validate_namespace,
)

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

# The route table: (method, path). The resolver registers the same paths below; this copy lets the 404
# handler tell "no such path" (404) from "no such method on this path" (405).
ROUTES: tuple[tuple[str, str], ...] = (
    ("GET", HEALTH_PATH),
    ("PUT", "/v1/namespaces/<ns>/sessions/<sid>/working/<key>"),
    ("GET", "/v1/namespaces/<ns>/sessions/<sid>/working"),
    ("DELETE", "/v1/namespaces/<ns>/sessions/<sid>/working"),
    ("POST", "/v1/namespaces/<ns>/memories"),
    ("POST", "/v1/namespaces/<ns>/memories/batch"),
    ("GET", "/v1/namespaces/<ns>/memories/<id>"),
    ("DELETE", "/v1/namespaces/<ns>/memories/<id>"),
    ("POST", "/v1/namespaces/<ns>/recall"),
    ("POST", "/v1/namespaces/<ns>/forget"),
    ("POST", "/v1/namespaces/<ns>/consolidate"),
    ("GET", "/v1/namespaces/<ns>/stats"),
    ("GET", OPENAPI_PATH),
    ("GET", DOCS_PATH),
)

_ROUTE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (method, re.compile("^" + re.sub(r"<\w+>", "[^/]+", path) + "$")) for method, path in ROUTES
)


# --- response and error bodies ------------------------------------------------------------------------------


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    embedder: str
    dim: int


class Cleared(BaseModel):
    cleared: int = Field(description="How many working-memory keys were removed")


class ErrorBody(BaseModel):
    """Every error the API returns."""

    error: str = Field(description="A stable code: invalid_input, too_large, not_found, invalid_json, ...")
    message: str = Field(description="What was wrong, naming the field and the limit")
    field: str | None = Field(None, description="Dotted path of the offending field, when there is one")


StoredMemory = Annotated[Episode | Fact, Field(discriminator="layer")]

_ERROR_CODES = (
    (400, "Malformed JSON"),
    (404, "Not found"),
    (413, f"Body larger than {MAX_BODY_BYTES} bytes"),
    (422, "A field breaks a rule; `field` names it and the message gives the limit"),
    (500, "Internal error (details are logged, never returned)"),
)


def _responses(*success: tuple[int, str]) -> dict[int, OpenAPIResponse]:
    """A route's OpenAPI responses: its success codes (schema from the return annotation) and the errors."""
    json_type = content_types.APPLICATION_JSON
    documented: dict[int, OpenAPIResponse] = {
        code: {"description": desc, "content": {json_type: {"model": ErrorBody}}}
        for code, desc in _ERROR_CODES
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


_BRACKET_INDEX = re.compile(r"\[(\d+)\]")


def _dotted_prefix(message: str) -> str:
    """`items[3].content: must ...` -> `items.3.content: must ...` (only the path before the first colon)."""
    head, sep, rest = message.partition(": ")
    if not sep or " " in head:
        return message
    return _BRACKET_INDEX.sub(r".\1", head) + sep + rest


def _decoded(value: str) -> str:
    return unquote(value, errors="strict")


def _namespace(raw: str) -> str:
    """The URL-decoded namespace path segment (`acme%3Au-42` -> `acme:u-42`), validated."""
    return validate_namespace(_decoded(raw))


class _RearviewResolver(APIGatewayHttpResolver):
    """The resolver with a body-size guard in front: Powertools parses and validates the body before any
    middleware runs, so an oversized body has to be refused before routing."""

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        size = request_body_bytes(event)
        if size > MAX_BODY_BYTES:
            return payload_too_large(size)
        return super().resolve(event, context)


def create_resolver(services: Services) -> APIGatewayHttpResolver:
    """The API's routes over `services`; `.resolve(event, context)` takes an API Gateway HTTP API v2 event."""
    app = _RearviewResolver(enable_validation=True)
    app.enable_swagger(
        path=DOCS_PATH,
        title=API_TITLE,
        version=__version__,
        description=API_DESCRIPTION,
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
            title=API_TITLE, version=__version__, description=API_DESCRIPTION
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
        result = services.writer.write(_namespace(ns), item)
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
        return BatchResult(results=services.writer.write_batch(_namespace(ns), batch.items))

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

    # --- the one exception table ----------------------------------------------------------------------------

    @app.exception_handler(RearviewError)
    def domain_error(exc: RearviewError) -> Response[dict[str, str]]:
        body = exc.to_dict()
        # The services name batch items `items[3].content`; the API spells paths dotted: `items.3.content`.
        if "field" in body:
            body["field"] = _BRACKET_INDEX.sub(r".\1", body["field"])
        body["message"] = _dotted_prefix(body["message"])
        return Response(status_code=exc.status, content_type=content_types.APPLICATION_JSON, body=body)

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

    return app


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
