"""No relevant memory, measured on both sides: what must get `no_relevant_memory: true`, and what must not.

Each conversation of each benchmark given (directories in LoCoMo's shape: MemoryBank's two languages as
bench/memorybank.py writes them, LoCoMo itself) is ingested into its own namespace as bench/locomo.py does, then asked,
as of its questions' ask time:

- **must get no memory**: every query of `negative` in `bench/data/offtopic.json` (greetings, thanks, small talk and
  off-topic questions, English and Chinese: "你好", "谢谢", "今天天气怎么样", "favourite opera singer?"), in every
  namespace; and the benchmark's questions labelled unanswerable (MemoryBank's `unanswerable`: no evidence).
- **must not**: the short questions of `positive` written for that conversation ("我去过哪个公园？", "what wine do I
  like?"), and the benchmark's own questions that have evidence.
- **reported only**: LoCoMo's adversarial questions (category 5: they misattribute what was said, and their evidence
  is the turn they misattribute) and its questions without evidence labels (inferences the labels leave out), whose
  no-memory share is printed beside the others.

The figure is the share answered correctly on each side, per group and language, and in the totals by whether a
query is in the namespace's own language (a greeting in the other language shares no words with the memories, so it
is the easy half). A relevance change is measured on both sides in one run.

    .venv/bin/python bench/offtopic.py --data .bench/memorybank-cn --data .bench/memorybank-en \\
        --data ../shared/benchmarks/locomo
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import typing
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from locomo import Bench, Turn, load_turns, utc
from metrics import format_table, mean
from rearview.bootstrap import build
from rearview.clock import ManualClock
from rearview.domain.recall import RecallQuery
from rearview.settings import Settings

DEFAULT_DATA = (Path(".bench/memorybank-cn"), Path(".bench/memorybank-en"), Path("../shared/benchmarks/locomo"))
DEFAULT_QUERIES = Path(__file__).resolve().parent / "data" / "offtopic.json"
EMBEDDERS = typing.get_args(Settings.model_fields["embedder"].annotation)
TOP_K = 10
ADVERSARIAL = 5  # LoCoMo's category for questions that misattribute what was said
UNANSWERABLE = "unanswerable"  # the category_name of questions whose answer is nowhere (bench/memorybank.py)
SIDES = {True: "no memory expected", False: "memory expected", None: "reported only"}


@dataclass(frozen=True)
class Ask:
    """One query put to one namespace, and whether it should get no_relevant_memory (None: reported only)."""

    benchmark: str
    conv: str
    group: str
    lang: str
    text: str
    expect_none: bool | None


def load_gold_rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def benchmark_asks(benchmark: str, rows: Sequence[dict[str, Any]], lang: str) -> list[Ask]:
    """The benchmark's own questions: with evidence, memory expected (reported only for LoCoMo's adversarial ones);
    labelled unanswerable, no memory expected; without evidence but not labelled so (LoCoMo's four inference
    questions), reported only."""
    out: list[Ask] = []
    for row in rows:
        text, conv = row["question"], row["conv"]
        if row.get("category_name") == UNANSWERABLE:
            out.append(Ask(benchmark, conv, "unanswerable questions", lang, text, True))
        elif not row["gold_dia_ids"]:
            out.append(Ask(benchmark, conv, "questions without evidence labels", lang, text, None))
        elif int(row["category"]) == ADVERSARIAL:
            out.append(Ask(benchmark, conv, "adversarial questions (evidence elsewhere)", lang, text, None))
        else:
            out.append(Ask(benchmark, conv, "benchmark questions", lang, text, False))
    return out


def written_asks(benchmark: str, convs: Sequence[str], queries: dict[str, Any], lang: str) -> list[Ask]:
    """Every negative query in every conversation, and the short questions written for each conversation."""
    out = [Ask(benchmark, conv, q["kind"], q["lang"], q["text"], True) for conv in convs for q in queries["negative"]]
    short = queries["positive"].get(benchmark, {})
    out += [
        Ask(benchmark, conv, "short questions", lang, text, False) for conv in convs for text in short.get(conv, [])
    ]
    return out


def language_of(turns: dict[str, list[Turn]]) -> str:
    """zh when most of the text is CJK, else en: the language the benchmark's own questions are counted under."""
    text = "".join(t.text for conv in list(turns.values())[:2] for t in conv[:50])
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return "zh" if cjk > len(text) / 4 else "en"


