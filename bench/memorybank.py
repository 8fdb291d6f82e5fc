"""MemoryBank as a recall benchmark: its Chinese and English dialogues, with our evidence labels, in LoCoMo's shape.

MemoryBank's evaluation data (../shared/benchmarks/memorybank, MIT; Zhong et al., AAAI 2024) holds 15 users' chats
with an AI companion over ten days, in Chinese and in English, and about 100 probing questions per language with no
answers or evidence. `bench/data/memorybank_evidence.json` labels them by reading (how:
`bench/data/memorybank_evidence.md`). This script joins the two into the files `bench/locomo.py --data` reads, one
directory per language, so every LoCoMo figure (R@k, nDCG@10, per category, `--folds`) is measured here the same way:

    .venv/bin/python bench/memorybank.py --data ../shared/benchmarks/memorybank --out .bench
    .venv/bin/python bench/locomo.py --data .bench/memorybank-cn
    .venv/bin/python bench/locomo.py --data .bench/memorybank-en

- **A user is a conversation** (one namespace), **a day is a session**, **a turn is an episode** holding both the
  user's query and the assistant's response ("user: query / assistant: response"). Both, because a turn is one
  exchange: half the questions ask what the assistant recommended, and a response ("那我推荐《小王子》和《傲慢与偏见》")
  names the items without the request it answers ("文艺作品吧"), while a query is often a reply to the previous
  response. `--episodes message` writes one episode per message instead (LoCoMo's one speaker a turn; ids `Dd:nq`,
  `Dd:nr`, each question's gold the parts its label names), to measure that choice.
- **Time**: the data gives dates only; a day's turns are written from 20:00 UTC, two minutes apart (a response 20 s
  after its query), and every question is asked on 2023-05-07 at 12:00 UTC, the day after the last chat, so
  "5月2日" and "April 30th" name days of the history.
- **Categories** (names in the gold rows, which `bench/locomo.py` prints): 1 recommendation, 2 date, 3 preference,
  4 fact, 5 unanswerable. 2, 4 and 5 keep LoCoMo's meaning (temporal, single-hop, adversarial): 5 has no evidence,
  so recall skips it and `bench/offtopic.py` asks it as a no-memory case.

Questions are asked as the data has them, less the double quotes some English ones are wrapped in. Nothing is
random: the same data and labels write the same bytes. `--show-sample N` prints N labelled questions
(seeded) beside the text of their evidence, to check the labels by reading them again.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path("../shared/benchmarks/memorybank")
DEFAULT_LABELS = Path(__file__).resolve().parent / "data" / "memorybank_evidence.json"
LANGUAGES = ("cn", "en")
# Numbered so that LoCoMo's 2 (temporal), 4 (single-hop) and 5 (adversarial, left out of "overall 1-4") keep their
# meaning in bench/locomo.py's tables.
CATEGORY_IDS = {"recommendation": 1, "date": 2, "preference": 3, "fact": 4, "unanswerable": 5}
# The assistant as a speaker, in each language's own words.
ASSISTANT = {"cn": "助手", "en": "assistant"}
SESSION_START = time(20, 0)
TURN_GAP = timedelta(minutes=2)
RESPONSE_DELAY = timedelta(seconds=20)
ASK_AT = time(12, 0)
EPISODES = ("turn", "message")
SAMPLE_SEED = 35


@dataclass(frozen=True)
class Turn:
    """One exchange of a user's history: its id (Dd:n), day number, date, the user's query and the response."""

    turn_id: str
    session: int
    day: date
    query: str
    response: str


@dataclass(frozen=True)
class User:
    index: int
    name: str
    turns: tuple[Turn, ...]
    questions: tuple[str, ...]

    @property
    def conv(self) -> str:
        """The conversation (and namespace) id: ASCII, as a namespace part must be."""
        return f"u{self.index:02d}"


def load_users(data: Path, lang: str) -> list[User]:
    """The users of one language, in file order, with their turns (Dd:n over the sorted dates) and questions."""
    with (data / lang / f"memory_bank_{lang}.json").open(encoding="utf-8") as f:
        bank: dict[str, Any] = json.load(f)
    probes: dict[str, list[str]] = {}
    with (data / lang / f"probing_questions_{lang}.jsonl").open(encoding="utf-8") as f:
        for line in f:
            for name, questions in json.loads(line).items():
                probes[name.strip()] = [unquote(q) for q in questions]
    users: list[User] = []
    for index, (raw_name, record) in enumerate(bank.items()):
        turns = [
            Turn(f"D{d}:{n}", d, date.fromisoformat(day), t["query"].strip(), t["response"].strip())
            for d, day in enumerate(sorted(record["history"]), start=1)
            for n, t in enumerate(record["history"][day], start=1)
        ]
        name = raw_name.strip()
        users.append(User(index, name, tuple(turns), tuple(probes[name])))
    return users


def unquote(question: str) -> str:
    """A question without the pair of double quotes some English ones are wrapped in (a translation artefact)."""
    text = question.strip()
    return text[1:-1].strip() if len(text) > 1 and text[0] == text[-1] == '"' else text


def load_labels(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        labels: dict[str, Any] = json.load(f)
    return labels


def check_labels(users: Sequence[User], labelled: dict[str, list[dict[str, Any]]], lang: str) -> None:
    """Every question labelled once, every evidence turn present in the history, every category known."""
    for user in users:
        rows = labelled.get(user.name)
        if rows is None or [r["q"] for r in rows] != list(range(len(user.questions))):
            raise ValueError(f"{lang} {user.name}: the labels do not cover questions 0..{len(user.questions) - 1}")
        ids = {t.turn_id for t in user.turns}
        for row in rows:
            if row["category"] not in CATEGORY_IDS:
                raise ValueError(f"{lang} {user.name} q{row['q']}: unknown category {row['category']!r}")
            missing = set(row["evidence"]) - ids
            if missing or (not row["evidence"]) != (row["category"] == "unanswerable"):
                raise ValueError(f"{lang} {user.name} q{row['q']}: evidence {sorted(row['evidence'])} does not fit")


def stamp(turn: Turn) -> datetime:
    """When a turn's query was said: its day from SESSION_START, TURN_GAP apart."""
    number = int(turn.turn_id.split(":")[1])
    return datetime.combine(turn.day, SESSION_START) + TURN_GAP * (number - 1)


