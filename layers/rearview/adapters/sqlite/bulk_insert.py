"""Bulk inserts: a large change set's rows made by a helper thread one chunk ahead of SQLite, which inserts each
chunk in one statement.

Why. A bulk load's change set spends about a third of its time making rows in Python (the search text's tokens,
the JSON lists, the epochs) and the rest in SQLite (the table, its indexes). Python's sqlite3 module lets go of
the GIL while a statement runs, so the two can overlap on a second core, but only if a statement runs long enough
to be worth it: `executemany` takes the GIL back at every row, and while another thread holds it, each row would
wait for the switch interval (5 ms). One statement inserting a chunk (a multi-row VALUES) runs for milliseconds
without the GIL, and the helper makes the next chunk's rows meanwhile.

The helper also gets each chunk's statement ready (`statement`), because binding is the other half of the
statement's time, and it holds the GIL: the sqlite3 module binds an int, float, str or bytearray straight away, but
looks up an adapter for every other value (a dict miss and two attribute lookups), so each None (an episode has six
NULL columns) and each bytes (its vector) cost more to bind than the value costs to store. A column NULL in every
row of the chunk is therefore written NULL in the statement rather than bound, a column of one value in every row
(the namespace, most counters and flags, empty lists) is bound once as a numbered parameter, and blobs are bound as
bytearray. What is stored is what binding every value stores, type for type (`_layout`).

What it costs: one helper thread per process, started on the first bulk insert and idle between them (it ends
with the interpreter). Rows are made in the same order, by the same functions, as without it; a failure making a row
reaches the caller from `result()`, inside its transaction, which then rolls back.
"""

from __future__ import annotations

import itertools
import math
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")

# Rows per statement: 256 rows of an episode (25 columns) bind 6,400 parameters, well under SQLite's 32,766, and
# run for milliseconds without the GIL (bench/RESULTS.md, "Bulk load").
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


def made_ahead(items: Sequence[_T], make: Callable[[Sequence[_T]], _R]) -> Iterator[_R]:
    """`make` of each chunk of `items` (CHUNK_ROWS each), in order; chunk k+1 is made on the helper thread while the
    caller uses chunk k. A chunk the caller did not reach (it stopped early, or raised) is still made, then dropped.
    """
    chunks = [items[start : start + CHUNK_ROWS] for start in range(0, len(items), CHUNK_ROWS)]
    pool = _pool()
    ahead: Future[_R] = pool.submit(make, chunks[0])
    for chunk in chunks[1:]:
        made = ahead.result()
        ahead = pool.submit(make, chunk)
        yield made
    yield ahead.result()


@dataclass(frozen=True, slots=True)
class Statement:
    """An INSERT ready to run: one statement and its parameters, or (`many`) a single-row one and its rows."""

    sql: str
    params: list[Any]
    many: bool = False

    def run(self, conn: sqlite3.Connection) -> None:
        if self.many:
            conn.executemany(self.sql, self.params)
        else:
            conn.execute(self.sql, self.params)


def statement(single_row_sql: str, columns: list[list[Any]]) -> Statement:
    """The statement inserting the rows whose values `columns` hold, column by column. A full chunk is one
    statement (a multi-row VALUES, which the connection keeps compiled for each layout it meets) in which a column
    NULL in every row is written NULL, a column holding one value in every row is bound once, and bytes are bound
    as bytearray (the same BLOB stored); fewer rows are left to `executemany`."""
    if len(columns[0]) != CHUNK_ROWS:
        return Statement(single_row_sql, list(zip(*columns, strict=True)), many=True)
    layout = tuple(_layout(column) for column in columns)
    for j, column in enumerate(columns):
        if layout[j] != NULL and bytes in set(map(type, column)):
            columns[j] = [bytearray(v) if type(v) is bytes else v for v in column]
    once = [columns[j][0] for j, kind in enumerate(layout) if kind == ONCE]
    per_row = [columns[j] for j, kind in enumerate(layout) if kind == PER_ROW]
    params = once + list(itertools.chain.from_iterable(zip(*per_row, strict=True))) if per_row else once
    return Statement(values_sql(single_row_sql, CHUNK_ROWS, layout), params)


# How a column of a chunk is written: NULL in the SQL, one parameter for every row, or a parameter per row.
NULL, ONCE, PER_ROW = "null", "once", "per row"


def _layout(column: list[Any]) -> str:
    """NULL, ONCE or PER_ROW for a column's values: ONCE only when every value is the same, of the same type (1 and
    1.0 and True are equal in Python, not in SQLite), and of the same sign if a zero (0.0 and -0.0 are equal too)."""
    first = column[0]
    if column.count(first) != len(column) or len(set(map(type, column))) != 1:
        return PER_ROW
    if first is None:
        return NULL
    if type(first) is float and first == 0.0 and len({math.copysign(1.0, v) for v in column}) != 1:
        return PER_ROW
    return ONCE


@lru_cache(maxsize=32)
def values_sql(single_row_sql: str, rows: int, layout: tuple[str, ...] | None = None) -> str:
    """An `INSERT ... VALUES` statement for `rows` rows at once. Without a layout, every value is a parameter
    (`?`); with one (a NULL, ONCE or PER_ROW per column), the parameters are numbered: the ONCE columns first, in
    column order, then the PER_ROW values row by row."""
    head, separator, placeholders = single_row_sql.partition(" VALUES ")
    width = placeholders.count("?")
    if not separator or placeholders != f"({', '.join('?' * width)})":
        raise ValueError(f"not a single-row INSERT ... VALUES (?, ...): {single_row_sql!r}")
    if layout is None:
        return head + separator + ", ".join(itertools.repeat(placeholders, rows))
    if len(layout) != width or not set(layout) <= {NULL, ONCE, PER_ROW}:
        raise ValueError(f"a layout of {width} columns of {NULL!r}, {ONCE!r} or {PER_ROW!r}, got {layout!r}")
    once = {j: n for n, j in enumerate((j for j, kind in enumerate(layout) if kind == ONCE), start=1)}
    varying = [j for j, kind in enumerate(layout) if kind == PER_ROW]
    values = []
    for row in range(rows):
        number = once | {j: len(once) + row * len(varying) + k for k, j in enumerate(varying, start=1)}
        cells = ("NULL" if kind == NULL else f"?{number[j]}" for j, kind in enumerate(layout))
        values.append(f"({', '.join(cells)})")
    return head + separator + ", ".join(values)
