"""The coarse cells' settings (`adapters/sqlite/coarse_cells.py`: cells per square root of the rows, cells probed):
how often the write path's duplicate check, searched through the cells while a graph is built, finds another best
candidate above the dedup threshold than exact search, and what a batch of 100 costs.

`real`: real turns with a real embedder. LoCoMo's and Chatlog's turns ("Speaker: text"), shuffled; 85% are the
stored rows, and the queries are the other 15% (natural near-repeats: chat says the same things again) and 1,500
stored turns restated (upper case, no punctuation). Vectors are kept under `.bench/` for the next run.

`timing`: the synthetic corpus of `write_rate.py` bulk-loaded to --size (hashing embedder), 2,000 new sentences and
1,000 stored ones restated as queries, through `SqliteSearchIndex.vector_search_many` as the write path calls it,
the cache held as if its graph were being built: the median seconds a batch of 100, and the same best-candidate
comparison against exact search.

    .venv/bin/python bench/coarse_cells.py real --embedder minilm      # and e5; Chatlog: make bench-chatlog first
    .venv/bin/python bench/coarse_cells.py timing --size 100000
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import locomo
from metrics import format_table
from write_rate import NAMESPACE, Namespace, best_candidates

REPO = Path(__file__).resolve().parent.parent
SETTINGS = [(1, 16), (2, 16), (4, 16), (4, 12), (4, 24), (8, 16)]


def restated(text: str) -> str:
    return re.sub(r"[^\w\s]", "", text).upper()


def configured(per_root: int, probe: int) -> None:
    """The cells module set to `per_root` cells per square root of the rows, `probe` cells probed."""
    from rearview.adapters.sqlite import coarse_cells

    coarse_cells.CELLS_PER_ROOT, coarse_cells.PROBE = per_root, probe


def best_through_cells(stored: np.ndarray, queries: np.ndarray, threshold: float) -> np.ndarray:
    """Each query's best stored row at or above `threshold` through the cells as configured (-1: none)."""
    from rearview.adapters.sqlite.coarse_cells import CoarseCells
    from rearview.adapters.sqlite.vector_cache import _scores_of_many

    cells = CoarseCells(stored, np.ones(stored.shape[0], dtype=bool))
    found: list[int] = []
    for start in range(0, queries.shape[0], 100):
        for positions, scores in cells.scored(queries[start : start + 100], stored, stored.shape[0], _scores_of_many):
            top = int(np.argmax(scores))
            found.append(int(positions[top]) if scores[top] >= threshold else -1)
    return np.asarray(found)


