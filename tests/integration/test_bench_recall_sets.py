"""The cross-lingual set (bench/crosslingual.py) and the off-topic set (bench/offtopic.py) end to end on small data
with the hashing embedder: ingest through the write path, ask through recall, score both sides; and the shipped
data is what their docstrings promise."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from support.modules import REPO, load_module

pytestmark = pytest.mark.integration

ITEMS = {
    "u1": [
        {"id": "u1-01", "fact_lang": "en", "fact": "My dog Biscuit is a corgi.", "question": "我的狗叫什么名字？",
         "distractors": {"zh": "小区里养狗的人很多。", "en": "Corgis have short legs."}},
        {"id": "u1-02", "fact_lang": "zh", "fact": "我对花生过敏。", "question": "What am I allergic to?",
         "distractors": {"en": "My professor is allergic to long emails.", "zh": "我最近每天喝绿茶。"}},
    ]
}  # fmt: skip


def _bench(name: str) -> ModuleType:
    sys.modules["metrics"] = load_module("bench/metrics.py", "metrics")
    sys.modules["folds"] = load_module("bench/folds.py", "folds")
    sys.modules["recall_params"] = load_module("bench/recall_params.py", "recall_params")
    if name == "offtopic":
        sys.modules["locomo"] = load_module("bench/locomo.py", "locomo")
    return load_module(f"bench/{name}.py", f"bench_{name}")


def test_the_cross_lingual_set_scores_every_system_in_both_directions(tmp_path: Path) -> None:
    crosslingual = _bench("crosslingual")
    data, out = tmp_path / "set.json", tmp_path / "out.json"
    data.write_text(json.dumps({"users": ITEMS}, ensure_ascii=False), encoding="utf-8")
    assert crosslingual.main(["--data", str(data), "--embedder", "hashing", "--json-out", str(out)]) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    assert len(results["rows"]) == 2 * len(crosslingual.SYSTEMS)
    for system in crosslingual.SYSTEMS:
        figures = results["summary"][system]
        assert [figures[d]["n"] for d in ("en", "zh", "all")] == [1, 1, 2]
        assert 0.0 <= figures["all"]["top-1"] <= figures["all"]["top-2"] <= figures["all"]["R@10"] <= 1.0


def test_a_fact_missing_from_the_ranking_is_neither_top_1_nor_top_2() -> None:
    crosslingual = _bench("crosslingual")
    item = crosslingual.load_items(crosslingual.DEFAULT_DATA)[0]
    decoy = item.distractor_id(item.question_lang)
    assert crosslingual.score([], item, False)["top-2"] == 0.0
    assert crosslingual.score([decoy, item.id], item, False) == {
        "top-1": 0.0, "top-2": 1.0, "R@10": 1.0, "distractor first": 1.0, "no memory": 0.0
    }  # fmt: skip
    missed = crosslingual.score([decoy], item, True)
    assert missed["R@10"] == 0.0 and missed["distractor first"] == 1.0 and missed["no memory"] == 1.0


def test_the_shipped_cross_lingual_set_is_balanced_and_shares_no_words_beyond_names() -> None:
    crosslingual = _bench("crosslingual")
    items = crosslingual.load_items(crosslingual.DEFAULT_DATA)
    assert len(items) >= 100 and len({i.id for i in items}) == len(items)
    assert sum(1 for i in items if i.fact_lang == "en") == sum(1 for i in items if i.fact_lang == "zh")
    for item in items:
        assert set(item.distractors) == {"en", "zh"}, item.id
        english = item.fact if item.fact_lang == "en" else item.question
        chinese = item.question if item.fact_lang == "en" else item.fact
        assert re.search(r"[\u4e00-\u9fff]", chinese) and not re.search(r"[\u4e00-\u9fff]", english), item.id
        # The only words the two sides share are names (Latin words in the Chinese side, capitalised).
        english_words = {w.lower() for w in re.findall(r"[A-Za-zé]+", english)}
        for word in re.findall(r"[A-Za-zé]+", chinese):
            assert word.lower() not in english_words or word[0].isupper(), (item.id, word)


def _locomo_dir(root: Path) -> Path:
    root.mkdir()
    turns = [
        ("D1:1", "Caroline", "I adopted a dog from the shelter, she is called Pixie", "2023-06-02T18:00:00"),
        ("D1:2", "Melanie", "Pixie is a lovely name for a dog", "2023-06-02T18:00:01"),
    ]
    with (root / "locomo10_turns.jsonl").open("w", encoding="utf-8") as f:
        for dia_id, speaker, text, ts in turns:
            f.write(json.dumps({"conv": "c1", "session": 1, "dia_id": dia_id, "speaker": speaker, "text": text,
                                "ts": ts}) + "\n")  # fmt: skip
    gold = [
        ("What is the name of Caroline's dog?", 4, ["D1:1"]),
        ("What is the name of Melanie's dog?", 5, ["D1:1"]),
        ("Would Caroline prefer a cat?", 3, []),
        ("Who did Caroline meet in Tokyo?", 5, []),
    ]
    with (root / "locomo10_gold.jsonl").open("w", encoding="utf-8") as f:
        for i, (question, category, ids) in enumerate(gold):
            row: dict[str, Any] = {
                "category_name": "unanswerable" if category == 5 and not ids else "",
                "qid": f"q{i}",
                "conv": "c1",
                "question": question,
                "category": category,
                "ask_ts": "2023-06-03T00:00:00",
                "gold_dia_ids": ids,
                "gold_sessions": [1],
            }
            f.write(json.dumps(row) + "\n")
    return root


def test_the_off_topic_set_asks_both_sides_in_every_namespace(tmp_path: Path) -> None:
    offtopic = _bench("offtopic")
    queries = {
        "negative": [
            {"text": "hello", "lang": "en", "kind": "greeting"},
            {"text": "谢谢", "lang": "zh", "kind": "thanks"},
        ],
        "positive": {"tiny": {"c1": ["what is my dog called?"]}},
    }
    queries_file, out = tmp_path / "queries.json", tmp_path / "out.json"
    queries_file.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    data = _locomo_dir(tmp_path / "tiny")
    argv = ["--data", str(data), "--queries", str(queries_file), "--embedder", "hashing", "--json-out", str(out)]
    assert offtopic.main(argv) == 0
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    sides = {(r["group"], r["expect_none"]) for r in rows}
    assert sides == {
        ("greeting", True), ("thanks", True), ("short questions", False), ("benchmark questions", False),
        ("adversarial questions (evidence elsewhere)", None), ("questions without evidence labels", None),
        ("unanswerable questions", True),
    }  # fmt: skip
    assert all(isinstance(r["no_memory"], bool) for r in rows)
    # Per side: en, zh, in the namespace's language, in the other (where asked) and all.
    expected = [True, True, True, True, True, False, False, False, None, None, None]
    assert [t[0] for t in offtopic.totals(rows)] == [offtopic.SIDES[side] for side in expected]


def test_the_shipped_off_topic_queries_cover_both_languages_and_every_memorybank_user() -> None:
    offtopic = _bench("offtopic")
    queries = json.loads(offtopic.DEFAULT_QUERIES.read_text(encoding="utf-8"))
    negatives = queries["negative"]
    assert len(negatives) >= 60 and len({n["text"] for n in negatives}) == len(negatives)
    for lang in ("en", "zh"):
        kinds = {n["kind"] for n in negatives if n["lang"] == lang}
        assert kinds == {"greeting", "thanks", "small talk", "off-topic"}, lang
    for benchmark in ("memorybank-cn", "memorybank-en"):
        assert list(queries["positive"][benchmark]) == [f"u{i:02d}" for i in range(15)]
    assert REPO.joinpath("bench", "data", "offtopic.json") == offtopic.DEFAULT_QUERIES
