"""Export at scale: a namespace of --memories episodes exported over HTTP from `rearview serve`'s LocalServer, which
streams it a page at a time, against the baseline of the same export held whole (every page's lines in one list,
as a server that answered with one body would hold them), in the same run.

The episodes (synthetic, deterministic) are loaded through `store.apply` with their real (hashing) vectors; the
server runs in this process, so `tracemalloc` sees its Python allocations: the peak of each way is what it held
at most (SQLite's own cache is C memory and counted in neither). Timings run under tracemalloc, which slows both
ways alike.

    .venv/bin/python bench/export_stream.py --memories 5000      # smoke run
    .venv/bin/python bench/export_stream.py                      # 100,000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from metrics import format_table
from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, build
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode
from rearview.settings import Settings

NAMESPACE = "bench:export"
T0 = datetime(2026, 3, 1, tzinfo=UTC)
WORDS = [
    "Lisbon",
    "Porto",
    "flight",
    "seat",
    "window",
    "aisle",
    "slides",
    "workshop",
    "invoice",
    "landlord",
    "Dana",
    "Ana",
    "train",
    "Vienna",
    "summit",
]
_LOAD_BATCH = 1000
_READ_CHUNK = 64 * 1024


def load(services: Services, count: int) -> float:
    """Write `count` episodes through store.apply; the seconds it took."""
    started = time.perf_counter()
    for start in range(0, count, _LOAD_BATCH):
        episodes = [
            Episode(
                id=f"ep-{i:07d}",
                namespace=NAMESPACE,
                content=f"Note {i}: " + " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12)),
                occurred_at=T0 + timedelta(seconds=i),
                created_at=T0 + timedelta(seconds=i),
                tags=["bench"],
            )
            for i in range(start, min(start + _LOAD_BATCH, count))
        ]
        vectors = services.embedder.embed([e.content for e in episodes])
        services.store.apply(NAMESPACE, ChangeSet(upserts=list(zip(episodes, vectors, strict=True))))
    return time.perf_counter() - started


def streamed(url: str) -> dict[str, Any]:
    """GET the export and read it in chunks, as a client saving it to a file would."""
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    lines = size = 0
    with urllib.request.urlopen(f"{url}/v1/namespaces/{NAMESPACE}/export", timeout=3600) as response:
        next_cursor = response.headers.get("X-Next-Cursor")
        while chunk := response.read(_READ_CHUNK):
            lines += chunk.count(b"\n")
            size += len(chunk)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] - base
    return {"lines": lines, "bytes": size, "seconds": seconds, "peak_bytes": peak, "cursor_left": next_cursor}


def held_whole(services: Services) -> dict[str, Any]:
    """The baseline: every page's lines gathered into one list before answering."""
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    held: list[str] = []
    cursor: str | None = None
    while True:
        page = services.transfer.export_page(NAMESPACE, cursor)
        held.extend(page.lines)
        cursor = page.next_cursor
        if cursor is None:
            break
    body = "".join(f"{line}\n" for line in held)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] - base
    return {"lines": len(held), "bytes": len(body.encode("utf-8")), "seconds": seconds, "peak_bytes": peak}


def report(results: dict[str, Any]) -> str:
    mib = 1024 * 1024
    rows = [
        [name, r["lines"], round(r["bytes"] / mib, 1), round(r["peak_bytes"] / mib, 1), round(r["seconds"], 2)]
        for name, r in (("streamed (LocalServer, HTTP)", results["streamed"]), ("held whole (baseline)",
                                                                               results["held_whole"]))
    ]  # fmt: skip
    title = f"== export of {results['memories']:,} episodes (load {results['load_seconds']:.1f} s) =="
    return format_table(["export", "lines", "body MiB", "peak traced MiB", "seconds"], rows, title=title)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--data-dir", type=Path, default=None, help="where the SQLite file goes (default: a temp dir)")
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        data_dir = args.data_dir or Path(scratch)
        services = build(Settings(data_dir=data_dir, embedder="hashing"))
        try:
            load_seconds = load(services, args.memories)
            tracemalloc.start()
            with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
                stream = streamed(server.url)
            whole = held_whole(services)
            tracemalloc.stop()
        finally:
            services.close()
    results = {"memories": args.memories, "load_seconds": load_seconds, "streamed": stream, "held_whole": whole}
    print(report(results))
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    complete = stream["lines"] == whole["lines"] == args.memories and stream["cursor_left"] is None
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
