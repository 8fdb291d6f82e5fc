"""Cold start of each Lambda function: the import time of functions/<name>/handler.py, as Lambda's init pays it.

Each function is imported in a fresh interpreter with `python -X importtime`, with the environment the CDK app
gives it (backend aws, Bedrock embedder): the import is all a cold start runs before the first event, since the
services (clients, embedder, resolver) are built on the first invocation. The table gives the total import time
(the root of the importtime tree, in ms) as the median of `--runs` runs, the heaviest top-level imports, and a
baseline measured in the same run: a bare `import rearview` (the shared layer's package) and `python -c pass`.
Target: <= 400 ms per function, except mcp.

Usage: .venv/bin/python bench/cold_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FUNCTIONS = REPO / "functions"
TARGET_MS = 400.0
_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)")
ENV = {
    "REARVIEW_BACKEND": "aws",
    "REARVIEW_EMBEDDER": "bedrock",
    "REARVIEW_AWS__REGION": "us-east-1",
    "REARVIEW_AWS__TABLE_NAME": "rearview",
    "REARVIEW_AWS__OPENSEARCH_ENDPOINT": "https://example.aoss.amazonaws.com",
    "POWERTOOLS_METRICS_NAMESPACE": "Rearview",
}


def _import_code(path: Path | None) -> str:
    if path is None:
        return "import rearview"
    return (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('handler', {str(path)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        f"sys.path.insert(0, {str(path.parent)!r})\n"
        "spec.loader.exec_module(module)\n"
    )


def measure(path: Path | None) -> tuple[float, list[tuple[str, float]]]:
    """(total import ms, [(top-level module, cumulative ms)] heaviest first) for one fresh interpreter."""
    env = {**os.environ, **ENV, "PYTHONPATH": str(REPO / "layers")}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _import_code(path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=REPO,
    )
    top: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        match = _LINE.match(line)
        if match and len(match.group(3)) == 1:  # a top-level import (depth 0)
            top.append((match.group(4), int(match.group(2)) / 1000.0))
    total = sum(ms for _, ms in top)
    return total, sorted(top, key=lambda item: -item[1])[:3]


def interpreter_ms(runs: int) -> float:
    import time

    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    names = sorted(p.parent.name for p in FUNCTIONS.glob("*/handler.py"))
    rows: list[tuple[str, float, str, str]] = []
    for label, path in [("(baseline) import rearview", None)] + [(n, FUNCTIONS / n / "handler.py") for n in names]:
        samples = []
        heaviest: list[tuple[str, float]] = []
        for _ in range(args.runs):
            total, heaviest = measure(path)
            samples.append(total)
        median = statistics.median(samples)
        verdict = "-" if path is None else ("ok" if median <= TARGET_MS or label == "mcp" else "OVER")
        rows.append((label, median, verdict, ", ".join(f"{m} {ms:.0f}" for m, ms in heaviest)))
    print(f"python -c pass (interpreter start, wall): {interpreter_ms(args.runs):.0f} ms; runs per row: {args.runs}")
    print(f"{'function':28} {'import ms':>10} {'<=400':>6}  heaviest top-level imports (cumulative ms)")
    for label, median, verdict, heaviest_text in rows:
        print(f"{label:28} {median:10.0f} {verdict:>6}  {heaviest_text}")


if __name__ == "__main__":
    main()
