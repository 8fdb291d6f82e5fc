"""bench/export_stream.py end to end at a tiny size: load, export streamed over HTTP across several pages and held
whole, report both."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from support.modules import load_module

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_export_benchmark_streams_every_memory_and_reports_the_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.modules["metrics"] = load_module("bench/metrics.py", "metrics")  # export_stream.py imports its sibling
    bench = load_module("bench/export_stream.py", "bench_export_stream")
    # Pages of 100, so that the stream follows its cursor across several of them.
    monkeypatch.setattr("rearview.service.manage.transfer.EXPORT_PAGE_ITEMS", 100)
    out_json = tmp_path / "out.json"

    assert bench.main(["--memories", "450", "--data-dir", str(tmp_path / "db"), "--json-out", str(out_json)]) == 0

    results = json.loads(out_json.read_text(encoding="utf-8"))
    streamed, whole = results["streamed"], results["held_whole"]
    assert streamed["lines"] == whole["lines"] == 450 and streamed["cursor_left"] is None
    assert streamed["bytes"] == whole["bytes"] > 0 and whole["peak_bytes"] > 0
    report = capsys.readouterr().out
    assert "== export of 450 episodes" in report and "held whole (baseline)" in report
