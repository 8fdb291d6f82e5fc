"""The local server's ASGI application: an HTTP request in, the API Gateway v2 event the resolver takes, the
resolver's response out (or, for `/mcp`, the MCP SDK's transport).

In order, for every request: a framing header sent twice is refused (400: two Hosts, Origins, Content-Types,
Content-Lengths, Transfer-Encodings or Authorizations leave which one counts to whoever reads it); the browser guard
(Host 421, Origin 403, CORS preflights); a chunked body (411: send a Content-Length); a body declared past the limit
(the caller's 401/403, else 413, before a byte of it is read); then the body, and the resolver on a worker thread.
An export longer than a page is streamed: the first page resolved as any request is (access checked and counted
once), the next ones read from the service until the cursor ends; a page that fails cuts the stream (a client sees
the body end before its last chunk, never a complete-looking answer).
"""

from __future__ import annotations

import base64
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from rearview.api.browser_guard import BrowserGuard
from rearview.api.http import decode_response_body
from rearview.api.http_errors import MAX_BODY_BYTES
from rearview.api.http_manage import NEXT_CURSOR_HEADER
from rearview.api.local_mcp import LocalMcp, v2_response
from rearview.api.mcp_http import MAX_MCP_BODY_BYTES, MCP_PATH
from rearview.api.request_log import log_request
from rearview.api.routes import match_api_route
from rearview.bootstrap import Services
from rearview.domain.access import Principal
from rearview.domain.transfer import NDJSON
from rearview.errors import RearviewError

logger = logging.getLogger(__name__)
T = TypeVar("T")
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

# Framing headers a request may carry once: with two, a proxy and this server could each believe another.
SINGLE_HEADERS = ("host", "origin", "content-type", "content-length", "transfer-encoding", "authorization")


class ServerSide(Protocol):
    """What the application asks of the server that runs it (`rearview.api.local_server.LocalServer`)."""

    guard: BrowserGuard
    services: Services

    async def off_loop(self, call: Callable[[], T], operation: str | None = None) -> T: ...

    def resolve(self, event: dict[str, Any]) -> dict[str, Any]: ...

    def too_large(self, event: dict[str, Any], length: int) -> dict[str, Any]: ...

    async def mcp(self) -> LocalMcp: ...

    async def stopping(self) -> None: ...


