"""`rearview serve` as a real process: it answers over HTTP, keeps its data across restarts, learns a lesson from a
failure streak by itself (its consolidation worker) and stops cleanly on SIGTERM, and refuses to listen beyond
loopback without a token."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
T = TypeVar("T")

# Bound on waiting for the server to come up (interpreter, imports, SQLite open); not a timing assertion.
STARTUP_DEADLINE_SECONDS = 30.0
# Bound on waiting for the consolidation worker's run (milliseconds with the rule inducer); not a timing assertion.
LESSON_DEADLINE_SECONDS = 10.0
NAMESPACE = "acme:u-42"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any REARVIEW_* setting of the developer's shell, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")}
    env.update(extra)
    return env


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "rearview.cli", "serve", *args]


def request(
    method: str, url: str, body: dict[str, Any] | None = None, token: str | None = None
) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@contextmanager
def running_server(
    data_dir: Path, logs: Path, *extra: str, preexec: Callable[[], None] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Start `rearview serve` on a free port (`preexec` runs in the child first), wait until /v1/health answers,
    and terminate it on exit."""
    port = free_port()
    logs.mkdir(parents=True, exist_ok=True)
    stdout = (logs / f"serve-{port}.out").open("wb")
    err_path = logs / f"serve-{port}.err"
    stderr = err_path.open("wb")
    proc = subprocess.Popen(
        serve_command("--port", str(port), "--embedder", "hashing", "--data-dir", str(data_dir), *extra),
        stdout=stdout,
        stderr=stderr,
        env=clean_env(REARVIEW_LOG_LEVEL="WARNING"),
        preexec_fn=preexec,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}: {err_path.read_text()}")
            try:
                status, _ = request("GET", f"{base}/v1/health")
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"server did not answer /v1/health within {STARTUP_DEADLINE_SECONDS} s")
            time.sleep(0.1)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        stdout.close()
        stderr.close()


