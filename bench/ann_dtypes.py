"""The HNSW graph's vector type (`AnnParams.dtype`): build and search time and what the graph finds, float16 (the
baseline) against bfloat16 and int8, on real turns with a real embedder.

The vectors are `coarse_cells.py real`'s (LoCoMo's and Chatlog's turns: 85% stored, the rest and restated stored
turns as queries, kept under `.bench/`). Each type builds a graph of the stored rows on one thread (as the graph
keeper does) at `AnnParams`' widths, then searches every query as recall does (`expansion_search`, 55 keys: the 50
wanted and the margin) and as the write path's duplicate check does (`expansion_batch`, 11 keys): recall@50 against
exact search over the float16 rows, the share of queries whose exact best is among the 11, and microseconds a query.
`--peers N`: `peers.py`'s synthetic corpus instead (N hashing vectors, its short keyword queries): a hard case for
any graph, where float16's own recall@50 is under 0.9.

    .venv/bin/python bench/ann_dtypes.py --embedder e5          # and minilm; Chatlog: make bench-chatlog first
    .venv/bin/python bench/ann_dtypes.py --peers 100000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from coarse_cells import add_turn_arguments, real_vectors
from metrics import format_table

TYPES = ("f16", "bf16", "i8")


def peers_vectors(size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`peers.py`'s corpus of `size` in one namespace, 300 queries: float16 rows, unit float32 queries."""
    import peers

    with tempfile.TemporaryDirectory(prefix="rearview-ann-dtypes-") as tmp:
        peers.make_corpus(Path(tmp), size, 1.0, 300, seed)
        stored = np.load(Path(tmp) / "vectors.npy").astype(np.float16)
        queries = np.load(Path(tmp) / "query_vectors.npy")
    return stored, queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_turn_arguments(parser)
    parser.add_argument("--peers", type=int, default=0, help="peers.py's corpus of this many rows instead")
    args = parser.parse_args(argv)

    from usearch.index import Index

    from rearview.adapters.sqlite.ann_index import AnnParams

    if args.peers:
        stored, queries = peers_vectors(args.peers, args.seed)
        corpus = f"peers.py's corpus: {stored.shape[0]:,} hashing vectors"
    else:
        stored, queries, _ = real_vectors(args.embedder, args.data, args.cache, args.seed)
        corpus = f"{args.embedder}: {stored.shape[0]:,} turns"
    params = AnnParams()
    exact = np.argsort(-(queries @ stored.astype(np.float32).T), axis=1, kind="stable")
    best50, best1 = exact[:, :50], exact[:, 0]
    keys = np.arange(stored.shape[0], dtype=np.uint64)
    rows = []
    for dtype in TYPES:
        index = Index(
            ndim=stored.shape[1], metric="ip", dtype=dtype, connectivity=params.connectivity,
            expansion_add=params.expansion_add, expansion_search=params.expansion_search,
        )  # fmt: skip
        began = time.perf_counter()
        index.add(keys, stored, threads=1)
        built = time.perf_counter() - began
        found: dict[int, np.ndarray] = {}
        micros: dict[int, float] = {}
        for width, count in ((params.expansion_search, 55), (params.expansion_batch, 11)):
            index.expansion_search = width  # type: ignore[misc]  # stubs miss its setter
            began = time.perf_counter()
            matches = index.search(queries, count, threads=1)
            micros[width] = (time.perf_counter() - began) / queries.shape[0] * 1e6
            found[width] = np.asarray(matches.keys, dtype=np.int64).reshape(queries.shape[0], -1)
        wide, narrow = found[params.expansion_search], found[params.expansion_batch]
        recall50 = np.mean([np.isin(best50[i], wide[i]).mean() for i in range(queries.shape[0])])
        top1 = np.mean([best1[i] in narrow[i] for i in range(queries.shape[0])])
        rows.append(
            [
                dtype,
                f"{built:.2f}",
                f"{stored.shape[0] / built:,.0f}",
                f"{recall50:.4f}",
                f"{micros[params.expansion_search]:.0f}",
                f"{top1:.4f}",
                f"{micros[params.expansion_batch]:.0f}",
            ]
        )
    title = f"== {corpus} ({stored.shape[1]} dimensions), {queries.shape[0]:,} queries, one thread =="
    headers = [
        "type",
        "build s",
        "rows/s",
        f"recall@50 (width {params.expansion_search})",
        "us a query",
        f"exact best among 11 (width {params.expansion_batch})",
        "us a query",
    ]
    print(format_table(headers, rows, title=title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
