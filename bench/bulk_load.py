"""The bulk door against the write path: LoCoMo's turns brought into the embedded backend (SQLite on disk), three
ways, in one run, with the lines a second of each and the recall of what each stored.

- `import`: what `rearview import` does locally: each line parsed, `write_batch` in batches of 100 (each line
  searched against the namespace for a near-duplicate to merge into, then stored). The baseline.
- `load`: what `rearview load` does without vectors: each line parsed, `BulkLoadService.load` in requests of 500,
  the lines of a request embedded in one batch, stored through the store's bulk path.
- `load+vectors`: the same lines, each carrying its vector (computed beforehand by the same embedder, not timed,
  serialised into the line as a caller would bring it), nothing embedded here.

Each way has a fresh data directory; each conversation a namespace of its own, each turn its `dia_id` as id, its
session as `session_id` (so a turn's context is the turn before it) and its speaker as an entity, as `rearview
import` reads LoCoMo's turns. Then each store answers the conversations' LoCoMo questions (top 10, the clock at the
question's time): R@10 against the evidence turns (a turn the write path merged counts as the memory it merged into).

    .venv/bin/python bench/bulk_load.py --data ../shared/benchmarks/locomo     # 4 conversations, the default embedder
    .venv/bin/python bench/bulk_load.py --data ../shared/benchmarks/locomo --conversations 10 --embedder minilm
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from locomo import Question, Turn, load_questions, load_turns, namespace_of
from metrics import format_table
from rearview.bootstrap import Services, build
from rearview.cli.jsonl_import import import_lines, load_lines
from rearview.clock import ManualClock
from rearview.domain.bulk_load import EpisodeLoad, LoadRequest, LoadResult
from rearview.domain.recall import RecallQuery
from rearview.domain.write import MemoryWrite, WriteResult
from rearview.settings import Settings

IMPORT_BATCH = 100
LOAD_BATCH = 500
TOP_K = 10


def _line(turn: Turn) -> dict[str, Any]:
    return {
        "id": turn.dia_id,
        "text": turn.text,
        "ts": turn.ts.isoformat(),
        "speaker": turn.speaker,
        "session_id": f"session-{turn.session}",
    }


def _encoded(convs: dict[str, list[Turn]], vectors: dict[str, dict[str, list[float]]] | None) -> dict[str, list[bytes]]:
    """Each conversation's lines as the bytes of a JSONL file (with `vector` when given)."""
    out: dict[str, list[bytes]] = {}
    for conv, turns in convs.items():
        rows = []
        for turn in turns:
            row = _line(turn)
            if vectors is not None:
                row["vector"] = vectors[conv][turn.dia_id]
            rows.append(json.dumps(row).encode())
        out[conv] = rows
    return out


class _Recording:
    """The write service as `rearview import` calls it, keeping which turn each merged turn went into."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self.alias: dict[str, str] = {}

    def write_batch(self, namespace: str, items: Sequence[MemoryWrite]) -> list[WriteResult]:
        results = self._services.writer.write_batch(namespace, items)
        for item, result in zip(items, results, strict=True):
            if result.merged_into and item.id:
                self.alias[item.id] = result.merged_into
        return results


def _ingest(way: str, services: Services, lines: dict[str, list[bytes]]) -> tuple[float, int, dict[str, str]]:
    """Bring every conversation in `way`; the seconds it took, the episodes stored, and the merged turns' aliases."""
    writer = _Recording(services)
    stored = 0
    started = time.perf_counter()
    for conv, rows in lines.items():
        namespace = namespace_of(conv)
        if way == "import":
            summary = import_lines(writer, namespace, rows, IMPORT_BATCH)
            stored += summary.counts["stored"]
            invalid = summary.invalid
        else:

            def send(items: list[EpisodeLoad], namespace: str = namespace) -> LoadResult:
                return services.bulk_load.load(namespace, LoadRequest(items=items))

            loaded = load_lines(send, rows, LOAD_BATCH)
            stored += loaded.loaded
            invalid = loaded.invalid
        if invalid:
            raise SystemExit(f"{conv}: invalid lines {invalid[:3]}")
    return time.perf_counter() - started, stored, writer.alias


def _recall_at_k(services: Services, clock: ManualClock, questions: Sequence[Question], alias: dict[str, str]) -> float:
    total = 0.0
    for q in questions:
        clock.set(q.ask_ts)
        answer = services.recaller.recall(namespace_of(q.conv), RecallQuery(query=q.question, top_k=TOP_K))
        found = {hit.id for hit in answer.results}
        gold = {alias.get(g, g) for g in q.gold}
        total += len(gold & found) / len(gold)
    return total / max(1, len(questions))


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    convs = dict(list(load_turns(args.data / "locomo10_turns.jsonl").items())[: args.conversations])
    questions = [q for q in load_questions(args.data / "locomo10_gold.jsonl")[0] if q.conv in convs]
    turns = sum(len(t) for t in convs.values())
    last = max(t.ts for rows in convs.values() for t in rows) + timedelta(days=1)
    settings_of = lambda d: Settings(data_dir=d, embedder=args.embedder)  # noqa: E731 - one line
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        probe = build(settings_of(Path(scratch) / "probe"))
        log(f"embedding {turns} turns beforehand for load+vectors ({probe.embedder.name})")
        vectors = {
            conv: dict(zip([t.dia_id for t in ts], probe.embedder.embed([t.text for t in ts]).tolist(), strict=True))
            for conv, ts in convs.items()
        }
        probe.close()
        ways = {
            "import": _encoded(convs, None),
            "load": _encoded(convs, None),
            "load+vectors": _encoded(convs, vectors),
        }
        for way, lines in ways.items():
            clock = ManualClock(last)
            services = build(settings_of(Path(scratch) / way), clock=clock)
            services.embedder.embed(["warm up the model"])
            log(f"{way}: {turns} lines into {len(convs)} namespaces")
            seconds, stored, alias = _ingest(way, services, lines)
            r10 = _recall_at_k(services, clock, questions, alias)
            rows.append({"way": way, "lines": turns, "seconds": seconds, "stored": stored, "r10": r10})
            services.close()
    base = rows[0]["lines"] / rows[0]["seconds"]
    for row in rows:
        row["rate"] = row["lines"] / row["seconds"]
        row["speedup"] = row["rate"] / base
    return {"embedder": args.embedder, "conversations": len(convs), "questions": len(questions), "rows": rows}


def report(results: dict[str, Any]) -> str:
    table = format_table(
        ["way", "lines", "seconds", "lines/s", "× import", "episodes stored", f"R@{TOP_K}"],
        [
            [r["way"], str(r["lines"]), f"{r['seconds']:.1f}", f"{r['rate']:.0f}", f"{r['speedup']:.1f}",
             str(r["stored"]), f"{r['r10']:.3f}"]
            for r in results["rows"]
        ],
    )  # fmt: skip
    return (
        f"LoCoMo, {results['conversations']} conversations, {results['questions']} questions, "
        f"embedder {results['embedder']}, SQLite on disk\n\n{table}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo's directory (locomo10_turns.jsonl, ...)")
    parser.add_argument("--conversations", type=int, default=4, help="the first N conversations")
    parser.add_argument(
        "--embedder", default=Settings.model_fields["embedder"].default, help="every way's embedder (the default's)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    results = run(args, lambda message: print(message, file=sys.stderr, flush=True))
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
