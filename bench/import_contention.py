"""One tenant's import against another's recall: the latency of a small recall while a 1,000-memory import runs on
the same local server, for this tree and a baseline commit's server in the same run.

    .venv/bin/python bench/import_contention.py [--baseline main] [--embedder minilm] [--imports 3]

Each server is `rearview serve` in a process of its own (the baseline's `layers` from `git archive` on the path),
on a fresh data directory. A reader namespace holds 200 of LoCoMo's turns; each import brings 1,000 others into a
namespace of its own (JSON `{items}`, as `rearview import` sends them). While an import runs, a client recalls from
the reader namespace in a loop, one request at a time; the table gives the recalls' latencies (p50, p99, max) with
the server idle and during the imports, and how long the imports took. The machine is shared: read the two servers
against each other, in the same run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from baseline import REPO, extract_layers
from metrics import format_table

READER = "bench:reader"
QUERY = {"query": "what did they say about painting and the weekend", "top_k": 5}
_STARTUP_SECONDS = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _call(port: int, method: str, path: str, body: Any = None) -> tuple[int, float]:
    """Status and seconds of one request on a connection of its own."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    connection.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response.status, time.perf_counter() - started


@contextmanager
def served(layers: Path, embedder: str) -> Iterator[int]:
    """`rearview serve` from `layers` on a fresh data directory; its port."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as data:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")}
        env.update(PYTHONPATH=str(layers), REARVIEW_LOG_LEVEL="WARNING", REARVIEW_HINDSIGHT__WORKER="false")
        command = [sys.executable, "-m", "rearview.cli", "serve", "--port", str(port), "--data-dir", data,
                   "--embedder", embedder]  # fmt: skip
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + _STARTUP_SECONDS
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
                try:
                    if _call(port, "GET", "/v1/health")[0] == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not start")
                time.sleep(0.2)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def _turns(data: Path) -> list[str]:
    with (data / "locomo10_turns.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines if line.strip()]


def _lines(turns: list[str], first: int, count: int) -> list[dict[str, Any]]:
    at = "2026-01-02T03:04:05Z"
    return [
        {"id": f"imp-{first + i}", "namespace": "x", "layer": "episodic", "content": text, "created_at": at,
         "occurred_at": at}
        for i, text in enumerate(turns[first : first + count])
    ]  # fmt: skip


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def _import(
    port: int, namespace: str, body: dict[str, Any], result: list[tuple[int, float]], done: threading.Event
) -> None:
    try:
        result.append(_call(port, "POST", f"/v1/namespaces/{namespace}/import", body))
    finally:
        done.set()


def measure(port: int, turns: list[str], imports: int, idle_recalls: int) -> dict[str, Any]:
    for start in range(0, 200, 100):
        items = [{"content": text} for text in turns[start : start + 100]]
        assert _call(port, "POST", f"/v1/namespaces/{READER}/memories/batch", {"items": items})[0] == 200
    for _ in range(5):
        _call(port, "POST", f"/v1/namespaces/{READER}/recall", QUERY)
    idle = [_call(port, "POST", f"/v1/namespaces/{READER}/recall", QUERY)[1] for _ in range(idle_recalls)]
    during: list[float] = []
    import_seconds: list[float] = []
    for n in range(imports):
        body = {"items": _lines(turns, 200 + n * 1000, 1000)}
        done = threading.Event()
        result: list[tuple[int, float]] = []

        thread = threading.Thread(target=_import, args=(port, f"bench:import-{n}", body, result, done))
        thread.start()
        while not done.is_set():  # every recall started while the import runs counts, however long it waits
            during.append(_call(port, "POST", f"/v1/namespaces/{READER}/recall", QUERY)[1])
        thread.join()
        assert result and result[0][0] == 200, result
        import_seconds.append(result[0][1])
    return {"idle": idle, "during": during, "imports": import_seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="main", help="the commit whose server to compare with (default: main)")
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hashing"])
    parser.add_argument("--imports", type=int, default=3, help="1,000-memory imports to run (default 3)")
    parser.add_argument("--idle-recalls", type=int, default=50)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "benchmarks" / "locomo")
    args = parser.parse_args(argv)
    turns = _turns(args.data)
    needed = 200 + 1000 * args.imports
    if len(turns) < needed:
        raise SystemExit(f"need {needed} turns, {args.data} has {len(turns)}")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        variants = {"this tree": REPO / "layers", args.baseline: extract_layers(args.baseline, Path(tmp))}
        for name, layers in variants.items():
            with served(layers, args.embedder) as port:
                results[name] = measure(port, turns, args.imports, args.idle_recalls)
    rows: list[list[object]] = []
    for name, got in results.items():
        idle, during, imports = got["idle"], got["during"], got["imports"]
        rows.append([
            name, len(idle), statistics.median(idle) * 1000, _percentile(idle, 0.99) * 1000,
            len(during), statistics.median(during) * 1000 if during else float("nan"),
            _percentile(during, 0.99) * 1000, max(during, default=float("nan")) * 1000, statistics.mean(imports),
        ])  # fmt: skip
    headers = ["server", "idle n", "idle p50 ms", "idle p99 ms", "during n", "during p50 ms", "during p99 ms",
               "during max ms", "import s"]  # fmt: skip
    title = (f"A small recall while {args.imports} imports of 1,000 memories run ({args.embedder} embedder; "
             f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, shared)")  # fmt: skip
    print(format_table(headers, rows, title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
