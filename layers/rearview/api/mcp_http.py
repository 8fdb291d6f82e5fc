"""`POST /mcp`: MCP over Streamable HTTP (stateless, JSON responses), for API Gateway HTTP API (v2) events.

The same endpoint serves the `mcp` Lambda function and `/mcp` on the local server (which turns every HTTP request
into the v2 event Lambda would get). The SDK's transport is an ASGI app, and neither Lambda nor the local
stdlib server is ASGI, so `McpHttpEndpoint` bridges: it turns the event into an ASGI request, runs it through the
SDK's `StreamableHTTPSessionManager` on an event loop of its own, and turns the ASGI response back into a v2
response.

- The session manager is started once (its `run()` holds the server's lifespan and a task group) on a background
  event-loop thread, and stopped by `close()`. Stateless mode gives every request a fresh transport, so nothing
  is kept between requests and any Lambda container can answer any call.
- Only POST is routed: GET (a server-sent event stream) and DELETE (session end) have no meaning without
  sessions, and answer 405 with `Allow: POST`.
- Auth happens here, before the SDK sees the request (rearview.api.admission, shared with the HTTP resolver):
  `Authorization: Bearer <API key>` through the AccessGate (open only in the local server's open mode), or the
  gateway authorizer's context on AWS, then the key's request limit (429 with Retry-After past it, as over HTTP;
  every JSON-RPC request counts as one). A missing or bad key answers 401 with an RFC 6750
  `WWW-Authenticate: Bearer` challenge. On AWS the `/mcp` route is behind the same gateway authorizer as the REST
  routes (an unauthenticated flood never starts this function), so there the gateway answers 401/403 without the
  challenge (infra/README.md explains the trade-off and the switch back). The principal travels in the ASGI scope
  to the tools (rearview.api.mcp.principal_from_scope), which check namespace and permission per call.
- Host check (DNS rebinding, 421): on a loopback bind the SDK only accepts loopback Host and Origin headers,
  which stops a web page from reaching a laptop's memory through a rebound DNS name. Elsewhere it is off: a
  non-loopback local bind always enforces keys, and behind API Gateway the Host is the API's own domain by
  construction (API Gateway routes nothing else to the function), so a fixed list could only break custom
  domains.

The mcp SDK is imported when the endpoint is built, not when this module is, so the Lambda handler and the local
server stay cheap to import (and work without the `mcp` extra until /mcp is called).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
from collections.abc import Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from rearview.api.admission import admitted_principal
from rearview.api.routes import MCP_ROUTE
from rearview.domain.access import Principal
from rearview.domain.json_input import parse_json_body
from rearview.errors import ConfigurationError, InvalidInput, RearviewError, Unauthorized
from rearview.service.access import AccessGate

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from rearview.api.lambda_runtime import FunctionRuntime, Handler
    from rearview.bootstrap import Services

logger = logging.getLogger(__name__)

MCP_PATH = MCP_ROUTE.path
# Larger JSON-RPC bodies are refused before auth-free parsing; a remember call with the longest content and every
# label is a few tens of kilobytes. The same ceiling as the HTTP API's.
MAX_MCP_BODY_BYTES = 1024 * 1024
# A tool call that has not answered by then is abandoned (API Gateway gives up after 30 s anyway).
DEFAULT_TIMEOUT_SECONDS = 28.0
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def loopback_transport_security(port: int | None = None) -> TransportSecuritySettings:
    """DNS-rebinding protection for a server bound to loopback: loopback Host and Origin headers only."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = [*_LOOPBACK_HOSTS, *(f"{h}:*" for h in _LOOPBACK_HOSTS)]
    origins = [*(f"http://{h}" for h in _LOOPBACK_HOSTS), *(f"http://{h}:*" for h in _LOOPBACK_HOSTS)]
    if port is not None:
        hosts.extend(f"{h}:{port}" for h in _LOOPBACK_HOSTS)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def no_host_check() -> TransportSecuritySettings:
    """No Host/Origin check (behind API Gateway, or a local bind that always enforces keys)."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _response(
    status: int, body: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "cookies": [],
        "isBase64Encoded": False,
        "body": json.dumps(dict(body)) if body is not None else "",
    }


def _header(event: Mapping[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if key.lower() == name:
            return str(value)
    return None


def unauthorized(exc: Unauthorized, credential_sent: bool) -> dict[str, Any]:
    """401 with the RFC 6750 challenge; `error="invalid_token"` only once a credential was sent (section 3.1)."""
    challenge = 'Bearer realm="rearview"'
    if credential_sent:
        # RFC 6750: error_description is printable ASCII without the double quote and the backslash.
        description = "".join(c for c in exc.message if " " <= c <= "~" and c not in '"\\')
        challenge += f', error="invalid_token", error_description="{description}"'
    return _response(401, exc.to_dict(), {"WWW-Authenticate": challenge})


def _event_body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return base64.b64decode(body)
    return str(body).encode("utf-8")


def _request_id(text: str) -> str | int | None:
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


def hostile_json_refusal(body: bytes) -> dict[str, Any] | None:
    """A JSON-RPC error (HTTP 400, -32602 invalid params) naming the argument, for a body the SDK's parser would
    refuse without saying which (a lone surrogate, an integer past 40 digits, nesting past the limit) or pass on
    (NaN, 1e999): the same checks and words as the HTTP API's (`rearview.domain.json_input`). None otherwise, and
    for malformed JSON, which the SDK answers itself."""
    try:
        text = body.decode("utf-8")
        parse_json_body(text, envelope=2)  # {params: {arguments: ...}}
    except InvalidInput as exc:
        message = exc.message.removeprefix("params.arguments.")
        error = {"code": -32602, "message": message}
        return _response(400, {"jsonrpc": "2.0", "id": _request_id(text), "error": error})
    except ValueError:
        return None
    return None


def admit(event: Mapping[str, Any], gate: AccessGate) -> Principal | dict[str, Any]:
    """The caller's principal, or the response that turns it away (a method other than POST, no valid key): the same
    for the `mcp` function and the local server's /mcp."""
    http = (event.get("requestContext") or {}).get("http") or {}
    method = str(http.get("method") or "").upper()
    if method != "POST":
        message = f"{method or '?'} {MCP_PATH}: method not allowed (allowed: POST; this server is stateless)"
        return _response(405, {"error": "method_not_allowed", "message": message}, {"Allow": "POST"})
    try:
        return admitted_principal(event, gate)
    except Unauthorized as exc:
        return unauthorized(exc, bool(_header(event, "authorization")))
    except RearviewError as exc:  # Throttled (429, Retry-After) among them
        return _response(exc.status, exc.to_dict(), exc.headers())


