"""The command line as real processes, where the behaviour is about the process: the data directory it opens
depends on the folder it runs in (the nearest `.rearview` at or above it; a read elsewhere creates nothing and says
where it looked), and `make run` announces the inspector and the MCP endpoint, which both answer."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support.artifacts import artifact_dir

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHECKOUT = Path(__file__).resolve().parents[2]
NS = "acme:u-42"
# Bounds on waiting for a process (interpreter, imports, SQLite open); not timing assertions.
COMMAND_TIMEOUT_SECONDS = 120
STARTUP_DEADLINE_SECONDS = 60.0


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any REARVIEW_* setting of the developer's shell, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")}
    return {**env, "REARVIEW_EMBEDDER": "hashing", "COLUMNS": "100", **extra}


def rearview(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rearview.cli", *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
    )


def test_the_store_is_found_from_a_subfolder_and_never_created_by_a_read_elsewhere(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "src" / "deep").mkdir(parents=True)
    elsewhere.mkdir()

    wrote = rearview(project, "remember", NS, "Deploys go out on Tuesdays after the standup")
    assert wrote.returncode == 0, wrote.stderr
    store = project.resolve() / ".rearview"
    assert f"store: created a new, empty store at {store}" in wrote.stderr

    found = rearview(project / "src" / "deep", "recall", NS, "when do deploys go out?", "--json")
    assert found.returncode == 0, found.stderr
    assert f"store: {store} (found in {project.resolve()}, above the current folder)" in found.stderr
    assert "Tuesdays" in json.loads(found.stdout)["results"][0]["content"]

    lost = rearview(elsewhere, "recall", NS, "when do deploys go out?")
    assert lost.returncode == 2
    assert f"no Rearview store at {elsewhere.resolve() / '.rearview'}" in lost.stderr
    assert not (elsewhere / ".rearview").exists()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_make_run_announces_the_inspector_and_the_mcp_endpoint(tmp_path: Path) -> None:
    port = free_port()
    out_path = artifact_dir("make-run") / "banner.txt"
    with out_path.open("w") as out:
        # `-o` takes the run stamp as made: the test runs `make run`'s command, not a pip install.
        make = subprocess.Popen(
            ["make", "-s", "-o", ".venv/.installed-run", "run", f"BIN={Path(sys.executable).parent}"],
            cwd=CHECKOUT,
            env=clean_env(REARVIEW_PORT=str(port), REARVIEW_DATA_DIR=str(tmp_path / "data")),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            banner = _wait_for_banner(out_path, make)
            base = f"http://127.0.0.1:{port}"
            assert f"inspector: {base}/ui" in banner and f"MCP:       {base}/mcp" in banner, banner
            with urllib.request.urlopen(f"{base}/ui", timeout=10) as page:
                assert page.status == 200 and "Rearview inspector" in page.read().decode()
            assert _mcp_initialize(f"{base}/mcp")["result"]["serverInfo"]["name"]
        finally:
            os.killpg(make.pid, signal.SIGTERM)
            make.wait(timeout=30)


def _wait_for_banner(path: Path, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        text = path.read_text()
        if "hindsight:" in text:  # the banner's last line
            return text
        if process.poll() is not None:
            pytest.fail(f"make run exited with {process.returncode}: {text}")
        time.sleep(0.2)
    pytest.fail(f"make run printed no banner within {STARTUP_DEADLINE_SECONDS} s: {path.read_text()}")


def _mcp_initialize(url: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
    }
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer
