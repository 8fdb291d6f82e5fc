"""bench/locomo.py end to end on a tiny conversation in the LoCoMo file format: ingest through the write path,
ask through recall, score, print the report and, with --ablations, one row per ablation."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from support.modules import load_module

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TURNS = [
    ("D1:1", 1, "Caroline", "I went to a pottery class in Lisbon last week", "2023-05-08T13:00:00"),
    ("D1:2", 1, "Melanie", "Which studio was it?", "2023-05-08T13:00:01"),
    ("D1:3", 1, "Caroline", "The small one near the river, every Thursday", "2023-05-08T13:00:02"),
    ("D1:4", 1, "Melanie", "I started running three years ago, it clears my head", "2023-05-08T13:00:03"),
    ("D2:1", 2, "Melanie", "My kids painted a sunset with me on Sunday", "2023-06-02T18:00:00"),
    ("D2:2", 2, "Caroline", "I adopted a dog from the shelter, she is called Pixie", "2023-06-02T18:00:01"),
    ("D2:3", 2, "Melanie", "Pixie is a lovely name for a dog", "2023-06-02T18:00:02"),
]
QUESTIONS = [
    ("q1", "Which pottery studio did Caroline join?", 4, ["D1:1", "D1:3"], [1]),
    ("q2", "When did Melanie start running?", 2, ["D1:4"], [1]),
    ("q3", "What did Melanie paint with her kids?", 4, ["D2:1"], [2]),
    ("q4", "What is the name of Caroline's dog?", 1, ["D2:2"], [2]),
    ("q5", "Who did Caroline meet in Tokyo?", 3, [], []),  # no gold: skipped
]
# The audit's corrected evidence (`gold_dia_ids_audited`) where it has any: q2 has no such key (the original stands),
# the audit leaves q3 without evidence, and moves q4's to a turn that no system can return.
AUDITED = {"q1": ["D1:1", "D1:3"], "q3": [], "q4": ["D9:9"]}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "locomo"
    folder.mkdir()
    with (folder / "locomo10_turns.jsonl").open("w", encoding="utf-8") as f:
        for dia_id, session, speaker, text, ts in TURNS:
            turn = {"conv": "c1", "session": session, "dia_id": dia_id, "speaker": speaker, "text": text, "ts": ts}
            f.write(json.dumps(turn) + "\n")
    with (folder / "locomo10_gold.jsonl").open("w", encoding="utf-8") as f:
        for qid, question, category, gold, sessions in QUESTIONS:
            row: dict[str, Any] = {
                "qid": qid,
                "conv": "c1",
                "question": question,
                "answer": "",
                "category": category,
                "ask_ts": "2023-06-03T00:00:00",
                "gold_dia_ids": gold,
                "gold_sessions": sessions,
            }
            if qid in AUDITED:
                row["gold_dia_ids_audited"] = AUDITED[qid]
            f.write(json.dumps(row) + "\n")
    return folder


def _load_locomo() -> ModuleType:
    sys.modules["metrics"] = load_module("bench/metrics.py", "metrics")  # locomo.py imports its siblings
    sys.modules["folds"] = load_module("bench/folds.py", "folds")
    sys.modules["recall_params"] = load_module("bench/recall_params.py", "recall_params")
    return load_module("bench/locomo.py", "bench_locomo")


def test_the_benchmark_scores_every_system_and_each_ablation(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locomo = _load_locomo()
    out_json = tmp_path / "out.json"
    argv = ["--data", str(data_dir), "--embedder", "hashing", "--data-dir", str(tmp_path / "db")]
    assert locomo.main([*argv, "--ablations", "--json-out", str(out_json)]) == 0

    report = capsys.readouterr().out
    results = json.loads(out_json.read_text(encoding="utf-8"))
    assert results["config"]["questions_without_gold_skipped"] == 1
    assert results["ingest"]["turns"] == len(TURNS)
    for system in locomo.SYSTEMS:
        overall = results["systems"][system]["by_category"]["overall 1-5"]
        assert overall["n"] == 4 and 0.0 <= overall["R@10"] <= 1.0
    # Seven turns and top_k 50: every system that returns anything finds all the gold within its top 10.
    assert results["systems"]["rearview"]["by_category"]["overall 1-5"]["R@10"] == 1.0
    # On the audited evidence: q3 drops out, q4's corrected turn is found by nobody.
    audited = results["audited_evidence"]
    assert audited["questions_changed"] == 2
    for system in locomo.SYSTEMS:
        overall = audited["systems"][system]["overall 1-5"]
        assert overall["n"] == 3, system
    assert audited["systems"]["rearview"]["overall 1-5"]["R@10"] == pytest.approx(2 / 3)
    assert "== on the audited evidence (gold_dia_ids_audited, 2 questions' evidence corrected" in report

    assert list(results["ablations"]) == list(locomo.ABLATIONS)
    for name, ablation in results["ablations"].items():
        assert ablation["by_category"]["overall 1-5"]["n"] == 4, name
        assert ablation["change"] == locomo.ABLATIONS[name]
    table = report[report.index("== ablations") :].splitlines()
    assert [line.split("  ")[0] for line in table[3:]] == list(locomo.ABLATIONS)
    assert "== targets:" in report

    # A store that already holds the ids would count them as duplicates: the bench refuses it.
    assert locomo.main(argv) == 2


def test_the_benchmark_can_ask_through_a_bedrock_rerank_model(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--reranker bedrock` measures recall with a rerank model (where AWS credentials are). Here botocore's own
    endpoint variable points the real adapter at the Rerank double."""
    from support.rerankers import running_rerank_double

    locomo = _load_locomo()
    out_json = tmp_path / "out.json"
    with running_rerank_double() as double:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", double.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
        argv = ["--data", str(data_dir), "--embedder", "hashing", "--reranker", "bedrock", "--region", "us-west-2"]
        assert locomo.main([*argv, "--ablations", "--json-out", str(out_json)]) == 0
        asked = [b["queries"][0]["textQuery"]["text"] for b in double.bodies]

    results = json.loads(out_json.read_text(encoding="utf-8"))
    assert results["config"]["reranker"] == "bedrock:amazon.rerank-v1:0"
    assert "reranker bedrock:amazon.rerank-v1:0" in capsys.readouterr().out
    # Every question with gold went through the rerank model (the baselines do not use it).
    assert {q for _, q, _, gold, _ in QUESTIONS if gold} <= set(asked)
    assert results["systems"]["rearview"]["by_category"]["overall 1-5"]["R@10"] == 1.0
    assert list(results["ablations"]) == [*locomo.ABLATIONS, "no reranker"]
    assert results["ablations"]["no reranker"]["change"] == {"rerank_candidates": 0}


