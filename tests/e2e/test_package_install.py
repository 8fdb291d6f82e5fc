"""The package as a user installs it: `python -m build` makes a wheel and an sdist that pass `twine check`; the wheel,
installed with its `local`, `mcp` and `client` extras into a fresh virtual environment (its dependencies from the
package index, as `pip install` fetches them), runs `rearview serve`, `rearview mcp` over stdio and the Python
client against it: nothing of this checkout is on that environment's path."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from support.mcp_calls import run

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "acme:u-42"
# Bounds on waiting for a build, an install, a server's start (not timing assertions).
BUILD_TIMEOUT_SECONDS = 600
STARTUP_DEADLINE_SECONDS = 60.0

CLIENT_SCRIPT = """
import json, sys
import rearview
from rearview.client import RearviewClient

with RearviewClient(sys.argv[1]) as rv:
    written = rv.write(sys.argv[2], "Booked the 9:40 train to Porto for the harbour survey", tags=["travel"])
    found = rv.recall(sys.argv[2], "train to Porto")
print(json.dumps({"module": rearview.__file__, "id": written.id, "found": [h.id for h in found.results]}))
"""


def _run(*command: str | Path, timeout: float = BUILD_TIMEOUT_SECONDS, **kw: Any) -> str:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout, **kw)
    assert done.returncode == 0, f"{command}: {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding the wheel built from this checkout (and what its extras need)."""
    dist = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--outdir", dist, REPO)
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in dist.iterdir())
    checked = _run(sys.executable, "-m", "twine", "check", "--strict", wheels[0], sdists[0])
    assert checked.count("PASSED") == 2, checked
    environment = tmp_path_factory.mktemp("fresh") / "venv"
    venv.create(environment, with_pip=True, clear=True)
    _run(environment / "bin" / "pip", "install", "--quiet", f"{wheels[0]}[local,mcp,client]")
    return environment


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(data_dir: Path) -> dict[str, str]:
    """The environment without this checkout on any path, nor a developer's REARVIEW_* settings."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("REARVIEW_", "PYTHON", "VIRTUAL_ENV"))}
    return {**kept, "REARVIEW_DATA_DIR": str(data_dir), "REARVIEW_EMBEDDER": "hashing", "REARVIEW_LOG_LEVEL": "WARNING"}


@contextmanager
def serving(environment: Path, data_dir: Path, logs: Path) -> Iterator[str]:
    """`rearview serve` of the fresh environment on a free port, until /v1/health answers; terminated on exit."""
    port = _free_port()
    logs.mkdir(parents=True, exist_ok=True)
    err_path = logs / "serve.err"
    with err_path.open("wb") as stderr:
        proc = subprocess.Popen(
            [str(environment / "bin" / "rearview"), "serve", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=_env(data_dir),
            cwd=logs,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
            while not _healthy(base):
                if proc.poll() is not None:
                    pytest.fail(f"rearview serve exited with {proc.returncode}: {err_path.read_text()}")
                if time.monotonic() > deadline:
                    pytest.fail(f"rearview serve did not answer within {STARTUP_DEADLINE_SECONDS} s")
                time.sleep(0.2)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/v1/health", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


async def _mcp_calls(params: StdioServerParameters) -> tuple[list[str], Any, Any]:
    async with Client(params) as client:
        tools = await client.list_tools()
        remembered = await client.call_tool(
            "remember", {"namespace": NAMESPACE, "content": "The survey team meets in Porto on Friday"}
        )
        recalled = await client.call_tool(
            "recall", {"namespace": NAMESPACE, "query": "Porto train survey", "format": "json"}
        )
        return [t.name for t in tools.tools], remembered, recalled


def test_the_wheel_installs_and_serves_http_mcp_and_the_client(installed: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serving(installed, data_dir, tmp_path / "logs") as base:
        answer = json.loads(
            _run(installed / "bin" / "python", "-c", CLIENT_SCRIPT, base, NAMESPACE, env=_env(data_dir), cwd=tmp_path)
        )
        # The client and the server are the installed wheel's, not this checkout's.
        assert Path(answer["module"]).is_relative_to(installed), answer["module"]
        assert answer["found"] == [answer["id"]]

        params = StdioServerParameters(command=str(installed / "bin" / "rearview"), args=["mcp"], env=_env(data_dir))
        tools, remembered, recalled = run(_mcp_calls(params))
        assert {"remember", "recall", "brief"} <= set(tools)
        assert not remembered.is_error and not recalled.is_error, (remembered.content, recalled.content)
        found = {hit["id"] for hit in recalled.structured_content["results"]}
        # The MCP server reads the same data directory the HTTP server wrote.
        assert {answer["id"], remembered.structured_content["id"]} <= found