def build_event(
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes,
    source_ip: str,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The API Gateway HTTP API v2 event for one request (`target`: the request line's path, as sent, and query)."""
    now = now or datetime.now(UTC)
    parts = urlsplit(target)
    raw_path, query_string = parts.path or "/", parts.query
    lowered = {k.lower(): v for k, v in headers.items()}
    query: dict[str, str] = {}
    for name, value in parse_qsl(query_string, keep_blank_values=True):
        # API Gateway joins repeated query parameters with commas.
        query[name] = f"{query[name]},{value}" if name in query else value
    host = lowered.get("host", "localhost")
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": query_string,
        "headers": lowered,
        "requestContext": {
            "accountId": "local",
            "apiId": "local",
            "domainName": host,
            "domainPrefix": host.split(".")[0],
            "http": {
                "method": method.upper(),
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = query
    if "cookie" in lowered:
        event["cookies"] = [c.strip() for c in lowered["cookie"].split(";") if c.strip()]
    if body:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(body).decode("ascii")
            event["isBase64Encoded"] = True
    return event


def _refusal(status: int, error: str, message: str, field: str | None = None) -> dict[str, Any]:
    body = {"error": error, "message": message, **({"field": field} if field else {})}
    return v2_response(status, body)


def twice_sent(raw_headers: list[tuple[bytes, bytes]]) -> dict[str, Any] | None:
    """400 naming the first framing header the request carries more than once."""
    seen: set[bytes] = set()
    for name, _ in raw_headers:
        lowered = name.lower()
        if lowered in seen and lowered.decode("latin-1") in SINGLE_HEADERS:
            shown = lowered.decode("latin-1")
            return _refusal(400, "bad_request", f"{shown}: sent more than once; send it once", shown)
        seen.add(lowered)
    return None


async def read_body(receive: Receive) -> bytes | None:
    """The request's body; None if the client left (or was cut off by a deadline) before sending it whole."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(bytes(message.get("body") or b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _next_cursor(response: Mapping[str, Any]) -> str | None:
    if int(response.get("statusCode", 500)) != 200:
        return None
    headers = {str(k).lower(): v for k, v in (response.get("headers") or {}).items()}
    cursor = headers.get(NEXT_CURSOR_HEADER.lower())
    return str(cursor) if cursor else None


class _Request:
    """One HTTP request as the application reads it."""

    def __init__(self, scope: Mapping[str, Any]) -> None:
        self.scope = scope
        self.raw_headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or [])
        self.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in self.raw_headers}
        self.method = str(scope["method"]).upper()
        self.raw_path = bytes(scope.get("raw_path") or str(scope.get("path") or "/").encode()).decode("latin-1")
        self.query = bytes(scope.get("query_string") or b"").decode("latin-1")
        client = scope.get("client")
        self.source_ip = str(client[0]) if client else ""
        try:
            self.length = int(self.headers.get("content-length") or 0)
        except ValueError:
            self.length = -1

    def event(self, body: bytes = b"") -> dict[str, Any]:
        target = f"{self.raw_path}?{self.query}" if self.query else self.raw_path
        return build_event(self.method, target, self.headers, body, self.source_ip)

    @property
    def operation(self) -> str | None:
        matched = match_api_route(self.method, self.raw_path)
        return matched[0].operation if matched else None


class LocalApp:
    """The ASGI application of one local server."""

    def __init__(self, server: ServerSide) -> None:
        self.server = server

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        started, status = time.perf_counter(), 0

        async def sent(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        request = _Request(scope)
        try:
            await self._serve(request, receive, sent)
        finally:
            log_request(request.method, request.raw_path, status, time.perf_counter() - started)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.server.stopping()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _serve(self, request: _Request, receive: Receive, send: Send) -> None:
        refused = twice_sent(request.raw_headers) or self.server.guard.refusal(request.method, request.headers)
        if refused is not None:
            await respond(send, refused)
            return
        cors = self.server.guard.cors_headers(request.headers)
        early = self._early_refusal(request)
        if early is not None:
            await respond(send, early, cors)
            return
        if request.raw_path == MCP_PATH:
            await self._mcp(request, receive, send, cors)
            return
        if request.length > MAX_BODY_BYTES:
            bodiless = request.event()
            await respond(
                send, await self.server.off_loop(lambda: self.server.too_large(bodiless, request.length)), cors
            )
            return
        body = await read_body(receive)
        if body is None:
            return
        event = request.event(body)
        operation = request.operation
        response = await self.server.off_loop(lambda: self.server.resolve(event), operation)
        cursor = _next_cursor(response) if operation == "export_memories" else None
        if cursor is None:
            await respond(send, response, cors)
        else:
            await self._stream_export(request, response, cursor, send, cors)

    @staticmethod
    def _early_refusal(request: _Request) -> dict[str, Any] | None:
        if "chunked" in request.headers.get("transfer-encoding", "").lower():
            return _refusal(411, "length_required", "request: send a Content-Length")
        if request.length < 0:
            return _refusal(400, "bad_request", "content-length: must be a whole number", "content-length")
        return None

    async def _stream_export(
        self, request: _Request, first: Mapping[str, Any], cursor: str, send: Send, cors: Mapping[str, str]
    ) -> None:
        """An export past one page: the first page as resolved, then each next page from the service. The request
        was admitted (and counted) once; a page that fails ends the stream without its last chunk."""
        matched = match_api_route(request.method, request.raw_path)
        namespace = unquote(matched[1]["ns"] if matched else "", errors="strict")
        content_type = str((first.get("headers") or {}).get("Content-Type", NDJSON))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": _header_list({"Content-Type": content_type, **cors}),
            }
        )
        await send({"type": "http.response.body", "body": decode_response_body(first), "more_body": True})
        transfer = self.server.services.transfer
        next_cursor: str | None = cursor
        while next_cursor is not None:
            try:
                page = await self.server.off_loop(functools.partial(transfer.export_page, namespace, next_cursor))
            except Exception:
                logger.exception("export of a namespace stopped part-way: the response is cut short")
                raise
            await send({"type": "http.response.body", "body": page.body().encode("utf-8"), "more_body": True})
            next_cursor = page.next_cursor
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _mcp(self, request: _Request, receive: Receive, send: Send, cors: Mapping[str, str]) -> None:
        try:
            mcp = await self.server.mcp()
        except RearviewError as exc:
            await respond(send, v2_response(exc.status, exc.to_dict()), cors)
            return
        bodiless = request.event()
        admitted = await self.server.off_loop(lambda: mcp.admit(bodiless))
        if not isinstance(admitted, Principal):
            await respond(send, admitted, cors)
            return
        if request.length > MAX_MCP_BODY_BYTES:
            message = f"body: must be at most {MAX_MCP_BODY_BYTES} bytes (1 MiB) (got {request.length})"
            await respond(send, _refusal(413, "too_large", message, "body"), cors)
            return
        body = await read_body(receive)
        if body is None:
            return

        async def with_cors(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and cors:
                message = {**message, "headers": [*message.get("headers", []), *_header_list(cors)]}
            await send(message)

        refused = await mcp.answer(request.scope, admitted, body, with_cors)
        if refused is not None:
            await respond(send, refused, cors)


def _header_list(headers: Mapping[str, Any]) -> list[tuple[bytes, bytes]]:
    out: list[tuple[bytes, bytes]] = []
    for name, value in headers.items():
        if name.lower() == "content-length":
            continue
        for item in value if isinstance(value, list) else [value]:
            out.append((name.encode("latin-1"), str(item).encode("latin-1", "replace")))
    return out


async def respond(send: Send, response: Mapping[str, Any], cors: Mapping[str, str] | None = None) -> None:
    """Send a v2 response dict (the resolver's shape) as the ASGI response."""
    payload = decode_response_body(response)
    headers: dict[str, Any] = {**dict(response.get("headers") or {}), **(cors or {})}
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers[name] = values
    listed = _header_list(headers)
    listed += [(b"Set-Cookie", str(c).encode("latin-1", "replace")) for c in response.get("cookies") or []]
    listed.append((b"Content-Length", str(len(payload)).encode("ascii")))
    await send({"type": "http.response.start", "status": int(response.get("statusCode", 200)), "headers": listed})
    await send({"type": "http.response.body", "body": payload, "more_body": False})
