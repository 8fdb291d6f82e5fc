"""Rearview side by side with its peers: LanceDB (its native full-text index + vector search, fused by RRF), Chroma
(vector search with a `where` filter) and sqlite-vec + FTS5 (two queries fused by RRF), on the same corpus, the same
vectors and the same queries.

For each corpus size and each share of it held by the queried namespace (the rest in namespaces of 1,000), every
system runs in its own process, in an order rotated from one configuration to the next, and reports:

- ingest/s: the corpus loaded in batches (Rearview: `store.load_episodes` of columns, one namespace at a time; the
  peers: their bulk insert, then the indexes a user creates: LanceDB's full-text and namespace indexes);
- first query: the first query after the load (Rearview loads the namespace's vector cache and, above its
  threshold, builds or opens the HNSW graph);
- p50 / p95 of the hybrid query (top 10, namespace filter, query vectors computed beforehand; Rearview: the full
  recall pipeline, and its two primitive searches alone), over queries of 2-6 words of the namespace's text;
- disk (the store's files) and peak RSS of the process;
- each peer's figure over Rearview's, in the same run (the baseline).

The peers run in their own environment (`make bench-peers` creates .venv-peers), never the project's.

    make bench-peers                                                     # 10k and 100k, shares 10% and 100%
    .venv/bin/python bench/peers.py --sizes 10000 --shares 1.0           # one configuration
    .venv/bin/python bench/peers.py --sizes 1000000 --shares 0.1         # 1M across 901 namespaces
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baseline import extract_layers

REPO = Path(__file__).resolve().parents[1]
PEERS_PYTHON = REPO / ".venv-peers" / "bin" / "python"
SYSTEMS = ("rearview", "lancedb", "chroma", "sqlite-vec")
# With --baseline COMMIT, Rearview again from that commit's layers/ (git archive), in the same run.
BASELINE = "rearview-baseline"
TARGET = "bench:target"
OTHER_SIZE = 1000
BATCH = 10_000
DIM = 384
TOP_K = 10
CANDIDATES = 60
RRF_K = 60
START = 1_672_531_200.0  # 2023-01-01 UTC
SPAN_SECONDS = 730 * 86_400.0


# --- the corpus (the project's environment) ---------------------------------------------------------------------


def namespaces_of(size: int, share: float) -> list[tuple[str, int]]:
    """(namespace, episodes) in ingest order: the queried namespace first, then namespaces of OTHER_SIZE."""
    target = max(1, round(size * share))
    rest = size - target
    others = [(f"bench:ns-{i:05d}", OTHER_SIZE) for i in range(rest // OTHER_SIZE)]
    if rest % OTHER_SIZE:
        others.append((f"bench:ns-{len(others):05d}", rest % OTHER_SIZE))
    return [(TARGET, target), *others]


def make_corpus(directory: Path, size: int, share: float, queries: int, seed: int) -> None:
    """corpus.jsonl (id, ns, text, ts, entities), vectors.npy, queries.json and query_vectors.npy in `directory`."""
    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.text_analysis import query_terms
    from recall_latency import SentenceGenerator

    embedder = HashingEmbedder(dim=DIM)
    generator = SentenceGenerator(seed=seed)
    vectors = np.lib.format.open_memmap(directory / "vectors.npy", mode="w+", dtype=np.float32, shape=(size, DIM))
    target_texts: list[str] = []
    row = 0
    with (directory / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for namespace, count in namespaces_of(size, share):
            step = SPAN_SECONDS / count
            for start in range(0, count, 5000):
                batch = generator.sentences(min(5000, count - start))
                vectors[row : row + len(batch)] = embedder.embed([text for text, _ in batch])
                for offset, (text, entities) in enumerate(batch):
                    i = start + offset
                    doc = {"id": f"e{i}", "ns": namespace, "text": text, "ts": START + step * i, "entities": entities}
                    out.write(json.dumps(doc, ensure_ascii=False) + "\n")
                    if namespace == TARGET:
                        target_texts.append(text)
                row += len(batch)
    vectors.flush()
    rng = np.random.default_rng(seed + 7)
    asked = []
    for n in range(queries):
        words = [w for w in query_terms(target_texts[int(rng.integers(0, len(target_texts)))]) if len(w) > 1]
        k = min(int(rng.integers(2, 7)), len(words))
        asked.append(" ".join(str(w) for w in rng.choice(words, size=k, replace=False)) or target_texts[n])
    (directory / "queries.json").write_text(json.dumps(asked, ensure_ascii=False), encoding="utf-8")
    np.save(directory / "query_vectors.npy", embedder.embed(asked).astype(np.float32))


def read_corpus(directory: Path) -> Iterator[list[dict[str, Any]]]:
    """The corpus in batches of at most BATCH documents, each of one namespace."""
    batch: list[dict[str, Any]] = []
    with (directory / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if batch and (len(batch) >= BATCH or batch[0]["ns"] != doc["ns"]):
                yield batch
                batch = []
            batch.append(doc)
    if batch:
        yield batch


# --- what every worker shares -------------------------------------------------------------------------------------


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else math.nan


def rrf(*ranked: Sequence[str]) -> list[str]:
    scores: dict[str, float] = {}
    for ids in ranked:
        for rank, memory_id in enumerate(ids):
            scores[memory_id] = scores.get(memory_id, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(scores, key=lambda i: -scores[i])[:TOP_K]


def timed_queries(ask: Callable[[int], object], count: int, cpu: list[float] | None = None) -> list[float]:
    """Milliseconds of each query, after one untimed pass over them all (the caches warm, as in a server); `cpu`
    receives each query's CPU milliseconds (the process's, every thread's: steadier than wall time on a busy
    machine, where a query also waits for a core)."""
    for i in range(count):
        ask(i)
    millis = []
    for i in range(count):
        started, started_cpu = time.perf_counter(), time.process_time()
        ask(i)
        millis.append((time.perf_counter() - started) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - started_cpu) * 1000)
    return millis


def fts_terms(text: str) -> list[str]:
    return [w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if len(w) > 1]


class Workload:
    """The corpus directory as a worker reads it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.vectors = np.load(directory / "vectors.npy", mmap_mode="r")
        self.queries: list[str] = json.loads((directory / "queries.json").read_text(encoding="utf-8"))
        self.query_vectors = np.load(directory / "query_vectors.npy")

    def batches(self) -> Iterator[tuple[list[dict[str, Any]], np.ndarray]]:
        row = 0
        for batch in read_corpus(self.directory):
            yield batch, np.asarray(self.vectors[row : row + len(batch)])
            row += len(batch)


