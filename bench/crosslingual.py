"""Cross-lingual recall: a fact told in one language, asked for in the other.

`bench/data/crosslingual.json` holds four users' facts (one namespace each, 26 facts a user): half told in English
and asked in Chinese, half told in Chinese and asked in English, the two worded to share no words beyond names. Beside
each fact the namespace stores two distractors: one in the question's language that shares the question's words but
does not answer it, one in the fact's language on the fact's topic. So a namespace holds 78 memories in both
languages, and a question is answered only by meaning across languages, not by its words or its script.

Every memory is written through the service write path as an episode (seeded order, six hours apart); each question
is asked a day after the last, top 10. The figure is the share of questions whose fact is the first result (top-1)
or among the first two (top-2), for Rearview's recall and, in the same run, vector search alone and keyword search
alone; "distractor first" is the share where the question-language distractor ranks above the fact.

`--filler FILE` (repeatable) writes turns of other conversations into every namespace first (LoCoMo-format turns,
as `bench/memorybank.py` writes them): with MemoryBank's Chinese and English chats a namespace holds 1,210 memories,
so the facts compete with a namespace's worth of text in both scripts, not with 78 memories. `--param` runs recall
with another value of a `RecallParameters` field (`--param across_search=false`: the search in the other script off).

    .venv/bin/python bench/crosslingual.py [--data bench/data/crosslingual.json] [--embedder e5]
    .venv/bin/python bench/crosslingual.py --filler .bench/memorybank-cn/locomo10_turns.jsonl \
        --filler .bench/memorybank-en/locomo10_turns.jsonl [--param across_search=false]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from metrics import dedup_ids, format_table, mean
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings
from rearview.text_analysis import query_terms
from recall_params import add_param_argument, with_params

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "crosslingual.json"
EMBEDDERS = typing.get_args(Settings.model_fields["embedder"].annotation)
SEED = 35
TOP_K = 10
START = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
GAP = timedelta(hours=6)
SYSTEMS = ("rearview", "vector", "keyword")
DIRECTIONS = {"en": "English fact, Chinese question", "zh": "Chinese fact, English question"}


@dataclass(frozen=True)
class Item:
    """A fact, the question that asks for it in the other language, and its two distractors (by language)."""

    id: str
    user: str
    fact_lang: str
    fact: str
    question: str
    distractors: dict[str, str]

    @property
    def question_lang(self) -> str:
        return "zh" if self.fact_lang == "en" else "en"

    def distractor_id(self, lang: str) -> str:
        return f"{self.id}-d{lang}"


def load_items(path: Path) -> list[Item]:
    with path.open(encoding="utf-8") as f:
        users: dict[str, list[dict[str, Any]]] = json.load(f)["users"]
    return [
        Item(row["id"], user, row["fact_lang"], row["fact"], row["question"], dict(row["distractors"]))
        for user, rows in users.items()
        for row in rows
    ]


def namespace_of(user: str) -> str:
    return f"crosslingual:{user}"


def memories_of(items: Sequence[Item], rng: random.Random) -> list[tuple[str, str]]:
    """A user's memories as (id, text): every fact and both its distractors, in a seeded order."""
    out = [(item.id, item.fact) for item in items]
    out += [(item.distractor_id(lang), text) for item in items for lang, text in sorted(item.distractors.items())]
    rng.shuffle(out)
    return out


def load_filler(paths: Sequence[Path]) -> list[tuple[str, str]]:
    """The filler turns of the files (LoCoMo-format turns, a JSON object a line) as (id, text)."""
    out: list[tuple[str, str]] = []
    for n, path in enumerate(paths):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                turn = json.loads(line)
                out.append((f"filler-{n}-{turn['conv']}-{turn['dia_id']}", turn["text"]))
    return out


def ingest_filler(services: Services, namespace: str, filler: Sequence[tuple[str, str]]) -> None:
    """The filler turns, a minute apart ending before START, in batches of 100 (each stored: none is a fact)."""
    first = START - timedelta(minutes=len(filler) + 1)
    writes = [
        MemoryWrite(layer="episodic", id=memory_id, content=text, occurred_at=first + timedelta(minutes=i))
        for i, (memory_id, text) in enumerate(filler)
    ]
    for start in range(0, len(writes), 100):
        services.writer.write_batch(namespace, writes[start : start + 100])


def ingest(services: Services, clock: ManualClock, namespace: str, memories: Sequence[tuple[str, str]]) -> datetime:
    """Write the memories as episodes, GAP apart; the time of the last."""
    at = START
    for memory_id, text in memories:
        clock.set(at)
        result = services.writer.write_batch(
            namespace, [MemoryWrite(layer="episodic", id=memory_id, content=text, occurred_at=at, importance=1.0)]
        )[0]
        if result.status != "stored":
            raise RuntimeError(f"{memory_id} was {result.status} ({result.reason}), not stored")
        at += GAP
    return at - GAP


