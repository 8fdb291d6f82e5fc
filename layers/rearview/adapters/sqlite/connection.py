"""The SQLite file: per-thread connections, transactions and snapshots, schema migrations, the embedder check,
and the change notices through which a store tells the search caches of this process what it committed."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rearview.adapters.sqlite.checkpointer import (
    AUTOCHECKPOINT_PAGES,
    CHECKPOINT_ROWS,
    SAFETY_NET_PAGES,
    WalCheckpointer,
)
from rearview.adapters.sqlite.schema import META_DDL, MIGRATIONS, Migration, script_statements
from rearview.domain.memory import StoredLayer
from rearview.errors import ConfigurationError, EmbeddingMismatch, StorageFull

DB_FILENAME = "rearview.db"
# What SQLite keeps beside the database (it creates them with the database file's own mode).
_COMPANIONS = ("-wal", "-shm", "-journal")
logger = logging.getLogger(__name__)


def owner_only(path: Path) -> None:
    """Make the database's directory (if this creates it: 0700) and the database file (0600, and its WAL and shared
    memory files) readable by their owner alone. Memories are personal; the umask's usual 0644 let every local user
    read them. An existing directory is left as it is (it may be shared, like /tmp), with a warning when others can
    read it."""
    directory = path.parent
    if not directory.exists():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        directory.chmod(0o700)  # mkdir's mode passes through the umask
    elif directory.stat().st_mode & 0o077 and not directory.stat().st_mode & stat.S_ISVTX:
        logger.warning("%s: other users can list this data directory; `chmod 700` it", directory)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    for file in (path, *(path.with_name(path.name + suffix) for suffix in _COMPANIONS)):
        if file.exists() and file.stat().st_mode & 0o077:
            file.chmod(0o600)


def _meta_value(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def stored_schema_version(conn: sqlite3.Connection) -> int:
    """The schema version the database was migrated to (0 before the first migration)."""
    value = _meta_value(conn, "schema_version")
    return int(value) if value is not None else 0


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


# What SQLite says when it cannot write (a full disk, a read-only file or directory, a write the OS refused).
_CANNOT_WRITE = ("database or disk is full", "disk i/o error", "readonly database", "unable to open database file")


@contextmanager
def storage_errors() -> Iterator[None]:
    """SQLite's "cannot write" errors as StorageFull (a 507 naming the data directory), every other error as is."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if any(reason in str(exc).lower() for reason in _CANNOT_WRITE):
            raise StorageFull(
                f"storage: the data directory cannot be written ({exc}); free disk space or make it writable",
                field="data_dir",
            ) from exc
        raise


class CachedRow(NamedTuple):
    """What a vector cache needs to know of one upserted memory. A named tuple: `apply` makes one per row, and a
    bulk load's change set holds ten thousand."""

    layer: StoredLayer
    ref: int
    id: str
    time: float
    active: bool
    consolidated: bool
    session_id: str | None
    event_type: str | None
    # What the kind-of filter reads: an episode's outcome status, a fact's kind.
    label: str | None
    vector: np.ndarray | None  # None keeps the cached vector


@dataclass(frozen=True)
class AppliedChanges:
    """Published by SqliteMemoryStore.apply after commit, so caches in this process can update in place.

    The upserted rows are made when first asked for (`upserted`): only a loaded cache asks, and a bulk load into a
    namespace not cached asks for none of them (making them was a seventh of a bulk load's `apply`)."""

    namespace: str
    generation_before: int
    generation_after: int
    deleted: tuple[tuple[StoredLayer, str], ...]
    make_upserted: Callable[[], tuple[CachedRow, ...]] = field(default=tuple, repr=False)
    # Per layer, how many upserted rows carry a vector (without making the rows).
    vectors_written: dict[StoredLayer, int] = field(default_factory=dict)

    @cached_property
    def upserted(self) -> tuple[CachedRow, ...]:
        return self.make_upserted()


class _Handle:
    """One thread's connection; weak-referenceable (sqlite3.Connection is not) so close() can find it."""

    __slots__ = ("conn", "depth", "__weakref__")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.depth = 0