def measured(
    work: Workload,
    store: Path,
    load: Callable[[], None],
    first: Callable[[], object],
    ask: Callable[[int], object],
    settle: Callable[[], object] | None = None,
    ranked: Callable[[], list[Any]] | None = None,
) -> dict[str, Any]:
    """Ingest rate, the first query's time, then (after `settle`: Rearview's background graph work, timed) the
    queries' percentiles; `ranked` (untimed, before the timed queries) gives each query's ranking, to compare."""
    started = time.perf_counter()
    load()
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    first()
    first_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    if settle is not None:
        settle()
    settled = time.perf_counter() - started
    rankings = ranked() if ranked is not None else []
    cpu: list[float] = []
    millis = timed_queries(ask, len(work.queries), cpu)
    return {
        "ranked": rankings,
        "settle_s": settled,
        "docs": int(work.vectors.shape[0]),
        "ingest_per_s": work.vectors.shape[0] / loaded,
        "first_query_ms": first_ms,
        "p50_ms": percentile(millis, 50),
        "p95_ms": percentile(millis, 95),
        "cpu_p50_ms": percentile(cpu, 50),
        "disk_mb": disk_mb(store),
        "rss_mb": rss_mb(),
    }


# --- Rearview (the project's environment) --------------------------------------------------------------------------


def apply_episodes(store: Any, work: Workload) -> None:
    """The corpus as episodes, applied to a Rearview `store` in change sets of a batch each (one namespace each)."""
    from rearview.domain.changes import ChangeSet
    from rearview.domain.memory import Episode, Memory
    from rearview.domain.timestamps import utc_from_epoch

    for batch, vectors in work.batches():
        upserts: list[tuple[Memory, np.ndarray | None]] = [
            (
                Episode(
                    id=d["id"], namespace=d["ns"], content=d["text"], occurred_at=utc_from_epoch(d["ts"]),
                    created_at=utc_from_epoch(d["ts"]), entities=d["entities"], importance=1.0,
                ),
                vectors[i],
            )
            for i, d in enumerate(batch)
        ]  # fmt: skip
        store.apply(batch[0]["ns"], ChangeSet(upserts=upserts))


