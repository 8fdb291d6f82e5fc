"""WAL checkpoints of large commits on a thread of their own: the committing thread no longer copies them into the
database file.

SQLite's automatic checkpoint runs inside COMMIT, on the thread that committed, once the WAL holds
`wal_autocheckpoint` pages (1,000 by default): a bulk load's change set of 10,000 episodes (~5,600 pages) paid
about as much for that copy as for its own FTS5 indexing (bench/RESULTS.md, "Bulk load"). A commit of
`CHECKPOINT_ROWS` rows or more (`SqliteDatabase.transaction`) therefore commits with the automatic checkpoint raised
to `SAFETY_NET_PAGES`, and asks the database's `WalCheckpointer` to copy it: a thread with a connection of its own
that runs a PASSIVE checkpoint, beside whatever the committing thread does next (a bulk load prepares its next
change set). The WAL starts over at the next write once that checkpoint has copied everything, as it did when the
committing thread checkpointed. Smaller commits keep SQLite's default (a write path's commit on a busy 2-core
machine is better off copying on its own thread than adding the copy to the core the graph keeper uses).

A PASSIVE checkpoint never blocks a writer or a reader: it copies what no reader still needs, and SQLite's locking
keeps it consistent with the writer appending meanwhile. Crash safety is SQLite's: until a page is copied and the
database file synced, the WAL holds it, and recovery replays the WAL; which thread runs the checkpoint changes
nothing there. Durability is unchanged (synchronous=NORMAL in WAL mode: a commit reaches the disk at the next
checkpoint's sync of the WAL, which comes as soon as before). If this thread falls behind (a busy machine, a reader
holding an old snapshot), the WAL grows until a large commit's safety net, or the next small commit's default,
runs the checkpoint on the committing thread, as before.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

# SQLite's default automatic checkpoint (pages of WAL), which every connection keeps for its small commits.
AUTOCHECKPOINT_PAGES = 1_000
# A commit of at least this many rows leaves its checkpoint to the checkpointer's thread.
CHECKPOINT_ROWS = 1_000
# The automatic checkpoint during such a commit: a safety net that bounds the WAL when the thread falls behind, ten
# times the default (40 MB of WAL at 4 KB pages), above a bulk load's change set of 10,000 episodes (~5,600 pages).
SAFETY_NET_PAGES = 10_000


class WalCheckpointer:
    """A thread that runs a PASSIVE checkpoint of the database at `path` when asked (`request`), started by the first
    request and joined by `close`; requests made while it runs coalesce into one more checkpoint."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._cond = threading.Condition()
        self._requested = False
        self._running = False  # a checkpoint in progress
        self._closed = False
        self._thread: threading.Thread | None = None
        # (busy, WAL frames, frames checkpointed) of the last checkpoint, and how many ran: for tests and benches.
        self.last_result: tuple[int, int, int] | None = None
        self.checkpoints = 0

    def request(self) -> None:
        """Checkpoint soon: a large transaction has committed."""
        with self._cond:
            if self._closed:
                return
            self._requested = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rearview-wal-checkpoint", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def wait_idle(self) -> None:
        """Block until every checkpoint requested so far has run (as far as readers let it copy)."""
        with self._cond:
            while (self._requested or self._running) and self._thread is not None and self._thread.is_alive():
                self._cond.wait()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and wait for it. Idempotent."""
        with self._cond:
            self._closed = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _next(self) -> bool:
        """Wait until a checkpoint is requested (True) or the checkpointer is closed (False)."""
        with self._cond:
            while not self._closed:
                if self._requested:
                    self._requested = False
                    self._running = True
                    return True
                self._cond.wait()
            return False

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            # Never wait for a lock: a PASSIVE checkpoint takes none that a writer holds for long, and one that finds
            # another checkpoint running reports it busy and leaves the rest to the next.
            conn.execute("PRAGMA busy_timeout=0")
            while self._next():
                self._checkpoint(conn)
        finally:
            conn.close()
            with self._cond:
                self._running = False
                self._requested = False
                self._cond.notify_all()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        try:
            row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.last_result = (int(row[0]), int(row[1]), int(row[2]))
        except sqlite3.Error as exc:  # the committing connections' automatic checkpoint copies instead
            logger.warning("background WAL checkpoint of %s failed: %s", self.path, exc)
        finally:
            with self._cond:
                self.checkpoints += 1
                self._running = False
                self._cond.notify_all()
