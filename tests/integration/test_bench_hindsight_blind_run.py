"""bench/hindsight_blind.py through the real services (SQLite on disk, hashing embedder): a scenario the system
gets right scores right, one it does not scores wrong and says why, and the worker's figures make the report."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from rearview.bootstrap import build
from rearview.clock import ManualClock
from rearview.settings import HindsightSettings, Settings
from support.modules import REPO, load_module

pytestmark = pytest.mark.integration

# The README's example: three requests, three sessions, three days.
CHINESE = ("Please answer in Chinese from now on.", "Can you reply in Chinese?", "Chinese, please.")


@pytest.fixture(scope="module")
def bench() -> Iterator[dict[str, ModuleType]]:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        names = ("hindsight_blind_spec", "hindsight_blind_run", "hindsight_blind")
        yield {name: load_module(f"bench/{name}.py", name) for name in names}
    finally:
        sys.path.remove(str(REPO / "bench"))


def test_a_learned_preference_scores_right_and_a_missing_one_says_why(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    spec, run = bench["hindsight_blind_spec"], bench["hindsight_blind_run"]
    episodes = ((*(spec.Ep(text, day + 0.4, f"c-{day}", "user_request") for day, text in enumerate(CHINESE)),),)
    right = spec.Scenario("probe-right", "preference", "en", episodes, (spec.held("preference", "chinese|中文"),))
    wrong = spec.Scenario("probe-wrong", "preference", "en", episodes, (spec.held("preference", "french"),))
    clock = ManualClock()
    services = build(
        Settings(data_dir=tmp_path, embedder="hashing", hindsight=HindsightSettings(worker=False)), clock=clock
    )
    try:
        good, bad = (run.run_scenario(services, clock, s) for s in (right, wrong))
    finally:
        services.close()
    assert good.error is None and good.right and [m.right for m in good.memories] == [True]
    assert any("Chinese" in text for text in good.memories[0].sources)
    assert not bad.right and bad.memories[0].right is False and "lacks french" in bad.wants[0].why


def test_the_worker_runs_selected_cases_into_the_report(bench: dict[str, ModuleType]) -> None:
    blind = bench["hindsight_blind"]
    args = blind.parse_args(["--embedder", "hashing", "--only", "en-neg-small-talk", "zh-cat-green-tea"])
    figures = blind.worker(args)
    assert [s["id"] for s in figures["scenarios"]] == ["en-neg-small-talk"]
    assert [p["id"] for p in figures["pairs"]] == ["zh-cat-green-tea"]
    table = blind.report({"this tree": figures})
    assert "1 scenarios, 1 contradiction pairs" in table and "false supersedes" in table
