"""`rearview emulate` as a subprocess for the end-to-end tests: started on free ports with a data directory of its
own, waited for, and driven over HTTP (its API and `/mcp`) and, where a test plays the operator, over the emulated
AWS APIs on moto's endpoint (the `outputs.json` the emulator writes names the queues and the table)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")
REPO_ROOT = Path(__file__).resolve().parents[2]
# Bounds on waiting, not timing assertions: start-up (moto, the index, nine function processes importing the
# library on a 2-core machine) and an asynchronous effect (a queue poll, a stream read, a run, a sweep).
STARTUP_DEADLINE_SECONDS = 90.0
EFFECT_DEADLINE_SECONDS = 45.0
ADMIN_TOKEN = "emulated-admin-token-for-the-e2e-tests"
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def request(
    method: str, url: str, body: dict[str, Any] | None = None, token: str | None = None
) -> tuple[int, dict[str, Any]]:
    """One JSON request; (status, JSON body)."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def eventually(probe: Callable[[], T | None], what: str, deadline_seconds: float = EFFECT_DEADLINE_SECONDS) -> T:
    """Ask `probe` until it answers (not None), for at most `deadline_seconds`."""
    deadline = time.monotonic() + deadline_seconds
    while (answer := probe()) is None:
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {deadline_seconds} s")
        time.sleep(0.2)
    return answer


@dataclass
class Emulation:
    """A running emulator: its URL, admin token, data directory and stack outputs."""

    url: str
    token: str
    data_dir: Path
    process: subprocess.Popen[bytes]
    out_path: Path
    err_path: Path
    outputs: dict[str, str] = field(default_factory=dict)

    def aws(self, service: str) -> Any:
        """A boto3 client of the emulated account, with the emulator's administrator credentials (moto checks IAM)."""
        import boto3

        return boto3.client(
            service,  # type: ignore[call-overload]
            endpoint_url=self.outputs["MotoUrl"],
            region_name="us-east-1",
            aws_access_key_id=self.outputs.get("EmulatorAccessKeyId", "emulated"),
            aws_secret_access_key=self.outputs.get("EmulatorSecretAccessKey", "emulated"),
        )

    def raw(
        self, method: str, path: str, body: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """A request with the given headers only: (status, lower-cased headers, body)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or MCP_HEADERS)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()

    def stop(self) -> int:
        """SIGTERM, and the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)

    def stdout(self) -> str:
        return self.out_path.read_text()

    def stderr(self) -> str:
        return self.err_path.read_text()


def mcp_call(emulation: Emulation, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One `tools/call` over `/mcp` with the admin token; the tool's structured result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {emulation.token}"}
    status, _, raw = emulation.raw("POST", "/mcp", body, headers)
    assert status == 200, raw
    message = json.loads(raw)
    assert "error" not in message and not message["result"].get("isError"), message
    return dict(message["result"]["structuredContent"])


def _environment(extra: dict[str, str]) -> dict[str, str]:
    """The test process's environment without the developer's REARVIEW_* and OpenSearch settings, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("REARVIEW_", "OPENSEARCH_", "AWS_")) and k != "POWERTOOLS_METRICS_NAMESPACE"
    }
    return env | {"REARVIEW_API_TOKEN": ADMIN_TOKEN} | extra


@contextmanager
def running_emulator(template: Path, data_dir: Path, logs: Path, **extra: str) -> Iterator[Emulation]:
    """Start `rearview emulate` on free ports, wait until /v1/health answers, and stop it on exit."""
    port = free_port()
    logs.mkdir(parents=True, exist_ok=True)
    out_path, err_path = logs / f"emulate-{port}.out", logs / f"emulate-{port}.err"
    command = [
        sys.executable, "-m", "rearview.cli", "emulate", "--template", str(template), "--data-dir", str(data_dir),
        "--port", str(port),
    ]  # fmt: skip
    with out_path.open("wb") as stdout, err_path.open("wb") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=_environment(extra), cwd=REPO_ROOT)
    emulation = Emulation(f"http://127.0.0.1:{port}", ADMIN_TOKEN, data_dir, process, out_path, err_path)
    try:
        _wait_until_up(emulation)
        emulation.outputs = json.loads((data_dir / "outputs.json").read_text())
        yield emulation
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_up(emulation: Emulation) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
    while True:
        if emulation.process.poll() is not None:
            pytest.fail(f"the emulator exited with {emulation.process.returncode}: {emulation.stderr()[-3000:]}")
        if "started in" in emulation.stdout():
            try:
                if request("GET", f"{emulation.url}/v1/health")[0] == 200:
                    return
            except OSError:
                pass
        if time.monotonic() > deadline:
            pytest.fail(
                f"the emulator did not answer within {STARTUP_DEADLINE_SECONDS} s: {emulation.stderr()[-3000:]}"
            )
        time.sleep(0.2)
