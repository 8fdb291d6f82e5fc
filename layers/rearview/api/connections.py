"""The local server's connection limits: deadlines that close a connection which sends too slowly, a bounded number
of connections served at once (one more is answered 503 with Retry-After), and the lingering close that lets a
client read an early answer (413) it got while still sending.

A socket timeout alone does not bound a slow sender: it limits each read, and a client that sends a byte every few
seconds never trips it. So every connection has a deadline for its headers, then one for its body, and a
watchdog thread shuts down the socket of one that overstays; the blocked read then returns and the handler ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

# How often the watchdog looks for connections past their deadline: a deadline is kept to within this.
WATCHDOG_INTERVAL_SECONDS = 0.25
# A refused connection (503, 413) is read from and discarded at most this long before it is closed, so that the
# client, still sending, reads the answer instead of a reset.
LINGER_SECONDS = 5.0
_LINGER_CHUNK = 256 * 1024


class ConnectionWatchdog:
    """Shuts down sockets whose deadline has passed. `start()` once; `arm(sock, seconds)` and `disarm(sock)` from
    the handlers."""

    def __init__(self, interval: float = WATCHDOG_INTERVAL_SECONDS) -> None:
        self._interval = interval
        self._deadlines: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.closed = 0  # connections shut down for overstaying

    def start(self) -> ConnectionWatchdog:
        self._thread = threading.Thread(target=self._loop, name="rearview-http-watchdog", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def arm(self, sock: socket.socket, seconds: float) -> None:
        """The connection must have done its part (headers, body) within `seconds` from now."""
        with self._lock:
            self._deadlines[sock] = time.monotonic() + seconds

    def disarm(self, sock: socket.socket) -> None:
        with self._lock:
            self._deadlines.pop(sock, None)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            now = time.monotonic()
            with self._lock:
                expired = [sock for sock, deadline in self._deadlines.items() if deadline <= now]
                for sock in expired:
                    del self._deadlines[sock]
            for sock in expired:
                self.closed += 1
                with contextlib.suppress(OSError):  # already gone
                    sock.shutdown(socket.SHUT_RDWR)


def linger_and_close(sock: socket.socket, *, seconds: float = LINGER_SECONDS, at_most: int | None = None) -> None:
    """Stop sending, then read and drop what the client still sends (up to `at_most` bytes, for `seconds` at most):
    closing with unread data would reset the connection, and the client would lose the answer already sent."""
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        return
    deadline = time.monotonic() + seconds
    left = at_most
    try:
        while (left is None or left > 0) and (remaining := deadline - time.monotonic()) > 0:
            sock.settimeout(remaining)
            chunk = sock.recv(_LINGER_CHUNK if left is None else min(_LINGER_CHUNK, left))
            if not chunk:
                break
            if left is not None:
                left -= len(chunk)
    except OSError:
        pass


def busy_response(retry_after: int) -> bytes:
    """The whole HTTP response of a connection turned away because every worker is busy."""
    body = json.dumps(
        {"error": "unavailable", "message": f"server: every worker is busy; retry after {retry_after} s"}
    ).encode()
    head = (
        "HTTP/1.0 503 Service Unavailable\r\n"
        f"Retry-After: {retry_after}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class ConnectionSlots:
    """At most `capacity` connections served at once; a connection beyond them is answered 503 by a short-lived
    thread of its own (at most `capacity` of those too: past that it is simply closed)."""

    def __init__(self, capacity: int, retry_after: int) -> None:
        self._serving = threading.BoundedSemaphore(capacity)
        self._refusing = threading.BoundedSemaphore(capacity)
        self._retry_after = retry_after
        self.refused = 0

    def take(self) -> bool:
        return self._serving.acquire(blocking=False)

    def give_back(self) -> None:
        self._serving.release()

    def refuse(self, sock: socket.socket, close: Callable[[socket.socket], None]) -> None:
        """Answer 503 + Retry-After on `sock` without a worker, then close it with `close`."""
        self.refused += 1
        if not self._refusing.acquire(blocking=False):
            close(sock)
            return

        def answer() -> None:
            try:
                sock.settimeout(1.0)
                with contextlib.suppress(OSError):
                    sock.recv(64 * 1024)  # the request's head, most likely all there: read, so no reset loses the 503
                sock.sendall(busy_response(self._retry_after))
                linger_and_close(sock, seconds=1.0)
            except OSError:
                pass
            finally:
                close(sock)
                self._refusing.release()

        threading.Thread(target=answer, name="rearview-http-busy", daemon=True).start()
