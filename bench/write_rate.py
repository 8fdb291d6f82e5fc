"""The write path's rate as one namespace grows, with a baseline tree's code in the same run, and its duplicate
decisions against exact search.

`rate`: for each size, the namespace is brought to that size by `store.apply` (real episodes of
`recall_latency.SentenceGenerator`, their real vectors), one write is made and timed on its own (the first after a bulk
load: it loads the cache, and on the baseline builds or extends the graph), the background graph work is let finish,
then --window episodes go through `writer.write_batch` in batches of --batch (a queued request is one batch; the
worker calls the same `write_batch`), hashing embedder, importance 1.0 so none is skipped. Each tree runs in its own
process, this one and the baseline (`git archive` of --baseline into a temporary directory, on PYTHONPATH), one after
the other, the order alternating per --repeat. `rate --after-load` times the window right after the bulk load instead,
with no write before it and no wait: what a user who imports a history and goes on working sees while the loaded
namespace's graph is still being built; with `--seconds 60` the window is the first minute, as many writes as it
holds (made beforehand, for twice the issue's target rate).

`agreement`: LoCoMo's turns (all conversations in one namespace, with their sessions), then each turn again with
its punctuation and case changed, written through the write path with exact duplicate search, through the coarse
cells that stand in while a graph is built, and with every namespace searched through the graph at several
duplicate-search widths; how many write results (status and the memory merged into) differ from exact search's.

    .venv/bin/python bench/write_rate.py rate                                  # 10k / 50k / 100k vs main 8f5dc00
    .venv/bin/python bench/write_rate.py rate --sizes 10000 --window 1000      # smoke
    .venv/bin/python bench/write_rate.py rate --sizes 100000 --window 2000 --after-load   # the first 2,000
    .venv/bin/python bench/write_rate.py rate --sizes 100000 --after-load --seconds 60     # the first minute
    .venv/bin/python bench/write_rate.py agreement --data ../shared/benchmarks/locomo
    .venv/bin/python bench/write_rate.py candidates --size 100000                 # the synthetic corpus at 100k
    .venv/bin/python bench/write_rate.py grown --widths 128 96 64 48     # AnnParams.expansion_writes at 100k

`grown`: the construction width of written rows (`AnnParams.expansion_writes`). For exact duplicate search and for
each width, in its own process: the rate corpus bulk-loaded to --first (the graph threshold: its graph built at
`AnnParams.expansion_add` by the first write), then grown to --size by `writer.write_batch` in batches of --batch, every
written row inserted into the graph by the write itself at that width (the keeper off, so each run is repeatable);
every write's decision (id, status, the memory merged into) against exact search's and width 128's, and recall@50 of
Rearview's vector search (the graph's candidates rescored, default search width) against exact search for --queries
new sentences. `rate` also compares each run's decisions with the first tree's first run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from baseline import extract_layers

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "bench:writes"
START = datetime(2023, 1, 1, tzinfo=UTC)
APPLY_BATCH = 10_000
K_RECALL = 50
# The target for writes in the first minute after a 100k bulk load (`rate --after-load --seconds 60`).
TARGET_AFTER_LOAD = 1000


# --- rate: one tree, in its own process ----------------------------------------------------------------------------


class Namespace:
    """The namespace being grown, and the episodes it gets next (each one new text, its time a minute later)."""

    def __init__(self, store: Any, embedder: Any, seed: int) -> None:
        from recall_latency import SentenceGenerator

        self.store = store
        self.embedder = embedder
        self.generator = SentenceGenerator(seed=seed)
        self.size = 0

    def writes(self, count: int) -> list[Any]:
        from rearview.domain.write import MemoryWrite

        made = [
            MemoryWrite(
                layer="episodic", id=f"e{self.size + i}", content=text, entities=entities, importance=1.0,
                occurred_at=START + timedelta(minutes=self.size + i),
            )
            for i, (text, entities) in enumerate(self.generator.sentences(count))
        ]  # fmt: skip
        self.size += count
        return made

    def batches(self, window: int, batch: int, seconds: float | None) -> list[list[Any]]:
        """The window's writes in batches: `window` of them, or with `seconds` enough for twice the target rate
        (made beforehand, outside the time; the window writes them until its time is up)."""
        planned = max(1, window // batch) if seconds is None else int(seconds * 2 * TARGET_AFTER_LOAD) // batch
        return [self.writes(batch) for _ in range(planned)]

    def bulk_load(self, target: int) -> None:
        """`store.apply` of episodes and their vectors up to `target`, APPLY_BATCH at a time."""
        from rearview.domain.changes import ChangeSet
        from rearview.domain.memory import Episode

        while self.size < target:
            count = min(APPLY_BATCH, target - self.size)
            texts = self.generator.sentences(count)
            vectors = self.embedder.embed([text for text, _ in texts])
            episodes = [
                Episode(
                    id=f"e{self.size + i}", namespace=NAMESPACE, content=text, entities=entities, importance=1.0,
                    occurred_at=START + timedelta(minutes=self.size + i), created_at=START,
                )
                for i, (text, entities) in enumerate(texts)
            ]  # fmt: skip
            self.store.apply(NAMESPACE, ChangeSet(upserts=list(zip(episodes, vectors, strict=True))))
            self.size += count


def write_window(
    writer: Any, batches: Sequence[list[Any]], started: float = 0.0, seconds: float | None = None
) -> tuple[dict[str, int], list[tuple[str, str, str | None]]]:
    """Each batch through `writer.write_batch` (with `seconds`: until that long after `started`, a perf_counter
    time): the count of each status, and each write's (id, status, merged into)."""
    statuses: dict[str, int] = {}
    decided: list[tuple[str, str, str | None]] = []
    for items in batches:
        if seconds is not None and time.perf_counter() - started >= seconds:
            break
        for result in writer.write_batch(NAMESPACE, items):
            statuses[result.status] = statuses.get(result.status, 0) + 1
            decided.append((result.id, result.status, result.merged_into))
    return statuses, decided


