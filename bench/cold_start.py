"""Cold start of each Lambda function: the import time of functions/<name>/handler.py, as Lambda's init pays it,
this tree against a baseline commit in the same run.

Each function is imported in a fresh interpreter with `python -X importtime`, with the environment the CDK app
gives it (backend aws, Bedrock embedder): the import is all a cold start runs before the first event, since the
services (clients, embedder, resolver) are built on the first invocation. The table gives, as the median of `--runs`
runs (baseline and tree alternating, so a machine getting busier weighs on both alike):

- the total import time (the root of the importtime tree, wall ms) and the interpreter's CPU time for the whole
  process (user + system ms, `python -c pass` included): CPU time barely moves with the machine's load, and it is
  what a Lambda's CPU share divides (infra/README.md, "Cold starts, SnapStart and memory size");
- the heaviest top-level imports;
- a baseline: the same functions and library at `--baseline` (`git archive <ref> layers functions` into a temporary
  directory), and a bare `import rearview`.

`--cpu-shares 0.29 0.58 1.0` imports the mcp and recall handlers again inside a CPU quota (a cgroup v1 `cpu`
controller's `cfs_quota_us`; Lambda gives a function memory / 1,769 MB of a vCPU), to show how init time scales with
the share. It needs a writable /sys/fs/cgroup/cpu and says so when there is none. Target: <= 400 ms per function,
except mcp.

Usage: .venv/bin/python bench/cold_start.py [--runs 5] [--baseline 8f5dc00|none] [--cpu-shares 0.58 1.0]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from baseline import extract_tree

REPO = Path(__file__).resolve().parents[1]
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
_CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
_PERIOD_US = 100_000


@dataclass(frozen=True)
class Code:
    """A version of the code: its library (`layers`) and its functions."""

    label: str
    root: Path

    def handler(self, name: str) -> Path:
        return self.root / "functions" / name / "handler.py"


@dataclass
class Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    heaviest: list[tuple[str, float]] = field(default_factory=list)


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


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def measure(
    code: Code, path: Path | None, preexec: Callable[[], None] | None = None
) -> tuple[float, float, list[tuple[str, float]]]:
    """(total import ms, process CPU ms, [(top-level module, cumulative ms)] heaviest first), one fresh interpreter."""
    env = {**os.environ, **ENV, "PYTHONPATH": str(code.root / "layers")}
    before = _children_cpu_ms()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _import_code(path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=REPO,
        preexec_fn=preexec,  # noqa: PLW1509 - only writes the child's pid into a cgroup
    )
    cpu = _children_cpu_ms() - before
    top: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        match = _LINE.match(line)
        if match and len(match.group(3)) == 1:  # a top-level import (depth 0)
            top.append((match.group(4), int(match.group(2)) / 1000.0))
    total = sum(ms for _, ms in top)
    return total, cpu, sorted(top, key=lambda item: -item[1])[:3]


def interpreter_ms(runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def extract(ref: str, into: Path) -> Code:
    """The library and functions of `ref`, extracted under `into`."""
    return Code(f"baseline {ref}", extract_tree(ref, into, "layers", "functions"))


def compare(codes: list[Code], names: list[str], runs: int) -> dict[tuple[str, str], Samples]:
    """Every (code, function) measured `runs` times, the codes alternating within each run."""
    found: dict[tuple[str, str], Samples] = {}
    for label in ["(bare) import rearview", *names]:
        for _ in range(runs):
            for code in codes:
                path = None if label.startswith("(bare)") else code.handler(label)
                if path is not None and not path.is_file():
                    continue
                total, cpu, heaviest = measure(code, path)
                samples = found.setdefault((code.label, label), Samples())
                samples.wall.append(total)
                samples.cpu.append(cpu)
                samples.heaviest = heaviest
    return found


def report(found: dict[tuple[str, str], Samples], codes: list[Code], names: list[str]) -> list[str]:
    header = f"{'function':24} " + " ".join(f"{c.label[:22]:>22}" for c in codes)
    lines = [header + f" {'tree/base':>9} {'<=400':>6}  heaviest top-level imports in this tree (cumulative ms)"]
    lines.append(" " * 25 + " ".join(f"{'import ms / CPU ms':>22}" for _ in codes))
    for label in ["(bare) import rearview", *names]:
        cells, walls = [], []
        for code in codes:
            samples = found.get((code.label, label))
            if samples is None:
                cells.append(f"{'-':>22}")
                continue
            wall, cpu = statistics.median(samples.wall), statistics.median(samples.cpu)
            walls.append(wall)
            cells.append(f"{wall:>12.0f} / {cpu:>7.0f}")
        ratio = f"{walls[-1] / walls[0]:.2f}x" if len(walls) == len(codes) and len(codes) > 1 else "-"
        mine = found.get((codes[-1].label, label))
        verdict = "-" if label.startswith("(bare)") or not walls else ("ok" if walls[-1] <= TARGET_MS else "OVER")
        if label == "mcp" and verdict == "OVER":
            verdict = "(mcp)"
        heaviest = ", ".join(f"{m} {ms:.0f}" for m, ms in mine.heaviest) if mine else ""
        lines.append(f"{label:24} {' '.join(cells)} {ratio:>9} {verdict:>6}  {heaviest}")
    return lines


@contextlib.contextmanager
def cpu_quota(share: float) -> Iterator[Callable[[], None] | None]:
    """A cgroup v1 `cpu` group holding `share` of one CPU; yields the preexec function that puts a child in it
    (None without a writable cgroup)."""
    group = _CGROUP_CPU / f"rearview-cold-start-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text(str(_PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(int(share * _PERIOD_US)))
    except OSError:
        yield None
        return
    tasks = group / "tasks"

    def join() -> None:
        tasks.write_text(str(os.getpid()))

    try:
        yield join
    finally:
        group.rmdir()


def scaling(codes: list[Code], shares: list[float], runs: int) -> list[str]:
    """Import wall ms of the mcp and recall handlers inside each CPU quota."""
    columns = [f"{name} ({code.label})" for code in codes for name in ("mcp", "recall")]
    lines = [f"{'CPU share':>10} " + " ".join(f"{column:>28}" for column in columns)]
    for share in shares:
        with cpu_quota(share) as join:
            if join is None:
                return [f"no writable cgroup v1 cpu controller at {_CGROUP_CPU}: the CPU-share table is not measured"]
            cells = []
            for code in codes:
                for name in ("mcp", "recall"):
                    walls = [measure(code, code.handler(name), join)[0] for _ in range(runs)]
                    cells.append(f"{statistics.median(walls):>28.0f}")
            lines.append(f"{share:>10.2f} " + " ".join(cells))
    return lines


_FIRST_CALL = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("handler", {handler!r})
handler = importlib.util.module_from_spec(spec)
sys.path.insert(0, {folder!r})
spec.loader.exec_module(handler)
from rearview.api import snapstart
modules = handler.runtime.snapshot_modules
start, cpu = time.perf_counter(), time.process_time()
snapstart.prime(modules)
print((time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000)
"""