def ask_time(conv: str, turns: Sequence[Turn], rows: Sequence[dict[str, Any]]) -> datetime:
    """The conversation's questions' ask time, or a day after its last turn when it has none."""
    times = [utc(r["ask_ts"]) for r in rows if r["conv"] == conv]
    return max(times) if times else max(t.ts for t in turns) + timedelta(days=1)


def run(args: argparse.Namespace, data_dir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    with args.queries.open(encoding="utf-8") as f:
        queries: dict[str, Any] = json.load(f)
    clock = ManualClock()
    services = build(Settings(embedder=args.embedder, data_dir=data_dir), clock=clock)
    bench = Bench(services, clock)
    rows: list[dict[str, Any]] = []
    try:
        for data in args.data:
            benchmark = data.resolve().name
            turns_by_conv = load_turns(data / "locomo10_turns.jsonl")
            gold = load_gold_rows(data / "locomo10_gold.jsonl")
            convs = list(turns_by_conv)[: args.limit_convs] if args.limit_convs else list(turns_by_conv)
            lang = language_of(turns_by_conv)
            asks = written_asks(benchmark, convs, queries, lang)
            asks += benchmark_asks(benchmark, [r for r in gold if r["conv"] in convs], lang)
            for conv in convs:
                started = time.perf_counter()
                namespace = f"offtopic:{benchmark}:{conv}"
                bench.ingest(namespace, turns_by_conv[conv])
                at = ask_time(conv, turns_by_conv[conv], gold)
                clock.set(at)
                mine = [a for a in asks if a.conv == conv]
                for a in mine:
                    resp = services.recaller.recall(namespace, RecallQuery(query=a.text, top_k=TOP_K, as_of=at))
                    rows.append({**asdict(a), "no_memory": resp.no_relevant_memory, "same_language": a.lang == lang})
                log(f"{benchmark} {conv}: {len(mine)} queries, {time.perf_counter() - started:.1f}s")
    finally:
        services.close()
    return {"embedder": services.embedder.name, "rows": rows}


def correct(row: dict[str, Any]) -> float:
    """1.0 when the answer is what the side expects; for reported-only rows, whether it answered no memory."""
    expect = row["expect_none"]
    return float(row["no_memory"] if expect is None else row["no_memory"] == expect)


def summary(rows: Sequence[dict[str, Any]]) -> list[list[object]]:
    """One row per side, benchmark, group and language: the count and the share answered as expected."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["expect_none"], r["benchmark"], r["group"], r["lang"]), []).append(r)
    order = sorted(groups, key=lambda k: (list(SIDES).index(k[0]), *k[1:]))
    return [[SIDES[k[0]], *k[1:], len(groups[k]), mean([correct(r) for r in groups[k]])] for k in order]


# The totals' rows: each language of the queries, and whether a query is in the namespace's own language (a query in
# the other language shares few words with the memories, so it is the easier side of the test).
SLICES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "en": lambda r: r["lang"] == "en",
    "zh": lambda r: r["lang"] == "zh",
    "the namespace's language": lambda r: r["same_language"],
    "the other language": lambda r: not r["same_language"],
    "all": lambda r: True,
}


def totals(rows: Sequence[dict[str, Any]]) -> list[list[object]]:
    """Each side over everything, per language of the queries, and by whether they are in the namespace's."""
    out: list[list[object]] = []
    for side in SIDES:
        for name, taken in SLICES.items():
            mine = [r for r in rows if r["expect_none"] is side and taken(r)]
            if mine:
                out.append([SIDES[side], name, len(mine), mean([correct(r) for r in mine])])
    return out


def report(results: dict[str, Any]) -> str:
    rows = results["rows"]
    return "\n".join(
        [
            format_table(
                ["side", "benchmark", "group", "lang", "n", "share correct"],
                summary(rows),
                title=(
                    f"== no_relevant_memory on both sides, embedder {results['embedder']} (reported only: the share "
                    "answered no memory) =="
                ),
            ),
            "",
            format_table(["side", "queries", "n", "share correct"], totals(rows), title="== totals =="),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data", type=Path, action="append", help="a benchmark directory in LoCoMo's shape (repeatable)"
    )
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES, help="the negative and short queries (JSON)")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="e5")
    parser.add_argument("--limit-convs", type=int, default=None, help="only the first N conversations of each")
    parser.add_argument("--json-out", type=Path, default=None, help="write every answer as JSON here")
    args = parser.parse_args(argv)
    args.data = args.data or list(DEFAULT_DATA)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="rearview-offtopic-") as tmp:
        results = run(args, Path(tmp), log)
    print(report(results))
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
