"""The local server: the Lambda route table (`rearview.api.routes`) served by uvicorn, an ASGI server, on this
machine.

Each HTTP request is turned into the API Gateway HTTP API (payload v2) event Lambda would receive, resolved by the
same resolver (`rearview.api.http`), and the resolver's response dict is written back. So a request behaves the
same on a laptop and on AWS. Requests are served concurrently: the event loop only moves bytes, each resolution runs
on a pool of worker threads (Powertools' per-request state is made per thread, `rearview.api.resolver_threads`), and
the heavy operations (an import, a batch write, consolidation, an erase) run at most HEAVY_AT_ONCE at a time, so a
1,000-memory import holds one worker, never the others' recalls.

Before anything of a request is resolved, in this order: the connection limits (`rearview.api.connections`: header
and body deadlines, a bounded number of connections, 503 beyond), a framing header sent twice (400), the browser
guard (`rearview.api.browser_guard`: Host 421, Origin 403, CORS), a chunked body (411), then, for a body declared
past the limit, the access check and 413 without reading it. The resolver then checks access, the JSON content type
(415) and the body, as on Lambda.

Access control is the route table's, the same as on Lambda: every request but the health check and the API
documents carries `Authorization: Bearer <API key>` (or the bootstrap admin token, REARVIEW_API_TOKEN). One
exception, for development: on a loopback address, with no API key in the data directory and no
REARVIEW_API_TOKEN, the server is open, and says so at start. The first key, created by `rearview keys create` (even
while the server runs; never over HTTP by an open server, where a page of another site could create it), closes
it. Binding any other address needs credentials to exist: an API key or the token.

`POST /mcp` is the MCP endpoint (`rearview.api.local_mcp`, the SDK's ASGI transport mounted here): the same keys,
the same open mode. The log says what was asked and how it went (`<method> <route template> <status>`), never a
request's path values, query string, body or key (`rearview.api.request_log`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import signal
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import uvicorn
from aws_lambda_powertools.utilities.typing import LambdaContext

from rearview.api.browser_guard import BrowserGuard
from rearview.api.connections import GuardedH11Protocol
from rearview.api.http import RearviewResolver, create_resolver
from rearview.api.http_errors import payload_too_large
from rearview.api.local_asgi import LocalApp, build_event
from rearview.api.local_mcp import LocalMcp
from rearview.api.request_log import quiet_request_content
from rearview.api.routes import API_ROUTES, DOCS_PATH, OPENAPI_PATH, UI_PATH, match_api_route
from rearview.bootstrap import Services, build, keys_in_data_dir, local_consolidation, local_maintenance
from rearview.errors import ConfigurationError
from rearview.service.access import AccessGate
from rearview.settings import Settings

logger = logging.getLogger(__name__)
T = TypeVar("T")

OPEN_MODE_BANNER = "auth: OPEN (no API keys configured; loopback only)"
# Threads resolving requests at once. A request blocks on SQLite or the embedder, rarely on Python alone; enough for
# an agent, its MCP client and a browser tab while an import runs, few enough not to thrash two cores.
WORKER_THREADS = 16
# The operations that embed or write much in one request: at most this many at once, each on one worker, so they
# share the machine with every other request instead of taking it.
HEAVY_OPERATIONS = frozenset({"import_memories", "write_batch", "consolidate", "erase_namespace"})
HEAVY_AT_ONCE = 1
# Connections the kernel queues before uvicorn accepts them: a burst is answered (503 past max_connections), not
# reset.
LISTEN_BACKLOG = 1024
_SHUTDOWN_GRACE_SECONDS = 5


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


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, saying when it listens, and stopping as soon as `stop()` is called from another thread
    (uvicorn's own loop looks at `should_exit` every 100 ms)."""

    def __init__(self, config: uvicorn.Config, listening: threading.Event) -> None:
        super().__init__(config)
        self.listening = listening
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        await super().startup(sockets)
        self.listening.set()

    async def main_loop(self) -> None:
        """uvicorn's loop (a tick every 100 ms for its date header and limits), woken early by `stop()`."""
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            if self._wake is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=0.1)
            else:
                await asyncio.sleep(0.1)
            should_exit = await self.on_tick(counter)

    def stop(self) -> None:
        """Ask the server to exit (from any thread)."""
        self.should_exit = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: it has stopped already
                loop.call_soon_threadsafe(wake.set)