def real_vectors(
    embedder_name: str, data: Sequence[Path], cache: Path, seed: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """The stored turns' vectors (float16), the queries' (float32) and the embedder's dedup threshold: the turns of
    each LoCoMo-shaped set in `data`, shuffled, 85% stored, the other 15% and 1,500 stored ones restated asked.
    Vectors are kept in `cache` for the next run."""
    from rearview.bootstrap import build_embedder
    from rearview.settings import Settings

    settings = Settings(embedder=embedder_name)
    embedder = build_embedder(settings)
    texts: list[str] = []
    for each in data:
        turns = locomo.load_turns(each / "locomo10_turns.jsonl")
        texts += [f"{t.speaker}: {t.text}" for conv in turns.values() for t in conv]
    rng = np.random.default_rng(seed)
    shuffled = rng.permutation(len(texts))
    cut = int(len(texts) * 0.85)
    stored_texts = [texts[i] for i in shuffled[:cut]]
    query_texts = [texts[i] for i in shuffled[cut:]]
    query_texts += [restated(stored_texts[i]) for i in rng.choice(cut, 1500, replace=False)]

    def vectors(tag: str, batch: list[str]) -> np.ndarray:
        kept = cache / f"coarse-cells-{embedder_name}-{tag}-{len(batch)}-{seed}.npy"
        if kept.exists():
            return np.load(kept)
        made = np.asarray(embedder.embed(batch), dtype=np.float32)
        kept.parent.mkdir(parents=True, exist_ok=True)
        np.save(kept, made)
        return made

    stored = vectors("stored", stored_texts).astype(np.float16)
    return stored, vectors("queries", query_texts), embedder.scale.raw(settings.write.dedup_threshold)


def real(args: argparse.Namespace) -> None:
    from rearview.adapters.sqlite.vector_cache import _scores_of_many

    stored, queries, threshold = real_vectors(args.embedder, args.data, args.cache, args.seed)
    scores = _scores_of_many(stored, queries)
    best = scores.argmax(axis=1)
    exact = np.where(scores[np.arange(queries.shape[0]), best] >= threshold, best, -1)
    rows = []
    for per_root, probe in SETTINGS:
        configured(per_root, probe)
        found = best_through_cells(stored, queries, threshold)
        rows.append([f"{per_root} x sqrt(n)", str(probe), f"{int((found != exact).sum()):,}"])
    title = (
        f"== {args.embedder}: {stored.shape[0]:,} stored turns, {queries.shape[0]:,} queries, dedup threshold "
        f"{threshold:.4f}: exact search finds {int((exact >= 0).sum()):,} =="
    )
    print(format_table(["cells", "probed", "best candidate unlike exact search's"], rows, title=title))


def loaded(db: Any, path: Path, embedder: Any, args: argparse.Namespace) -> list[str]:
    """The synthetic corpus bulk-loaded to --size into `db` (at `path`); the query texts: 2,000 new sentences and
    1,000 stored ones restated."""
    from rearview.adapters.sqlite import SqliteMemoryStore

    grown = Namespace(SqliteMemoryStore(db), embedder, args.seed)
    grown.bulk_load(args.size)
    with sqlite3.connect(path) as raw:
        sample = [row[0] for row in raw.execute("SELECT content FROM episodes ORDER BY random() LIMIT 1000")]
    return [text for text, _ in grown.generator.sentences(2000)] + [restated(text) for text in sample]


def timing(args: argparse.Namespace) -> None:
    from rearview.adapters.hashing_embedder import HashingEmbedder
    from rearview.adapters.sqlite import SqliteDatabase, SqliteSearchIndex
    from rearview.adapters.sqlite.vector_caches import VectorOptions
    from rearview.domain.search import MemoryFilter
    from rearview.settings import Settings

    embedder = HashingEmbedder(dim=512)
    threshold = Settings().write.dedup_threshold
    episodic = MemoryFilter(layers=("episodic",))
    with tempfile.TemporaryDirectory(prefix="rearview-coarse-cells-") as tmp:
        db = SqliteDatabase(Path(tmp) / "rearview.db", embedder_name=embedder.name, dim=embedder.dim)
        queries = embedder.embed(loaded(db, Path(tmp) / "rearview.db", embedder, args))
        index = SqliteSearchIndex(db, vectors=VectorOptions(ann_threshold=0))
        index.vector_search_many(NAMESPACE, queries[:1], episodic, 3)  # loads the cache, untimed

        exact, exact_s = best_candidates(index, queries, episodic, threshold)
        cache = index._vectors.loaded(NAMESPACE, "episodic", db.generation(NAMESPACE))
        assert cache is not None
        cache.building = True  # as while its graph is built: the batch search goes through the cells
        rows = [["exact", "-", "-", "-", f"{exact_s:.3f}"]]
        for per_root, probe in SETTINGS:
            configured(per_root, probe)
            cache.cells = None
            began = time.perf_counter()
            index.vector_search_many(NAMESPACE, queries[:1], episodic, 3)  # draws the cells
            drawn = time.perf_counter() - began
            found, cells_s = best_candidates(index, queries, episodic, threshold)
            differ = sum(a != b for a, b in zip(exact, found, strict=True))
            rows.append([f"{per_root} x sqrt(n)", str(probe), f"{drawn:.2f}", str(differ), f"{cells_s:.3f}"])
        db.close()
    title = (
        f"== {args.size:,} rows, {len(queries):,} queries: exact search finds {sum(x is not None for x in exact):,} "
        "at or above the dedup threshold =="
    )
    headers = ["cells", "probed", "drawing s", "best unlike exact", "s a batch of 100 (median)"]
    print(format_table(headers, rows, title=title))


def add_turn_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `real_vectors`: --embedder, --data (LoCoMo-shaped sets), --cache, --seed."""
    parser.add_argument("--embedder", default="e5")
    parser.add_argument(
        "--data", type=Path, nargs="+",
        default=[REPO.parent / "shared" / "benchmarks" / "locomo", REPO / ".bench" / "chatlog"],
    )  # fmt: skip
    parser.add_argument("--cache", type=Path, default=REPO / ".bench")
    parser.add_argument("--seed", type=int, default=7)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    add_turn_arguments(commands.add_parser("real"))
    sub = commands.add_parser("timing")
    sub.add_argument("--size", type=int, default=100_000)
    sub.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], None] = real if args.command == "real" else timing
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
