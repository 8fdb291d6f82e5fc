"""Keyword search with many namespaces and with one big one: what a full-text table per namespace costs and saves.

Three stores of the same synthetic episodes (bench/recall_latency.py's sentences; no vectors: keyword search only),
each loaded through `store.apply`, then timed with `index.keyword_search` (limit 60, context weight 0.4):

- many: --namespaces namespaces of --per-namespace episodes, all in the shared table (the default threshold),
  queried in random namespaces;
- many, each with a table of its own (own_fts_episodes 1): the design the threshold avoids, at --own-namespaces
  namespaces (a schema of six tables and three triggers per namespace), with its load rate and the time to open a
  connection and run a first query (SQLite parses the whole schema);
- big: one namespace of --big episodes among --big-others more, in the shared table and then in its own (the
  baseline and the change, in the same run).

    .venv/bin/python bench/keyword_namespaces.py                                   # 10,000 x 100; 100k among 900k
    .venv/bin/python bench/keyword_namespaces.py --namespaces 1000 --big 20000 --big-others 80000   # smoke run
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from metrics import percentile
from rearview.adapters.sqlite import DB_FILENAME, SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
from rearview.adapters.sqlite.namespace_fts import promote
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode
from rearview.domain.search import MemoryFilter
from rearview.text_analysis import query_terms
from recall_latency import SentenceGenerator

START = datetime(2023, 1, 1, tzinfo=UTC)
CONTEXT_WEIGHT = 0.4


def load(store: SqliteMemoryStore, layout: Sequence[tuple[str, int]], generator: SentenceGenerator) -> float:
    """Episodes per second through `store.apply`, a namespace (or 5,000 of its episodes) per change set."""
    seconds = 0.0
    total = 0
    for namespace, count in layout:
        for start in range(0, count, 5000):
            batch = generator.sentences(min(5000, count - start))
            episodes = [
                Episode(
                    id=f"e{start + i}", namespace=namespace, content=text, entities=entities, importance=1.0,
                    occurred_at=START + timedelta(minutes=start + i), created_at=START,
                )
                for i, (text, entities) in enumerate(batch)
            ]  # fmt: skip
            began = time.perf_counter()
            store.apply(namespace, ChangeSet(upserts=[(e, None) for e in episodes]))
            seconds += time.perf_counter() - began
            total += len(episodes)
    return total / seconds


def queries_of(generator: SentenceGenerator, count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for text, _ in generator.sentences(count):
        words = [w for w in query_terms(text) if len(w) > 1]
        out.append(" ".join(str(w) for w in rng.choice(words, size=min(len(words), int(rng.integers(2, 6))))))
    return out


def timed(ask: Callable[[int], object], count: int) -> dict[str, float]:
    for i in range(count):
        ask(i)
    millis = []
    for i in range(count):
        began = time.perf_counter()
        ask(i)
        millis.append((time.perf_counter() - began) * 1000)
    return {"p50": percentile(millis, 50), "p95": percentile(millis, 95)}


def first_query_ms(path: Path, namespace: str, text: str) -> float:
    """A new connection's first keyword query: SQLite reads the whole schema first."""
    began = time.perf_counter()
    with SqliteDatabase(path, embedder_name="none", dim=1) as db:
        SqliteSearchIndex(db).keyword_search(namespace, text, MemoryFilter(), 60, CONTEXT_WEIGHT)
    return (time.perf_counter() - began) * 1000


def schema_objects(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])


def many(directory: Path, namespaces: int, per: int, own: bool, queries: list[str], seed: int) -> dict[str, float]:
    path = directory / ("own" if own else "shared") / DB_FILENAME
    with SqliteDatabase(path, embedder_name="none", dim=1) as db:
        store = SqliteMemoryStore(db, own_fts_episodes=1 if own else 0)
        names = [f"bench:ns-{i:05d}" for i in range(namespaces)]
        if own:  # each namespace's table made before its episodes arrive, as the store would make it
            for name in names:
                with db.transaction() as conn:
                    promote(conn, name)
        rate = load(store, [(name, per) for name in names], SentenceGenerator(seed))
        index = SqliteSearchIndex(db)
        rng = np.random.default_rng(seed)
        asked = [names[int(i)] for i in rng.integers(0, namespaces, len(queries))]
        latency = timed(
            lambda i: index.keyword_search(asked[i], queries[i], MemoryFilter(), 60, CONTEXT_WEIGHT), len(queries)
        )
    return latency | {
        "load_per_s": rate,
        "first_query_ms": first_query_ms(path, names[0], queries[0]),
        "schema_objects": schema_objects(path),
        "db_mb": path.stat().st_size / 1e6,
    }


def big(directory: Path, size: int, others: int, queries: list[str], seed: int) -> dict[str, dict[str, float]]:
    path = directory / "big" / DB_FILENAME
    with SqliteDatabase(path, embedder_name="none", dim=1) as db:
        store = SqliteMemoryStore(db, own_fts_episodes=0)
        layout = [("bench:big", size), *((f"bench:ns-{i:05d}", 1000) for i in range(others // 1000))]
        load(store, layout, SentenceGenerator(seed))
        index = SqliteSearchIndex(db)

        def ask(i: int) -> object:
            return index.keyword_search("bench:big", queries[i], MemoryFilter(), 60, CONTEXT_WEIGHT)

        shared = timed(ask, len(queries))
        began = time.perf_counter()
        with db.transaction() as conn:
            promote(conn, "bench:big")
        moved = time.perf_counter() - began
        index = SqliteSearchIndex(db)  # term counts afresh
        own = timed(ask, len(queries))
    return {"shared": shared, "own": own | {"promote_s": moved}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespaces", type=int, default=10_000)
    parser.add_argument("--per-namespace", type=int, default=100)
    parser.add_argument("--own-namespaces", type=int, default=2_000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--big-others", type=int, default=900_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    queries = queries_of(SentenceGenerator(args.seed + 1), args.queries, args.seed)
    with tempfile.TemporaryDirectory(prefix="rearview-keyword-") as tmp:
        directory = Path(tmp)
        shared = many(directory, args.namespaces, args.per_namespace, False, queries, args.seed)
        own = many(directory, args.own_namespaces, args.per_namespace, True, queries, args.seed)
        one = big(directory, args.big, args.big_others, queries, args.seed)
    print(f"Keyword search (limit 60, context weight {CONTEXT_WEIGHT}), {args.queries} queries of 2-5 corpus words\n")
    print("| store | keyword p50 ms | p95 ms | load/s | first query on a new connection ms | schema objects | MB |")
    print("|---|---|---|---|---|---|---|")
    for name, r in (
        (f"{args.namespaces:,} namespaces x {args.per_namespace}, shared table", shared),
        (f"{args.own_namespaces:,} namespaces x {args.per_namespace}, a table each", own),
    ):
        print(
            f"| {name} | {r['p50']:.2f} | {r['p95']:.2f} | {r['load_per_s']:,.0f} | {r['first_query_ms']:.1f} "
            f"| {r['schema_objects']:,} | {r['db_mb']:,.0f} |"
        )
    print(f"\n| {args.big:,} episodes among {args.big + args.big_others:,} | keyword p50 ms | p95 ms |")
    print("|---|---|---|")
    print(f"| in the shared table (before) | {one['shared']['p50']:.2f} | {one['shared']['p95']:.2f} |")
    print(f"| in its own table | {one['own']['p50']:.2f} | {one['own']['p95']:.2f} |")
    print(f"\nmoving it to its own table took {one['own']['promote_s']:.1f} s (once, when it crosses the threshold)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
