"""Per-call latency of the MCP tools, driven by the mcp SDK's own client: over `/mcp` on the local server
(Streamable HTTP, stateless, JSON) and over stdio (`python -m rearview.cli mcp`), next to the same operations
through the REST API of the same server in the same run (the baseline: what MCP's framing adds).

    .venv/bin/python bench/mcp_latency.py [--calls 50] [--memories 200]

Hashing embedder, temporary data directory; the median and p95 of `--calls` calls each, after 3 warm-up calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from rearview.api.local_server import LocalServer
from rearview.bootstrap import build
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings

NS = "bench"
QUERY = {"query": "Which venue did Dana book in Lisbon?", "namespace": NS}
WARMUP = 3


def _summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000


async def _timed(calls: int, once: Callable[[], Awaitable[Any]]) -> list[float]:
    for _ in range(WARMUP):
        await once()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await once()
        samples.append(time.perf_counter() - started)
    return samples


async def _mcp(client_target: Any, calls: int) -> dict[str, list[float]]:
    async with Client(client_target) as client:
        return {
            "memory_stats": await _timed(calls, lambda: client.call_tool("memory_stats", {"namespace": NS})),
            "recall": await _timed(calls, lambda: client.call_tool("recall", QUERY)),
        }


def _rest(url: str, calls: int) -> dict[str, list[float]]:
    def get_stats() -> None:
        with urllib.request.urlopen(f"{url}/v1/namespaces/{NS}/stats") as response:
            response.read()

    def post_recall() -> None:
        body = json.dumps({"query": QUERY["query"]}).encode()
        request = urllib.request.Request(
            f"{url}/v1/namespaces/{NS}/recall", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request) as response:
            response.read()

    async def run(fn: Callable[[], None]) -> list[float]:
        async def once() -> None:
            fn()

        return await _timed(calls, once)

    return {"memory_stats": asyncio.run(run(get_stats)), "recall": asyncio.run(run(post_recall))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--memories", type=int, default=200)
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="rearview-mcp-bench-"))
    settings = Settings(data_dir=data_dir, embedder="hashing", log_level="WARNING")
    services = build(settings)
    services.writer.write_batch(
        NS,
        [
            MemoryWrite(content=f"Dana booked venue {n} in Lisbon for offsite number {n * 31}")
            for n in range(args.memories)
        ],
    )
    rows: list[tuple[str, str, list[float]]] = []
    with LocalServer(settings, services, port=0) as server:
        for tool, samples in _rest(server.url, args.calls).items():
            rows.append(("REST over local HTTP (baseline)", tool, samples))
        for tool, samples in asyncio.run(_mcp(server.url + "/mcp", args.calls)).items():
            rows.append(("MCP over local HTTP (/mcp)", tool, samples))
    services.close()
    stdio = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rearview.cli", "mcp"],
        env={"REARVIEW_DATA_DIR": str(data_dir), "REARVIEW_EMBEDDER": "hashing", "REARVIEW_LOG_LEVEL": "WARNING"},
    )
    for tool, samples in asyncio.run(_mcp(stdio, args.calls)).items():
        rows.append(("MCP over stdio", tool, samples))

    print(f"{args.calls} calls each, {args.memories} memories, hashing embedder")
    print(f"| {'transport':<32} | {'tool':<12} | {'median ms':>9} | {'p95 ms':>7} |")
    print(f"|{'-' * 34}|{'-' * 14}|{'-' * 11}|{'-' * 9}|")
    for transport, tool, samples in rows:
        median, p95 = _summary(samples)
        print(f"| {transport:<32} | {tool:<12} | {median:>9.2f} | {p95:>7.2f} |")


if __name__ == "__main__":
    main()