def turn_rows(user: User, lang: str, episodes: str) -> list[dict[str, Any]]:
    """The user's history as LoCoMo turn rows: one per exchange, or one per message."""
    rows: list[dict[str, Any]] = []
    for t in user.turns:
        at = stamp(t)
        if episodes == "turn":
            text = f"{t.query}\n{ASSISTANT[lang]}: {t.response}"
            rows.append(_turn_row(user, t.session, t.turn_id, user.name, text, at))
        else:
            rows.append(_turn_row(user, t.session, f"{t.turn_id}q", user.name, t.query, at))
            rows.append(_turn_row(user, t.session, f"{t.turn_id}r", ASSISTANT[lang], t.response, at + RESPONSE_DELAY))
    return rows


def _turn_row(user: User, session: int, dia_id: str, speaker: str, text: str, at: datetime) -> dict[str, Any]:
    return {"conv": user.conv, "session": session, "dia_id": dia_id, "speaker": speaker, "text": text,
            "ts": at.isoformat()}  # fmt: skip


def gold_ids(evidence: dict[str, str], episodes: str) -> list[str]:
    """The episode ids a label's evidence stands for: the turns, or the messages of the parts it names."""
    if episodes == "turn":
        return list(evidence)
    return [f"{turn_id}{part}" for turn_id, parts in evidence.items() for part in ("q", "r") if part in parts]


