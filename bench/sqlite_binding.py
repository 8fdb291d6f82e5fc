"""What binding costs a bulk insert's chunk of episodes: the same rows inserted into an in-memory copy of the
episode table (no index, no trigger, so what differs between the ways is binding), three ways:

- `executemany` of the single-row INSERT (the write path's way, and the remainder of a bulk change set);
- one multi-row VALUES statement per chunk binding every value (the sixth pass's way, the baseline);
- the chunk's statement as `bulk_insert.statement` makes it: NULL columns written NULL, one-value columns bound
  once, blobs bound as bytearray (this pass's way), made beforehand, as the helper thread makes it while the
  caller's thread runs the chunk before; and, apart, the time making those statements takes.

The sqlite3 module binds an int, float, str or bytearray straight away and looks up an adapter for anything else
(None, bytes): the gap between the last two rows is that lookup and the values bound once instead of per row.
Microseconds per row, the median of --repeat runs, the ways interleaved.

    .venv/bin/python bench/sqlite_binding.py
    .venv/bin/python bench/sqlite_binding.py --rows 25600 --repeat 15
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from rearview.adapters.sqlite.bulk_insert import CHUNK_ROWS, Statement, statement, values_sql
from rearview.adapters.sqlite.rows import episode_columns, insert_sql, namespace_token
from rearview.domain.memory import Episode

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DIM = 384


def episodes(count: int) -> list[Episode]:
    """Episodes as a bulk load brings them: text, a time, an entity now and then, no tags, session or outcome."""
    words = ("garden", "invoice", "deploy", "Stockholm", "exam", "brother", "sailing", "problem")
    return [
        Episode(
            id=f"e{i}", namespace="bench:target", content=f"{words[i % 8]} {words[(i * 3) % 8]} note {i} with Ana",
            occurred_at=T0 + timedelta(minutes=i), created_at=T0 + timedelta(minutes=i),
            entities=["Ana"] if i % 3 == 0 else [], importance=1.0,
        )
        for i in range(count)
    ]  # fmt: skip


def chunks_of(memories: list[Episode], blobs: list[bytes]) -> list[list[list[Any]]]:
    """Each chunk's columns, as the store makes them (`columns_of` in `SqliteMemoryStore._insert`)."""
    token = namespace_token("bench:target")
    out = []
    for start in range(0, len(memories) - CHUNK_ROWS + 1, CHUNK_ROWS):
        part = memories[start : start + CHUNK_ROWS]
        ids = [m.id for m in part]
        out.append([["bench:target"] * len(part), ids, [token] * len(part), *episode_columns(part),
                    blobs[start : start + CHUNK_ROWS]])  # fmt: skip
    return out


def table(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TABLE IF EXISTS episodes")
    columns = insert_sql("episodic").partition("(")[2].partition(")")[0]
    conn.execute(f"CREATE TABLE episodes ({columns})")


def timed(conn: sqlite3.Connection, insert: Callable[[], None], rows: int) -> float:
    table(conn)
    started = time.perf_counter()
    insert()
    return (time.perf_counter() - started) / rows * 1e6


def the_ways(conn: sqlite3.Connection, chunks: list[list[list[Any]]]) -> dict[str, Callable[[], None]]:
    """Each way of inserting the chunks (the laid-out statements made once, beforehand), and making those."""
    sql = insert_sql("episodic")
    rows = [list(zip(*chunk, strict=True)) for chunk in chunks]
    made: list[Statement] = []

    def every_row() -> None:
        for part in rows:
            conn.executemany(sql, part)

    def every_value() -> None:
        for part in rows:
            conn.execute(values_sql(sql, CHUNK_ROWS), list(itertools.chain.from_iterable(part)))

    def make() -> None:
        made[:] = [statement(sql, [list(column) for column in chunk]) for chunk in chunks]

    def laid_out() -> None:
        for chunk in made:
            chunk.run(conn)

    make()
    return {
        "executemany, a row at a time": every_row,
        BASELINE: every_value,
        "one statement a chunk, laid out by bulk_insert.statement (made beforehand)": laid_out,
        MAKING: make,
    }


BASELINE = "one statement a chunk, every value bound (baseline)"
MAKING = "making those statements (the helper thread's part, nothing inserted)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10 * CHUNK_ROWS)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args(argv)
    memories = episodes(args.rows // CHUNK_ROWS * CHUNK_ROWS)
    rng = np.random.default_rng(7)
    blobs = [rng.standard_normal(DIM).astype(np.float32).tobytes() for _ in memories]
    conn = sqlite3.connect(":memory:")
    ways = the_ways(conn, chunks_of(memories, blobs))
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeat):
        for name, insert in ways.items():
            times[name].append(timed(conn, insert, len(memories)))
    stored = set()
    for name, insert in ways.items():
        if name != MAKING:
            table(conn)
            insert()
            stored.add(repr(conn.execute("SELECT *, typeof(vector) FROM episodes ORDER BY rowid").fetchall()))
    if len(stored) != 1:
        raise RuntimeError("the ways stored different rows")
    base = statistics.median(times[BASELINE])
    print(f"{len(memories):,} episode rows in chunks of {CHUNK_ROWS}, {args.repeat} runs, medians (all stored alike)")
    print("| way | us a row | vs baseline |")
    print("|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.2f} | {statistics.median(values) / base:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