class SqliteDatabase:
    """The SQLite file: connections, schema migrations, the embedder check, transactions and change notices.

    Thread-safety: one connection per thread (threading.local). In WAL mode readers never wait for the writer,
    so a recall does not queue behind a consolidation that holds the write lock for a while, which one shared
    connection behind a lock would force; and a transaction belongs to its thread's connection, so no lock has
    to be held across the caller's code. Writers serialise on SQLite's own lock (BEGIN IMMEDIATE and
    busy_timeout).
    A finished thread's connection closes when its thread-local handle is collected; close() closes the rest.
    A large transaction's WAL checkpoint runs on a thread of its own (`checkpointer`), not in its COMMIT.
    """

    def __init__(
        self,
        path: Path,
        *,
        embedder_name: str | None,
        dim: int | None,
        migrations: Sequence[Migration] = MIGRATIONS,
    ) -> None:
        self.path = Path(path)
        # Injectable so tests can exercise a later or a failing migration; production uses MIGRATIONS.
        self._migrations = tuple(migrations)
        # None for both: opened for the API keys alone (`rearview keys`), which must not pin the embedder.
        self.embedder_name = embedder_name or ""
        self.dim = int(dim or 0)
        self._local = threading.local()
        self._handles: weakref.WeakSet[_Handle] = weakref.WeakSet()
        self._handles_lock = threading.Lock()
        self._listeners: list[Callable[[AppliedChanges], None]] = []
        self._close_hooks: list[Callable[[], None]] = []
        self._closed = False
        self.checkpointer = WalCheckpointer(self.path)
        # Its thread holds the checkpointer, not this object: one left unclosed and collected stops the thread.
        weakref.finalize(self, self.checkpointer.close)
        owner_only(self.path)
        try:
            conn = self.connection()
            conn.execute("PRAGMA journal_mode=WAL")
            self._migrate(conn)
            if embedder_name is not None:
                self._check_embedder(conn)
        except BaseException:
            self.close()
            raise

    @classmethod
    def in_data_dir(cls, data_dir: Path, *, embedder_name: str, dim: int) -> SqliteDatabase:
        """Open `<data_dir>/rearview.db`."""
        return cls(Path(data_dir) / DB_FILENAME, embedder_name=embedder_name, dim=dim)

    # connections

    def _handle(self) -> _Handle:
        handle: _Handle | None = getattr(self._local, "handle", None)
        if handle is not None:
            return handle
        if self._closed:
            raise ConfigurationError(f"database {self.path} is closed")
        # check_same_thread=False only so that close() may close every thread's connection; each connection
        # is otherwise used by its own thread alone. isolation_level=None: transactions are explicit.
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5.0)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
        handle = _Handle(conn)
        self._local.handle = handle
        with self._handles_lock:
            self._handles.add(handle)
        return handle

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit outside `transaction()`)."""
        return self._handle().conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception; a nested call joins the outer one. A disk that is
        full or a database that cannot be written is StorageFull (507), whatever statement met it."""
        handle = self._handle()
        conn = handle.conn
        if handle.depth:
            handle.depth += 1
            try:
                yield conn
            finally:
                handle.depth -= 1
            return
        with storage_errors():
            conn.execute("BEGIN IMMEDIATE")
        handle.depth = 1
        changes = conn.total_changes
        try:
            with storage_errors():
                yield conn
        except BaseException:
            handle.depth = 0
            if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk among them)
                conn.execute("ROLLBACK")
            raise
        handle.depth = 0
        if conn.total_changes - changes < CHECKPOINT_ROWS:
            with storage_errors():
                self._commit(conn)
            return
        # A large commit: its checkpoint goes to the checkpointer's thread (the raised automatic one is a safety net).
        conn.execute(f"PRAGMA wal_autocheckpoint={SAFETY_NET_PAGES}")
        try:
            with storage_errors():
                self._commit(conn)
        finally:
            conn.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
        self.checkpointer.request()

    @staticmethod
    def _commit(conn: sqlite3.Connection) -> None:
        try:
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the same committed state."""
        handle = self._handle()
        conn = handle.conn
        if handle.depth:
            yield conn
            return
        conn.execute("BEGIN")
        handle.depth = 1
        try:
            yield conn
        finally:
            handle.depth = 0
            conn.execute("COMMIT")

    def on_close(self, hook: Callable[[], None]) -> None:
        """Call `hook` when the database is closed, before its connections go (the search index saves its graphs)."""
        self._close_hooks.append(hook)

    def close(self) -> None:
        """Close every thread's connection. The object is unusable afterwards."""
        hooks, self._close_hooks = self._close_hooks, []
        for hook in hooks:
            hook()
        self._closed = True
        self.checkpointer.close()
        with self._handles_lock:
            handles = list(self._handles)
            self._handles = weakref.WeakSet()
        for handle in handles:
            handle.conn.close()
        self._local = threading.local()

    def __enter__(self) -> SqliteDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # change notices

    def subscribe(self, listener: Callable[[AppliedChanges], None]) -> None:
        """Call `listener` after every committed `apply` made through this object."""
        self._listeners.append(listener)

    def publish(self, changes: AppliedChanges) -> None:
        for listener in list(self._listeners):
            listener(changes)

    def generation(self, namespace: str, conn: sqlite3.Connection | None = None) -> int:
        """How many change sets have been committed to the namespace (0 before the first), read on `conn` (a
        snapshot) or this thread's connection: what a cache of the namespace checks to know whether it is current."""
        row = (
            (conn or self.connection())
            .execute("SELECT generation FROM namespace_state WHERE namespace = ?", (namespace,))
            .fetchone()
        )
        return 0 if row is None else int(row[0])

    # schema

    @property
    def schema_version(self) -> int:
        return stored_schema_version(self.connection())

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute(META_DDL)
        while True:
            with self.transaction():
                # Re-read inside the write lock: another process may have migrated meanwhile.
                version = stored_schema_version(conn)
                target = len(self._migrations)
                if version > target:
                    raise ConfigurationError(
                        f"{self.path} has schema version {version}, newer than this Rearview "
                        f"({target}); upgrade Rearview or use another data directory"
                    )
                if version == target:
                    return
                migration = self._migrations[version]
                if callable(migration):
                    migration(conn)
                else:
                    for statement in script_statements(migration):
                        conn.execute(statement)
                _set_meta(conn, "schema_version", str(version + 1))

    def _check_embedder(self, conn: sqlite3.Connection) -> None:
        with self.transaction():
            stored_name = _meta_value(conn, "embedder_name")
            stored_dim = _meta_value(conn, "embedding_dim")
            if stored_name is None or stored_dim is None:
                _set_meta(conn, "embedder_name", self.embedder_name)
                _set_meta(conn, "embedding_dim", str(self.dim))
                return
        if stored_name != self.embedder_name or int(stored_dim) != self.dim:
            raise EmbeddingMismatch(
                f"{self.path} holds vectors made by embedder {stored_name!r} (dim {stored_dim}), but the "
                f"configured embedder is {self.embedder_name!r} (dim {self.dim}). Configure the original "
                "embedder, use another data directory, or re-embed its data with `rearview reindex --embedder <name>`.",
                field="embedder",
            )
