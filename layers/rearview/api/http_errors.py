"""The HTTP API's one error shape, `{error, message, field?}`, and the one exception table that produces it.

Domain errors leave with their own status, validation errors as 422 naming the field and the limit, malformed JSON
as 400, unknown routes as 404, a known path with the wrong method as 405, and anything unexpected as a bare 500.
Answers given before routing (401, 403, 413) are API Gateway v2 responses in the same shape.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel, Field

from rearview.api import field_errors
from rearview.api.routes import allowed_methods
from rearview.errors import RearviewError, Unauthorized

logger = logging.getLogger(__name__)

# Larger bodies are refused before parsing. The biggest legitimate request, a batch of 100 episodes of 2000
# characters with labels, stays far below it; API Gateway's own ceiling (10 MB) is much higher.
MAX_BODY_BYTES = 1024 * 1024


class ErrorBody(BaseModel):
    """Every error the API returns."""

    error: str = Field(
        description="A stable code: invalid_input, too_large, not_found, invalid_json, unauthorized, forbidden, ..."
    )
    message: str = Field(description="What was wrong, naming the field and the limit")
    field: str | None = Field(None, description="Dotted path of the offending field, when there is one")


_ERROR_CODES = (
    (400, "Malformed JSON"),
    (401, "Missing, malformed, unknown, revoked or expired API key"),
    (403, "The API key's scope does not include the namespace, or it lacks the permission"),
    (404, "Not found"),
    (409, "Conflict: a concurrent update (retry), or `consolidation_running` while another run holds the namespace"),
    (413, f"Body larger than {MAX_BODY_BYTES} bytes"),
    (422, "A field breaks a rule; `field` names it and the message gives the limit"),
    (429, "`throttled`: the API key made its limit of requests this minute; retry after `Retry-After` seconds"),
    (500, "Internal error (details are logged, never returned)"),
)


def documented_responses(success: Sequence[tuple[int, str]]) -> dict[int, OpenAPIResponse]:
    """A route's OpenAPI responses: its success codes (schema from the return annotation) and the errors."""
    json_type = content_types.APPLICATION_JSON
    documented: dict[int, OpenAPIResponse] = {
        code: {"description": desc, "content": {json_type: {"model": ErrorBody}}} for code, desc in _ERROR_CODES
    }
    for code, desc in success:
        documented[code] = {"description": desc}
    return documented


def error_body(status: int, code: str, message: str, field: str | None = None) -> Response[dict[str, str]]:
    """A JSON error response in the API's one error shape."""
    body: dict[str, str] = {"error": code, "message": message}
    if field:
        body["field"] = field
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def gateway_error(status: int, body: Mapping[str, str], headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An API Gateway v2 response in the API's one error shape, for answers given before routing."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON, **(headers or {})},
        "cookies": [],
        "isBase64Encoded": False,
        "body": json.dumps(dict(body)),
    }


def payload_too_large(size: int) -> dict[str, Any]:
    """The API Gateway v2 response for a body over MAX_BODY_BYTES (also used by the local server)."""
    message = f"body: must be at most {MAX_BODY_BYTES} bytes (1 MiB) (got {size})"
    return gateway_error(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE.value, {"error": "too_large", "message": message, "field": "body"}
    )


def unauthorized_response(exc: Unauthorized, credential_sent: bool) -> dict[str, Any]:
    """401 with the RFC 6750 challenge (`error="invalid_token"` once a credential was sent)."""
    challenge = 'Bearer realm="rearview"' + (', error="invalid_token"' if credential_sent else "")
    return gateway_error(401, exc.to_dict(), {"WWW-Authenticate": challenge})


def invalid_encoding(exc: UnicodeDecodeError) -> dict[str, str]:
    """The body of a 400 for a path segment whose percent-escapes are not UTF-8, or a base64 body not text."""
    return {"error": "invalid_encoding", "message": f"request: not valid UTF-8 ({exc.reason})"}


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
    message, field = field_errors.describe(errors, request_part_first=True)
    return error_body(422, "invalid_input", message or "request: invalid", field)


def register_error_handlers(app: APIGatewayHttpResolver) -> None:
    """The one exception table: every failure leaves `app` in the API's error shape."""

    @app.exception_handler(RearviewError)
    def domain_error(exc: RearviewError) -> Response[dict[str, str]]:
        return Response(
            status_code=exc.status,
            content_type=content_types.APPLICATION_JSON,
            body=exc.to_dict(),
            headers=exc.headers() or None,
        )

    @app.exception_handler(RequestValidationError)
    def invalid_request(exc: RequestValidationError) -> Response[dict[str, str]]:
        if any(tuple(err.get("loc") or ())[:1] == ("response",) for err in exc.errors()):
            # Powertools reports a response that breaks its own schema this way too; that is our bug, not the
            # caller's, so it is a 500 like any other.
            return unexpected(exc)
        return validation_error_body(exc)

    @app.exception_handler(UnicodeDecodeError)
    def undecodable(exc: UnicodeDecodeError) -> Response[dict[str, str]]:
        body = invalid_encoding(exc)
        return error_body(400, body["error"], body["message"])

    @app.not_found
    def no_route(exc: NotFoundError) -> Response[dict[str, str]]:
        method = app.current_event.http_method.upper()
        path = app.current_event.path
        allowed = allowed_methods(path)
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
