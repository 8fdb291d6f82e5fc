"""The benchmark metric functions, on hand-computed cases."""

from __future__ import annotations

import math
import sys
from types import ModuleType

import pytest

from support.modules import load_module

pytestmark = pytest.mark.unit


m = load_module("bench/metrics.py", "bench_metrics")


def test_dedup_ids_flattens_groups_keeping_first_occurrence() -> None:
    groups = [["a", "a"], ["b", "c"], ["a", "d"], [], ["c", "e"]]
    assert m.dedup_ids(groups) == ["a", "b", "c", "d", "e"]


def test_recall_at_k_is_the_share_of_gold_in_the_top_k() -> None:
    ranked = ["x", "g1", "y", "g2", "z"]
    gold = ["g1", "g2", "g3"]
    assert m.recall_at_k(ranked, gold, 1) == 0.0
    assert m.recall_at_k(ranked, gold, 2) == pytest.approx(1 / 3)
    assert m.recall_at_k(ranked, gold, 4) == pytest.approx(2 / 3)
    assert m.recall_at_k(ranked, gold, 50) == pytest.approx(2 / 3)


def test_recall_counts_a_duplicated_gold_id_once() -> None:
    assert m.recall_at_k(["g1"], ["g1", "g1", "g2"], 5) == pytest.approx(1 / 2)


def test_recall_finds_a_merged_gold_id_through_its_alias() -> None:
    # g2 was merged into s: returning s finds g2.
    alias = {"g2": "s"}
    assert m.recall_at_k(["s", "x"], ["g1", "g2"], 2, alias) == pytest.approx(1 / 2)
    assert m.recall_at_k(["s", "x"], ["g1", "g2"], 2) == 0.0


def test_recall_without_gold_is_an_error() -> None:
    with pytest.raises(ValueError):
        m.recall_at_k(["a"], [], 5)


def test_recall_all_needs_every_gold_id() -> None:
    assert m.recall_all_at_k(["g1", "x", "g2"], ["g1", "g2"], 3) == 1.0
    assert m.recall_all_at_k(["g1", "x", "g2"], ["g1", "g2"], 2) == 0.0


def test_ndcg_binary_hand_computed() -> None:
    # Relevant at ranks 2 and 4 of 2 gold ids: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3).
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert m.ndcg_at_k(["x", "g1", "y", "g2"], ["g1", "g2"], 10) == pytest.approx(expected)
    assert m.ndcg_at_k(["g1", "g2", "x"], ["g1", "g2"], 10) == pytest.approx(1.0)
    assert m.ndcg_at_k(["x", "y"], ["g1"], 10) == 0.0


def test_ndcg_ideal_is_capped_at_k() -> None:
    # 3 gold ids, k = 2, both top slots relevant: ideal uses only 2 slots, so nDCG is 1.
    assert m.ndcg_at_k(["g1", "g2", "x"], ["g1", "g2", "g3"], 2) == pytest.approx(1.0)
    # Only rank 2 of k = 1 is relevant: outside the cut.
    assert m.ndcg_at_k(["x", "g1"], ["g1"], 1) == 0.0


def test_ndcg_two_gold_ids_merged_into_one_count_as_one_relevant_item() -> None:
    alias = {"g1": "s", "g2": "s"}
    assert m.ndcg_at_k(["s"], ["g1", "g2"], 10, alias) == pytest.approx(1.0)


def test_session_recall_any() -> None:
    def sessions_of(rid: str) -> list[int]:
        own = [int(rid[1 : rid.index(":")])] if rid.startswith("D") else []
        # D3:1 also stands for a turn of session 5 merged into it.
        return [*own, 5] if rid == "D3:1" else own

    ranked = ["D3:1", "F1", "D7:2", "D1:4"]
    assert m.session_recall_any_at_k(ranked, [7], 3, sessions_of) == 1.0
    assert m.session_recall_any_at_k(ranked, [1], 3, sessions_of) == 0.0
    assert m.session_recall_any_at_k(ranked, [1, 3], 1, sessions_of) == 1.0
    assert m.session_recall_any_at_k(ranked, [5], 1, sessions_of) == 1.0
    assert m.session_recall_any_at_k(ranked, [9], 4, sessions_of) == 0.0


def test_percentile_interpolates_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert m.percentile(values, 50) == pytest.approx(2.5)
    assert m.percentile(values, 95) == pytest.approx(3.85)
    assert m.percentile([7.0], 99) == 7.0
    assert math.isnan(m.percentile([], 50))


def test_format_table_aligns_columns() -> None:
    text = m.format_table(["sys", "R@10"], [["bm25", 0.5], ["rearview", 0.61234]], title="T")
    lines = text.splitlines()
    assert lines[0] == "T"
    assert lines[1] == "sys        R@10"
    assert lines[3] == "bm25      0.500"
    assert lines[4] == "rearview  0.612"


def _load_locomo() -> ModuleType:
    sys.modules.setdefault("metrics", m)  # locomo.py imports its siblings as `metrics` and `folds`, as a script does
    sys.modules.setdefault("folds", load_module("bench/folds.py", "folds"))
    sys.modules.setdefault("recall_params", load_module("bench/recall_params.py", "recall_params"))
    return load_module("bench/locomo.py", "bench_locomo")


def test_the_locomo_report_marks_each_target_met_or_not() -> None:
    locomo = _load_locomo()
    by_category = {
        "1 multi-hop": {"n": 3, "R@10": 0.59},
        "2 temporal": {"n": 2, "R@10": 0.60},
        "5 adversarial": {"n": 0, "R@10": float("nan")},  # no question of the category: no target row
        "overall 1-5": {"R@10": 0.80, "R@25": 0.899, "nDCG@10": 0.61},
        "overall 1-4": {"R@10": 0.1, "R@25": 0.1, "nDCG@10": 0.1},
    }
    lines = locomo.targets_table(by_category).splitlines()
    verdicts = {line.split("  ")[0].strip(): line.rstrip().endswith("NOT met") for line in lines[3:]}
    assert lines[0] == "== targets: 3 of 5 met =="
    assert verdicts == {
        "R@10 overall 1-5": False,
        "R@25 overall 1-5": True,
        "nDCG@10 overall 1-5": False,
        "R@10 1 multi-hop": True,
        "R@10 2 temporal": False,
    }
