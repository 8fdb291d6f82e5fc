"""`POST /mcp` on the local server: the MCP SDK's Streamable HTTP transport (an ASGI app) mounted in the server's own
ASGI app, behind the same checks as the `mcp` Lambda function's (`rearview.api.mcp_http`: POST only, admission,
the body's size and JSON).

The SDK and its session manager are built on the first `/mcp` request (the `mcp` extra is needed then, not before)
and run on the server's own event loop; `close()` stops them. The principal, admitted here, travels to the tools in
the request scope's `state`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from rearview.api.mcp_http import MAX_MCP_BODY_BYTES, MCP_PATH, admit, hostile_json_refusal, no_host_check
from rearview.domain.access import Principal
from rearview.errors import ConfigurationError
from rearview.service.access import AccessGate

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from rearview.bootstrap import Services

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def v2_response(
    status: int, body: Mapping[str, Any] | None, headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "isBase64Encoded": False,
        "body": json.dumps(dict(body)) if body is not None else "",
    }


class LocalMcp:
    """The MCP endpoint of one local server."""

    def __init__(self, services: Services, gate: AccessGate) -> None:
        try:
            from rearview.api.mcp import create_mcp_server, principal_from_scope
        except ImportError as exc:
            raise ConfigurationError(
                f"mcp: the MCP server needs the `mcp` extra (pip install 'rearview-memory[mcp]'): {exc}"
            ) from exc
        self.gate = gate
        server = create_mcp_server(services, principal_from_scope)
        # Builds the session manager (its Starlette app is not used: requests go to the manager, after our checks).
        server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            max_request_body_size=MAX_MCP_BODY_BYTES,
            # Host and Origin are the server's browser guard's, for /mcp as for the API: one rule, one place.
            transport_security=no_host_check(),
        )
        self.manager: StreamableHTTPSessionManager = server.session_manager
        self._running: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()

    async def start(self) -> None:
        """Run the session manager on this event loop (once)."""
        if self._running is None:
            self._running = asyncio.create_task(self._run(), name="rearview-mcp")
        await self._ready.wait()

    async def _run(self) -> None:
        async with self.manager.run():
            self._ready.set()
            await self._stop.wait()

    async def close(self) -> None:
        self._stop.set()
        if self._running is not None:
            with contextlib.suppress(Exception):
                await self._running

    def admit(self, event: Mapping[str, Any]) -> Principal | dict[str, Any]:
        """The caller's principal, or the response that turns it away (blocking: run it off the loop)."""
        return admit(event, self.gate)

    async def answer(
        self, scope: Mapping[str, Any], principal: Principal, body: bytes, send: Send
    ) -> dict[str, Any] | None:
        """The SDK's answer, sent on `send`; or a refusal to send instead (a body too large or no JSON the API can
        take), returned."""
        from rearview.api.mcp import PRINCIPAL_STATE_KEY

        if len(body) > MAX_MCP_BODY_BYTES:
            message = f"body: must be at most {MAX_MCP_BODY_BYTES} bytes (1 MiB) (got {len(body)})"
            return v2_response(413, {"error": "too_large", "message": message, "field": "body"})
        refused = hostile_json_refusal(body)
        if refused is not None:
            return refused
        await self.start()
        state = {**dict(scope.get("state") or {}), PRINCIPAL_STATE_KEY: principal}
        sdk_scope = {**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode(), "root_path": "", "state": state}
        given, finished = False, asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            await finished.wait()  # nothing more to read: the client "leaves" once the response is complete
            return {"type": "http.disconnect"}

        async def sent(message: dict[str, Any]) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                finished.set()

        try:
            await self.manager.handle_request(sdk_scope, receive, sent)  # type: ignore[arg-type]
        finally:
            finished.set()
        return None
