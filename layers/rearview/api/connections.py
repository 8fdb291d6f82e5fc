"""The local server's connections: uvicorn's HTTP/1.1 protocol (h11) with the limits a server on a laptop needs.

- Deadlines: a connection must send its request's headers within `header_timeout_seconds` from its first byte (from
  its opening, for the first request), then its body within `idle_timeout_seconds`; one that overstays is closed. A
  read timeout alone would not bound a slow sender that sends a byte every few seconds. Between requests, uvicorn's
  keep-alive timeout (`idle_timeout_seconds`) closes an idle connection.
- A bounded number of connections served at once (`max_connections`): one more is answered 503 with Retry-After at
  once, in the protocol, before any of it reaches the application, and closed.
- An answer given before the body was read (413, 401, 421, 403): uvicorn reads and drops the rest of the body, so
  the client, still sending, reads the answer instead of a reset; for LINGER_SECONDS at most, then the connection
  closes.
- A request h11 refuses (conflicting Content-Length, malformed headers, headers past their size limit): 400 with a
  JSON body, like every other refusal of the API.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from rearview.settings import ServerSettings

logger = logging.getLogger(__name__)

# A refused or early-answered connection is read from and discarded at most this long before it is closed, so that
# the client, still sending, reads the answer instead of a reset.
LINGER_SECONDS = 5.0
# How long a connection turned away (503) may take to send its request's head before it is closed.
_BUSY_LINGER_SECONDS = 1.0


def busy_response(retry_after: int) -> bytes:
    """The whole HTTP response of a connection turned away because the server holds its most connections."""
    body = json.dumps(
        {"error": "unavailable", "message": f"server: every connection slot is taken; retry after {retry_after} s"}
    ).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        f"Retry-After: {retry_after}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def bad_request_response(message: str) -> bytes:
    body = json.dumps({"error": "bad_request", "message": f"request: {message}"}).encode()
    head = (
        "HTTP/1.1 400 Bad Request\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _LingeringTransport:
    """The connection's transport as uvicorn holds it: closing it while the client still sends its body drains that
    body first (see GuardedH11Protocol.close_connection)."""

    def __init__(self, transport: asyncio.Transport, protocol: GuardedH11Protocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def close(self) -> None:
        self._protocol.close_connection()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines, the connection limit and the lingering close above. uvicorn makes
    one per connection; `limits` comes through `functools.partial` (see LocalServer)."""

    def __init__(self, *args: Any, limits: ServerSettings, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self._deadline: asyncio.TimerHandle | None = None
        self._phase = ""  # what the deadline waits for: "headers", "body", "linger" ("" none)
        self._turned_away = False
        self._draining = False
        self._real: asyncio.Transport | None = None

    # --- the connection limit ---------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            self._turn_away(transport)
            return
        self._real = transport
        super().connection_made(_LingeringTransport(transport, self))  # type: ignore[arg-type]
        self._arm("headers", self.limits.header_timeout_seconds)

    def close_connection(self) -> None:
        """Close; but if the client is still sending a body (an answer given before reading it, with `Connection:
        close`), first stop writing and read and drop the rest for LINGER_SECONDS at most: closing with its data
        unread would reset the connection, and the client would lose the answer."""
        real = self._real
        if real is None or real.is_closing() or self._draining:
            return
        if self.conn.their_state is h11.SEND_BODY and real.can_write_eof():
            self._draining = True
            real.write_eof()
            real.resume_reading()
            self._arm("linger", LINGER_SECONDS)
            return
        real.close()

    def _turn_away(self, transport: asyncio.Transport) -> None:
        """503 with Retry-After, without the application; the request's head is read first when it comes at once
        (closing with it unread would reset the connection and lose the answer)."""
        self._turned_away = True
        self.transport = transport
        transport.write(busy_response(self.limits.retry_after_seconds))
        self._deadline = self.loop.call_later(_BUSY_LINGER_SECONDS, transport.close)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._turned_away:
            return
        super().connection_lost(exc)

    # --- deadlines ------------------------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._turned_away:
            if b"\r\n\r\n" in data:  # the head is in: the answer is out, close
                self.transport.close()
            return
        if self._draining:
            return  # the rest of a body answered early: dropped
        if not self._phase and self.conn.their_state is h11.IDLE:
            self._arm("headers", self.limits.header_timeout_seconds)  # the next request on a kept-alive connection
        super().data_received(data)
        self._follow()

    def _follow(self) -> None:
        """Move the deadline along with the request: its body next, or none once it is all in."""
        state = self.conn.their_state
        if self._phase == "linger" and state is h11.IDLE:
            self.close_connection()  # the body of a request answered early is drained: done with this connection
        elif state is h11.SEND_BODY and self._phase == "headers":
            self._arm("body", self.limits.idle_timeout_seconds)
        elif state is not h11.IDLE and state is not h11.SEND_BODY and self._phase in ("headers", "body"):
            self._disarm()

    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._phase = phase
        self._deadline = self.loop.call_later(seconds, self._overstayed)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._phase = None, ""

    def _overstayed(self) -> None:
        phase, self._deadline, self._phase = self._phase, None, ""
        if phase != "linger":
            logger.info("connection closed: its request's %s did not arrive in time", phase)
        real = self._real or self.transport
        if not real.is_closing():
            real.close()

    # --- answers given before the body was read ---------------------------------------------------------------

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            # The rest of the body is read and dropped (uvicorn does), for a while: then the connection goes.
            self._arm("linger", LINGER_SECONDS)

    def send_400_response(self, msg: str) -> None:
        self.transport.write(bad_request_response(msg.rstrip(".").lower()))
        self.close_connection()