def asgi_scope(event: Mapping[str, Any], principal: Principal) -> dict[str, Any]:
    """The ASGI HTTP scope of a v2 event, with the authenticated principal in `state`."""
    from rearview.api.mcp import PRINCIPAL_STATE_KEY

    request_context = event.get("requestContext") or {}
    http = request_context.get("http") or {}
    headers = [
        (str(name).lower().encode("latin-1"), str(value).encode("latin-1", "replace"))
        for name, value in (event.get("headers") or {}).items()
    ]
    if event.get("cookies"):
        headers.append((b"cookie", "; ".join(event["cookies"]).encode("latin-1", "replace")))
    secure = _header(event, "x-forwarded-proto") != "http" and request_context.get("apiId") != "local"
    domain = str(request_context.get("domainName") or "localhost")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": str(http.get("method") or "POST").upper(),
        "scheme": "https" if secure else "http",
        # The SDK is called directly (not through a router), so the stage prefix, if any, does not matter.
        "path": MCP_PATH,
        "raw_path": MCP_PATH.encode(),
        "query_string": str(event.get("rawQueryString") or "").encode("latin-1", "replace"),
        "root_path": "",
        "headers": headers,
        "client": (str(http.get("sourceIp") or ""), 0),
        "server": (domain, 443 if secure else 80),
        "state": {PRINCIPAL_STATE_KEY: principal},
    }


class _Exchange:
    """One ASGI request/response: the body is offered once, the response is collected."""

    def __init__(self, body: bytes) -> None:
        self._body: bytes | None = body
        self._finished = asyncio.Event()
        self.status = 500
        self.headers: list[tuple[str, str]] = []
        self.chunks: list[bytes] = []

    async def receive(self) -> dict[str, Any]:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        # Nothing more to read: the client "disconnects" once the response is complete.
        await self._finished.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers") or ()]
        elif message["type"] == "http.response.body":
            self.chunks.append(bytes(message.get("body") or b""))
            if not message.get("more_body"):
                self._finished.set()

    def finish(self) -> None:
        self._finished.set()

    def response(self) -> dict[str, Any]:
        headers: dict[str, str] = {}
        cookies: list[str] = []
        for name, value in self.headers:
            if name.lower() == "set-cookie":
                cookies.append(value)
            elif name.lower() != "content-length":
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
        payload = b"".join(self.chunks)
        try:
            body, encoded = payload.decode("utf-8"), False
        except UnicodeDecodeError:
            body, encoded = base64.b64encode(payload).decode("ascii"), True
        return {
            "statusCode": self.status,
            "headers": headers,
            "cookies": cookies,
            "isBase64Encoded": encoded,
            "body": body,
        }


