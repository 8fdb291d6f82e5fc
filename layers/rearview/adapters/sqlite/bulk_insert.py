"""Bulk inserts: a large change set's rows made by a helper thread one chunk ahead of SQLite, which inserts each
chunk in one statement.

Why. A bulk load's change set spends about a third of its time making rows in Python (the search text's tokens,
the JSON lists, the epochs) and the rest in SQLite (the table, its indexes). Python's sqlite3 module lets go of
the GIL while a statement runs, so the two can overlap on a second core, but only if a statement runs long enough
to be worth it: `executemany` takes the GIL back at every row, and while another thread holds it, each row would
wait for the switch interval (5 ms). One statement inserting a chunk (a multi-row VALUES) runs for milliseconds
without the GIL, and the helper makes the next chunk's rows meanwhile.

What it costs: one helper thread per process, started on the first bulk insert and idle between them (it ends
with the interpreter). Rows are made in the same order, by the same functions, as without it; a failure making a row
reaches the caller from `result()`, inside its transaction, which then rolls back.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import Any, TypeVar

_T = TypeVar("_T")
Row = tuple[Any, ...]

# Rows per statement: 256 rows of an episode (25 columns) bind 6,400 parameters, well under SQLite's 32,766, and
# run for milliseconds without the GIL (bench/RESULTS.md, "Bulk apply, sixth pass").
CHUNK_ROWS = 256
# Fewer rows than this are inserted by `executemany`, on the caller's thread alone: below two chunks there is
# nothing to overlap, and a VALUES statement for an odd row count would be compiled for that count.
PIPELINED_FROM = 2 * CHUNK_ROWS

_lock = threading.Lock()
# The helper and the process it was started in: a child forked after that has the pool but not its thread (work
# sent to it would wait forever), so it starts its own.
_helper: tuple[int, ThreadPoolExecutor] | None = None


def _pool() -> ThreadPoolExecutor:
    global _helper
    with _lock:
        if _helper is None or _helper[0] != os.getpid():
            _helper = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="rearview-rows"))
        return _helper[1]


def rows_ahead(items: Sequence[_T], make: Callable[[Sequence[_T]], list[Row]]) -> Iterator[list[Row]]:
    """`make` of each chunk of `items` (CHUNK_ROWS each), in order; chunk k+1 is made on the helper thread while the
    caller uses chunk k. A chunk the caller did not reach (it stopped early, or raised) is still made, then dropped.
    """
    chunks = [items[start : start + CHUNK_ROWS] for start in range(0, len(items), CHUNK_ROWS)]
    pool = _pool()
    ahead: Future[list[Row]] = pool.submit(make, chunks[0])
    for chunk in chunks[1:]:
        rows = ahead.result()
        ahead = pool.submit(make, chunk)
        yield rows
    yield ahead.result()


@lru_cache(maxsize=8)
def values_sql(single_row_sql: str, rows: int) -> str:
    """An `INSERT ... VALUES (?, ...)` statement for `rows` rows at once."""
    head, separator, placeholders = single_row_sql.partition(" VALUES ")
    if not separator:
        raise ValueError(f"not a single-row INSERT ... VALUES: {single_row_sql!r}")
    return head + separator + ", ".join(itertools.repeat(placeholders, rows))


def insert_chunk(conn: sqlite3.Connection, single_row_sql: str, rows: list[Row]) -> None:
    """Insert `rows` in one statement if they make a full chunk (whose statement the connection keeps compiled),
    else with `executemany`."""
    if len(rows) == CHUNK_ROWS:
        conn.execute(values_sql(single_row_sql, CHUNK_ROWS), list(itertools.chain.from_iterable(rows)))
    else:
        conn.executemany(single_row_sql, rows)
