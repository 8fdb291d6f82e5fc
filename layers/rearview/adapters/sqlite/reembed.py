"""Re-embedding the embedded backend's data with another embedder, in place: every memory of every namespace gets the
new model's vector, a namespace per transaction, and the database then records the new embedder (its `meta`), so
the next start with that embedder opens it. Nothing else changes: ids, texts, versions, history, API keys, counters
and the hindsight ledger stay as they are; the vector caches and graphs are built again from the new vectors by the
next process that searches.

A run that stops halfway leaves the old record, so the database still opens with the old embedder only and the run
can be repeated (each namespace is re-embedded whole, in one transaction).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from rearview.adapters.sqlite.connection import DB_FILENAME, SqliteDatabase, _meta_value, _set_meta
from rearview.adapters.sqlite.memory_store import SqliteMemoryStore
from rearview.domain.memory import Episode, Memory
from rearview.domain.search import MemoryFilter
from rearview.errors import ConfigurationError
from rearview.ports import Embedder

# Texts embedded per call: a run of the model's batches, and a bounded list in memory.
_BATCH = 256


def recorded_embedder(data_dir: Path) -> tuple[str, int] | None:
    """The embedder name and dimension the database in `data_dir` records, or None if it records none."""
    path = Path(data_dir) / DB_FILENAME
    if not path.exists():
        raise ConfigurationError(f"no database at {path}", field="data_dir")
    db = SqliteDatabase(path, embedder_name=None, dim=None)
    try:
        conn = db.connection()
        name, dim = _meta_value(conn, "embedder_name"), _meta_value(conn, "embedding_dim")
    finally:
        db.close()
    return (name, int(dim)) if name is not None and dim is not None else None


def reembed(
    data_dir: Path, embedder: Embedder, text_of: Callable[[Memory], str], progress: Callable[[str, int], None]
) -> dict[str, int]:
    """Every memory's vector made again by `embedder` from `text_of(memory)`; memories re-embedded per namespace.
    `progress(namespace, count)` is told after each namespace."""
    db = SqliteDatabase(Path(data_dir) / DB_FILENAME, embedder_name=None, dim=None)
    try:
        store = SqliteMemoryStore(db)
        done: dict[str, int] = {}
        for namespace in store.list_namespaces():
            memories = store.list_memories(namespace, MemoryFilter(include_superseded=True))
            vectors = _embedded(embedder, [text_of(m) for m in memories])
            with db.transaction() as conn:
                for memory, vector in zip(memories, vectors, strict=True):
                    table = "episodes" if isinstance(memory, Episode) else "facts"
                    conn.execute(
                        f"UPDATE {table} SET vector = ? WHERE namespace = ? AND id = ?",  # noqa: S608 - fixed names
                        (np.asarray(vector, dtype=np.float32).tobytes(), namespace, memory.id),
                    )
            done[namespace] = len(memories)
            progress(namespace, len(memories))
        with db.transaction() as conn:
            _set_meta(conn, "embedder_name", embedder.name)
            _set_meta(conn, "embedding_dim", str(embedder.dim))
        return done
    finally:
        db.close()


def _embedded(embedder: Embedder, texts: list[str]) -> np.ndarray:
    parts = [embedder.embed(texts[start : start + _BATCH]) for start in range(0, len(texts), _BATCH)]
    return np.vstack(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)