def first_call_imports(names: list[str], runs: int) -> list[str]:
    """What each function's first invocation imports after init (the modules SnapStart's hook loads before the
    snapshot instead): wall and CPU ms, this tree only."""
    lines = [f"{'function':24} {'first-call imports ms':>22} {'CPU ms':>8}"]
    env = {**os.environ, **ENV, "PYTHONPATH": str(REPO / "layers")}
    for name in names:
        handler = REPO / "functions" / name / "handler.py"
        code = _FIRST_CALL.format(handler=str(handler), folder=str(handler.parent))
        walls, cpus = [], []
        for _ in range(runs):
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            wall, cpu = (float(v) for v in done.stdout.split())
            walls.append(wall)
            cpus.append(cpu)
        lines.append(f"{name:24} {statistics.median(walls):>22.0f} {statistics.median(cpus):>8.0f}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--baseline", default="8f5dc00", help="a git ref to compare against (default: before the lazy imports), or none"
    )
    parser.add_argument("--cpu-shares", type=float, nargs="*", default=[], help="CPU quotas to import under")
    args = parser.parse_args(argv)
    tree = Code("this tree", REPO)
    names = sorted(p.parent.name for p in (REPO / "functions").glob("*/handler.py"))
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="rearview-cold-start-") as tmp:
        codes = [tree] if args.baseline == "none" else [extract(args.baseline, Path(tmp)), tree]
        found = compare(codes, names, args.runs)
        print(
            f"python -c pass (interpreter start, wall): {interpreter_ms(args.runs):.0f} ms; runs per cell: {args.runs}"
        )
        print("\n".join(report(found, codes, names)))
        print()
        print("imported on the first invocation (lazily), or before the snapshot with SnapStart (this tree):")
        print("\n".join(first_call_imports(["mcp", "recall", "write"], args.runs)))
        if args.cpu_shares:
            print()
            print("import wall ms inside a CPU quota (median of the runs):")
            print("\n".join(scaling(codes, args.cpu_shares, args.runs)))
    print(f"load average (1 min) before / after: {load:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
