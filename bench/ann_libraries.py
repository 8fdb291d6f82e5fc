"""Which HNSW library backs the approximate vector index: usearch, hnswlib and faiss (faiss-cpu) side by side.

Three steps, since the three libraries are not the project's dependencies (only the chosen one is):

1. `embed` (the project's environment): LoCoMo's turns and questions through the offline MiniLM embedder, each
   turn with the one before it in its session as the write path embeds it, saved as one .npz.
2. `rearview` (the project's environment): recall@50 of Rearview's own vector search through its graph (the
   graph's candidates rescored exactly) against its exact search, at several search widths.
3. `compare` (the peers' environment: `make bench-peers` installs the three libraries there): for each library,
   the time to build an index of the turns (and of `--synthetic` more vectors drawn around them, to see the cost
   grow), its memory, and recall@50 of each question's 50 nearest turns against exact search, at several search
   widths. Exact search in the same run is the baseline.

    .venv/bin/python bench/ann_libraries.py embed --data ../shared/benchmarks/locomo --out /tmp/locomo_minilm.npz
    .venv/bin/python bench/ann_libraries.py rearview --vectors /tmp/locomo_minilm.npz
    .venv/bin/python bench/ann_libraries.py grown --vectors /tmp/locomo_minilm.npz   # AnnParams.expansion_writes
    .venv-peers/bin/python bench/ann_libraries.py compare --vectors /tmp/locomo_minilm.npz [--synthetic 94118]

The LoCoMo data is read from ../shared/benchmarks/locomo and never copied; the .npz holds vectors only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

K = 50
# Connectivity (M) and construction width of every library, alike: IndexTuning's defaults in rearview.settings.
CONNECTIVITY = 16
EXPANSION_ADD = 128
WIDTHS = (32, 64, 128, 256)


def embed(data: Path, out: Path) -> None:
    """Turns (with the turn before them) and questions as MiniLM vectors, in `out`."""
    from rearview.adapters.onnx_embedders.minilm import OnnxMiniLMEmbedder

    embedder = OnnxMiniLMEmbedder()
    texts: list[str] = []
    previous: dict[tuple[str, int], str] = {}
    with (data / "locomo10_turns.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            key = (row["conv"], int(row["session"]))
            text = f"{row['speaker']}: {row['text']}"
            texts.append(f"{previous[key]}\n{text}" if key in previous else text)
            previous[key] = text
    with (data / "locomo10_gold.jsonl").open(encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f]
    started = time.perf_counter()
    turns = np.concatenate([embedder.embed(texts[i : i + 256]) for i in range(0, len(texts), 256)])
    asked = np.concatenate([embedder.embed(questions[i : i + 256]) for i in range(0, len(questions), 256)])
    np.savez(out, turns=turns.astype(np.float32), questions=asked.astype(np.float32))
    print(f"{len(texts)} turns, {len(questions)} questions embedded in {time.perf_counter() - started:.0f} s -> {out}")


def synthetic(turns: np.ndarray, count: int, seed: int = 7) -> np.ndarray:
    """`count` unit vectors near random turns (a turn plus noise of a third of its norm): the turns' geometry,
    more of it."""
    if count <= 0:
        return np.empty((0, turns.shape[1]), dtype=np.float32)
    rng = np.random.default_rng(seed)
    base = turns[rng.integers(0, len(turns), count)]
    noisy = base + rng.normal(0, 1 / 3 / np.sqrt(turns.shape[1]), base.shape).astype(np.float32)
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def exact_top(data: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    scores = queries @ data.T
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    return top


class Library:
    """One library's build and search, behind the same three calls."""

    def __init__(self, name: str, build: Callable[[np.ndarray], Any], search: Callable[..., np.ndarray]) -> None:
        self.name = name
        self.build = build
        self.search = search


