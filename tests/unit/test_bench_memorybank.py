"""bench/memorybank.py turns MemoryBank's dialogues and our evidence labels into the files bench/locomo.py reads:
one conversation a user, a session a day, an episode a turn (or a message), gold ids from the labels; it refuses
labels that do not fit the data, and the labels in bench/data fit the real data where it is present."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from support.modules import REPO, load_module

pytestmark = pytest.mark.unit

REAL_DATA = REPO.parent / "shared" / "benchmarks" / "memorybank"
HISTORY = {
    "2023-04-28": [{"query": "我养了一只猫，叫团子。", "response": "团子这个名字真可爱！"}],
    "2023-04-27": [
        {"query": "你好，我叫小林。", "response": "你好小林！"},
        {"query": "有什么书推荐吗？", "response": "推荐《小王子》。"},
    ],
}
QUESTIONS = ["我的猫叫什么？", "你给我推荐过什么书？", "我去过火星吗？"]
LABELS: list[dict[str, Any]] = [
    {"q": 0, "category": "fact", "evidence": {"D2:1": "q"}, "answer": "团子"},
    {"q": 1, "category": "recommendation", "evidence": {"D1:2": "qr"}, "answer": "《小王子》"},
    {"q": 2, "category": "unanswerable", "evidence": {}, "answer": "没有"},
]


def _memorybank() -> ModuleType:
    return load_module("bench/memorybank.py", "bench_memorybank")


def _data(root: Path) -> Path:
    for lang in ("cn", "en"):
        folder = root / lang
        folder.mkdir(parents=True)
        bank = {" 小林 ": {"name": "小林", "history": HISTORY}}
        (folder / f"memory_bank_{lang}.json").write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
        probes = json.dumps({"小林": [f'"{QUESTIONS[0]}"', *QUESTIONS[1:]]}, ensure_ascii=False)
        (folder / f"probing_questions_{lang}.jsonl").write_text(probes + "\n", encoding="utf-8")
    return root


def _labels() -> dict[str, Any]:
    return {"cn": {"小林": LABELS}, "en": {"小林": LABELS}}


def test_a_user_is_a_conversation_a_day_a_session_and_a_turn_an_episode(tmp_path: Path) -> None:
    memorybank = _memorybank()
    turns, gold = memorybank.convert(_data(tmp_path), _labels(), "cn")
    assert [(t["conv"], t["session"], t["dia_id"], t["ts"]) for t in turns] == [
        ("u00", 1, "D1:1", "2023-04-27T20:00:00"),
        ("u00", 1, "D1:2", "2023-04-27T20:02:00"),
        ("u00", 2, "D2:1", "2023-04-28T20:00:00"),
    ]
    assert turns[1]["speaker"] == "小林"
    assert turns[1]["text"] == "有什么书推荐吗？\n助手: 推荐《小王子》。"
    assert [g["question"] for g in gold] == QUESTIONS  # the wrapping quotes are gone
    assert [(g["category"], g["category_name"]) for g in gold] == [(4, "fact"), (1, "recommendation"),
                                                                   (5, "unanswerable")]  # fmt: skip
    assert [(g["gold_dia_ids"], g["gold_sessions"]) for g in gold] == [(["D2:1"], [2]), (["D1:2"], [1]), ([], [])]
    assert {g["ask_ts"] for g in gold} == {"2023-04-29T12:00:00"}


def test_an_episode_a_message_takes_the_parts_the_labels_name(tmp_path: Path) -> None:
    memorybank = _memorybank()
    turns, gold = memorybank.convert(_data(tmp_path), _labels(), "en", episodes="message")
    assert [(t["dia_id"], t["speaker"], t["ts"]) for t in turns[:2]] == [
        ("D1:1q", "小林", "2023-04-27T20:00:00"),
        ("D1:1r", "assistant", "2023-04-27T20:00:20"),
    ]
    assert [g["gold_dia_ids"] for g in gold] == [["D2:1q"], ["D1:2q", "D1:2r"], []]


def test_the_files_are_what_locomo_py_reads_with_the_categories_named(tmp_path: Path) -> None:
    memorybank = _memorybank()
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps(_labels(), ensure_ascii=False), encoding="utf-8")
    argv = ["--data", str(_data(tmp_path / "data")), "--labels", str(labels), "--out", str(tmp_path), "--lang", "cn"]
    assert memorybank.main(argv) == 0
    sys.modules["metrics"] = load_module("bench/metrics.py", "metrics")
    sys.modules["folds"] = load_module("bench/folds.py", "folds")
    sys.modules["recall_params"] = load_module("bench/recall_params.py", "recall_params")
    locomo = load_module("bench/locomo.py", "bench_locomo_memorybank")
    folder = tmp_path / "memorybank-cn"
    questions, skipped = locomo.load_questions(folder / "locomo10_gold.jsonl")
    assert skipped == 1 and len(questions) == 2  # the unanswerable question has no gold
    assert locomo.load_turns(folder / "locomo10_turns.jsonl").keys() == {"u00"}
    names = {1: "recommendation", 4: "fact", 5: "unanswerable"}  # the categories the questions have
    assert locomo.category_names(folder / "locomo10_gold.jsonl") == names


@pytest.mark.parametrize(
    ("label", "complaint"),
    [
        ({"q": 0, "category": "fact", "evidence": {"D3:1": "q"}, "answer": "x"}, "does not fit"),
        ({"q": 0, "category": "fact", "evidence": {}, "answer": "x"}, "does not fit"),
        ({"q": 0, "category": "gossip", "evidence": {"D1:1": "q"}, "answer": "x"}, "unknown category"),
    ],
)
def test_labels_that_do_not_fit_the_data_are_refused(tmp_path: Path, label: dict[str, Any], complaint: str) -> None:
    memorybank = _memorybank()
    labels = {"cn": {"小林": [label, *LABELS[1:]]}}
    with pytest.raises(ValueError, match=complaint):
        memorybank.convert(_data(tmp_path), labels, "cn")
    with pytest.raises(ValueError, match="do not cover"):
        memorybank.convert(tmp_path, {"cn": {"小林": LABELS[:2]}}, "cn")


@pytest.mark.skipif(not REAL_DATA.is_dir(), reason="MemoryBank's data is not on this machine")
def test_the_shipped_labels_cover_every_question_of_the_real_data() -> None:
    memorybank = _memorybank()
    labels = memorybank.load_labels(memorybank.DEFAULT_LABELS)
    for lang in memorybank.LANGUAGES:
        turns, gold = memorybank.convert(REAL_DATA, labels, lang)
        assert len(gold) == 100 and len({t["conv"] for t in turns}) == 15
        assert sum(1 for g in gold if g["gold_dia_ids"]) >= 99
