"""Where the write path's time goes at one namespace size: cProfile over `writer.write_batch` (the same corpus and
batches as `write_rate.py rate`), reported as milliseconds a write in each part of the path, beside the rate.

Steady (the default): the namespace bulk-loaded to --size, one batch written and the graph work let finish, then
--window writes profiled. `--after-load`: the window starts right after the load, while its graph is still being
built, and runs for --seconds (what `write_rate.py rate --after-load --seconds 60` times). cProfile slows Python
code, so the rate printed here is below `write_rate.py`'s: compare the parts with each other, not with that rate.

    .venv/bin/python bench/write_profile.py --size 100000
    .venv/bin/python bench/write_profile.py --size 100000 --after-load --seconds 30
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from metrics import format_table
from write_rate import NAMESPACE, START, Namespace, write_window

# The parts of the path, each a function's cumulative time (they nest: "vector search" holds "coarse cells").
PARTS: list[tuple[str, str, str]] = [
    ("write_batch (all)", "service/write.py", "write_batch"),
    ("duplicate search", "service/write.py", "_stored_neighbours"),
    ("  through the graph", "adapters/sqlite/vector_cache.py", "_ann_many"),
    ("  through coarse cells", "adapters/sqlite/vector_cache.py", "_cells_many"),
    ("redaction", "service/redaction/requests.py", "redact_request"),
    ("embedding", "adapters/hashing_embedder.py", "embed"),
    ("planning", "service/write.py", "_plan_one"),
    ("store.apply", "adapters/sqlite/memory_store.py", "_apply"),
    ("  full-text insert", "adapters/sqlite/namespace_fts.py", "index_inserted"),
    ("  caches after the change set", "adapters/sqlite/vector_caches.py", "_on_applied"),
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--window", type=int, default=3000, help="writes profiled (steady)")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--after-load", action="store_true")
    parser.add_argument("--seconds", type=float, default=30.0, help="the window after a load")
    args = parser.parse_args(argv)

    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.settings import Settings

    clock = ManualClock(START)
    embedder = HashingEmbedder(dim=512)
    with tempfile.TemporaryDirectory(prefix="rearview-write-profile-") as tmp:
        services = build(Settings(embedder="hashing", data_dir=Path(tmp)), clock=clock, embedder=embedder)
        wait = getattr(services.index, "wait_for_graphs", lambda: True)
        grown = Namespace(services.store, embedder, seed=42)
        grown.bulk_load(args.size)
        clock.set(START + timedelta(minutes=grown.size))
        if not args.after_load:
            services.writer.write_batch(NAMESPACE, grown.writes(args.batch))
            wait()
        seconds = args.seconds if args.after_load else None
        batches = grown.batches(args.window, args.batch, seconds)
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        statuses, _ = write_window(services.writer, batches, started, seconds)
        profile.disable()
        elapsed = time.perf_counter() - started
        services.close()
    writes = sum(statuses.values())
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    rows = []
    for label, path, name in PARTS:
        total = sum(v[3] for (file, _, func), v in stats.items() if file.endswith(path) and func == name)
        rows.append([label, f"{total * 1000 / max(writes, 1):.3f}"])
    mode = f"after a load, {args.seconds:.0f} s" if args.after_load else "steady"
    title = f"== the write path at {args.size:,} ({mode}): {writes:,} writes, {writes / elapsed:,.0f}/s profiled =="
    print(format_table(["part", "ms a write"], rows, title=title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
