"""The Chatlog benchmark's generator (bench/chatgen.py) writes the same files for the same seed, in the shape
bench/locomo.py reads; the --folds cross-validation (bench/folds.py) ships only what most tuning conversations gain."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from rearview.service.recall.parameters import RecallParameters
from support.modules import load_module

pytestmark = pytest.mark.unit


def _bench(name: str) -> ModuleType:
    sys.modules.setdefault("metrics", load_module("bench/metrics.py", "metrics"))
    sys.modules.setdefault("recall_params", load_module("bench/recall_params.py", "recall_params"))
    if name == "chatgen":
        sys.modules.setdefault("chatgen_content", load_module("bench/chatgen_content.py", "chatgen_content"))
    return load_module(f"bench/{name}.py", name)


def _digest(directory: Path) -> str:
    files = ("locomo10_turns.jsonl", "locomo10_gold.jsonl")
    return hashlib.sha256(b"".join((directory / f).read_bytes() for f in files)).hexdigest()


def test_the_same_seed_writes_the_same_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    chatgen = _bench("chatgen")
    first, again, other = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert chatgen.write(first, seed=3, conversations=2) == chatgen.write(again, seed=3, conversations=2)
    chatgen.write(other, seed=4, conversations=2)
    assert _digest(first) == _digest(again) != _digest(other)


def test_the_files_are_what_locomo_py_reads_and_every_gold_id_is_a_turn(tmp_path: Path) -> None:
    chatgen = _bench("chatgen")
    chatgen.write(tmp_path, seed=5, conversations=2)
    sys.modules.setdefault("folds", load_module("bench/folds.py", "folds"))
    locomo = load_module("bench/locomo.py", "bench_locomo_chatlog")
    turns = locomo.load_turns(tmp_path / "locomo10_turns.jsonl")
    questions, skipped = locomo.load_questions(tmp_path / "locomo10_gold.jsonl")
    assert skipped == 0 and len(turns) == 2 and questions
    ids = {(t.conv, t.dia_id): t for conv in turns.values() for t in conv}
    for q in questions:
        assert all((q.conv, g) in ids for g in q.gold), q
        assert {ids[(q.conv, g)].session for g in q.gold} == set(q.gold_sessions)
        assert q.ask_ts > max(t.ts for t in turns[q.conv])
    lengths = [len(t.text.split()) for conv in turns.values() for t in conv]
    assert sorted(lengths)[len(lengths) // 2] <= 6  # short chat messages


def test_informal_spelling_is_seeded() -> None:
    chatgen = _bench("chatgen")
    said = [chatgen.informal("Are you coming tomorrow because I really want to know", chatgen.random.Random(i))
            for i in range(20)]  # fmt: skip
    assert said == [chatgen.informal("Are you coming tomorrow because I really want to know", chatgen.random.Random(i))
                    for i in range(20)]  # fmt: skip
    assert any("u " in s or "tmrw" in s or "bc" in s for s in said)


def _rows(folds: ModuleType, values: dict[str, list[float]]) -> list[object]:
    return [folds.Row(f"{conv}-{i}", conv, v) for conv, vs in values.items() for i, v in enumerate(vs)]


def test_a_variant_that_lifts_the_mean_but_lowers_most_conversations_does_not_ship() -> None:
    folds = _bench("folds")
    defaults = _rows(folds, {"a": [0.5], "b": [0.5], "c": [0.5], "d": [0.5]})
    one_big_gain = _rows(folds, {"a": [1.0], "b": [0.4], "c": [0.4], "d": [0.4]})
    broad_gain = _rows(folds, {"a": [0.6], "b": [0.6], "c": [0.6], "d": [0.4]})
    assert not folds.ships(defaults, one_big_gain, {"a", "b", "c", "d"})
    assert folds.ships(defaults, broad_gain, {"a", "b", "c", "d"})


def test_cross_validation_scores_each_conversation_with_a_choice_made_without_it() -> None:
    folds = _bench("folds")
    variants = {
        "defaults": _rows(folds, {"a": [0.5], "b": [0.5], "c": [0.5], "d": [0.5]}),
        # Better on a, b and c; much worse on d: the folds holding d out ship it, the one tuning on d may not.
        "variant": _rows(folds, {"a": [0.7], "b": [0.7], "c": [0.7], "d": [0.0]}),
    }
    cv = folds.cross_validate(variants, ["a", "b", "c", "d"], 4)
    chosen = {f.held_out: f.chosen for f in cv["folds"]}
    assert chosen[("d",)] == "variant"  # tuned on a, b, c
    assert chosen[("a",)] == "defaults"  # tuned on b, c, d: mean 0.467 < 0.5, does not ship
    # Held out, a, b and c score the defaults' 0.5 and d the variant's 0.0: cross-validation shows the cost.
    assert cv["cross_validated"] == pytest.approx((0.5 + 0.5 + 0.5 + 0.0) / 4)
    table = folds.report(variants, ["a", "b", "c", "d"], 4)
    assert "4-fold cross-validation" in table and "per-conversation spread" in table


def test_profiles_turn_the_refinements_off_on_chatlog_and_on_for_turn_taking(tmp_path: Path) -> None:
    chatgen = _bench("chatgen")
    chatgen.write(tmp_path / "chat", seed=5, conversations=2)
    sys.modules.setdefault("folds", load_module("bench/folds.py", "folds"))
    sys.modules["locomo"] = load_module("bench/locomo.py", "locomo")
    profiles = load_module("bench/profiles.py", "bench_profiles")
    tuning = RecallParameters()
    chat = profiles.rows(tmp_path / "chat", tuning)
    assert [row[-2:] for row in chat] == [["off", "off"], ["off", "off"]]
    # Two people taking turns in short sessions of full sentences, a question answered by the next turn.
    taking_turns = tmp_path / "turns"
    taking_turns.mkdir()
    said = ["Did you finish the painting of the lake you started in spring?",
            "Yes, I finally framed it last weekend and hung it in the hallway by the door"]  # fmt: skip
    lines = [
        json.dumps({"conv": "c", "session": i // 20, "dia_id": f"D{i}", "speaker": ["Ana", "Ben"][i % 2],
                    "text": said[i % 2], "ts": f"2023-05-{1 + i // 20:02d}T10:{i % 20:02d}:00"})
        for i in range(80)
    ]  # fmt: skip
    (taking_turns / "locomo10_turns.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    [row] = profiles.rows(taking_turns, tuning)
    assert row[1:3] == [80, 4] and row[-3:] == [1.0, "on", "on"]
