"""Bulk load through `store.apply`, this tree against a baseline tree's code in the same run.

The corpus is `bench/peers.py`'s (its sentences, its 384-dimension hashing vectors, the queried namespace holding
--share of the corpus and the rest in namespaces of 1,000), loaded the way peers.py loads Rearview: episodes built
from the corpus and applied in change sets of up to 10,000, one namespace per change set, through a store built by
`bootstrap.build` (so the search index and its background graph work are there, as in a server). Each tree runs in
its own process, this one and the baseline (`git archive` of --baseline, on PYTHONPATH), the order alternating per
--repeat; a row gives the best of the repeats: episodes per second (wall), the process's CPU seconds (every thread:
the graph keeper's work during the load included), the time the background graph work took to finish after it, and
the garbage collector's part: one full collection right after start-up (the pause a request that triggers one
waits for), then the seconds spent in collections during the load, and how many of them were full.

    .venv/bin/python bench/bulk_apply.py --sizes 10000 100000 --shares 0.1 1.0 --baseline 1be74c6
    .venv/bin/python bench/bulk_apply.py --sizes 30000 --shares 1.0 --profile /tmp/apply.prof   # this tree, cProfile
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from baseline import extract_layers

REPO = Path(__file__).resolve().parents[1]
THIS = "this tree"


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_load(corpus: Path, store: Path, profile: Path | None) -> dict[str, Any]:
    """Load the corpus into a new store (this process's tree); the figures."""
    from peers import DIM, SPAN_SECONDS, START, Workload, apply_episodes
    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.domain.timestamps import utc_from_epoch
    from rearview.settings import Settings

    work = Workload(corpus)
    clock = ManualClock(utc_from_epoch(START + SPAN_SECONDS + 86_400))
    services = build(
        Settings(embedder="hashing", hashing_dim=DIM, data_dir=store), clock=clock, embedder=HashingEmbedder(dim=DIM)
    )

    def load() -> None:
        apply_episodes(services.store, work)

    started = time.perf_counter()
    gc.collect()
    full_ms = (time.perf_counter() - started) * 1000
    collections = _CollectorClock()
    gc.callbacks.append(collections)
    cpu, started = _cpu_seconds(), time.perf_counter()
    if profile is not None:
        import cProfile

        cProfile.runctx("load()", globals(), {"load": load}, str(profile))
    else:
        load()
    loaded, loaded_cpu = time.perf_counter() - started, _cpu_seconds() - cpu
    gc.callbacks.remove(collections)
    started = time.perf_counter()
    wait = getattr(services.index, "wait_for_graphs", None)
    if wait is not None:
        wait()
    settled = time.perf_counter() - started
    services.close()
    docs = int(work.vectors.shape[0])
    return {
        "docs": docs,
        "per_s": docs / loaded,
        "cpu_s": loaded_cpu,
        "settle_s": settled,
        "full_collection_ms": full_ms,
        "gc_s": collections.seconds,
        "full_collections": collections.full,
    }


class _CollectorClock:
    """A gc callback: the seconds spent in collections, and how many were full (generation 2)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._started
        self.full += info["generation"] == 2


def run_tree(layers: Path, corpus: Path, scratch: Path, profile: Path | None = None) -> dict[str, Any]:
    out = scratch / "result.json"
    store = scratch / "store"
    command = [sys.executable, __file__, "worker", str(corpus), str(store), str(out), str(profile or "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "bench"), str(layers)])}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    result = dict(json.loads(out.read_text(encoding="utf-8")))
    subprocess.run(["rm", "-rf", str(store)], check=True)
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--shares", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--baseline", default=None, help="also load with this commit's layers/ (git archive)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--profile", type=Path, default=None, help="cProfile this tree's load into this file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["worker"]:
        corpus, store, out = Path(raw[1]), Path(raw[2]), Path(raw[3])
        profile = Path(raw[4]) if len(raw) > 4 and raw[4] else None
        out.write_text(json.dumps(run_load(corpus, store, profile)), encoding="utf-8")
        return 0
    args = parse_args(raw)
    from peers import make_corpus

    print(
        "| tree | episodes | queried share | episodes/s (best) | CPU s of the load | graph work after s "
        "| a full collection after start-up ms | GC s in the load (full collections) | runs |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="rearview-bulk-") as tmp:
        trees = {THIS: REPO / "layers"}
        if args.baseline:
            trees[f"baseline {args.baseline}"] = extract_layers(args.baseline, Path(tmp) / "baseline")
        for size in args.sizes:
            for share in args.shares:
                corpus = Path(tmp) / f"corpus-{size}-{share}"
                corpus.mkdir()
                make_corpus(corpus, size, share, queries=10, seed=args.seed)
                runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
                for repeat in range(args.repeat):
                    names = list(trees) if repeat % 2 == 0 else list(reversed(trees))
                    for name in names:
                        profile = args.profile if name == THIS else None
                        runs[name].append(run_tree(trees[name], corpus, Path(tmp), profile))
                for name, results in runs.items():
                    best = max(results, key=lambda r: r["per_s"])
                    rates = ", ".join(f"{r['per_s']:,.0f}" for r in results)
                    print(
                        f"| {name} | {size:,} | {share:.0%} | {best['per_s']:,.0f} | {best['cpu_s']:.1f} | "
                        f"{best['settle_s']:.1f} | {best['full_collection_ms']:.1f} | {best['gc_s']:.2f} "
                        f"({best['full_collections']}) | {rates} |",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
