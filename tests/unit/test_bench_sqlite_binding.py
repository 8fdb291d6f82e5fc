"""bench/sqlite_binding.py runs end to end on a small table: the three ways of inserting store the same rows (the
script checks, and raises if not) and it prints its table with the baseline."""

from __future__ import annotations

import pytest

from support.modules import load_module

pytestmark = pytest.mark.unit

m = load_module("bench/sqlite_binding.py", "bench_sqlite_binding")


def test_the_binding_bench_prints_each_way_against_the_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    assert m.main(["--rows", "600", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("512 episode rows in chunks of 256")
    assert f"| {m.BASELINE} | " in out and "| 1.00x |" in out
    assert out.count("\n| ") == 5  # the header and the four ways