def test_serve_answers_over_http_and_keeps_data_across_restarts(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    content = "Alice moved to Lisbon in March to lead the harbour restoration project"
    query = {"query": "Alice Lisbon harbour", "top_k": 5}

    with running_server(data_dir, tmp_path / "logs") as (base, proc):
        status, health = request("GET", f"{base}/v1/health")
        assert status == 200
        assert health["status"] == "ok"

        status, written = request("POST", f"{base}/v1/namespaces/{NAMESPACE}/memories", {"content": content})
        assert status in (200, 201), written
        assert written["status"] == "stored"

        status, recalled = request("POST", f"{base}/v1/namespaces/{NAMESPACE}/recall", query)
        assert status == 200, recalled
        assert [hit["id"] for hit in recalled["results"]][:1] == [written["id"]]

        proc.terminate()
        # SIGTERM is a clean shutdown: the database is closed and the exit code is 0.
        assert proc.wait(timeout=15) == 0
    out = next((tmp_path / "logs").glob("serve-*.out")).read_text()
    assert "Rearview listening on http://127.0.0.1:" in out

    with running_server(data_dir, tmp_path / "logs") as (base, _):
        status, recalled = request("POST", f"{base}/v1/namespaces/{NAMESPACE}/recall", query)
        assert status == 200, recalled
        assert recalled["results"][0]["id"] == written["id"]
        assert recalled["results"][0]["content"] == content


def eventually(probe: Callable[[], T | None], what: str) -> T:
    """Ask `probe` until it answers (not None), for at most LESSON_DEADLINE_SECONDS: the server is another process,
    so there is no condition to wait on."""
    deadline = time.monotonic() + LESSON_DEADLINE_SECONDS
    while (answer := probe()) is None:
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {LESSON_DEADLINE_SECONDS} s")
        time.sleep(0.1)
    return answer


def test_serve_learns_a_lesson_from_failures_by_itself_and_stops_cleanly(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    with running_server(tmp_path / "data", logs) as (base, proc):
        api = f"{base}/v1/namespaces/{NAMESPACE}"
        for size in (300, 200, 150):
            status, written = request("POST", f"{api}/memories", {
                "content": f"Called the geocoding API with a batch of {size} addresses", "event_type": "tool_call",
                "entities": ["geocoding API"], "outcome": "HTTP 413 Payload Too Large",
            })  # fmt: skip
            assert status == 201, written

        def lesson() -> dict[str, Any] | None:
            status, found = request("POST", f"{api}/recall", {"query": "geocoding API batch", "kinds": ["lesson"]})
            assert status == 200, found
            return found["results"][0] if found["results"] else None

        learnt = eventually(lesson, "no lesson was learnt from three failures")
        assert "413" in learnt["content"]
        status, stats = request("GET", f"{api}/stats")
        assert stats["hindsight"]["last_run_reason"] == "failure_streak"
        status, brief = request("POST", f"{api}/brief", {"task": "Geocode the signups", "tool": "geocoding API"})
        assert status == 200 and brief["items"][0]["memory"]["id"] == learnt["id"]

        proc.terminate()
        # SIGTERM stops the worker gracefully, then the server: exit code 0, no traceback.
        assert proc.wait(timeout=15) == 0
    out = next(logs.glob("serve-*.out")).read_text()
    err = next(logs.glob("serve-*.err")).read_text()
    assert "hindsight: consolidation runs by itself on 3 failures in a row" in out
    assert re.search(r"consolidation worker: [1-9]\d* runs, 0 failed", err), err
    assert "Traceback" not in err


def test_serve_with_a_token_rejects_requests_without_it(tmp_path: Path) -> None:
    with running_server(tmp_path / "data", tmp_path / "logs", "--api-token", "s3cret-token") as (base, _):
        status, body = request("POST", f"{base}/v1/namespaces/{NAMESPACE}/recall", {"query": "anything"})
        assert status == 401, body
        status, body = request(
            "POST", f"{base}/v1/namespaces/{NAMESPACE}/recall", {"query": "anything"}, token="s3cret-token"
        )
        assert status == 200, body


def test_serve_refuses_a_non_loopback_host_without_a_token(tmp_path: Path) -> None:
    result = subprocess.run(
        serve_command("--host", "0.0.0.0", "--port", str(free_port()), "--data-dir", str(tmp_path / "data")),
        capture_output=True,
        text=True,
        env=clean_env(REARVIEW_EMBEDDER="hashing"),
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: host: refusing to listen on non-loopback address '0.0.0.0'")
    assert "REARVIEW_API_TOKEN" in result.stderr
    assert "Traceback" not in result.stderr
    # Refused before anything was opened: no database was created.
    assert not (tmp_path / "data").exists()


def _files_no_larger_than(limit: int) -> Callable[[], None]:
    """A child process whose files cannot grow past `limit` bytes (RLIMIT_FSIZE): a disk that fills up, as the
    kernel reports it (EFBIG), without a disk of that size. SIGXFSZ would kill the process: ignored, so the write
    fails instead."""

    def limit_files() -> None:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_files


def test_a_full_disk_answers_507_and_reads_are_still_served(tmp_path: Path) -> None:
    """Issue 40: a write the disk cannot take was a 500, and recall failed too. It is a 507 naming the data
    directory; what is stored stays readable (list, recall, stats), and nothing half-written shows."""
    data_dir, logs = tmp_path / "data", tmp_path / "logs"
    api = f"/v1/namespaces/{NAMESPACE}"
    with running_server(data_dir, logs) as (base, _):
        status, first = request("POST", f"{base}{api}/memories", {"content": "Booked the Lisbon flight for March"})
        assert status == 201, first
    largest = max(f.stat().st_size for f in data_dir.iterdir() if f.is_file())
    with running_server(data_dir, logs, preexec=_files_no_larger_than(largest + 256 * 1024)) as (base, proc):
        written, answer = 0, (0, dict[str, Any]())
        for i in range(2000):  # far more than the room left: each write adds a few kilobytes
            answer = request("POST", f"{base}{api}/memories", {"content": f"Note {i}: " + "harbour survey " * 120})
            if answer[0] != 201:
                break
            written += 1
        status, body = answer
        assert status == 507, body
        assert body["error"] == "insufficient_storage" and body["field"] == "data_dir", body
        listed_status, listed = request("GET", f"{base}{api}/memories?limit=200")
        assert listed_status == 200 and len(listed["items"]) == written + 1
        recall_status, recalled = request("POST", f"{base}{api}/recall", {"query": "Lisbon flight"})
        assert recall_status == 200 and recalled["results"][0]["id"] == first["id"], recalled
        assert request("GET", f"{base}{api}/stats")[0] == 200
        assert proc.poll() is None
