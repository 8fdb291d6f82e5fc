"""Sample events: the JSON files under events/ loaded by name, with a few overrides for the test at hand.

`load_event("memory_write", body={...})` reads events/http/memory_write.json and replaces its body; the
overrides keep the event self-consistent (rawPath and requestContext.http.path move together,
content-length follows the body), so a test drives the resolver exactly as API Gateway would.
"""

from __future__ import annotations

import base64
import copy
import json
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"

_UNSET: Any = object()


@cache
def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def event_names(kind: str = "http") -> list[str]:
    """Names of the sample events of one kind (the file names without `.json`)."""
    return sorted(p.stem for p in (EVENTS_DIR / kind).glob("*.json"))


def load_event(
    name: str,
    *,
    kind: str = "http",
    body: Any = _UNSET,
    raw_body: bytes | None = None,
    path: str | None = None,
    method: str | None = None,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    **top_level: Any,
) -> dict[str, Any]:
    """A fresh copy of events/<kind>/<name>.json with overrides applied.

    body: a JSON-able value (serialised), a str (sent as is), or None (no body). raw_body: bytes sent base64
    encoded, as API Gateway does for binary payloads. path, method, query and headers rewrite the request line
    and headers in every place API Gateway puts them; any other keyword replaces that top-level key.
    """
    event = copy.deepcopy(_read(EVENTS_DIR / kind / f"{name}.json"))
    if kind != "http":
        event.update(top_level)
        return event
    request_http = event["requestContext"]["http"]
    if path is not None:
        event["rawPath"] = path
        request_http["path"] = path
    if method is not None:
        request_http["method"] = method.upper()
    if query is not None:
        event["rawQueryString"] = urlencode(query)
        if query:
            event["queryStringParameters"] = dict(query)
        else:
            event.pop("queryStringParameters", None)
    if headers:
        event["headers"].update({k.lower(): v for k, v in headers.items()})
    if raw_body is not None:
        event["body"] = base64.b64encode(raw_body).decode("ascii")
        event["isBase64Encoded"] = True
        event["headers"]["content-length"] = str(len(raw_body))
    elif body is not _UNSET:
        if body is None:
            event.pop("body", None)
            event["headers"]["content-length"] = "0"
        else:
            text = body if isinstance(body, str) else json.dumps(body)
            event["body"] = text
            event["isBase64Encoded"] = False
            event["headers"].setdefault("content-type", "application/json")
            event["headers"]["content-length"] = str(len(text.encode("utf-8")))
    event.update(top_level)
    return event