def load_episodes(store: Any, work: Workload) -> None:
    """The corpus loaded into a Rearview `store` as columns (`store.load_episodes`, a batch each), the way the
    LanceDB worker hands it a table: no model per row."""
    from rearview.domain.episode_columns import EpisodeColumns

    for batch, vectors in work.batches():
        columns = {key: [d[key] for d in batch] for key in ("id", "text", "ts", "entities")}
        rows = EpisodeColumns.of(
            id=columns["id"], content=columns["text"], occurred_at=columns["ts"], created_at=columns["ts"],
            entities=columns["entities"], importance=[1.0] * len(batch),
        )  # fmt: skip
        store.load_episodes(batch[0]["ns"], rows, vectors)


def run_rearview(work: Workload, store: Path) -> dict[str, Any]:
    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.domain.recall import RecallQuery
    from rearview.domain.search import MemoryFilter
    from rearview.domain.timestamps import utc_from_epoch
    from rearview.settings import Settings
    from recall_latency import PrecomputedQueryEmbedder

    embedder = PrecomputedQueryEmbedder(HashingEmbedder(dim=DIM))
    clock = ManualClock(utc_from_epoch(START + SPAN_SECONDS + 86_400))
    services = build(Settings(embedder="hashing", hashing_dim=DIM, data_dir=store), clock=clock, embedder=embedder)

    def load() -> None:
        # A baseline tree from before `load_episodes` loads through `apply`.
        bulk = load_episodes if hasattr(services.store, "load_episodes") else apply_episodes
        bulk(services.store, work)

    def recall(i: int) -> object:
        return services.recaller.recall(TARGET, RecallQuery(query=work.queries[i], top_k=TOP_K))

    def primitives(i: int) -> object:
        flt = MemoryFilter()
        return services.index.hybrid_search(
            TARGET, work.queries[i], work.query_vectors[i], flt, CANDIDATES, services.recaller.tuning.context_weight
        )

    def ranking(query: str) -> list[list[Any]]:
        # Recorded as no access, so both trees rank the same store as it is.
        found = services.recaller.recall(TARGET, RecallQuery(query=query, top_k=TOP_K), record=False).results
        return [[hit.id, round(hit.score, 6)] for hit in found]

    embedder.recording = True
    # The baseline's code has no background graph work to wait for.
    settle = getattr(services.index, "wait_for_graphs", None)
    result = measured(work, store, load, lambda: recall(0), recall, settle, lambda: [ranking(q) for q in work.queries])
    embedder.recording = False
    misses = embedder.misses
    recall_cpu: list[float] = []
    recall_ms = timed_queries(recall, len(work.queries), recall_cpu)
    if embedder.misses != misses:
        raise RuntimeError("a query was embedded while timed")
    primitive_cpu: list[float] = []
    primitive_ms = timed_queries(primitives, len(work.queries), primitive_cpu)
    services.close()
    return result | {
        "p50_ms": percentile(recall_ms, 50),
        "p95_ms": percentile(recall_ms, 95),
        "cpu_p50_ms": percentile(recall_cpu, 50),
        "primitives_cpu_p50_ms": percentile(primitive_cpu, 50),
        "primitives_p50_ms": percentile(primitive_ms, 50),
        "primitives_p95_ms": percentile(primitive_ms, 95),
        "rss_mb": rss_mb(),
    }


# --- the peers (.venv-peers) ---------------------------------------------------------------------------------------


def run_lancedb(work: Workload, store: Path) -> dict[str, Any]:
    import lancedb
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    db = lancedb.connect(str(store))
    schema = pa.schema(
        [("id", pa.string()), ("ns", pa.string()), ("text", pa.string()), ("ts", pa.float64()),
         ("vector", pa.list_(pa.float32(), DIM))]
    )  # fmt: skip
    table = db.create_table("docs", schema=schema)
    reranker = RRFReranker(K=RRF_K)

    def load() -> None:
        for batch, vectors in work.batches():
            columns = {key: [d[key] for d in batch] for key in ("id", "ns", "text", "ts")}
            flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
            columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, DIM)
            table.add(pa.table(columns, schema=schema))
        table.create_fts_index("text", use_tantivy=False)
        table.create_scalar_index("ns")

    def ask(i: int) -> object:
        query = (
            table.search(query_type="hybrid")
            .vector(work.query_vectors[i].tolist())
            .text(work.queries[i])
            .where(f"ns = '{TARGET}'", prefilter=True)
            .rerank(reranker)
            .limit(TOP_K)
        )
        return query.to_list()

    return measured(work, store, load, lambda: ask(0), ask)