def ranked_by(services: Services, namespace: str, question: str, as_of: datetime) -> dict[str, tuple[list[str], bool]]:
    """Each system's ranked ids for a question, and whether Rearview answered no_relevant_memory."""
    resp = services.recaller.recall(namespace, RecallQuery(query=question, top_k=TOP_K, as_of=as_of))
    out = {"rearview": (dedup_ids([h.id, *h.provenance, *h.collapsed] for h in resp.results), resp.no_relevant_memory)}
    vector = services.index.vector_search(namespace, services.embedder.embed([question])[0], MemoryFilter(), TOP_K)
    out["vector"] = (dedup_ids([c.id] for c in vector), False)
    keyword = services.index.keyword_search(namespace, question, MemoryFilter(), TOP_K) if query_terms(question) else []
    out["keyword"] = (dedup_ids([c.id] for c in keyword), False)
    return out


def score(ranked: Sequence[str], item: Item, no_memory: bool) -> dict[str, float]:
    """Top-1, top-2 and R@10 of the fact; whether the question-language distractor ranks above it."""
    rank = ranked.index(item.id) if item.id in ranked else math.inf
    decoy = item.distractor_id(item.question_lang)
    decoy_rank = ranked.index(decoy) if decoy in ranked else math.inf
    return {
        "top-1": float(rank == 0),
        "top-2": float(rank <= 1),
        "R@10": float(rank < TOP_K),
        "distractor first": float(decoy_rank < rank),
        "no memory": float(no_memory),
    }


def run(args: argparse.Namespace, data_dir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    items = load_items(args.data)
    clock = ManualClock()
    services = build(with_params(Settings(embedder=args.embedder, data_dir=data_dir), args.param), clock=clock)
    filler = load_filler(args.filler)
    rows: list[dict[str, Any]] = []
    try:
        for user in dict.fromkeys(item.user for item in items):
            mine = [item for item in items if item.user == user]
            namespace = namespace_of(user)
            clock.set(START)
            ingest_filler(services, namespace, filler)
            last = ingest(services, clock, namespace, memories_of(mine, random.Random(f"{args.seed}:{user}")))
            ask_at = last + timedelta(days=1)
            clock.set(ask_at)
            for item in mine:
                for system, (ranked, no_memory) in ranked_by(services, namespace, item.question, ask_at).items():
                    rows.append({"id": item.id, "direction": item.fact_lang, "system": system, "ranked": ranked[:3],
                                 **score(ranked, item, no_memory)})  # fmt: skip
            log(f"{user}: {len(mine)} questions over {3 * len(mine) + len(filler)} memories")
    finally:
        services.close()
    return {"embedder": services.embedder.name, "items": len(items), "seed": args.seed, "filler": len(filler),
            "params": list(args.param), "rows": rows}  # fmt: skip


METRICS = ("top-1", "top-2", "R@10", "distractor first", "no memory")


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per system, per direction (and all): the mean of each metric, with the question count as `n`."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for system in SYSTEMS:
        mine = [r for r in rows if r["system"] == system]
        groups = {**{d: [r for r in mine if r["direction"] == d] for d in DIRECTIONS}, "all": mine}
        out[system] = {
            name: {"n": float(len(group)), **{m: mean([r[m] for r in group]) for m in METRICS}}
            for name, group in groups.items()
        }
    return out


def report(results: dict[str, Any]) -> str:
    figures = summary(results["rows"])
    table = [
        [system, DIRECTIONS.get(group, "all"), int(vals["n"]), *(vals[m] for m in METRICS)]
        for system, groups in figures.items()
        for group, vals in groups.items()
    ]
    return format_table(
        ["system", "questions", "n", *METRICS],
        table,
        title=(
            f"== cross-lingual recall: {results['items']} facts, {results['filler']} filler memories a namespace, "
            f"embedder {results['embedder']}, seed {results['seed']}, params {results['params'] or 'none'} "
            "(no memory: Rearview answered no_relevant_memory) =="
        ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the set (JSON)")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="e5")
    parser.add_argument("--seed", type=int, default=SEED, help="the order the memories are written in")
    parser.add_argument("--filler", type=Path, action="append", default=[], help="turns (JSONL) written first")
    parser.add_argument("--json-out", type=Path, default=None, help="write every figure as JSON here")
    add_param_argument(parser)
    args = parser.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="rearview-crosslingual-") as tmp:
        results = run(args, Path(tmp), log)
    print(report(results))
    if args.json_out:
        args.json_out.write_text(json.dumps({**results, "summary": summary(results["rows"])}, indent=2),
                                 encoding="utf-8")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
