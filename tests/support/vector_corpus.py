"""A small corpus of episodes and queries for the SQLite vector index's tests (the HNSW graph, the graph keeper),
and indexes that search through a graph from the first vector on, or exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex, VectorOptions
from rearview.adapters.sqlite.ann_index import AnnParams
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=64)
WORDS = [
    "river",
    "mountain",
    "coffee",
    "piano",
    "garden",
    "invoice",
    "flight",
    "salad",
    "chess",
    "violin",
    "harbor",
    "thesis",
    "camera",
    "puppy",
    "lantern",
    "meadow",
    "budget",
    "concert",
    "sailing",
    "pottery",
    "ticket",
    "tomato",
    "marathon",
    "kitten",
    "orchard",
    "glacier",
    "museum",
    "bakery",
    "passport",
    "sketch",
    "podcast",
    "bicycle",
    "festival",
    "canyon",
    "library",
    "recipe",
    "castle",
    "lagoon",
    "tunnel",
    "quartz",
]


def open_db(path: Path) -> SqliteDatabase:
    return SqliteDatabase(path, embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)


# A search width above every namespace here: the graph's search visits every node it can reach, so what it finds is
# exactly what exact search finds unless the graph misses a vector or strands a node, or the plumbing around it
# (keys to rows, filters, scores, ties) errs. The graph's recall at the default width is measured by
# bench/ann_libraries.py, not asserted here.
EXHAUSTIVE = AnnParams(expansion_search=1024, expansion_batch=1024)


def graphed_index(db: SqliteDatabase, ann_dir: Path | None = None) -> SqliteSearchIndex:
    """An index that searches through a graph from the first vector on, as wide as the namespace."""
    return SqliteSearchIndex(db, vectors=VectorOptions(ann_threshold=1, ann_dir=ann_dir, ann_params=EXHAUSTIVE))


def exact_index(db: SqliteDatabase) -> SqliteSearchIndex:
    return SqliteSearchIndex(db, vectors=VectorOptions(ann_threshold=0))


def corpus_episodes(namespace: str, count: int, start: int = 0) -> list[Episode]:
    """Episodes of 3 to 6 words drawn at random (two may score alike against a query: ties fall by ref)."""
    rng = np.random.default_rng(start + len(namespace))
    out = []
    for i in range(start, start + count):
        at = T0 + timedelta(minutes=i)
        words = " ".join(str(w) for w in rng.choice(WORDS, size=int(rng.integers(3, 7)), replace=False))
        out.append(
            Episode(
                id=f"{namespace}-{i}",
                namespace=namespace,
                content=f"{words} {i}",
                occurred_at=at,
                created_at=at,
                session_id=f"s{i % 4}",
            )
        )
    return out


def write_episodes(store: SqliteMemoryStore, namespace: str, memories: list[Episode]) -> None:
    vectors = EMBEDDER.embed([m.content for m in memories])
    store.apply(namespace, ChangeSet(upserts=list(zip(memories, vectors, strict=True))))


def corpus_queries() -> np.ndarray:
    return EMBEDDER.embed([f"{a} {b}" for a, b in zip(WORDS, WORDS[3:] + WORDS[:3], strict=True)])
