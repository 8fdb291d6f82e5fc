"""The body checks before routing: JSON everywhere, JSON lines only where a route takes them."""

from __future__ import annotations

import json
from typing import Any

from rearview.api.request_checks import request_refusal


def _event(method: str, path: str, content_type: str | None, body: str) -> dict[str, Any]:
    headers = {"content-type": content_type} if content_type else {}
    return {
        "rawPath": path,
        "headers": headers,
        "body": body,
        "isBase64Encoded": False,
        "requestContext": {"http": {"method": method, "path": path}},
    }


def _lines(*items: object) -> str:
    return "\n".join(json.dumps(item) for item in items) + "\n"


def test_the_import_route_takes_json_lines() -> None:
    event = _event("POST", "/v1/namespaces/acme/import", "application/x-ndjson", _lines({"id": "a"}, {"id": "b"}))
    assert request_refusal(event) is None


def test_json_lines_elsewhere_are_refused_as_an_unsupported_type() -> None:
    event = _event("POST", "/v1/namespaces/acme/memories", "application/x-ndjson", _lines({"content": "x"}))
    refused = request_refusal(event)
    assert refused is not None and refused["statusCode"] == 415


def test_each_line_of_an_import_is_checked_as_json() -> None:
    body = _lines({"id": "a"}) + '{"id": "b", "n": NaN}\n'
    refused = request_refusal(_event("POST", "/v1/namespaces/acme/import", "application/x-ndjson", body))
    assert refused is not None and refused["statusCode"] in (400, 422)
    # A malformed line is the route's to name (items.<n>), after the checks of the well-formed ones.
    broken = _lines({"id": "a"}) + "{not json\n"
    assert request_refusal(_event("POST", "/v1/namespaces/acme/import", "application/x-ndjson", broken)) is None


def test_a_form_body_is_refused_on_the_import_route_too() -> None:
    refused = request_refusal(_event("POST", "/v1/namespaces/acme/import", "text/plain", "a=b"))
    assert refused is not None and refused["statusCode"] == 415
