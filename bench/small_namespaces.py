"""Recall's fixed cost on small namespaces: p50 / p95 at 1,000 and 10,000 episodes, this tree against a baseline
commit in the same run, and whether the two rank alike.

The baseline's library (`git archive <ref> layers`) is extracted into a temporary directory and put first on
PYTHONPATH; both run with this venv and this tree's benchmark code (`recall_latency.py`'s sentences, write path
and queries), each (size, code) in its own process, in the order baseline, this tree, this tree, baseline, so that
a machine getting busier or quieter weighs on both alike. Each process writes the namespace through the write
path, records its query vectors in an untimed pass (latency excludes the query embedding), warms up, then times
every query --repeat times. It reports:

- recall p50 / p95 in wall-clock time, and p50 in this thread's CPU time (steadier on a shared machine);
- the two primitive searches alone (keyword and vector, the pool's width), the floor under the pipeline;
- each stage's p50 from explain traces (a stage that builds trace rows pays for them there, so these add up to
  more than a recall without explain);
- whether every query's ranked ids and scores are the same as the baseline's (recorded before any timing, with
  `record=False`, so access counts do not move them).

    .venv/bin/python bench/small_namespaces.py                       # 1k and 10k against 8f5dc00 (before this work)
    .venv/bin/python bench/small_namespaces.py --baseline main       # against another ref
    .venv/bin/python bench/small_namespaces.py --sizes 1000 --baseline none
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from baseline import extract_layers

REPO = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
TARGET_P50_MS = 3.0


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))] if ordered else float("nan")


# --- the worker (one size, one code) ---------------------------------------------------------------------------


def worker(size: int, queries: int, repeat: int, out: Path) -> None:
    """Write a namespace of `size`, time recall over it, write the figures to `out` as JSON."""
    import rearview
    import recall_latency as rl
    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.domain.recall import RecallQuery
    from rearview.settings import Settings

    with tempfile.TemporaryDirectory(prefix="rearview-small-") as tmp:
        clock = ManualClock(rl.START)
        embedder = rl.PrecomputedQueryEmbedder(HashingEmbedder(dim=512))
        services = build(Settings(embedder="hashing", data_dir=Path(tmp)), clock=clock, embedder=embedder)
        rl.ingest(services, clock, rl.Plan.make(size, size), rl.SentenceGenerator(seed=42), size, lambda _: None)
        clock.set(rl.START + rl.SPAN + timedelta(days=1))
        texts = rl.make_queries(services, size, queries, seed=49)
        embedder.recording = True
        ranked = []
        for text in texts:  # records the query vectors; the rankings, before any access is counted
            resp = services.recaller.recall(rl.TARGET_NAMESPACE, RecallQuery(query=text, top_k=10), record=False)
            ranked.append([[hit.id, hit.score] for hit in resp.results])
        embedder.recording = False
        misses = embedder.misses
        figures = _timed(services, texts, list(embedder.inner.embed(texts)), repeat)
        if embedder.misses != misses:
            raise RuntimeError("a query was embedded while timed")
        services.close()
    figures.update(library=str(Path(rearview.__file__).parent), ranked=ranked)
    out.write_text(json.dumps(figures), encoding="utf-8")


def _timed(services: Any, texts: list[str], vectors: list[Any], repeat: int) -> dict[str, Any]:
    """Recall and the two primitive searches timed over `texts` (after a warm-up pass), and each stage's p50 from
    explain traces. `vectors` (the texts embedded untimed) serve the primitive searches alone."""
    import recall_latency as rl
    from rearview.domain.recall import RecallQuery
    from rearview.domain.search import MemoryFilter

    ns, pool = rl.TARGET_NAMESPACE, services.recaller.tuning.candidates_per_list
    for text in texts:
        services.recaller.recall(ns, RecallQuery(query=text, top_k=10))
    wall: list[float] = []
    cpu: list[float] = []
    primitives: list[float] = []
    for _ in range(repeat):
        for text, vector in zip(texts, vectors, strict=True):
            t0, c0 = time.perf_counter(), time.thread_time()
            services.recaller.recall(ns, RecallQuery(query=text, top_k=10))
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.thread_time() - c0) * 1000)
            t0 = time.perf_counter()
            services.index.keyword_search(ns, text, MemoryFilter(), pool)
            services.index.vector_search(ns, vector, MemoryFilter(), pool)
            primitives.append((time.perf_counter() - t0) * 1000)
    stages: dict[str, list[float]] = {}
    for text in texts:
        trace = services.recaller.recall(ns, RecallQuery(query=text, top_k=10, explain=True)).trace
        for stage in trace.stages if trace is not None else []:
            stages.setdefault(stage.stage, []).append(stage.millis)
    return {
        "wall": wall,
        "cpu": cpu,
        "primitives": primitives,
        "stages": {name: _percentile(values, 50) for name, values in stages.items()},
    }


# --- the parent ------------------------------------------------------------------------------------------------


def run_one(size: int, code: str, library: Path | None, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    out = tmp / f"{code}-{size}-{time.monotonic_ns()}.json"
    env = dict(os.environ)
    path = [str(BENCH)] + ([str(library)] if library is not None else [])
    env["PYTHONPATH"] = os.pathsep.join([*path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, __file__, "--worker", str(size), "--queries", str(args.queries)]
    subprocess.run([*command, "--repeat", str(args.repeat), "--out", str(out)], env=env, check=True)
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs of one (size, code) pooled: all timings together, each stage's p50 the mean of the runs'."""
    stages: dict[str, list[float]] = {}
    for run in runs:
        for name, value in run["stages"].items():
            stages.setdefault(name, []).append(value)
    return {
        "wall": [v for run in runs for v in run["wall"]],
        "cpu": [v for run in runs for v in run["cpu"]],
        "primitives": [v for run in runs for v in run["primitives"]],
        "stages": {name: sum(values) / len(values) for name, values in stages.items()},
        "ranked": runs[0]["ranked"],
        "library": runs[0]["library"],
    }