def _usearch() -> Library:
    from usearch.index import Index

    def build(data: np.ndarray) -> Any:
        index = Index(
            ndim=data.shape[1],
            metric="ip",
            dtype="f16",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        index.add(np.arange(len(data), dtype=np.uint64), data, threads=1)
        return index

    def search(index: Any, queries: np.ndarray, k: int, width: int) -> np.ndarray:
        index.expansion_search = width
        return np.asarray(index.search(queries, k, threads=1).keys, dtype=np.int64).reshape(len(queries), -1)

    return Library("usearch (f16)", build, search)


def _hnswlib() -> Library:
    import hnswlib

    def build(data: np.ndarray) -> Any:
        index = hnswlib.Index(space="ip", dim=data.shape[1])
        index.init_index(max_elements=len(data), M=CONNECTIVITY, ef_construction=EXPANSION_ADD)
        index.set_num_threads(1)
        index.add_items(data, np.arange(len(data)))
        return index

    def search(index: Any, queries: np.ndarray, k: int, width: int) -> np.ndarray:
        index.set_ef(max(width, k))
        labels, _ = index.knn_query(queries, k=k)
        return np.asarray(labels, dtype=np.int64)

    return Library("hnswlib (f32)", build, search)


def _faiss() -> Library:
    import faiss

    faiss.omp_set_num_threads(1)

    def build(data: np.ndarray) -> Any:
        index = faiss.IndexHNSWSQ(
            data.shape[1], faiss.ScalarQuantizer.QT_fp16, CONNECTIVITY, faiss.METRIC_INNER_PRODUCT
        )
        index.hnsw.efConstruction = EXPANSION_ADD
        index.train(data)
        index.add(data)
        return index

    def search(index: Any, queries: np.ndarray, k: int, width: int) -> np.ndarray:
        index.hnsw.efSearch = max(width, k)
        _, labels = index.search(queries, k)
        return np.asarray(labels, dtype=np.int64)

    return Library("faiss HNSWSQ (f16)", build, search)


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def compare(vectors: Path, extra: int) -> None:
    loaded = np.load(vectors)
    turns, questions = loaded["turns"], loaded["questions"]
    data = np.concatenate([turns, synthetic(turns, extra)])
    started = time.perf_counter()
    truth = exact_top(data, questions, K)
    exact_ms = (time.perf_counter() - started) * 1000 / len(questions)
    print(f"{len(data)} vectors ({len(turns)} LoCoMo turns + {extra} near them), {len(questions)} questions, dim "
          f"{data.shape[1]}; exact (numpy, batched): {exact_ms:.3f} ms a query")  # fmt: skip
    rows = []
    for make in (_usearch, _hnswlib, _faiss):
        try:
            lib = make()
        except ImportError as error:
            print(f"{make.__name__}: not installed ({error})")
            continue
        before = _rss_mb()
        started = time.perf_counter()
        index = lib.build(data)
        build_s = time.perf_counter() - started
        grown = _rss_mb() - before
        for width in WIDTHS:
            started = time.perf_counter()
            found = np.concatenate([lib.search(index, questions[i : i + 1], K, width) for i in range(len(questions))])
            ms = (time.perf_counter() - started) * 1000 / len(questions)
            recall = np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)])
            rows.append((lib.name, f"{build_s:.2f}", f"{grown:.0f}", width, f"{recall:.4f}", f"{ms:.3f}"))
        del index
    header = ("library", "build s (1 thread)", "RSS growth MB", "search width", f"recall@{K}", "ms a query")
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(cell) for cell in row))


def through_rearview(vectors: Path, widths: Sequence[int]) -> None:
    """recall@50 of the shipped path (SqliteSearchIndex with its graph forced on: the graph's candidates, rescored
    exactly) against the same index searching exactly, LoCoMo's turns as one namespace."""
    import tempfile
    from datetime import UTC, datetime

    from rearview.adapters.sqlite import AnnParams, SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex, VectorOptions
    from rearview.domain.changes import ChangeSet
    from rearview.domain.memory import Episode, Memory
    from rearview.domain.search import MemoryFilter

    loaded = np.load(vectors)
    turns, questions = loaded["turns"], loaded["questions"]
    at = datetime(2023, 1, 1, tzinfo=UTC)
    with (
        tempfile.TemporaryDirectory() as tmp,
        SqliteDatabase(Path(tmp) / "r.db", embedder_name="minilm", dim=turns.shape[1]) as db,
    ):
        upserts: list[tuple[Memory, np.ndarray | None]] = [
            (Episode(id=f"t{i}", namespace="locomo", content=f"turn {i}", occurred_at=at, created_at=at), turns[i])
            for i in range(len(turns))
        ]
        SqliteMemoryStore(db).apply("locomo", ChangeSet(upserts=upserts))
        exact = SqliteSearchIndex(db, vectors=VectorOptions(ann_threshold=0))
        truth = [{c.id for c in exact.vector_search("locomo", q, MemoryFilter(), K)} for q in questions]
        print(f"Rearview's vector search through its graph (rescored exactly) against its exact search, {len(turns)} "
              f"LoCoMo turns, {len(questions)} questions")  # fmt: skip
        print(f"search width | recall@{K} | ms a query")
        for width in widths:
            params = AnnParams(expansion_search=width)
            graphed = SqliteSearchIndex(db, vectors=VectorOptions(ann_threshold=1, ann_params=params))
            graphed.vector_search("locomo", questions[0], MemoryFilter(), K)  # builds the graph
            started = time.perf_counter()
            found = [{c.id for c in graphed.vector_search("locomo", q, MemoryFilter(), K)} for q in questions]
            ms = (time.perf_counter() - started) * 1000 / len(questions)
            recall = np.mean([len(f & t) / K for f, t in zip(found, truth, strict=True)])
            print(f"{width} | {recall:.4f} | {ms:.3f}")


