"""bench/cold_start.py and bench/small_namespaces.py end to end at a tiny size, each against a baseline extracted
from git (HEAD: the same code, so the rankings must agree and the table must say so)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from support.modules import load_module

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_cold_start_compares_every_function_with_the_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    sys.modules["baseline"] = load_module("bench/baseline.py", "baseline")
    bench = load_module("bench/cold_start.py", "bench_cold_start")
    bench.main(["--runs", "1", "--baseline", "HEAD"])
    out = capsys.readouterr().out
    functions = sorted(p.parent.name for p in Path("functions").glob("*/handler.py"))
    assert "baseline HEAD" in out and "this tree" in out
    for name in functions:
        assert any(line.startswith(name + " ") for line in out.splitlines()), name
    # The first invocation's imports, which SnapStart moves into the snapshot.
    assert "imported on the first invocation" in out and any(line.startswith("mcp ") for line in out.splitlines())


def test_small_namespaces_times_both_codes_and_checks_the_rankings_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sys.modules["metrics"] = load_module("bench/metrics.py", "metrics")
    sys.modules["baseline"] = load_module("bench/baseline.py", "baseline")
    bench = load_module("bench/small_namespaces.py", "bench_small_namespaces")
    out_json = tmp_path / "small.json"
    argv = ["--sizes", "300", "--queries", "6", "--repeat", "1", "--baseline", "HEAD", "--json-out", str(out_json)]
    assert bench.main(argv) == 0
    report = capsys.readouterr().out
    tree_row = next(line for line in report.splitlines() if "this tree" in line)
    assert tree_row.rstrip().endswith("yes"), tree_row
    summary = json.loads(out_json.read_text(encoding="utf-8"))
    assert set(summary["300"]) == {"baseline", "tree"}
    assert len(summary["300"]["tree"]["wall"]) == 2 * 6  # two runs of the tree, six queries once each
    assert "rank" in summary["300"]["tree"]["stages"]
