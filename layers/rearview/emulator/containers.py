"""Lambda containers: each function runs in a process of its own, with the environment the template gives it,
importing its `handler.py` from the asset directory at start (the cold start) and taking one invocation at a
time, as a Lambda execution environment does.

With a `LambdaRuntime` (what `make emulate` runs), the process is the functions' own Python (python3.13) in isolated
mode, started by `lambda_bootstrap`, with only the function's code directory, the layer's `python/` directory and
what the Lambda runtime provides on its path: what Lambda runs. Without one, it is the emulator's own interpreter:
forked on Linux from a fork server that has imported the library already (`fork_server`), elsewhere spawned afresh.
A process of its own keeps what Lambda keeps apart: the environment each function validates its
settings from, module globals (Powertools' logger and metrics, the cached services), and standard output, which goes to
`<data dir>/logs/<function>.log` like a function's log group. An invocation that outlasts the function's timeout
ends the process (the next invocation starts a new one, cold); so does one that crashes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import multiprocessing
import os
import select
import subprocess
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from rearview.emulator.fork_server import ForkServer
from rearview.emulator.template import ACCOUNT, REGION, FunctionSpec

# Spawned, not forked: the emulator's threads (moto, the HTTP front, the pollers) must not be copied into a
# function's process, and the child starts from a clean interpreter like a Lambda runtime.
_CONTEXT = multiprocessing.get_context("spawn")
_STOP_SECONDS = 5.0
_BOOTSTRAP = Path(__file__).with_name("lambda_bootstrap.py")


@dataclass(frozen=True)
class LambdaRuntime:
    """The interpreter a function runs on and what is on its path besides its code: the layer's `python/` directory
    (`/opt/python` on Lambda), then the directories standing for what the runtime provides."""

    python: Path
    layer_dir: Path
    runtime_dirs: tuple[Path, ...] = ()

    def command(self, read_fd: int, write_fd: int, spec: FunctionSpec) -> list[str]:
        paths = [str(self.layer_dir), *map(str, self.runtime_dirs)]
        return [str(self.python), "-I", "-S", str(_BOOTSTRAP), str(read_fd), str(write_fd), str(spec.code_dir),
                spec.handler, *paths]  # fmt: skip


class _JsonConnection:
    """The parent's end of a function process started by `lambda_bootstrap`: JSON lines over two pipes, with the
    methods of a multiprocessing Connection that `FunctionContainer` uses."""

    def __init__(self, inbox: int, outbox: int) -> None:
        self._inbox = os.fdopen(inbox, "r", encoding="utf-8")
        self._outbox = os.fdopen(outbox, "w", encoding="utf-8")

    def send(self, message: tuple[Any, ...]) -> None:
        self._outbox.write(json.dumps(message, default=_as_json) + "\n")
        self._outbox.flush()

    def poll(self, timeout: float) -> bool:
        ready, _, _ = select.select([self._inbox], [], [], timeout)
        return bool(ready)

    def recv(self) -> tuple[Any, ...]:
        line = self._inbox.readline()
        if not line:
            raise EOFError("the function's process exited")
        return tuple(json.loads(line))

    def close(self) -> None:
        for stream in (self._inbox, self._outbox):
            with contextlib.suppress(OSError):
                stream.close()


def _as_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


class _RuntimeProcess:
    """A function's process on its own interpreter, with the methods of a multiprocessing Process used here."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen

    def is_alive(self) -> bool:
        return self._popen.poll() is None

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()

    def join(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout)


def _start_on_runtime(
    runtime: LambdaRuntime, spec: FunctionSpec, environment: dict[str, str], log_path: Path
) -> tuple[_RuntimeProcess, _JsonConnection]:
    """The function's process on `runtime`, and this side's end of its pipes (the child keeps the other ends)."""
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    with log_path.open("ab") as log:
        popen = subprocess.Popen(
            runtime.command(to_child, from_child, spec),
            env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            pass_fds=(to_child, from_child), cwd=spec.code_dir, start_new_session=True,
        )  # fmt: skip
    os.close(to_child)
    os.close(from_child)
    return _RuntimeProcess(popen), _JsonConnection(to_parent, from_parent)


class FunctionError(RuntimeError):
    """An invocation failed: the handler raised (`error_type` is its exception's name), timed out or crashed."""

    def __init__(self, function: str, error_type: str, message: str) -> None:
        super().__init__(f"{function}: {error_type}: {message}")
        self.function = function
        self.error_type = error_type
        self.message = message


@dataclass
class ContextFields:
    """What a Lambda context carries that the handlers read; rebuilt in the child as `LambdaContext`."""

    function_name: str
    memory_limit_in_mb: int
    invoked_function_arn: str
    aws_request_id: str
    deadline: float
    log_group_name: str
    log_stream_name: str


class LambdaContext:
    """The context object handed to a handler: Powertools reads these fields."""

    def __init__(self, fields: ContextFields) -> None:
        self.function_name = fields.function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = fields.memory_limit_in_mb
        self.invoked_function_arn = fields.invoked_function_arn
        self.aws_request_id = fields.aws_request_id
        self.log_group_name = fields.log_group_name
        self.log_stream_name = fields.log_stream_name
        self._deadline = fields.deadline

    def get_remaining_time_in_millis(self) -> int:
        return max(int((self._deadline - time.time()) * 1000), 0)