def grown(vectors: Path, first: int, widths: Sequence[int], orders: int) -> None:
    """recall@50 of a graph grown by writes (`AnnParams.expansion_writes`): the first `first` turns built at the
    construction width, the rest inserted 8 at a time (as the graph keeper does) at each width, in `orders` random
    orders; each question's 63 candidates (what Rearview asks for 50) rescored exactly, searched 64 and 128 wide."""
    from rearview.adapters.sqlite.ann_index import AnnParams, HnswIndex

    loaded = np.load(vectors)
    turns, questions = loaded["turns"].astype(np.float16), loaded["questions"].astype(np.float16)
    scores = questions.astype(np.float32) @ turns.astype(np.float32).T
    truth = np.argsort(-scores, axis=1, kind="stable")[:, :K]
    print(f"{len(turns)} LoCoMo turns, the first {first} built at {EXPANSION_ADD}, the rest inserted 8 at a time; "
          f"recall@{K} of 63 candidates rescored, mean of {orders} orders")  # fmt: skip
    print("written rows' width | recall@50 at search width 64 | at 128")
    for width in widths:
        recalls = []
        for seed in range(orders):
            order = np.random.default_rng(seed).permutation(len(turns))
            graph = HnswIndex.build(turns.shape[1], AnnParams(), order[:first], turns[order[:first]])
            for start in range(first, len(turns), 8):
                rows = order[start : start + 8]
                graph.add(rows, turns[rows], expansion=width)
            per_width = []
            for search_width in (64, 128):
                found = graph.search(questions, 63, search_width)
                hits = 0
                for q, keys in enumerate(found):
                    best = keys[np.argsort(-scores[q, keys], kind="stable")[:K]]
                    hits += np.intersect1d(best, truth[q]).size
                per_width.append(hits / (K * len(questions)))
            recalls.append(per_width)
        r64, r128 = np.mean(recalls, axis=0)
        print(f"{width} | {r64:.4f} | {r128:.4f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("embed")
    make.add_argument("--data", type=Path, default=Path("../shared/benchmarks/locomo"))
    make.add_argument("--out", type=Path, default=Path("/tmp/locomo_minilm.npz"))
    cmp = sub.add_parser("compare")
    cmp.add_argument("--vectors", type=Path, default=Path("/tmp/locomo_minilm.npz"))
    cmp.add_argument("--synthetic", type=int, default=0, help="vectors added near the turns")
    ours = sub.add_parser("rearview")
    ours.add_argument("--vectors", type=Path, default=Path("/tmp/locomo_minilm.npz"))
    grow = sub.add_parser("grown")
    grow.add_argument("--vectors", type=Path, default=Path("/tmp/locomo_minilm.npz"))
    grow.add_argument("--first", type=int, default=1000, help="turns in the graph built at once")
    grow.add_argument("--widths", type=int, nargs="+", default=[128, 96, 64, 32])
    grow.add_argument("--orders", type=int, default=3)
    args = parser.parse_args(argv)
    if args.command == "embed":
        embed(args.data, args.out)
    elif args.command == "rearview":
        through_rearview(args.vectors, WIDTHS)
    elif args.command == "grown":
        grown(args.vectors, args.first, args.widths, args.orders)
    else:
        compare(args.vectors, args.synthetic)
    return 0


if __name__ == "__main__":
    sys.exit(main())