def gold_rows(user: User, labels: Sequence[dict[str, Any]], lang: str, episodes: str) -> list[dict[str, Any]]:
    """The user's questions as LoCoMo gold rows, all asked the day after the last chat."""
    last_day = max(t.day for t in user.turns)
    ask_ts = datetime.combine(last_day + timedelta(days=1), ASK_AT).isoformat()
    sessions = {t.turn_id: t.session for t in user.turns}
    rows: list[dict[str, Any]] = []
    for label in labels:
        row = {
            "qid": f"mb-{lang}-{user.conv}-q{label['q']}",
            "conv": user.conv,
            "question": user.questions[label["q"]],
            "answer": label["answer"],
            "category": CATEGORY_IDS[label["category"]],
            "category_name": label["category"],
            "ask_ts": ask_ts,
            "gold_dia_ids": gold_ids(label["evidence"], episodes),
            "gold_sessions": sorted({sessions[t] for t in label["evidence"]}),
        }
        if label.get("false_premise"):
            row["false_premise"] = True
        rows.append(row)
    return rows


def convert(
    data: Path, labels: dict[str, Any], lang: str, episodes: str = "turn"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One language's turn rows and gold rows."""
    users = load_users(data, lang)
    check_labels(users, labels[lang], lang)
    turns = [row for user in users for row in turn_rows(user, lang, episodes)]
    gold = [row for user in users for row in gold_rows(user, labels[lang][user.name], lang, episodes)]
    return turns, gold


def write(out: Path, turns: Iterable[dict[str, Any]], gold: Iterable[dict[str, Any]], about: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("locomo10_turns.jsonl", turns), ("locomo10_gold.jsonl", gold)):
        with (out / name).open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    (out / "README.md").write_text(about + "\n", encoding="utf-8")


def out_dir(out: Path, lang: str, episodes: str) -> Path:
    return out / (f"memorybank-{lang}" if episodes == "turn" else f"memorybank-{lang}-{episodes}")


def show_sample(data: Path, labels: dict[str, Any], count: int, seed: int = SAMPLE_SEED) -> str:
    """`count` labelled questions (half per language, seeded) beside the text of their evidence turns."""
    out: list[str] = []
    for lang in LANGUAGES:
        users = load_users(data, lang)
        pairs = [(u, row) for u in users for row in labels[lang][u.name]]
        for user, row in random.Random(f"{seed}:{lang}").sample(pairs, min(count // 2, len(pairs))):
            out.append(f"[{lang} {user.name} q{row['q']} {row['category']}] {user.questions[row['q']]}")
            out.append(f"  answer: {row['answer']}")
            turns = {t.turn_id: t for t in user.turns}
            for turn_id, part in row["evidence"].items():
                t = turns[turn_id]
                out.append(f"  {turn_id} {t.day} ({part})")
                out.append(f"    Q: {t.query}")
                out.append(f"    R: {t.response}")
            out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="MemoryBank's eval_data (cn/, en/)")
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS, help="the evidence labels (JSON)")
    parser.add_argument("--out", type=Path, default=Path(".bench"), help="writes <out>/memorybank-<lang>/")
    parser.add_argument("--lang", choices=LANGUAGES, action="append", help="one language (repeatable; default both)")
    parser.add_argument("--episodes", choices=EPISODES, default="turn", help="an episode per exchange or per message")
    parser.add_argument("--show-sample", type=int, default=0, metavar="N", help="print N labels with their evidence")
    args = parser.parse_args(argv)
    labels = load_labels(args.labels)
    if args.show_sample:
        print(show_sample(args.data, labels, args.show_sample))
        return 0
    for lang in args.lang or LANGUAGES:
        turns, gold = convert(args.data, labels, lang, args.episodes)
        target = out_dir(args.out, lang, args.episodes)
        about = (
            f"MemoryBank ({lang}, one episode per {args.episodes}), written by bench/memorybank.py from {args.data} "
            f"and {args.labels.name} (the data: MIT, Zhong et al. 2023)."
        )
        write(target, turns, gold, about)
        print(f"wrote {len(turns)} turns and {len(gold)} questions to {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