class McpHttpEndpoint:
    """The MCP server behind `POST /mcp`, answering API Gateway v2 events. Thread-safe; `close()` when done."""

    def __init__(
        self,
        services: Services,
        gate: AccessGate,
        *,
        transport_security: TransportSecuritySettings | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        try:
            from rearview.api.mcp import create_mcp_server, principal_from_scope
        except ImportError as exc:
            raise ConfigurationError(
                f"mcp: the MCP server needs the `mcp` extra (pip install 'rearview-memory[mcp]'): {exc}"
            ) from exc
        self.gate = gate
        self.timeout_seconds = timeout_seconds
        self.server: MCPServer = create_mcp_server(services, principal_from_scope)
        # Builds the session manager (the Starlette app it returns is not used: requests go to the manager).
        self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            max_request_body_size=MAX_MCP_BODY_BYTES,
            transport_security=transport_security or no_host_check(),
        )
        self.manager: StreamableHTTPSessionManager = self.server.session_manager
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._failure: BaseException | None = None
        self._closed = False

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> McpHttpEndpoint:
        """Start the session manager on its event-loop thread (once; later calls return at once)."""
        with self._start_lock:
            if self._closed:
                raise RuntimeError("the MCP endpoint is closed")
            if self._thread is not None:
                return self
            ready = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(ready,), name="rearview-mcp", daemon=True)
            self._thread.start()
            ready.wait()
            if self._failure is not None:
                raise RuntimeError("the MCP session manager did not start") from self._failure
        return self

    def _run(self, ready: threading.Event) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            async with self.manager.run():
                ready.set()
                await self._stop.wait()

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported to start(), or logged if the loop dies later
            self._failure = exc
            if ready.is_set():
                logger.exception("the MCP event loop stopped")
        finally:
            ready.set()

    def close(self) -> None:
        """Stop the session manager and its thread. Idempotent."""
        with self._start_lock:
            self._closed = True
            loop, stop, thread = self._loop, self._stop, self._thread
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        if thread is not None:
            thread.join(timeout=10)

    # --- requests -----------------------------------------------------------------------------------------------

    def handle(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """The v2 response to one `/mcp` event: 405 unless POST, 401 unless authenticated, 413 if too large,
        else the SDK's answer (JSON-RPC over JSON, or its own 4xx for a bad Accept, Content-Type or Host)."""
        admitted = self._admit(event)
        if not isinstance(admitted, Principal):
            return admitted
        body = _event_body(event)
        if len(body) > MAX_MCP_BODY_BYTES:
            message = f"body: must be at most {MAX_MCP_BODY_BYTES} bytes (1 MiB) (got {len(body)})"
            return _response(413, {"error": "too_large", "message": message, "field": "body"})
        return hostile_json_refusal(body) or self._answer(asgi_scope(event, admitted), body)

    def _admit(self, event: Mapping[str, Any]) -> Principal | dict[str, Any]:
        return admit(event, self.gate)

    def _answer(self, scope: dict[str, Any], body: bytes) -> dict[str, Any]:
        """The SDK's answer to one admitted request, from the endpoint's event loop (503 once it is shutting
        down, 504 past `timeout_seconds`)."""
        self.start()
        loop = self._loop
        if loop is None or loop.is_closed():
            return _response(503, {"error": "unavailable", "message": "the MCP endpoint is shutting down"})
        future = asyncio.run_coroutine_threadsafe(self._exchange(scope, body), loop)
        try:
            return future.result(timeout=self.timeout_seconds)
        except FutureTimeout:
            future.cancel()
            return _response(504, {"error": "timeout", "message": f"mcp: no answer within {self.timeout_seconds} s"})

    async def _exchange(self, scope: dict[str, Any], body: bytes) -> dict[str, Any]:
        exchange = _Exchange(body)
        try:
            await self.manager.handle_request(scope, exchange.receive, exchange.send)
        finally:
            exchange.finish()
        return exchange.response()


def mcp_lambda_handler(
    runtime: FunctionRuntime, *, transport_security: TransportSecuritySettings | None = None
) -> Handler:
    """The `mcp` function's handler: `POST /mcp` events answered by one McpHttpEndpoint per container.

    The services, the mcp SDK and the endpoint's event loop are set up on the first invocation, not at import.
    Auth is always enforced (never the open mode), from the Authorization header.
    """
    from rearview.api.lambda_runtime import count_by_version, metrics, traced
    from rearview.api.lambda_runtime import logger as fn_logger
    from rearview.api.snapstart import MCP_MODULES

    runtime.snapshot_modules.extend(MCP_MODULES)
    cached: list[McpHttpEndpoint] = []

    def endpoint() -> McpHttpEndpoint:
        if not cached:
            services = runtime.services()
            cached.append(McpHttpEndpoint(services, AccessGate(services.access), transport_security=transport_security))
        return cached[0]

    from aws_lambda_powertools.logging import correlation_paths

    @fn_logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
    @traced
    @metrics.log_metrics(capture_cold_start_metric=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        from aws_lambda_powertools.metrics import MetricUnit

        response = endpoint().handle(event)
        status = int(response.get("statusCode", 500))
        metrics.add_metric(name=f"Mcp{status // 100}xx", unit=MetricUnit.Count, value=1)
        count_by_version(context, status)
        return response

    return handler


__all__ = [
    "MAX_MCP_BODY_BYTES",
    "admit",
    "MCP_PATH",
    "McpHttpEndpoint",
    "asgi_scope",
    "loopback_transport_security",
    "mcp_lambda_handler",
    "no_host_check",
    "unauthorized",
]