def _bound_socket(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port) (port 0: a free one) and listening: a client that connects once the banner
    says "listening" waits in the backlog while the server starts, rather than being refused; OSError if it cannot
    be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


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
        quiet_request_content()
        # Powertools builds a route's middleware stack on the route's first call: the first call of each operation
        # resolves alone (another of the same operation waits), every later one concurrently.
        self._first_calls = {route.operation: threading.Lock() for route in API_ROUTES}
        self._workers = ThreadPoolExecutor(WORKER_THREADS, thread_name_prefix="rearview-worker")
        self._heavy: asyncio.Semaphore | None = None
        self._mcp: LocalMcp | None = None
        self._mcp_lock: asyncio.Lock | None = None
        bind_port = settings.port if port is None else port
        try:
            self._socket = _bound_socket(self.host.strip("[]"), bind_port)
        except BaseException:
            self._workers.shutdown()
            if self._owns_services:
                self.services.close()
            raise
        self._listening = threading.Event()
        limits = settings.server
        config = uvicorn.Config(
            LocalApp(self),
            http=functools.partial(GuardedH11Protocol, limits=limits),  # type: ignore[arg-type]
            lifespan="on",
            access_log=False,
            log_config=None,
            server_header=False,
            timeout_keep_alive=limits.idle_timeout_seconds,  # type: ignore[arg-type]
            timeout_graceful_shutdown=_SHUTDOWN_GRACE_SECONDS,
            backlog=LISTEN_BACKLOG,
        )
        self._server = _Uvicorn(config, self._listening)
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def port(self) -> int:
        """The bound port (the real one when constructed with port 0)."""
        return int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        host = self.host.strip("[]")
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    # --- what the ASGI app asks of the server ---------------------------------------------------------------

    async def off_loop(self, call: Callable[[], T], operation: str | None = None) -> T:
        """`call()` on a worker thread; at most HEAVY_AT_ONCE heavy operations at once (the others wait here, on
        the loop, holding no worker)."""
        loop = asyncio.get_running_loop()
        if operation not in HEAVY_OPERATIONS:
            return await loop.run_in_executor(self._workers, call)
        if self._heavy is None:
            self._heavy = asyncio.Semaphore(HEAVY_AT_ONCE)
        async with self._heavy:
            return await loop.run_in_executor(self._workers, call)

    def resolve(self, event: dict[str, Any]) -> dict[str, Any]:
        """Resolve one API Gateway v2 event, as Lambda would (blocking: a worker thread's call)."""
        matched = match_api_route(str(event["requestContext"]["http"]["method"]), str(event["rawPath"]))
        first = self._first_calls.get(matched[0].operation) if matched else None
        context = local_context(event["requestContext"]["requestId"])
        if first is None or matched is None:
            return self.resolver.resolve(event, context)
        with first:
            response = self.resolver.resolve(event, context)
            self._first_calls.pop(matched[0].operation, None)
        return response

    def check_access(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The route table's 401/403 for this event, or None if it may proceed (blocking)."""
        denied = self.resolver.check_access(event)
        self.resolver.clear_context()
        return denied

    def too_large(self, event: dict[str, Any], length: int) -> dict[str, Any]:
        """The answer to a body declared past the limit: the caller's 401 or 403 if it has one (the resolver's
        order), else 413."""
        return self.check_access(event) or payload_too_large(length)

    async def mcp(self) -> LocalMcp:
        """The MCP endpoint, built on its first request (it imports the mcp SDK)."""
        if self._mcp_lock is None:
            self._mcp_lock = asyncio.Lock()
        async with self._mcp_lock:
            if self._mcp is None:
                self._mcp = await self.off_loop(lambda: LocalMcp(self.services, self.gate))
        return self._mcp

    async def stopping(self) -> None:
        """The ASGI app's shutdown: the MCP endpoint's session manager stops."""
        if self._mcp is not None:
            await self._mcp.close()

    # --- running ------------------------------------------------------------------------------------------------

    def announce(self) -> None:
        print(f"Rearview listening on {self.url}")
        print(f"  API docs:  {self.url}{DOCS_PATH}")
        print(f"  OpenAPI:   {self.url}{OPENAPI_PATH}")
        print(f"  Inspector: {self.url}{UI_PATH}")
        print(f"  {auth_banner(self.gate)}", flush=True)

    def serve_forever(self, ready: threading.Event | None = None, *, announce: bool = True) -> None:
        """Serve until `shutdown()` is called from another thread (or, in the main thread, Ctrl-C or SIGTERM: uvicorn
        stops gracefully, then raises the signal again for the caller)."""
        if announce:
            self.announce()
        waiter: threading.Thread | None = None
        if ready is not None:
            waiter = threading.Thread(target=_relay, args=(self._listening, ready), daemon=True)
            waiter.start()
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._listening.set()
            if waiter is not None:
                waiter.join()

    def start(self, *, announce: bool = False) -> LocalServer:
        """Serve in a background thread and return once listening."""
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self.serve_forever, args=(ready,), kwargs={"announce": announce}, name="rearview-http", daemon=True
        )
        self._thread.start()
        ready.wait()
        return self

    def shutdown(self) -> None:
        """Stop serving, release the port, and close the services this server built."""
        if self._closed:
            return
        self._closed = True
        self._server.stop()
        if self._thread is not None:
            self._thread.join()
        self._socket.close()
        self._workers.shutdown(wait=True)
        if self._owns_services:
            self.services.close()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def _relay(source: threading.Event, target: threading.Event) -> None:
    source.wait()
    target.set()


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
        server.shutdown()
        if restore is not None:
            signal.signal(signal.SIGTERM, restore)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


__all__ = [
    "HEAVY_OPERATIONS",
    "OPEN_MODE_BANNER",
    "LocalServer",
    "auth_banner",
    "build_event",
    "check_bind",
    "is_loopback",
    "local_context",
    "serve",
]
