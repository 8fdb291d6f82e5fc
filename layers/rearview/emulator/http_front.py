"""The HTTP API (API Gateway v2) in front of the functions: a request matches one of the template's routes, its
authorizer runs first (simple responses, its answer cached per identity for the authorizer's TTL), and the
route's function gets the payload 2.0 event API Gateway would send; its response is written back.

What API Gateway answers itself is answered the same way: 404 `{"message":"Not Found"}` for no route, 401
`{"message":"Unauthorized"}` without the identity header, 403 `{"message":"Forbidden"}` when the authorizer says
no, 500 `{"message":"Internal Server Error"}` when a function fails, 503 `{"message":"Service Unavailable"}`
past the integration timeout (30 s), 413 past the payload limit (10 MB).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from rearview.emulator.containers import FunctionError
from rearview.emulator.template import ACCOUNT, REGION, Authorizer, Route

logger = logging.getLogger(__name__)

API_ID = "emulated"
INTEGRATION_TIMEOUT_SECONDS = 30.0
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024
_PARAMETER = re.compile(r"\{([^}]+)\}")

# function logical id, event, timeout -> the handler's result (FunctionError when it fails).
Invoke = Callable[[str, dict[str, Any], float], Any]


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes


def _gateway(status: int, message: str) -> HttpResponse:
    return HttpResponse(status, {"content-type": "application/json"}, json.dumps({"message": message}).encode())


class _CompiledRoute:
    def __init__(self, route: Route) -> None:
        self.route = route
        pattern = ""
        for piece in re.split(r"(\{[^}]+\})", route.path):
            match = _PARAMETER.fullmatch(piece)
            if match is None:
                pattern += re.escape(piece)
            elif match.group(1).endswith("+"):
                pattern += f"(?P<{_group(match.group(1)[:-1])}>.+)"
            else:
                pattern += f"(?P<{_group(match.group(1))}>[^/]+)"
        self.names = {_group(n.rstrip("+")): n.rstrip("+") for n in _PARAMETER.findall(route.path)}
        # As API Gateway: a request with a trailing slash reaches the route without it (its raw path kept).
        self.regex = re.compile(pattern + ("/?$" if not pattern.endswith("/") else "$"))

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if self.route.method not in (method, "ANY"):
            return None
        found = self.regex.match(path)
        if found is None:
            return None
        return {self.names[k]: unquote(v) for k, v in found.groupdict().items()}


def _group(name: str) -> str:
    return re.sub(r"\W", "_", name)


class ApiGateway:
    """Routes, authorizers and the event mapping; `handle` answers one request."""

    def __init__(self, routes: list[Route], authorizers: Mapping[str, Authorizer], invoke: Invoke) -> None:
        # Literal routes before parameterised ones, longer before shorter: API Gateway's "most specific" match.
        ordered = sorted(routes, key=lambda r: (r.path.count("{"), -len(r.path)))
        self._routes = [_CompiledRoute(r) for r in ordered]
        self._authorizers = dict(authorizers)
        self._invoke = invoke
        self._cache: dict[tuple[str, str], tuple[float, dict[str, Any] | None]] = {}
        self._cache_lock = threading.Lock()

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes, source_ip: str) -> HttpResponse:
        if len(body) > MAX_PAYLOAD_BYTES:
            return _gateway(413, "Request Entity Too Large")
        split = urlsplit(target)
        path = split.path or "/"
        for compiled in self._routes:
            parameters = compiled.match(method, path)
            if parameters is not None:
                break
        else:
            return _gateway(404, "Not Found")
        route = compiled.route
        event = _event(route, method, path, split.query, headers, body, source_ip, parameters)
        if route.authorizer is not None:
            decision = self._authorize(self._authorizers[route.authorizer], event)
            if isinstance(decision, HttpResponse):
                return decision
            event["requestContext"]["authorizer"] = {"lambda": decision}
        try:
            result = self._invoke(route.function, event, INTEGRATION_TIMEOUT_SECONDS)
        except FunctionError as exc:
            logger.warning("%s failed: %s", route.key, exc)
            if exc.error_type == "Sandbox.Timedout":
                return _gateway(503, "Service Unavailable")
            return _gateway(500, "Internal Server Error")
        return _response(result)

    def _authorize(self, authorizer: Authorizer, event: dict[str, Any]) -> dict[str, Any] | HttpResponse:
        """The authorizer's context for the request, or the gateway's 401/403."""
        identity = [_identity(source, event) for source in authorizer.identity_source]
        if any(value is None for value in identity):
            return _gateway(401, "Unauthorized")
        cache_key = (authorizer.logical_id, "\x00".join(str(v) for v in identity))
        now = time.monotonic()
        with self._cache_lock:
            cached = self._cache.get(cache_key)
        if cached is not None and cached[0] > now:
            context = cached[1]
        else:
            context = self._ask(authorizer, event, [str(v) for v in identity])
            if authorizer.ttl_seconds > 0:
                with self._cache_lock:
                    self._cache[cache_key] = (now + authorizer.ttl_seconds, context)
        return _gateway(403, "Forbidden") if context is None else context

    def _ask(self, authorizer: Authorizer, event: dict[str, Any], identity: list[str]) -> dict[str, Any] | None:
        request = {
            "version": "2.0",
            "type": "REQUEST",
            "routeArn": f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{API_ID}/$default/"
            f"{event['requestContext']['http']['method']}{event['rawPath']}",
            "identitySource": identity,
            **{k: v for k, v in event.items() if k not in ("version", "body", "isBase64Encoded")},
        }
        try:
            answer = self._invoke(authorizer.function, request, INTEGRATION_TIMEOUT_SECONDS)
        except FunctionError as exc:
            logger.warning("the authorizer failed: %s", exc)
            return None
        if not isinstance(answer, dict) or not answer.get("isAuthorized"):
            return None
        return dict(answer.get("context") or {})


def _identity(source: str, event: dict[str, Any]) -> str | None:
    """The value of an identity source such as `$request.header.Authorization`."""
    prefix = "$request.header."
    if source.startswith(prefix):
        return event["headers"].get(source[len(prefix) :].lower())
    prefix = "$request.querystring."
    if source.startswith(prefix):
        return (event.get("queryStringParameters") or {}).get(source[len(prefix) :])
    return None


def _event(
    route: Route,
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    source_ip: str,
    parameters: dict[str, str],
) -> dict[str, Any]:
    """The payload 2.0 event API Gateway sends the integration."""
    lowered: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        lowered[key] = f"{lowered[key]},{value}" if key in lowered else value
    cookies = [c.strip() for c in lowered.pop("cookie", "").split(";") if c.strip()]
    now = datetime.now(UTC)
    text_body = _is_text(lowered.get("content-type", ""))
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route.key,
        "rawPath": path,
        "rawQueryString": query,
        "headers": lowered,
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": API_ID,
            "domainName": lowered.get("host", "localhost"),
            "domainPrefix": lowered.get("host", "localhost").split(".")[0],
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": base64.urlsafe_b64encode(uuid.uuid4().bytes[:10]).decode().rstrip("="),
            "routeKey": route.key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": not text_body,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        merged: dict[str, str] = {}
        for key, value in pairs:
            merged[key] = f"{merged[key]},{value}" if key in merged else value
        event["queryStringParameters"] = merged
    if parameters:
        event["pathParameters"] = parameters
    if body:
        event["body"] = body.decode("utf-8", errors="replace") if text_body else base64.b64encode(body).decode()
    return event


def _is_text(content_type: str) -> bool:
    kind = content_type.split(";")[0].strip().lower()
    return not kind or kind.startswith("text/") or kind.endswith(("json", "xml", "x-www-form-urlencoded"))


def _response(result: Any) -> HttpResponse:
    """A payload 2.0 response: a dict with `statusCode` as given, anything else as a 200 JSON body."""
    if not isinstance(result, dict) or "statusCode" not in result:
        return HttpResponse(200, {"content-type": "application/json"}, json.dumps(result).encode())
    headers = {str(k).lower(): str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[str(name).lower()] = ",".join(str(v) for v in values)
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
    if result.get("cookies"):
        headers["set-cookie"] = "; ".join(result["cookies"])
    return HttpResponse(int(result["statusCode"]), headers, body)


class GatewayServer(ThreadingHTTPServer):
    """The front's HTTP server: every method goes to `ApiGateway.handle`."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], gateway: ApiGateway) -> None:
        self.gateway = gateway
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: GatewayServer
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_PAYLOAD_BYTES:
            self._write(_gateway(413, "Request Entity Too Large"), close=True)
            return
        body = self.rfile.read(length) if length else b""
        response = self.server.gateway.handle(
            self.command, self.path, dict(self.headers.items()), body, self.client_address[0]
        )
        self._write(response)

    def _write(self, response: HttpResponse, *, close: bool = False) -> None:
        self.send_response(response.status)
        for name, value in response.headers.items():
            if name not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("content-length", str(len(response.body)))
        self.send_header("apigw-requestid", uuid.uuid4().hex[:16])
        if close:
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        logger.debug("%s - %s", self.address_string(), format % args)