def rate_worker(
    sizes: Sequence[int], window: int, batch: int, seed: int, after_load: bool = False, seconds: float | None = None
) -> dict[str, Any]:
    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.settings import Settings

    clock = ManualClock(START)
    embedder = HashingEmbedder(dim=512)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rearview-writes-") as tmp:
        services = build(Settings(embedder="hashing", data_dir=Path(tmp)), clock=clock, embedder=embedder)
        wait = getattr(services.index, "wait_for_graphs", lambda: True)
        grown = Namespace(services.store, embedder, seed)
        for target in sizes:
            started = time.perf_counter()
            grown.bulk_load(target)
            applied = time.perf_counter() - started
            first_ms = settled = 0.0
            first = [] if after_load else grown.writes(batch)
            clock.set(START + timedelta(minutes=grown.size))
            if first:
                started = time.perf_counter()
                services.writer.write_batch(NAMESPACE, first)
                first_ms = (time.perf_counter() - started) * 1000
                started = time.perf_counter()
                wait()
                settled = time.perf_counter() - started
            batches = grown.batches(window, batch, seconds)
            started, cpu = time.perf_counter(), time.process_time()
            statuses, decided = write_window(services.writer, batches[:1])
            first_batch_s = time.perf_counter() - started
            more, decided_more = write_window(services.writer, batches[1:], started, seconds)
            statuses = {k: statuses.get(k, 0) + more.get(k, 0) for k in {*statuses, *more}}
            decided += decided_more
            if not after_load:
                wait()  # the window's own graph work counts too
            # After a load: what a caller sees, the writes returning while the load's graph is still being built.
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            if after_load:
                wait()
                settled = time.perf_counter() - started
            rows.append(
                {
                    "size": target, "apply_s": applied, "first_write_ms": first_ms, "background_s": settled,
                    "first_batch_s": first_batch_s,
                    "writes": sum(statuses.values()), "seconds": seconds, "cpu_s": cpu, "statuses": statuses,
                    "decisions": decided,
                }
            )  # fmt: skip
            print(f"  {target:,}: {rows[-1]['writes'] / seconds:,.0f} writes/s", file=sys.stderr, flush=True)
        services.close()
    return {"rows": rows, "load": os.getloadavg()}


