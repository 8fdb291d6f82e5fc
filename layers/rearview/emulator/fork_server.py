"""A fork server for the function containers (Linux): one process imports what every function imports (numpy,
boto3, pydantic, Powertools, the library's services) once, then forks a function's process from itself on request.

Nine functions each importing the library from scratch cost about nine times a second and a half of CPU at start;
forked from a warm parent they start in milliseconds (as Lambda's SnapStart restores a snapshot). What a handler's
module reads from the environment at import (its settings, Powertools' service name) is still read after the fork,
in the function's own environment: nothing of `rearview.api` or of the handlers is imported here.

The server is started with `spawn` (a clean, single-threaded interpreter: forking a process with threads is
unsafe), and it and its children die with their parent (`PR_SET_PDEATHSIG`), however the emulator ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any

# What every function's cold start imports, and nothing that reads the environment when imported.
PRELOAD = (
    "numpy",
    "boto3",
    "botocore.session",
    "pydantic",
    "pydantic_settings",
    "aws_lambda_powertools",
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.batch",
    "opensearchpy",
    "rearview.bootstrap",
)
PR_SET_PDEATHSIG = 1
_CONTEXT = multiprocessing.get_context("spawn")


def supported() -> bool:
    return sys.platform.startswith("linux")


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _serve(control: Connection, preload: tuple[str, ...]) -> None:
    """The server's loop: for each (target, args) and the descriptor of a connection, fork a child that runs
    `target(*args, connection)`; answer with its pid."""
    _die_with_parent()
    # The kernel reaps the children: a function's process that ends leaves no zombie.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for name in preload:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    while True:
        try:
            target, args = control.recv()
            fd = reduction.recv_handle(control)
        except (EOFError, OSError):
            return
        pid = os.fork()
        if pid == 0:
            _run_child(control, target, args, fd)
        os.close(fd)
        control.send(pid)


def _run_child(control: Connection, target: Callable[..., None], args: tuple[Any, ...], fd: int) -> None:
    code = 0
    try:
        control.close()
        _die_with_parent()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        target(*args, Connection(fd))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


class ForkedProcess:
    """A function's process forked by the server (a child of the server, not of this process)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def is_alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)


class ForkServer:
    """The server, started on first use; `fork` is safe to call from any thread."""

    def __init__(self, preload: tuple[str, ...] = PRELOAD) -> None:
        self._preload = preload
        self._lock = threading.Lock()
        self._process: Any = None
        self._control: Connection | None = None

    def start(self) -> None:
        with self._lock:
            self._start()

    def _start(self) -> Connection:
        if self._control is not None and self._process is not None and self._process.is_alive():
            return self._control
        ours, theirs = _CONTEXT.Pipe()
        self._process = _CONTEXT.Process(
            target=_serve, args=(theirs, self._preload), name="lambda-fork-server", daemon=True
        )
        self._process.start()
        theirs.close()
        self._control = ours
        return ours

    def fork(self, target: Callable[..., None], args: tuple[Any, ...]) -> tuple[ForkedProcess, Connection]:
        """A new process running `target(*args, connection)`, and this side's end of the connection."""
        with self._lock:
            control = self._start()
            ours, theirs = _CONTEXT.Pipe()
            try:
                control.send((target, args))
                reduction.send_handle(control, theirs.fileno(), self._process.pid)
                pid = int(control.recv())
            finally:
                theirs.close()
        return ForkedProcess(pid), ours

    def stop(self) -> None:
        with self._lock:
            if self._control is not None:
                self._control.close()
                self._control = None
            if self._process is not None:
                self._process.terminate()
                self._process.join(5)
                self._process = None
