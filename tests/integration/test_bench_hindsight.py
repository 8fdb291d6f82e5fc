"""The hindsight benchmarks stay runnable: bench/hindsight_triggers.py on a small stream (the worker on, real
threads), and bench/hindsight.py's brief scoring on a few scripted scenarios."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from support.modules import REPO, load_module

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def bench_path() -> object:
    sys.path.insert(0, str(REPO / "bench"))
    yield
    sys.path.remove(str(REPO / "bench"))


def _load(name: str) -> ModuleType:
    return load_module(f"bench/{name}.py", name)


@pytest.mark.usefixtures("bench_path")
def test_trigger_bench_reports_every_setting_with_its_lessons(tmp_path: Path) -> None:
    triggers = _load("hindsight_triggers")
    results = [triggers.run_stream(s, 2, 40, tmp_path, seed=3) for s in ("defaults", "count only")]
    defaults, count_only = results
    assert defaults.lessons_missing == 0 and len(defaults.lesson_delays) == 2
    assert defaults.runs["failure_streak"] >= 2 and "failure_streak" not in count_only.runs
    table = triggers.report(results)
    assert "defaults" in table and "count only" in table and "runs / 1,000 episodes" in table


@pytest.mark.usefixtures("bench_path")
def test_brief_scoring_finds_the_scripted_lessons(tmp_path: Path) -> None:
    hindsight = _load("hindsight")
    scenarios = [s for s in hindsight.SCENARIOS if s.name in ("geocoding batch size", "window seat")]
    services, clock = hindsight.make_services(tmp_path, {}, "hashing")
    scores = hindsight.run_suite(services, clock, scenarios)
    briefs = [b for s in scores for b in s.brief]
    assert len(briefs) == 4 and all(b.brief_rank == 1 for b in briefs)
    assert "brief top-3" in hindsight.brief_report({"rules": briefs})
    services.close()


@pytest.mark.usefixtures("bench_path")
def test_locomo_consolidation_reads_the_locomo_files(tmp_path: Path) -> None:
    import json

    data = tmp_path / "locomo"
    data.mkdir()
    turns = [
        ("D1:1", 1, "Ana", "Please call me Ana, and answer in short sentences.", "2023-05-08T13:00:00"),
        ("D1:2", 1, "Ben", "Sure Ana. How was the pottery class?", "2023-05-08T13:00:01"),
        ("D2:1", 2, "Ana", "Keep your answers short please.", "2023-05-15T13:00:00"),
        ("D3:1", 3, "Ana", "Shorter replies please, I'm on my phone.", "2023-05-22T13:00:00"),
    ]
    with (data / "locomo10_turns.jsonl").open("w", encoding="utf-8") as f:
        for dia_id, session, speaker, text, ts in turns:
            row = {"conv": "c1", "session": session, "dia_id": dia_id, "speaker": speaker, "text": text, "ts": ts}
            f.write(json.dumps(row) + "\n")
    with (data / "locomo10_gold.jsonl").open("w", encoding="utf-8") as f:
        question = {"qid": "q1", "conv": "c1", "question": "How does Ana want answers?", "answer": "", "category": 4,
                    "ask_ts": "2023-06-01T00:00:00", "gold_dia_ids": ["D2:1"], "gold_sessions": [2]}  # fmt: skip
        f.write(json.dumps(question) + "\n")
    locomo = _load("hindsight_locomo")
    results = locomo.run_locomo(data, tmp_path / "work", "hashing")
    assert results["per_conv"]["c1"]["turns"] == 4 and len(results["before"]) == len(results["after"]) == 1
    assert "LoCoMo recall" in locomo.locomo_report(results)