def run_side(layers: Path, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(layers), str(REPO / "bench")])}
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, __file__, "rate-worker", out.name, "--sizes", *map(str, args.sizes)]
        command += ["--window", str(args.window), "--batch", str(args.batch), "--seed", str(args.seed)]
        command += ["--after-load"] if args.after_load else []
        command += ["--seconds", str(args.seconds)] if args.seconds is not None else []
        subprocess.run(command, env=env, check=True)
        return dict(json.loads(Path(out.name).read_text(encoding="utf-8")))


def rate(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="rearview-baseline-") as tmp:
        trees = {"this tree": REPO / "layers", f"baseline {args.baseline}": extract_layers(args.baseline, Path(tmp))}
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for repeat in range(args.repeat):
            order = list(trees) if repeat % 2 == 0 else list(reversed(trees))
            for name in order:
                print(f"{name} (repeat {repeat + 1}):", file=sys.stderr, flush=True)
                results[name].append(run_side(trees[name], args))
    print(rate_table(results, args))


def rate_table(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> str:
    if args.after_load:
        timed = "right after the bulk load, until the last write returns (its graph built meanwhile)"
        background = "graph work done, from the window's start, s"
        first = "first batch s (it loads the cache) / writes/s after it"
    else:
        first = "first write after the bulk load ms"
        timed = "after one untimed first write and the background graph work, until the window's own graph work is done"
        background = "background graph work before the window s"
    amount = f"{args.window:,} writes" if args.seconds is None else f"writes for {args.seconds:g} s"
    lines = [
        f"Write path into one namespace: batches of {args.batch}, {amount} timed at each size "
        f"({timed}); CPU seconds of the whole process (every thread); best of "
        f"{args.repeat} run(s) per tree; hashing embedder (512 dimensions)",
        "",
        f"| tree | namespace size | writes/s | writes per CPU second | {first} | {background} "
        "| store.apply to that size s | statuses "
        f"| decisions unlike {next(iter(results))}'s first run (each run) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    reference = next(iter(results.values()))[0]["rows"]
    for name, runs in results.items():
        for position in range(len(runs[0]["rows"])):
            rows = [run["rows"][position] for run in runs]
            best = max(rows, key=lambda r: r["writes"] / r["seconds"])
            statuses = ", ".join(f"{k} {v:,}" for k, v in sorted(best["statuses"].items()))
            unlike = ", ".join(
                str(differing(r["decisions"], reference[position]["decisions"], args.seconds is not None)) for r in rows
            )
            if args.after_load:
                after = (best["writes"] - args.batch) / (best["seconds"] - best["first_batch_s"])
                first = f"{best['first_batch_s']:.2f} / {after:,.0f}"
            else:
                first = f"{min(r['first_write_ms'] for r in rows):,.0f}"
            lines.append(
                f"| {name} | {best['size']:,} | {best['writes'] / best['seconds']:,.0f} | "
                f"{best['writes'] / best['cpu_s']:,.0f} | {first} | {best['background_s']:.1f} | "
                f"{best['apply_s']:.1f} | {statuses} | {unlike} |"
            )
    loads = [", ".join(f"{x:.1f}" for x in run["load"]) for runs in results.values() for run in runs]
    lines.append("")
    lines.append(f"load average at the end of each run (1/5/15 min, {os.cpu_count()} cores): {'; '.join(loads)}")
    return "\n".join(lines)


def differing(decisions: Sequence[Sequence[Any]], reference: Sequence[Sequence[Any]], timed: bool = False) -> int:
    """How many writes were decided otherwise (status or memory merged into) than in `reference`, the same writes;
    `timed` (a window of so many seconds): those both runs made, each as many as it wrote in that time."""
    return sum(list(a) != list(b) for a, b in zip(decisions, reference, strict=not timed))


# --- grown: the construction width of written rows ------------------------------------------------------------------


def grown_worker(width: int, duplicates: int, args: argparse.Namespace) -> dict[str, Any]:
    """One configuration of `grown`: written rows' width, duplicate search width (width 0: exact duplicate search,
    no graph)."""
    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.adapters.sqlite import ANN_DIRNAME, AnnParams, SqliteSearchIndex, VectorOptions
    from rearview.bootstrap import build, build_sqlite_backend
    from rearview.clock import ManualClock
    from rearview.domain.search import MemoryFilter
    from rearview.settings import Settings

    clock = ManualClock(START)
    embedder = HashingEmbedder(dim=512)
    decided: list[tuple[str, str, str | None]] = []
    with tempfile.TemporaryDirectory(prefix="rearview-grown-") as tmp:
        settings = Settings(embedder="hashing", data_dir=Path(tmp))
        # Exact search, or the graph from --first on (the default threshold at the default --first), in the write.
        vectors = VectorOptions(
            max_bytes=settings.index.cache_bytes,
            ann_threshold=args.first if width else 0,
            ann_params=AnnParams(expansion_batch=duplicates, expansion_writes=width) if width else AnnParams(),
            ann_dir=Path(tmp) / ANN_DIRNAME,
        )
        b = build_sqlite_backend(settings, embedder, clock, vectors)
        services = build(
            settings, clock=clock, embedder=embedder, store=b.store, index=b.index, keys=b.keys, ledger=b.ledger,
            policies=b.policies, quota=b.quota,
        )  # fmt: skip
        grown = Namespace(services.store, embedder, args.seed)
        grown.bulk_load(args.first)
        started, cpu = time.perf_counter(), time.process_time()
        while grown.size < args.size:
            items = grown.writes(min(args.batch, args.size - grown.size))
            clock.set(START + timedelta(minutes=grown.size))
            decided.extend((r.id, r.status, r.merged_into) for r in services.writer.write_batch(NAMESPACE, items))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        recall = None
        if width:
            queries = embedder.embed([text for text, _ in grown.generator.sentences(args.queries)])
            exact = SqliteSearchIndex(services.index.db, vectors=VectorOptions(ann_threshold=0))  # type: ignore[attr-defined]
            hits = 0
            for query in queries:
                truth = {c.id for c in exact.vector_search(NAMESPACE, query, MemoryFilter(), K_RECALL)}
                found = {c.id for c in services.index.vector_search(NAMESPACE, query, MemoryFilter(), K_RECALL)}
                hits += len(truth & found)
            recall = hits / (K_RECALL * len(queries))
        services.close()
    return {"seconds": seconds, "cpu_s": cpu, "decisions": decided, "recall": recall}


def grown_table(args: argparse.Namespace) -> None:
    runs: dict[tuple[int, int], dict[str, Any]] = {}
    for width, duplicates in [(0, 0), *((w, d) for w in args.widths for d in args.duplicates)]:
        label = f"written rows {width} wide, duplicates searched {duplicates} wide" if width else "exact"
        print(f"{label}:", file=sys.stderr, flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            command = [sys.executable, __file__, "grown-worker", out.name, str(width), str(duplicates)]
            command += ["--first", str(args.first), "--size", str(args.size), "--batch", str(args.batch)]
            subprocess.run([*command, "--queries", str(args.queries), "--seed", str(args.seed)], check=True)
            runs[width, duplicates] = json.loads(Path(out.name).read_text(encoding="utf-8"))
    exact = runs[0, 0]["decisions"]
    at_128 = runs.get((128, 32), {}).get("decisions")  # the defaults before issue 22's third pass
    written = len(exact)
    lines = [
        f"The construction width of written rows: the rate corpus bulk-loaded to {args.first:,} (its graph built at "
        f"ann_expansion_add by the first write), then {written:,} writes to {args.size:,} through the write path in "
        f"batches of {args.batch}, each write inserting its rows into the graph itself; recall@{K_RECALL} of vector "
        f"search (default search width) against exact search for {args.queries:,} new sentences; hashing embedder",
        "",
        "| duplicate search | written rows' width | writes/s growing (insertions in the write) | writes per CPU second "
        f"| decisions unlike exact search's | unlike 128 / 32's | merged | stored | recall@{K_RECALL} |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (width, duplicates), run in runs.items():
        decisions = run["decisions"]
        merged = sum(status == "merged" for _, status, _ in decisions)
        stored = sum(status == "stored" for _, status, _ in decisions)
        search = f"graph, {duplicates} wide" if width else "exact"
        lines.append(
            f"| {search} | {width or '-'} | {written / run['seconds']:,.0f} | "
            f"{written / run['cpu_s']:,.0f} | {differing(decisions, exact) if width else '-'} | "
            f"{differing(decisions, at_128) if width and at_128 is not None else '-'} | {merged:,} | {stored:,} | "
            f"{'-' if run['recall'] is None else format(run['recall'], '.4f')} |"
        )
    lines.append("")
    lines.append(f"load average at the end (1/5/15 min, {os.cpu_count()} cores): {os.getloadavg()}")
    print("\n".join(lines))


# --- agreement -------------------------------------------------------------------------------------------------------


def locomo_turns(data: Path) -> list[tuple[str, str, str]]:
    """(session, speaker, text) of every LoCoMo turn, in conversation order."""
    conversations = json.loads((data / "locomo10.json").read_text(encoding="utf-8"))
    turns: list[tuple[str, str, str]] = []
    for c, conversation in enumerate(conversations):
        talk = conversation["conversation"]
        for key in sorted((k for k in talk if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])):
            turns.extend((f"c{c}-{key}", t["speaker"], t["text"]) for t in talk[key] if t.get("text"))
    return turns


def restated(text: str) -> str:
    """The same words said again: lower case, no punctuation."""
    return re.sub(r"[^\w\s]", "", text).lower()


def decisions(
    turns: list[tuple[str, str, str]], threshold: int, width: int, writes_width: int = 128, cells: bool = False
) -> list[tuple[str, int | None]]:
    """(status, position of the write that stored the memory it merged into) of every write of the turns and their
    restatements (ids are new on each run, positions are not), with duplicate search exact (threshold 0) or
    through the graph searched `width` wide, its rows (every one written) inserted `writes_width` wide; with
    `cells` (and threshold 0), through the coarse cells a cache's graph build is searched through, the namespace
    held as if its graph were being built from the second batch on (its cells drawn from the first batch's rows)."""
    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.adapters.sqlite import AnnParams, SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
    from rearview.adapters.sqlite.vector_caches import VectorOptions
    from rearview.clock import ManualClock
    from rearview.domain.write import MemoryWrite, WriteResult
    from rearview.service.write import WriteService
    from rearview.settings import Settings

    embedder = HashingEmbedder(dim=512)
    clock = ManualClock(START)
    results: list[WriteResult] = []
    with tempfile.TemporaryDirectory(prefix="rearview-agreement-") as tmp:
        db = SqliteDatabase(Path(tmp) / "rearview.db", embedder_name=embedder.name, dim=embedder.dim)
        params = AnnParams(expansion_batch=width, expansion_writes=writes_width)
        options = VectorOptions(ann_threshold=threshold, ann_params=params)
        store, index = SqliteMemoryStore(db, clock=clock), SqliteSearchIndex(db, vectors=options)
        writer = WriteService(store, index, embedder, clock, Settings().write)
        passes = [turns, [(s, speaker, restated(text)) for s, speaker, text in turns]]
        for p, each in enumerate(passes):
            for start in range(0, len(each), 100):
                cache = index._vectors.loaded("locomo", "episodic", db.generation("locomo"))
                if cells and cache is not None:
                    cache.building = True
                clock.set(START + timedelta(days=p, minutes=start))
                items = [
                    MemoryWrite(layer="episodic", content=f"{speaker}: {text}", entities=[speaker], session_id=session)
                    for session, speaker, text in each[start : start + 100]
                ]
                results.extend(writer.write_batch("locomo", items))
        db.close()
    stored_at = {r.id: position for position, r in enumerate(results) if r.status == "stored"}
    return [(r.status, stored_at.get(r.merged_into) if r.merged_into else None) for r in results]


def agreement(args: argparse.Namespace) -> None:
    turns = locomo_turns(args.data)
    exact = decisions(turns, 0, 0)
    merges = sum(status == "merged" for status, _ in exact)
    lines = [
        f"Duplicate decisions on LoCoMo's {len(turns):,} turns and their {len(turns):,} restatements (one namespace, "
        f"hashing embedder): exact search merges {merges:,}",
        "",
        "| duplicate search | written rows' width (ann_expansion_writes) | results differing from exact search "
        "| merges | agreement |",
        "|---|---|---|---|---|",
    ]
    found = decisions(turns, 0, 0, cells=True)
    differ = sum(a != b for a, b in zip(exact, found, strict=True))
    merged = sum(s == "merged" for s, _ in found)
    share = 1 - differ / len(exact)
    lines.append(f"| coarse cells (while a graph builds) | - | {differ:,} | {merged:,} | {share:.4f} |")
    for writes_width in args.expansion_writes:
        for width in args.widths:
            found = decisions(turns, 1, width, writes_width)
            differ = sum(a != b for a, b in zip(exact, found, strict=True))
            lines.append(
                f"| graph, width {width} | {writes_width} | {differ:,} | {sum(s == 'merged' for s, _ in found):,} | "
                f"{1 - differ / len(exact):.4f} |"
            )
    print("\n".join(lines))


def best_candidates(index: Any, queries: Any, flt: Any, threshold: float) -> tuple[list[str | None], float]:
    """Each query's best candidate at or above `threshold` through `index.vector_search_many` in batches of 100, as
    the write path's duplicate check asks (3 neighbours), and the median seconds of a batch."""
    found: list[list[Any]] = []
    seconds: list[float] = []
    for start in range(0, len(queries), 100):
        began = time.perf_counter()
        found += index.vector_search_many(NAMESPACE, queries[start : start + 100], flt, 3)
        seconds.append(time.perf_counter() - began)
    best = [hits[0].id if hits and hits[0].score >= threshold else None for hits in found]
    return best, sorted(seconds)[len(seconds) // 2]


def candidates(args: argparse.Namespace) -> None:
    """The duplicate check's best candidate above the dedup threshold for --queries new sentences against a namespace
    of --size (recall_latency's corpus, bulk-loaded), exact, through the coarse cells that stand in while a graph is
    built, and through the graph at several widths; and the seconds a batch of 100 takes (its median)."""
    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.adapters.sqlite import AnnParams, SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
    from rearview.adapters.sqlite.vector_caches import VectorOptions
    from rearview.domain.search import MemoryFilter
    from rearview.settings import Settings

    embedder = HashingEmbedder(dim=512)
    threshold = Settings().write.dedup_threshold
    episodic = MemoryFilter(layers=("episodic",))
    with tempfile.TemporaryDirectory(prefix="rearview-candidates-") as tmp:
        db = SqliteDatabase(Path(tmp) / "rearview.db", embedder_name=embedder.name, dim=embedder.dim)
        grown = Namespace(SqliteMemoryStore(db), embedder, args.seed)
        grown.bulk_load(args.size)
        queries = embedder.embed([text for text, _ in grown.generator.sentences(args.queries)])

        exact_index = SqliteSearchIndex(db, vectors=VectorOptions(ann_threshold=0))
        exact_index.vector_search_many(NAMESPACE, queries[:1], episodic, 3)  # loads the cache, untimed
        exact, exact_s = best_candidates(exact_index, queries, episodic, threshold)
        lines = [
            f"The duplicate check's best candidate at or above the dedup threshold ({threshold}) for {args.queries:,} "
            f"new sentences against {args.size:,} in the namespace: exact search finds "
            f"{sum(x is not None for x in exact)}, {exact_s:.3f} s a batch of 100",
            "",
            "| search | best candidate differing from exact search | candidates found | s a batch of 100 |",
            "|---|---|---|---|",
        ]
        cache = exact_index._vectors.loaded(NAMESPACE, "episodic", db.generation(NAMESPACE))
        assert cache is not None
        cache.building = True  # as while its graph is built: the batch search goes through the coarse cells
        exact_index.vector_search_many(NAMESPACE, queries[:1], episodic, 3)  # draws the cells, untimed
        found, cells_s = best_candidates(exact_index, queries, episodic, threshold)
        differ = sum(a != b for a, b in zip(exact, found, strict=True))
        lines.append(f"| coarse cells | {differ} | {sum(x is not None for x in found)} | {cells_s:.3f} |")
        for width in args.widths:
            index = SqliteSearchIndex(
                db, vectors=VectorOptions(ann_threshold=1, ann_params=AnnParams(expansion_batch=width))
            )
            index.vector_search_many(NAMESPACE, queries[:1], episodic, 3)  # loads the cache, builds its graph
            found, graph_s = best_candidates(index, queries, episodic, threshold)
            differ = sum(a != b for a, b in zip(exact, found, strict=True))
            lines.append(f"| graph, width {width} | {differ} | {sum(x is not None for x in found)} | {graph_s:.3f} |")
        db.close()
    print("\n".join(lines))


# --- the command line ------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("rate", "rate-worker"):
        sub = commands.add_parser(name)
        if name == "rate-worker":
            sub.add_argument("out", type=Path)
        sub.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 100_000])
        sub.add_argument("--window", type=int, default=3000, help="writes timed at each size")
        sub.add_argument("--batch", type=int, default=100, help="items per write_batch (one queued request)")
        sub.add_argument("--seed", type=int, default=42)
        sub.add_argument("--baseline", default="8f5dc00", help="the commit whose layers/ is the baseline")
        sub.add_argument("--repeat", type=int, default=1, help="runs per tree, the order alternating")
        sub.add_argument(
            "--after-load", action="store_true",
            help="time the window right after the bulk load, as the writes return, while its graph still builds",
        )  # fmt: skip
        sub.add_argument(
            "--seconds", type=float, default=None,
            help="with --after-load: write for this long instead of --window writes (60: the first minute)",
        )  # fmt: skip
    for name in ("grown", "grown-worker"):
        sub = commands.add_parser(name)
        if name == "grown-worker":
            sub.add_argument("out", type=Path)
            sub.add_argument("width", type=int)
            sub.add_argument("duplicates", type=int)
        else:
            sub.add_argument("--widths", type=int, nargs="+", default=[128, 96, 64, 48])
            sub.add_argument("--duplicates", type=int, nargs="+", default=[32], help="duplicate search widths")
        sub.add_argument("--first", type=int, default=20_000, help="episodes bulk-loaded (the graph threshold)")
        sub.add_argument("--size", type=int, default=100_000, help="the namespace's size once grown by writes")
        sub.add_argument("--batch", type=int, default=100)
        sub.add_argument("--queries", type=int, default=1000)
        sub.add_argument("--seed", type=int, default=42)
    sub = commands.add_parser("agreement")
    sub.add_argument("--data", type=Path, default=REPO.parent / "shared" / "benchmarks" / "locomo")
    sub.add_argument("--widths", type=int, nargs="+", default=[16, 32, 128])
    sub.add_argument("--expansion-writes", type=int, nargs="+", default=[128, 64], help="written rows' widths")
    sub = commands.add_parser("candidates")
    sub.add_argument("--size", type=int, default=100_000)
    sub.add_argument("--queries", type=int, default=3000)
    sub.add_argument("--seed", type=int, default=42)
    sub.add_argument("--widths", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "rate-worker":
        result = rate_worker(args.sizes, args.window, args.batch, args.seed, args.after_load, args.seconds)
        args.out.write_text(json.dumps(result), encoding="utf-8")
    elif args.command == "rate":
        if args.seconds is not None and not args.after_load:
            raise SystemExit("--seconds times the window right after a load: give --after-load with it")
        rate(args)
    elif args.command == "grown-worker":
        args.out.write_text(json.dumps(grown_worker(args.width, args.duplicates, args)), encoding="utf-8")
    elif args.command == "grown":
        grown_table(args)
    elif args.command == "candidates":
        candidates(args)
    else:
        agreement(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