def test_the_benchmark_can_ask_through_a_local_cross_encoder(data_dir: Path, tmp_path: Path) -> None:
    """`--reranker onnx --rerank-model-path F` measures recall with a cross-encoder file on the embedded backend
    (here the stand-in model of tests/support; a real one is not downloadable on this machine)."""
    from support.cross_encoder_model import write_word_count_cross_encoder

    locomo = _load_locomo()
    model = write_word_count_cross_encoder(tmp_path / "ce.onnx", ["pottery", "running", "dog"])
    out_json = tmp_path / "out.json"
    argv = ["--data", str(data_dir), "--embedder", "hashing", "--reranker", "onnx", "--rerank-model-path", str(model)]
    assert locomo.main([*argv, "--json-out", str(out_json)]) == 0
    results = json.loads(out_json.read_text(encoding="utf-8"))
    assert results["config"]["reranker"] == "onnx:ce.onnx"
    assert results["systems"]["rearview"]["by_category"]["overall 1-5"]["R@10"] == 1.0


def test_a_recall_constant_runs_at_another_value_by_param(data_dir: Path, tmp_path: Path) -> None:
    """`--param NAME=VALUE` changes one of recall's values for the run, a constant too (no environment variable
    reaches those); a name that is no field of RecallParameters stops the run before anything is ingested."""
    locomo = _load_locomo()
    settings = locomo.Settings(embedder="hashing", data_dir=tmp_path / "s")
    changed = locomo.with_params(settings, ["question_factor=0.85", "vector_weight=0.6"])
    assert (changed.recall.question_factor, changed.recall.vector_weight) == (0.85, 0.6)
    assert changed.recall.entity_boost == 0.2 and settings.recall.vector_weight == 0.5
    with pytest.raises(SystemExit, match="question_factr"):
        locomo.with_params(settings, ["question_factr=0.85"])
    out_json = tmp_path / "out.json"
    argv = ["--data", str(data_dir), "--embedder", "hashing", "--param", "fusion=rrf", "--json-out", str(out_json)]
    assert locomo.main(argv) == 0
    assert json.loads(out_json.read_text(encoding="utf-8"))["config"]["params"] == ["fusion=rrf"]


def test_the_one_store_bench_asks_again_with_a_param_beside_the_defaults(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/locomo_ask.py ingests once into its store, then asks with the defaults and, with `--param`, again with
    that value, counting the conversations whose R@10 it moves."""
    sys.modules["locomo"] = _load_locomo()
    sys.modules["baseline"] = load_module("bench/baseline.py", "baseline")
    ask = load_module("bench/locomo_ask.py", "bench_locomo_ask")
    store = tmp_path / "store"
    argv = ["--data", str(data_dir), "--store", str(store), "--embedder", "hashing", "--param", "fusion=rrf"]

    assert ask.main(argv) == 0

    out = capsys.readouterr().out
    assert (store / ask.STATES).is_file()
    rows = {line.split("  ")[0] for line in out.splitlines()}
    assert {"this tree", "this tree, fusion=rrf"} <= rows, out
    assert "this tree, fusion=rrf: R@10 of " in out and "conversations higher than this tree's defaults" in out
    with pytest.raises(SystemExit, match="fusion_kind"):
        ask.main([*argv[:6], "--param", "fusion_kind=rrf"])