def run_chroma(work: Workload, store: Path) -> dict[str, Any]:
    import chromadb

    client = chromadb.PersistentClient(path=str(store))
    collection = client.create_collection("docs", metadata={"hnsw:space": "cosine"})
    most = client.get_max_batch_size()

    def load() -> None:
        for batch, vectors in work.batches():
            for start in range(0, len(batch), most):
                part = batch[start : start + most]
                collection.add(
                    ids=[f"{d['ns']}/{d['id']}" for d in part],
                    embeddings=vectors[start : start + most],
                    documents=[d["text"] for d in part],
                    metadatas=[{"ns": d["ns"], "ts": d["ts"]} for d in part],
                )

    def ask(i: int) -> object:
        return collection.query(query_embeddings=[work.query_vectors[i]], n_results=TOP_K, where={"ns": TARGET})

    return measured(work, store, load, lambda: ask(0), ask)


def run_sqlite_vec(work: Workload, store: Path) -> dict[str, Any]:
    # The project's Python is built without SQLite extension loading; pysqlite3 ships a SQLite that has it.
    import pysqlite3 as sqlite3
    import sqlite_vec

    store.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(store / "peers.db"))
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE docs (ref INTEGER PRIMARY KEY, id TEXT, ns TEXT, text TEXT, ts REAL)")
    conn.execute("CREATE INDEX docs_ns ON docs(ns, id)")
    conn.execute(
        f"CREATE VIRTUAL TABLE vec USING vec0(ns TEXT PARTITION KEY, embedding float[{DIM}] distance_metric=cosine)"
    )
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5(ns, text, content='docs', content_rowid='ref')")
    ref = 0

    def load() -> None:
        nonlocal ref
        for batch, vectors in work.batches():
            rows = [(ref + i + 1, d["id"], d["ns"], d["text"], d["ts"]) for i, d in enumerate(batch)]
            with conn:
                conn.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", rows)
                conn.executemany(
                    "INSERT INTO fts(rowid, ns, text) VALUES (?, ?, ?)", [(r[0], r[2], r[3]) for r in rows]
                )
                conn.executemany(
                    "INSERT INTO vec(rowid, ns, embedding) VALUES (?, ?, ?)",
                    [(r[0], r[2], vectors[i].astype(np.float32).tobytes()) for i, r in enumerate(rows)],
                )
            ref += len(rows)

    def ask(i: int) -> object:
        terms = " OR ".join(f'"{t}"' for t in fts_terms(work.queries[i]))
        keyword = conn.execute(
            "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?",
            (f'ns : "{TARGET}" AND text : ({terms})', CANDIDATES),
        ).fetchall()
        vector = conn.execute(
            "SELECT rowid FROM vec WHERE embedding MATCH ? AND k = ? AND ns = ?",
            (work.query_vectors[i].tobytes(), CANDIDATES, TARGET),
        ).fetchall()
        return rrf([str(r[0]) for r in keyword], [str(r[0]) for r in vector])

    return measured(work, store, load, lambda: ask(0), ask)


WORKERS: dict[str, Callable[[Workload, Path], dict[str, Any]]] = {
    "rearview": run_rearview,
    "lancedb": run_lancedb,
    "chroma": run_chroma,
    "sqlite-vec": run_sqlite_vec,
    BASELINE: run_rearview,
}


# --- the orchestrator ------------------------------------------------------------------------------------------------


def run_worker(system: str, corpus: Path, scratch: Path, baseline: Path | None = None) -> dict[str, Any]:
    """One system in its own process (its own environment); its figures, or why it could not run. `baseline`: the
    layers/ the baseline Rearview runs from."""
    ours = system in ("rearview", BASELINE)
    python = sys.executable if ours else str(PEERS_PYTHON)
    if not ours and not PEERS_PYTHON.exists():
        return {"error": f"{PEERS_PYTHON} missing: run `make bench-peers`"}
    store = scratch / system
    out = scratch / f"{system}.json"
    command = [python, __file__, "worker", system, str(corpus), str(store), str(out)]
    layers = baseline if system == BASELINE and baseline is not None else REPO / "layers"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "bench"), str(layers)])}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1][:300]}
    return dict(json.loads(out.read_text(encoding="utf-8")))


