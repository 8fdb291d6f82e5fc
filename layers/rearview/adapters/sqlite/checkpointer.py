"""WAL checkpoints on a thread of their own: the committing thread no longer copies the WAL into the database file.

SQLite's automatic checkpoint runs inside COMMIT, on the thread that committed, once the WAL holds
`wal_autocheckpoint` pages (1,000 by default): a bulk load's change set of 10,000 episodes (~5,600 pages) paid
about as much for that copy as for its own FTS5 indexing (bench/RESULTS.md, "Bulk apply, third pass"). Here every
connection of a `SqliteDatabase` keeps an automatic checkpoint only as a safety net, at `SAFETY_NET_PAGES`, and a
`WalCheckpointer` with a connection of its own runs PASSIVE checkpoints after commits: at once after a commit of
`rows` rows or more (the WAL then restarts from its beginning at the next write, as it did when the committer
checkpointed), after `delay_seconds` for smaller ones (a write path of single episodes gets a checkpoint a second
at most, each one fsync of the database file, as the default's every 1,000 pages gave it).

A PASSIVE checkpoint never blocks a writer or a reader: it copies what no reader still needs, and SQLite's own
locking keeps it consistent with the writer appending meanwhile. Crash safety is SQLite's: until a page is copied
and the database file synced, the WAL holds it, and recovery replays the WAL; which thread runs the checkpoint
changes nothing there. Durability is unchanged (synchronous=NORMAL in WAL mode: a commit reaches the disk at the
next checkpoint's sync of the WAL, and checkpoints here come sooner, not later). If this thread falls behind (a
busy machine, a reader holding an old snapshot), the WAL grows until the committing connection's safety net runs
the checkpoint itself, as before.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger(__name__)

# The committing connections' own automatic checkpoint, kept as a safety net: ten times SQLite's default (40 MB of
# WAL at 4 KB pages), above a bulk load's change set of 10,000 episodes (~5,600 pages) so that it does not fire
# while the checkpointer keeps up, and a bound on the WAL when it does not.
SAFETY_NET_PAGES = 10_000
# A commit of at least this many rows is checkpointed at once; smaller ones after DELAY_SECONDS (see the module).
CHECKPOINT_ROWS = 1_000
DELAY_SECONDS = 1.0


class WalCheckpointer:
    """A thread that runs PASSIVE checkpoints of the database at `path` after commits (`committed`), started by the
    first commit reported and joined by `close`."""

    def __init__(
        self,
        path: Path,
        *,
        rows: int = CHECKPOINT_ROWS,
        delay_seconds: float = DELAY_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.rows = rows
        self.delay_seconds = delay_seconds
        self._monotonic = monotonic
        self._cond = threading.Condition()
        self._pending_rows = 0
        self._pending_since: float | None = None  # when the oldest commit not yet checkpointed was reported
        self._running = False  # a checkpoint in progress
        self._closed = False
        self._thread: threading.Thread | None = None
        # (busy, WAL frames, frames checkpointed) of the last checkpoint, and how many ran: for tests and benches.
        self.last_result: tuple[int, int, int] | None = None
        self.checkpoints = 0

    def committed(self, rows: int) -> None:
        """A transaction that changed `rows` rows has committed: checkpoint soon (at once if it was large)."""
        if rows <= 0:
            return
        with self._cond:
            if self._closed:
                return
            self._pending_rows += rows
            if self._pending_since is None:
                self._pending_since = self._monotonic()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rearview-wal-checkpoint", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def wait_idle(self) -> None:
        """Block until nothing reported is left to checkpoint (every commit so far copied, as far as readers let)."""
        with self._cond:
            while (self._pending_rows or self._running) and self._thread is not None and self._thread.is_alive():
                self._cond.wait()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and wait for it. Idempotent."""
        with self._cond:
            self._closed = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _due_in(self) -> float | None:
        """Seconds until the pending commits are due (0: now); None with nothing pending. Under the lock."""
        if not self._pending_rows or self._pending_since is None:
            return None
        if self._pending_rows >= self.rows:
            return 0.0
        return max(0.0, self._pending_since + self.delay_seconds - self._monotonic())

    def _next(self) -> bool:
        """Wait until a checkpoint is due (True) or the checkpointer is closed (False)."""
        with self._cond:
            while not self._closed:
                due = self._due_in()
                if due == 0.0:
                    self._pending_rows = 0
                    self._pending_since = None
                    self._running = True
                    return True
                self._cond.wait(due)
            return False

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            # Never wait for a lock: a PASSIVE checkpoint takes none that a writer holds for long, and a busy one
            # is retried after the next commit.
            conn.execute("PRAGMA busy_timeout=0")
            while self._next():
                self._checkpoint(conn)
        finally:
            conn.close()
            with self._cond:
                self._running = False
                self._pending_rows = 0
                self._cond.notify_all()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        try:
            row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.last_result = (int(row[0]), int(row[1]), int(row[2]))
        except sqlite3.Error as exc:  # the committers' safety net checkpoints instead
            logger.warning("background WAL checkpoint of %s failed: %s", self.path, exc)
        finally:
            with self._cond:
                self.checkpoints += 1
                self._running = False
                self._cond.notify_all()
