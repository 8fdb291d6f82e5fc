"""The local server: the Lambda route table (`rearview.api.routes`) behind a stdlib ThreadingHTTPServer.

Each HTTP request is turned into the API Gateway HTTP API (payload v2) event Lambda would receive,
resolved by the same resolver, and the resolver's response dict is written back. So a request behaves the
same on a laptop and on AWS.

Access control is the route table's (`rearview.api.routes`), the same as on Lambda: every request but the health
check and the API documents carries `Authorization: Bearer <API key>` (or the bootstrap admin token,
REARVIEW_API_TOKEN). One exception, for development: on a loopback address, with no API key in the data
directory and no REARVIEW_API_TOKEN, the server is open, and says so at start. The first key, created by
`rearview keys create` (even while the server runs; never over HTTP by an open server, where a page of another
site could create it), closes it. Binding any other address needs credentials to exist: an API key or the token.

`POST /mcp` is the MCP endpoint (rearview.api.mcp_http): the same keys, the same open mode.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import signal
import socket
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from aws_lambda_powertools.utilities.typing import LambdaContext

from rearview.api.browser_guard import BrowserGuard
from rearview.api.connections import ConnectionSlots, ConnectionWatchdog, linger_and_close
from rearview.api.http import RearviewResolver, create_resolver, decode_response_body
from rearview.api.http_errors import MAX_BODY_BYTES, payload_too_large
from rearview.api.http_manage import NEXT_CURSOR_HEADER
from rearview.api.mcp_http import MCP_PATH, McpHttpEndpoint, no_host_check
from rearview.api.routes import DOCS_PATH, OPENAPI_PATH, UI_PATH, match_api_route
from rearview.bootstrap import Services, build, keys_in_data_dir, local_consolidation, local_maintenance
from rearview.domain.transfer import NDJSON
from rearview.errors import ConfigurationError, RearviewError
from rearview.service.access import AccessGate
from rearview.settings import Settings

logger = logging.getLogger(__name__)

OPEN_MODE_BANNER = "auth: OPEN (no API keys configured; loopback only)"


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, api_token: str | None, *, keys_configured: bool = False) -> None:
    """Refuse to expose the API beyond this machine unless credentials exist (an API key or the admin token):
    auth is always enforced there, and with no credential at all nobody could use it but an attacker could
    try."""
    if not is_loopback(host) and not api_token and not keys_configured:
        raise ConfigurationError(
            f"host: refusing to listen on non-loopback address {host!r} without credentials; "
            "create an API key (`rearview keys create`) or set REARVIEW_API_TOKEN (or bind 127.0.0.1)",
            field="host",
        )


def auth_banner(gate: AccessGate) -> str:
    """One line for the start-up announcement: whether (and how) requests must authenticate."""
    if gate.is_open:
        return OPEN_MODE_BANNER
    token = "; the bootstrap admin token REARVIEW_API_TOKEN is accepted" if gate.access.has_admin_token else ""
    return f"auth: enforced (send 'Authorization: Bearer <API key>'; health and docs open{token})"


def build_event(
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes,
    source_ip: str,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The API Gateway HTTP API v2 event for one request (`target` is the request line's path and query)."""
    now = now or datetime.now(UTC)
    parts = urlsplit(target)
    raw_path = parts.path or "/"
    lowered = {k.lower(): v for k, v in headers.items()}
    query: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        # API Gateway joins repeated query parameters with commas.
        query[name] = f"{query[name]},{value}" if name in query else value
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": parts.query,
        "headers": lowered,
        "requestContext": {
            "accountId": "local",
            "apiId": "local",
            "domainName": lowered.get("host", "localhost"),
            "domainPrefix": lowered.get("host", "localhost").split(".")[0],
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


class _Handler(BaseHTTPRequestHandler):
    """Translates between HTTP and the resolver. One instance per request; `server` is the _Server below."""

    server: _Server
    server_version = "rearview"
    _cors: Mapping[str, str] = {}

    def setup(self) -> None:
        limits = self.server.owner.settings.server
        super().setup()
        # A socket timeout bounds each read; the watchdog bounds the headers and the body as a whole.
        self.connection.settimeout(limits.idle_timeout_seconds)
        self.server.watchdog.arm(self.connection, limits.header_timeout_seconds)

    def finish(self) -> None:
        self.server.watchdog.disarm(self.connection)
        super().finish()

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_OPTIONS(self) -> None:
        self._handle()

    def _handle(self) -> None:
        owner = self.server.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        # Host and Origin first, before a byte of the body is read: a page of another site gets nothing done.
        refused = owner.guard.refusal(self.command, headers)
        if refused is not None:
            self._send(refused)
            self._close_unread(self._declared_length(headers))
            return
        self._cors = owner.guard.cors_headers(headers)
        length = self._declared_length(headers)
        if length is None:
            return
        if length > MAX_BODY_BYTES:
            # An unauthenticated caller gets its 401, not news of the limit: the same order as the resolver's. The
            # answer goes out before the body is read; what the client still sends is dropped, never held.
            bodiless = build_event(self.command, self.path, headers, b"", self.client_address[0])
            self._send(owner.check_access(bodiless) or payload_too_large(length))
            self._close_unread(length)
            return
        self.server.watchdog.arm(self.connection, owner.settings.server.idle_timeout_seconds)
        try:
            body = self.rfile.read(length) if length else b""
        except OSError:
            body = b""
        self.server.watchdog.disarm(self.connection)
        if len(body) < length:
            self._send_json(408, {"error": "timeout", "message": "body: not received in time; send it whole"})
            self.close_connection = True
            return
        event = build_event(self.command, self.path, headers, body, self.client_address[0])
        if event["rawPath"] == MCP_PATH:
            self._send(owner.resolve_mcp(event))
            return
        response = owner.resolve(event)
        if is_export(event) and _next_cursor(response):
            self._stream_export(event, response)
            return
        self._send(response)

    def _stream_export(self, event: dict[str, Any], response: Mapping[str, Any]) -> None:
        """An export longer than one page, streamed: each page resolved in turn (the resolver's lock held for one
        page at a time) and written as it comes; the end of the body is the end of the connection."""
        self.send_response(200)
        self.send_header("Content-Type", str((response.get("headers") or {}).get("Content-Type", NDJSON)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        while True:
            self.wfile.write(decode_response_body(response))
            cursor = _next_cursor(response)
            if cursor is None:
                return
            query = {**(event.get("queryStringParameters") or {}), "cursor": cursor}
            event = {**event, "queryStringParameters": query, "rawQueryString": urlencode(query)}
            response = self.server.owner.resolve(event)
            if int(response.get("statusCode", 500)) != 200:
                logger.error("export stopped at cursor %s: status %s", cursor, response.get("statusCode"))
                return

    def _declared_length(self, headers: Mapping[str, str]) -> int | None:
        """The body's Content-Length; None (after answering 411 or 400) when there is no usable one."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._send_json(411, {"error": "length_required", "message": "request: send a Content-Length"})
            self._close_unread(None)
            return None
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self._send_json(400, {"error": "bad_request", "message": "content-length: must be a whole number"})
            self._close_unread(None)
            return None
        return length

    def _close_unread(self, length: int | None) -> None:
        """After an answer given without reading the body: close, letting the client read the answer first."""
        self.close_connection = True
        if length:
            linger_and_close(self.connection, at_most=length)

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        self._send(
            {
                "statusCode": status,
                "headers": {"Content-Type": "application/json"},
                "body": json.dumps(body),
                "isBase64Encoded": False,
            }
        )

    def _send(self, response: Mapping[str, Any]) -> None:
        payload = decode_response_body(response)
        self.send_response(int(response.get("statusCode", 200)))
        headers: dict[str, Any] = {**dict(response.get("headers") or {}), **self._cors}
        for name, values in (response.get("multiValueHeaders") or {}).items():
            headers[name] = values
        for name, value in headers.items():
            if name.lower() == "content-length":
                continue
            for item in value if isinstance(value, list) else [value]:
                self.send_header(name, str(item))
        for cookie in response.get("cookies") or []:
            self.send_header("Set-Cookie", str(cookie))
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        logger.info("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    """A thread per connection, at most `server.max_connections` at once: one more is answered 503 at once."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], owner: LocalServer) -> None:
        self.owner = owner
        limits = owner.settings.server
        self.slots = ConnectionSlots(limits.max_connections, limits.retry_after_seconds)
        self.watchdog = ConnectionWatchdog()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.take():
            self.slots.refuse(request, self.shutdown_request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.give_back()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.give_back()


class _Server6(_Server):
    address_family = socket.AF_INET6


class LocalServer:
    """The API on a local port. `port=0` picks a free port (see `.port`); use as a context manager or call
    `start()` / `shutdown()`; `serve_forever()` blocks."""

    def __init__(
        self,
        settings: Settings,
        services: Services | None = None,
        *,
        host: str | None = None,
        port: int | None = None,
    ) -> None:
        self.settings = settings
        self.host = host if host is not None else settings.host
        if services is None:
            # Checked before the embedder loads and the database opens (it opens no more than the keys table).
            check_bind(self.host, settings.api_token, keys_configured=keys_in_data_dir(settings))
        else:
            check_bind(self.host, settings.api_token, keys_configured=services.access.keys_exist())
        self._owns_services = services is None
        self.services = services if services is not None else build(settings)
        # Open mode is decided here (loopback, no token, no key) and re-checked by the gate on every request.
        self.gate = AccessGate(self.services.access, allow_open=is_loopback(self.host) and not settings.api_token)
        self.resolver: RearviewResolver = create_resolver(self.services, gate=self.gate)
        # Host and Origin, checked on every request (the API and /mcp alike) before anything else.
        self.guard = BrowserGuard.of(settings.server, self.host)
        # Powertools keeps the current event on the router class, so two requests must not resolve at once.
        self._resolve_lock = threading.Lock()
        server_class = _Server6 if ":" in self.host.strip("[]") else _Server
        bind_port = settings.port if port is None else port
        try:
            self._httpd = server_class((self.host.strip("[]"), bind_port), self)
        except BaseException:
            if self._owns_services:
                self.services.close()
            raise
        self._thread: threading.Thread | None = None
        self._closed = False
        # The MCP endpoint (POST /mcp) is built on its first request: it imports the mcp SDK and starts an event loop.
        self._mcp: McpHttpEndpoint | None = None
        self._mcp_lock = threading.Lock()

    @property
    def port(self) -> int:
        """The bound port (the real one when constructed with port 0)."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = self.host.strip("[]")
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    def resolve(self, event: dict[str, Any]) -> dict[str, Any]:
        """Resolve one API Gateway v2 event, as Lambda would."""
        with self._resolve_lock:
            return self.resolver.resolve(event, local_context(event["requestContext"]["requestId"]))

    def resolve_mcp(self, event: dict[str, Any]) -> dict[str, Any]:
        """Answer one `/mcp` event with the MCP endpoint (Streamable HTTP, stateless, JSON responses)."""
        try:
            with self._mcp_lock:
                if self._mcp is None:
                    # Host and Origin are the guard's (`self.guard`), for /mcp as for the API: one rule, one place.
                    self._mcp = McpHttpEndpoint(self.services, self.gate, transport_security=no_host_check())
            return self._mcp.handle(event)
        except RearviewError as exc:
            return {
                "statusCode": exc.status,
                "headers": {"Content-Type": "application/json"},
                "body": json.dumps(exc.to_dict()),
                "isBase64Encoded": False,
            }

    def check_access(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The route table's 401/403 for this event, or None if it may proceed."""
        with self._resolve_lock:
            denied = self.resolver.check_access(event)
            self.resolver.clear_context()
            return denied

    def announce(self) -> None:
        print(f"Rearview listening on {self.url}")
        print(f"  API docs:  {self.url}{DOCS_PATH}")
        print(f"  OpenAPI:   {self.url}{OPENAPI_PATH}")
        print(f"  Inspector: {self.url}{UI_PATH}")
        print(f"  {auth_banner(self.gate)}", flush=True)

    def serve_forever(self, ready: threading.Event | None = None, *, announce: bool = True) -> None:
        """Serve until `shutdown()` is called from another thread."""
        if announce:
            self.announce()
        if ready is not None:
            ready.set()
        self._httpd.watchdog.start()
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        finally:
            self._httpd.watchdog.stop()

    def start(self, *, announce: bool = False) -> LocalServer:
        """Serve in a background thread and return at once."""
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self.serve_forever,
            args=(ready,),
            kwargs={"announce": announce},
            name="rearview-http",
            daemon=True,
        )
        self._thread.start()
        ready.wait()
        return self

    def shutdown(self) -> None:
        """Stop serving, release the port, and close the services this server built."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()
        if self._mcp is not None:
            self._mcp.close()
        if self._owns_services:
            self.services.close()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def is_export(event: Mapping[str, Any]) -> bool:
    """True for a request to the export route."""
    matched = match_api_route(str(event["requestContext"]["http"]["method"]), str(event["rawPath"]))
    return matched is not None and matched[0].operation == "export_memories"


def _next_cursor(response: Mapping[str, Any]) -> str | None:
    if int(response.get("statusCode", 500)) != 200:
        return None
    headers = {str(k).lower(): v for k, v in (response.get("headers") or {}).items()}
    cursor = headers.get(NEXT_CURSOR_HEADER.lower())
    return str(cursor) if cursor else None


def local_context(request_id: str) -> LambdaContext:
    """A LambdaContext carrying what Powertools and loggers read, for requests that never saw Lambda."""
    context = LambdaContext()
    context._function_name = "rearview-local"
    context._function_version = "$LATEST"
    context._invoked_function_arn = "arn:aws:lambda:local:000000000000:function:rearview-local"
    context._memory_limit_in_mb = 0
    context._aws_request_id = request_id
    context._log_group_name = "local"
    context._log_stream_name = "local"
    return context


def serve(settings: Settings, services: Services | None = None, ready: threading.Event | None = None) -> None:
    """Run the local server in the foreground until Ctrl-C (or SIGTERM), with the consolidation worker when
    `settings.hindsight.worker` is on and the retention timers (`settings.retention`), then shut down cleanly."""
    server = LocalServer(settings, services)
    restore = None
    if threading.current_thread() is threading.main_thread():
        # `docker stop` and process managers send SIGTERM: treat it like Ctrl-C so the database closes.
        restore = signal.signal(signal.SIGTERM, _interrupt)
    try:
        # The consolidation worker stops before the server closes the services it built.
        with local_consolidation(server.services), local_maintenance(server.services):
            server.serve_forever(ready)
    except KeyboardInterrupt:
        print("\nRearview: shutting down", flush=True)
    finally:
        # serve_forever ran in this thread and has returned: only the socket and the services remain to close.
        server.shutdown()
        if restore is not None:
            signal.signal(signal.SIGTERM, restore)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
