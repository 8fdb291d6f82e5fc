"""Chatlog: a synthetic benchmark of long, informal chats between friends, in LoCoMo's file shape.

`bench/locomo.py --data <dir>` reads what this writes (`locomo10_turns.jsonl`, `locomo10_gold.jsonl`), so every
figure of that benchmark is measured here the same way. The data is made, not copied: a seeded procedure writes
it, and the same seed writes the same bytes.

    .venv/bin/python bench/chatgen.py --out /tmp/chatlog            # the default benchmark (seed 7)
    .venv/bin/python bench/locomo.py --data /tmp/chatlog --ablations

What it is not: LoCoMo's style (sessions of ~20 long, well-formed turns that take turns strictly). What it is:

- **Conversations** between two or three friends, each one to three chat logs ("sessions") of 500-1,200 turns over
  a week or two: messages of a few words, sent in bursts (a speaker often sends two to four in a row), lower case,
  abbreviated ("u", "tmrw", "bc"), with typos (a swapped, dropped or doubled letter), emoji and "lol"s. Small talk
  is pieced from an opener, a remark and a tail, so that apart from reactions ("lol", "ok") few messages repeat.
- **Facts** (`FACTS`: a pet, a new job, a class, a trip, a purchase, an allergy ...) are planted among the small talk,
  told in one of four ways: a message that says it all; a friend asks and the reply says it next; a friend asks and
  the reply comes a few messages later, after other chatter; or the teller splits it over a burst. Some facts change
  later (a second job, a move), and the question asks for the latest.
- **Hard negatives**: the same kinds of facts about people outside the chat ("my cousin got a puppy too"), and
  small talk that uses the facts' words ("this job is killing me").
- **Questions** are asked the way a user asks an assistant, in plain words that differ from the chat's ("What is
  the name of Ines's dog?" for "omg we got a pupper!! hes called Mochi"): single-hop (category 4), when (2), and
  two-person (1, evidence in two places). The evidence is the turn(s) that state the fact; where a reply says it
  only together with the question it answers ("yess Mochi"), both.

Sizes and rates are the module's constants; nothing is read from LoCoMo.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from chatgen_content import FACTS, NAMES, FactKind, filler_exchange, third_parties

DEFAULT_SEED = 7
CONVERSATIONS = 6
SESSIONS = (1, 3)  # chat logs per conversation (inclusive range)
SESSION_TURNS = (500, 1200)
FACTS_PER_SPEAKER = (8, 11)
# How a fact is told: in one message; asked and answered next; asked and answered after other chatter; over a burst.
TELLINGS = {"statement": 0.3, "adjacent": 0.3, "delayed": 0.25, "burst": 0.15}
UPDATE_SHARE = 0.25  # facts that change later (when their kind can)
NEGATIVE_SHARE = 0.6  # facts that also get a look-alike about someone outside the chat
EMOJI = ["😂", "🙃", "😭", "🎉", "❤️", "👀", "🙏", "😅", "🔥", "💀", "✨", "😬"]
ABBREVIATIONS = {
    "you": "u",
    "are": "r",
    "tomorrow": "tmrw",
    "tonight": "tonite",
    "because": "bc",
    "probably": "prob",
    "though": "tho",
    "really": "rly",
    "please": "pls",
    "people": "ppl",
    "with": "w",
    "okay": "ok",
    "don't": "dont",
    "i'm": "im",
    "it's": "its",
    "that's": "thats",
}


@dataclass(frozen=True)
class Turn:
    session: int
    dia_id: str
    speaker: str
    text: str
    ts: datetime


@dataclass
class Chat:
    """One conversation as it is written: its turns, and the clock of the current session."""

    conv: str
    rng: random.Random
    turns: list[Turn] = field(default_factory=list)
    session: int = 0
    index: int = 0
    now: datetime = datetime(2022, 1, 1)

    def start_session(self, start: datetime) -> None:
        self.session += 1
        self.index = 0
        self.now = start

    def say(self, speaker: str, text: str, noisy: bool = True) -> str:
        """Append a message (made informal unless `noisy` is off) and return its id."""
        self.index += 1
        self.now += self._gap()
        dia_id = f"D{self.session}:{self.index}"
        self.turns.append(Turn(self.session, dia_id, speaker, informal(text, self.rng) if noisy else text, self.now))
        return dia_id

    def _gap(self) -> timedelta:
        """Seconds within a sitting, now and then hours between sittings."""
        if self.rng.random() < 0.02:
            return timedelta(hours=self.rng.uniform(3, 16))
        return timedelta(seconds=self.rng.randint(4, 240))


@dataclass(frozen=True)
class Planted:
    """A fact told in a chat: whose, what, where its evidence is and when it was told."""

    kind: FactKind
    owner: str
    value: str
    evidence: tuple[str, ...]
    told_at: datetime
    session: int
    superseded: bool = False


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    sessions: tuple[int, ...]


def informal(text: str, rng: random.Random) -> str:
    """Chat spelling: lower case (mostly), abbreviations, now and then a typo, an emoji or a "lol"."""
    words = text.split()
    if rng.random() < 0.8:
        words = [w if _is_name(w) and rng.random() < 0.6 else w.lower() for w in words]
    words = [ABBREVIATIONS.get(w.lower(), w) if rng.random() < 0.7 else w for w in words]
    if rng.random() < 0.18 and words:
        i = rng.randrange(len(words))
        words[i] = typo(words[i], rng)
    out = " ".join(words)
    if rng.random() < 0.5:
        out = out.rstrip(".")
    roll = rng.random()
    if roll < 0.2:
        out += " " + rng.choice(EMOJI) * rng.choice((1, 1, 2, 3))
    elif roll < 0.3:
        out += " " + rng.choice(("lol", "haha", "lmao", "hahaha"))
    return out


def _is_name(word: str) -> bool:
    return word[:1].isupper()


def typo(word: str, rng: random.Random) -> str:
    """A swapped, dropped or doubled letter (words under four letters stay as they are)."""
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 1)
    kind = rng.choice(("swap", "drop", "double"))
    if kind == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == "drop":
        return word[:i] + word[i + 1 :]
    return word[:i] + word[i] + word[i:]


def tell(chat: Chat, kind: FactKind, owner: str, friend: str, value: str, update: bool = False) -> tuple[str, ...]:
    """Tell one fact in the chat in one of the four ways; the ids of the turns that state it."""
    rng = chat.rng
    slots = {"value": value}
    if update:
        return (chat.say(owner, kind.render(rng.choice(kind.updates), slots)),)
    telling = rng.choices(list(TELLINGS), weights=list(TELLINGS.values()))[0]
    if telling == "statement" or not kind.asks:
        return (chat.say(owner, kind.render(rng.choice(kind.statements), slots)),)
    if telling == "burst":
        chat.say(owner, rng.choice(("guess what", "ok so", "omg", "news!!", "u wont believe this")))
        return (chat.say(owner, kind.render(rng.choice(kind.statements), slots)),)
    asked = chat.say(friend, kind.render(rng.choice(kind.asks), slots))
    if telling == "delayed":
        for _ in range(rng.randint(1, 4)):
            chat.say(rng.choice((owner, friend)), filler_exchange(rng, 1)[0])
    template, whole = rng.choice(kind.replies)
    said = chat.say(owner, kind.render(template, slots))
    # A reply that names the value but not what it is ("yess Mochi") states the fact with its question.
    return (said,) if whole else (asked, said)


def plan_facts(rng: random.Random, speakers: Sequence[str]) -> list[tuple[FactKind, str]]:
    """Which kinds of fact each speaker tells (no kind twice for one speaker)."""
    plan: list[tuple[FactKind, str]] = []
    for speaker in speakers:
        kinds = rng.sample(FACTS, rng.randint(*FACTS_PER_SPEAKER))
        plan.extend((kind, speaker) for kind in kinds)
    rng.shuffle(plan)
    return plan


def write_conversation(conv_index: int, seed: int) -> tuple[str, list[Turn], list[Planted], list[str]]:
    """One conversation: its id, turns, the facts planted in it and its speakers."""
    rng = random.Random(f"chatlog:{seed}:{conv_index}")
    conv = f"chat-{conv_index + 1}"
    speakers = rng.sample(NAMES, rng.choice((2, 2, 3)))
    chat = Chat(conv, rng)
    sessions = rng.randint(*SESSIONS)
    lengths = [rng.randint(*SESSION_TURNS) for _ in range(sessions)]
    plan = plan_facts(rng, speakers)
    # Facts spread evenly over the turns; an update comes in a later session than the fact it changes.
    per_session = _split(plan, lengths)
    planted: list[Planted] = []
    pending_updates: list[tuple[FactKind, str]] = []
    start = datetime(2021, 1, 1) + timedelta(days=rng.randint(0, 900), hours=rng.randint(7, 11))
    for number, length in enumerate(lengths):
        chat.start_session(start)
        todo: list[tuple[FactKind, str, bool]] = [(k, s, False) for k, s in per_session[number]]
        todo += [(k, s, True) for k, s in pending_updates]
        pending_updates = []
        rng.shuffle(todo)
        planted += _fill_session(chat, speakers, todo, length, pending_updates)
        start = chat.now + timedelta(days=rng.randint(10, 60))
    return conv, chat.turns, planted, speakers


def _split(plan: list[tuple[FactKind, str]], lengths: Sequence[int]) -> list[list[tuple[FactKind, str]]]:
    """The planned facts shared among the sessions in proportion to their lengths."""
    total, out, taken = sum(lengths), [], 0
    for i, length in enumerate(lengths):
        upto = len(plan) if i == len(lengths) - 1 else taken + round(len(plan) * length / total)
        out.append(plan[taken:upto])
        taken = upto
    return out


def _fill_session(
    chat: Chat,
    speakers: Sequence[str],
    todo: list[tuple[FactKind, str, bool]],
    length: int,
    pending_updates: list[tuple[FactKind, str]],
) -> list[Planted]:
    """Small talk to `length` turns, with the facts of `todo` told at even intervals among it."""
    rng = chat.rng
    planted: list[Planted] = []
    slots_at = sorted(rng.sample(range(20, max(21, length - 20)), min(len(todo), max(1, length - 40))))
    while chat.index < length:
        if todo and slots_at and chat.index >= slots_at[0]:
            slots_at.pop(0)
            kind, owner, update = todo.pop()
            planted.append(_plant(chat, speakers, kind, owner, update))
            if not update and kind.updates and rng.random() < UPDATE_SHARE:
                pending_updates.append((kind, owner))
            if rng.random() < NEGATIVE_SHARE:
                _look_alike(chat, speakers, kind)
            continue
        for speaker_text in _exchange(rng, speakers):
            chat.say(*speaker_text)
    return planted


def _plant(chat: Chat, speakers: Sequence[str], kind: FactKind, owner: str, update: bool) -> Planted:
    rng = chat.rng
    friend = rng.choice([s for s in speakers if s != owner])
    value = kind.pick(rng)
    evidence = tell(chat, kind, owner, friend, value, update=update)
    return Planted(kind, owner, value, evidence, chat.now, chat.session)


def _look_alike(chat: Chat, speakers: Sequence[str], kind: FactKind) -> None:
    """The same kind of fact about someone outside the chat, a few turns later: a hard negative."""
    rng = chat.rng
    for speaker_text in _exchange(rng, speakers, rng.randint(2, 8)):
        chat.say(*speaker_text)
    who = rng.choice(third_parties())
    chat.say(rng.choice(speakers), kind.render(rng.choice(kind.others), {"value": kind.pick(rng), "who": who}))


def _exchange(rng: random.Random, speakers: Sequence[str], turns: int | None = None) -> list[tuple[str, str]]:
    """A stretch of small talk: bursts by one speaker, then another."""
    out: list[tuple[str, str]] = []
    n = turns if turns is not None else rng.randint(2, 7)
    speaker = rng.choice(speakers)
    while len(out) < n:
        for text in filler_exchange(rng, min(n - len(out), rng.choice((1, 1, 1, 2, 2, 3, 4)))):
            out.append((speaker, text))
        speaker = rng.choice([s for s in speakers if s != speaker])
    return out


def questions_for(planted: Sequence[Planted], speakers: Sequence[str], rng: random.Random) -> list[Question]:
    """A question per fact (the latest value where it changed), a when-question for some, and two-person ones."""
    latest: dict[tuple[str, str], Planted] = {}
    for fact in planted:
        latest[(fact.kind.name, fact.owner)] = fact
    out: list[Question] = []
    for fact in latest.values():
        q = fact.kind.question.format(who=fact.owner, their=fact.kind.their)
        out.append(Question(q, fact.value, 4, fact.evidence, (fact.session,)))
        if fact.kind.when_question and rng.random() < 0.5:
            when = fact.kind.when_question.format(who=fact.owner, their=fact.kind.their)
            out.append(Question(when, fact.told_at.date().isoformat(), 2, fact.evidence, (fact.session,)))
    by_kind: dict[str, list[Planted]] = {}
    for fact in latest.values():
        by_kind.setdefault(fact.kind.name, []).append(fact)
    for facts in by_kind.values():
        if len(facts) >= 2 and facts[0].kind.pair_question:
            a, b = facts[0], facts[1]
            q = facts[0].kind.pair_question.format(a=a.owner, b=b.owner)
            sessions = tuple(sorted({a.session, b.session}))
            out.append(Question(q, f"{a.value}; {b.value}", 1, a.evidence + b.evidence, sessions))
    return out


def generate(seed: int = DEFAULT_SEED, conversations: int = CONVERSATIONS) -> tuple[list[dict], list[dict]]:
    """The benchmark's turn rows and question rows, in LoCoMo's derived shape."""
    turn_rows: list[dict] = []
    gold_rows: list[dict] = []
    for c in range(conversations):
        conv, turns, planted, speakers = write_conversation(c, seed)
        ask_ts = (turns[-1].ts + timedelta(days=1)).replace(microsecond=0).isoformat()
        turn_rows += [
            {"conv": conv, "session": t.session, "dia_id": t.dia_id, "speaker": t.speaker, "text": t.text,
             "ts": t.ts.replace(microsecond=0).isoformat()}
            for t in turns
        ]  # fmt: skip
        rng = random.Random(f"chatlog-questions:{seed}:{c}")
        for i, q in enumerate(questions_for(planted, speakers, rng)):
            gold_rows.append(
                {
                    "qid": f"{conv}_q{i}",
                    "conv": conv,
                    "question": q.question,
                    "answer": q.answer,
                    "category": q.category,
                    "ask_ts": ask_ts,
                    "gold_dia_ids": list(q.evidence),
                    "gold_sessions": list(q.sessions),
                }
            )
    return turn_rows, gold_rows


def write(out: Path, seed: int = DEFAULT_SEED, conversations: int = CONVERSATIONS) -> tuple[int, int]:
    """Write the two files into `out`; how many turns and questions."""
    turns, gold = generate(seed, conversations)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("locomo10_turns.jsonl", turns), ("locomo10_gold.jsonl", gold)):
        with (out / name).open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    (out / "README.md").write_text(
        f"Chatlog benchmark, written by bench/chatgen.py (seed {seed}, {conversations} conversations): synthetic, "
        "no third-party text.\n",
        encoding="utf-8",
    )
    return len(turns), len(gold)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the directory to write the two files into")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--conversations", type=int, default=CONVERSATIONS)
    args = parser.parse_args(argv)
    turns, questions = write(args.out, args.seed, args.conversations)
    print(f"wrote {turns} turns and {questions} questions to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
