"""bench/recall_latency.py end to end at a tiny size: ingest through the write path and store.apply, time recall
against bare FTS5, break recall down by stage, report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from support.modules import load_module

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_latency_benchmark_times_recall_and_each_of_its_stages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sys.modules["metrics"] = load_module("bench/metrics.py", "metrics")  # recall_latency.py imports its siblings
    sys.modules["recall_params"] = load_module("bench/recall_params.py", "recall_params")
    bench = load_module("bench/recall_latency.py", "bench_recall_latency")
    out_json = tmp_path / "out.json"
    argv = ["--total", "600", "--in-namespace", "400", "--write-path", "300", "--queries", "12"]
    assert bench.main([*argv, "--data-dir", str(tmp_path / "db"), "--json-out", str(out_json)]) == 0

    results = json.loads(out_json.read_text(encoding="utf-8"))
    assert results["ingest"]["write_path_episodes"] == 300 and results["ingest"]["applied_episodes"] == 300
    assert results["latency_ms"]["recall"]["p50"] > 0
    stages = results["recall_stages_ms"]
    for name in ("parse", "keyword", "vector", "fuse", "rank", "collapse", "budget"):
        assert stages[name]["runs"] == 12 and stages[name]["p95"] >= stages[name]["p50"] >= 0, name
    report = capsys.readouterr().out
    assert "== where recall's time goes" in report and "== latency on bench:target (400 episodes) ==" in report