def rotated(systems: Sequence[str], offset: int) -> list[str]:
    offset %= len(systems)
    return [*systems[offset:], *systems[:offset]]


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base and not math.isnan(value) and not math.isnan(base) else "-"


def table(size: int, share: float, results: dict[str, dict[str, Any]], order: Sequence[str]) -> str:
    base = results.get("rearview", {})
    lines = [
        f"### {size:,} episodes, queried namespace {share:.0%} of them (order: {', '.join(order)})",
        "",
        "| system | ingest/s | first query ms | graph work after the first query s | p50 ms | p95 ms | CPU p50 ms "
        "| disk MB | peak RSS MB | ingest vs Rearview | p50 vs Rearview | p95 vs Rearview | CPU p50 vs Rearview "
        "| RSS vs Rearview |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for system in (*SYSTEMS, BASELINE):
        r = results.get(system)
        if r is None:
            continue
        if "error" in r:
            lines.append(f"| {system} | failed: {r['error']} |")
            continue
        cells = [f"{r['ingest_per_s']:,.0f}", f"{r['first_query_ms']:,.1f}", f"{r.get('settle_s', 0):.1f}",
                 f"{r['p50_ms']:.2f}",
                 f"{r['p95_ms']:.2f}", f"{r.get('cpu_p50_ms', math.nan):.2f}", f"{r['disk_mb']:,.0f}",
                 f"{r['rss_mb']:,.0f}"]  # fmt: skip
        keys = ("ingest_per_s", "p50_ms", "p95_ms", "cpu_p50_ms", "rss_mb")
        ratios = [_ratio(r.get(key, math.nan), base.get(key, math.nan)) for key in keys]
        lines.append(f"| {system} | " + " | ".join(cells + ratios) + " |")
        if system in ("rearview", BASELINE) and "primitives_p50_ms" in r:
            lines.append(
                f"| {system} (its two primitive searches) | | | | {r['primitives_p50_ms']:.2f} | "
                f"{r['primitives_p95_ms']:.2f} | {r.get('primitives_cpu_p50_ms', math.nan):.2f} | | | | | | | |"
            )
    lines += _same_rankings(results)
    return "\n".join(lines) + "\n"


def _same_rankings(results: dict[str, dict[str, Any]]) -> list[str]:
    """How far this tree's rankings are the baseline's: queries ranked alike (ids and scores), and the share of
    the top ids they have in common."""
    ours, base = results.get("rearview", {}).get("ranked"), results.get(BASELINE, {}).get("ranked")
    if not ours or not base or len(ours) != len(base):
        return []
    alike = sum(a == b for a, b in zip(ours, base, strict=True))
    # Two empty answers (nothing relevant, both) are alike: a share of 1.
    common = [
        len({h[0] for h in a} & {h[0] for h in b}) / max(len(a), len(b)) if a or b else 1.0
        for a, b in zip(ours, base, strict=True)
    ]
    return [
        "",
        f"Rankings against the baseline: {alike} of {len(ours)} queries alike (ids, order and scores); "
        f"top-{TOP_K} ids in common {sum(common) / len(common):.3f} on average, {min(common):.1f} at least.",
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--shares", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json-out", type=Path, default=None)
    parser.add_argument(
        "--baseline", default=None, help="also run Rearview from this commit's layers/ (git archive), as a baseline"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["worker"]:
        system, corpus, store, out = raw[1], Path(raw[2]), Path(raw[3]), Path(raw[4])
        out.write_text(json.dumps(WORKERS[system](Workload(corpus), store)), encoding="utf-8")
        return 0
    args = parse_args(raw)
    every: list[dict[str, Any]] = []
    configuration = 0
    systems = [*args.systems, *([BASELINE] if args.baseline else [])]
    for size in args.sizes:
        for share in args.shares:
            with tempfile.TemporaryDirectory(prefix="rearview-peers-") as tmp:
                corpus = Path(tmp)
                baseline = extract_layers(args.baseline, corpus / "baseline") if args.baseline else None
                make_corpus(corpus, size, share, args.queries, args.seed)
                order = rotated(systems, configuration)
                results = {system: run_worker(system, corpus, corpus / "stores", baseline) for system in order}
            configuration += 1
            print(table(size, share, results, order), flush=True)
            every.append({"size": size, "share": share, "order": order, "results": results})
    if args.json_out:
        args.json_out.write_text(json.dumps(every, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
