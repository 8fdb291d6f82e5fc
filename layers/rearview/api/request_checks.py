"""The checks every HTTP API request passes before routing, on Lambda and on the local server alike (the resolver
runs them): a body must be declared JSON (415), and must be JSON the API can take (400 malformed; 422 naming the
field for non-finite numbers, oversized integers, invalid Unicode and deep nesting; `rearview.domain.json_input`).

The content-type rule is also what keeps a web page of another site from writing: a browser sends a cross-site
POST without asking first (no CORS preflight) only with a form's or text's content type, never with JSON. So a
request that declares any other content type is refused, and so is one that carries a body without declaring one.
A request with neither (`POST .../sessions/s-1/end`, `DELETE ...`) passes: it carries nothing to misread.
The import route also takes ndjson (`application/x-ndjson`, a type a browser must ask about first as well), each
line checked as a JSON body.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from rearview.api.http_errors import gateway_error
from rearview.api.routes import match_api_route
from rearview.domain.json_input import parse_json_body
from rearview.errors import InvalidInput


def header(event: Mapping[str, Any], name: str) -> str | None:
    """A request header of a v2 event, by case-insensitive name."""
    for key, value in (event.get("headers") or {}).items():
        if str(key).lower() == name:
            return str(value)
    return None


def is_json_media_type(content_type: str) -> bool:
    """`application/json` or a `+json` type, with or without parameters (`; charset=utf-8`)."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


# The routes whose body may be JSON lines as well as JSON, and the media types that declare lines.
LINE_BODY_OPERATIONS = frozenset({"import_memories"})
LINE_MEDIA_TYPES = frozenset({"application/x-ndjson", "application/jsonl"})


def takes_lines(event: Mapping[str, Any]) -> bool:
    """Whether the request declares JSON lines for a route that takes them."""
    declared = (header(event, "content-type") or "").split(";", 1)[0].strip().lower()
    if declared not in LINE_MEDIA_TYPES:
        return False
    http = (event.get("requestContext") or {}).get("http") or {}
    matched = match_api_route(str(http.get("method", "")), str(event.get("rawPath", "")))
    return matched is not None and matched[0].operation in LINE_BODY_OPERATIONS


def unsupported_media_type(declared: str | None) -> dict[str, Any]:
    """The 415 of a body that is not declared JSON."""
    got = f"got {declared[:100]!r}" if declared else "none was sent"
    message = f"content-type: must be application/json ({got})"
    return gateway_error(
        HTTPStatus.UNSUPPORTED_MEDIA_TYPE.value,
        {"error": "unsupported_media_type", "message": message, "field": "content-type"},
    )


def content_type_refusal(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """415 when the request declares a content type other than JSON, or carries a body without declaring one."""
    declared = header(event, "content-type")
    if declared is not None and declared.strip():
        return None if is_json_media_type(declared) or takes_lines(event) else unsupported_media_type(declared)
    return unsupported_media_type(None) if event.get("body") else None


def _body_text(event: Mapping[str, Any]) -> str:
    body = str(event.get("body") or "")
    if event.get("isBase64Encoded"):
        return base64.b64decode(body, validate=True).decode("utf-8")
    return body


def json_body_refusal(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """400 for a body that is not UTF-8 JSON, 422 (naming the field) for JSON no field can take; None otherwise."""
    if not event.get("body"):
        return None
    try:
        text = _body_text(event)
        if takes_lines(event):
            _check_lines(text)
            return None
        parse_json_body(text)
    except InvalidInput as exc:
        return gateway_error(exc.status, exc.to_dict())
    except (UnicodeDecodeError, binascii.Error) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else "bad base64"
        return gateway_error(400, {"error": "invalid_encoding", "message": f"body: not valid UTF-8 ({reason})"})
    except json.JSONDecodeError as exc:
        message = f"body: malformed JSON ({exc.msg} at position {exc.pos})"
        return gateway_error(400, {"error": "invalid_json", "message": message, "field": "body"})
    return None


def _check_lines(text: str) -> None:
    """JSON lines: each well-formed line is held to the same checks as a JSON body; a malformed one is left to the
    route's parser, which names its line among the items."""
    for line in text.splitlines():
        if line.strip():
            try:
                parse_json_body(line)
            except json.JSONDecodeError:
                continue


def request_refusal(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first of the checks above that refuses the request, or None."""
    return content_type_refusal(event) or json_body_refusal(event)