def fmt(value: float) -> str:
    return f"{value:.2f}"


def report(results: dict[int, dict[str, dict[str, Any]]], baseline: str | None, loads: list[float]) -> str:
    from metrics import format_table

    out: list[str] = []
    rows: list[list[object]] = []
    for size, by_code in results.items():
        base = by_code.get("baseline")
        for code, r in by_code.items():
            p50, p95, cpu = (_percentile(r["wall"], 50), _percentile(r["wall"], 95), _percentile(r["cpu"], 50))
            ratio = f"{p50 / _percentile(base['wall'], 50):.2f}x" if base is not None else "-"
            same = "-" if base is None or code == "baseline" else ("yes" if r["ranked"] == base["ranked"] else "NO")
            name = f"baseline {baseline}" if code == "baseline" else "this tree"
            primitives = _percentile(r["primitives"], 50)
            rows.append([f"{size:,}", name, fmt(p50), fmt(p95), fmt(cpu), ratio, fmt(primitives), same])
    out.append(
        format_table(
            ["episodes", "code", "p50 ms", "p95 ms", "CPU p50 ms", "p50 vs baseline", "2 searches p50", "same ranking"],
            rows,
            title="== recall on one namespace (hashing embedder, excl. the query embedding) ==",
        )
    )
    for size, by_code in results.items():
        names = list(next(iter(by_code.values()))["stages"])
        srows = [[name, *(fmt(r["stages"].get(name, float("nan"))) for r in by_code.values())] for name in names]
        out.append("")
        out.append(format_table(["stage", *by_code], srows, title=f"== stage p50 ms at {size:,} (explain on) =="))
    small = min(results)
    mine = _percentile(results[small]["tree"]["wall"], 50)
    verdict = "met" if mine <= TARGET_P50_MS else "NOT met"
    out.append("")
    out.append(f"target: p50 <= {TARGET_P50_MS} ms at {small:,}: {mine:.2f} ms, {verdict} (on this machine, now)")
    out.append(f"load average (1 min) before / after: {loads[0]:.1f} / {loads[1]:.1f} on {os.cpu_count()} cores")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument(
        "--baseline",
        default="8f5dc00",
        help="a git ref whose library is the baseline (default: before this work), or none",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3, help="times each query is timed in each process")
    parser.add_argument("--json-out", type=Path, default=None)
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(args.worker, args.queries, args.repeat, args.out)
        return 0
    loads = [os.getloadavg()[0]]
    results: dict[int, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="rearview-small-bench-") as tmp_name:
        tmp = Path(tmp_name)
        library = None if args.baseline == "none" else extract_layers(args.baseline, tmp / "baseline")
        order = ["tree"] if library is None else ["baseline", "tree", "tree", "baseline"]
        for size in args.sizes:
            runs: dict[str, list[dict[str, Any]]] = {}
            for code in order:
                print(f"  {size:,} episodes, {code} ...", file=sys.stderr, flush=True)
                code_library = library if code == "baseline" else None
                runs.setdefault(code, []).append(run_one(size, code, code_library, args, tmp))
            results[size] = {code: merged(code_runs) for code, code_runs in sorted(runs.items())}
    loads.append(os.getloadavg()[0])
    print(report(results, args.baseline if library is not None else None, loads))
    if args.json_out:
        summary = {
            size: {code: {k: v for k, v in r.items() if k != "ranked"} for code, r in by_code.items()}
            for size, by_code in results.items()
        }
        args.json_out.write_text(json.dumps(summary), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