def _child(spec: FunctionSpec, environment: dict[str, str], log_path: str, conn: Connection) -> None:
    """The container's process: environment, log, cold start, then invocations until the pipe closes."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)
    os.environ.clear()
    os.environ.update(environment)
    sys.path.insert(0, str(spec.code_dir))
    module_name, _, attribute = spec.handler.rpartition(".")
    try:
        location = importlib.util.spec_from_file_location(module_name, spec.code_dir / f"{module_name}.py")
        if location is None or location.loader is None:
            raise ImportError(f"no {module_name}.py in {spec.code_dir}")
        module = importlib.util.module_from_spec(location)
        location.loader.exec_module(module)
        handler = getattr(module, attribute)
    except BaseException as exc:  # an init error: reported to every invocation, as Lambda does
        traceback.print_exc()
        conn.send(("init_error", type(exc).__name__, str(exc)))
        return
    conn.send(("ready", "", ""))
    while True:
        try:
            event, fields = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result = handler(event, LambdaContext(fields))
            conn.send(("ok", result, ""))
        except Exception as exc:
            traceback.print_exc()
            conn.send(("error", type(exc).__name__, str(exc)))


class FunctionContainer:
    """One function's execution environment: started on first use (or by `warm`), one invocation at a time."""

    def __init__(
        self,
        spec: FunctionSpec,
        environment: dict[str, str],
        log_dir: Path,
        forks: ForkServer | None = None,
        runtime: LambdaRuntime | None = None,
    ) -> None:
        self.spec = spec
        # Where its process comes from: the functions' own interpreter with the layer (`runtime`), else forked from
        # the warm fork server, or spawned afresh (not on Linux).
        self._forks = forks
        self._runtime = runtime
        self.environment = environment
        self.log_path = log_dir / f"{spec.name}.log"
        self.cold_starts = 0
        self.invocations = 0
        self._lock = threading.Lock()
        self._process: Any = None
        self._conn: Any = None
        # The running process has answered its cold start.
        self._initialised = False
        # Stopped for good: no invocation starts a new process.
        self._closed = False

    @property
    def name(self) -> str:
        return self.spec.name

    def warm(self) -> None:
        """Start the process now (its imports run in the background of the emulator's start-up)."""
        with self._lock:
            self._start()

    def _start(self) -> Any:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            return self._conn
        self._stop()
        parent: Any
        if self._runtime is not None:
            self._process, parent = _start_on_runtime(self._runtime, self.spec, self.environment, self.log_path)
        elif self._forks is not None:
            self._process, parent = self._forks.fork(_child, (self.spec, self.environment, str(self.log_path)))
        else:
            parent, child = _CONTEXT.Pipe()
            self._process = _CONTEXT.Process(
                target=_child,
                args=(self.spec, self.environment, str(self.log_path), child),
                name=f"lambda-{self.spec.name}",
                daemon=True,
            )
            self._process.start()
            child.close()
        self._conn = parent
        self._initialised = False
        self.cold_starts += 1
        return parent

    def invoke(self, event: dict[str, Any], *, timeout_seconds: float | None = None) -> Any:
        """Run the handler on `event` and return its result; FunctionError if it raised, timed out or crashed."""
        timeout = float(timeout_seconds or self.spec.timeout_seconds)
        with self._lock:
            if self._closed:
                raise FunctionError(self.spec.name, "Emulator.Stopped", "the emulator is stopping")
            conn = self._start()
            self.invocations += 1
            deadline = time.time() + timeout
            try:
                if not self._ready(conn, deadline):
                    return self._fail("Sandbox.Timedout", f"Task timed out after {timeout:.2f} seconds")
                conn.send((event, self._context(deadline)))
                if not conn.poll(max(deadline - time.time(), 0)):
                    return self._fail("Sandbox.Timedout", f"Task timed out after {timeout:.2f} seconds")
                status, value, message = conn.recv()
            except (EOFError, OSError, BrokenPipeError):
                return self._fail("Runtime.ExitError", "the function's process exited")
        if status == "ok":
            return value
        raise FunctionError(self.spec.name, str(value), message)

    def _ready(self, conn: Any, deadline: float) -> bool:
        """Wait for the cold start's `ready` (once per process); an init error fails the invocation."""
        if self._initialised:
            return True
        # Init runs under its own limit in Lambda (10 s); here imports on a busy machine may take longer.
        if not conn.poll(max(deadline - time.time(), 0) + 30):
            return False
        status, error_type, message = conn.recv()
        if status != "ready":
            self._stop()
            raise FunctionError(self.spec.name, f"Runtime.ImportModuleError:{error_type}", message)
        self._initialised = True
        return True

    def _fail(self, error_type: str, message: str) -> Any:
        self._stop()
        raise FunctionError(self.spec.name, error_type, message)

    def _context(self, deadline: float) -> ContextFields:
        name = self.environment.get("AWS_LAMBDA_FUNCTION_NAME", self.spec.name)
        return ContextFields(
            function_name=name,
            memory_limit_in_mb=self.spec.memory_mb,
            invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}",
            aws_request_id=str(uuid.uuid4()),
            deadline=deadline,
            log_group_name=f"/aws/lambda/{name}",
            log_stream_name=f"emulated/[$LATEST]{os.getpid()}",
        )

    def _stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        process, self._process = self._process, None
        if process is not None and process.is_alive():
            process.terminate()
            process.join(_STOP_SECONDS)
            if process.is_alive():
                process.kill()
                process.join(_STOP_SECONDS)

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def close_when_idle(self, timeout: float) -> None:
        """Stop after the running invocation (if any) ends, waiting at most `timeout` seconds for it (then its
        process is ended, and the invocation fails as a Lambda cut short does)."""
        self._closed = True
        if self._lock.acquire(timeout=timeout):
            try:
                self._stop()
            finally:
                self._lock.release()
        else:
            process = self._process
            if process is not None and process.is_alive():
                process.kill()
