"""Handles on one storage, for the contract suites of adapters that several processes or Lambda containers share
(the hindsight ledger, the request quota): each handle opened on the storage as another process would open it
(another SQLite connection, another boto3 client). A suite wraps its adapter around these."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TypeVar
from unittest.mock import patch

import boto3
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from rearview.adapters.dynamodb import create_table
from rearview.adapters.sqlite import SqliteDatabase

T = TypeVar("T")

# moto's item writes, each of which DynamoDB applies atomically with its condition.
_ITEM_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")


@contextmanager
def atomic_item_writes() -> Iterator[None]:
    """DynamoDB evaluates a write's condition and applies the write atomically; moto does both in Python without a
    lock (read, check, write), so two racing conditional writes can both pass one condition, which DynamoDB never
    lets happen (seen in the quota's race test: 26 admitted of a limit of 25). One lock around each of moto's item
    writes gives back DynamoDB's guarantee, so that a race test measures the adapter, not moto."""
    lock = threading.RLock()

    def locked(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def write(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
            with lock:
                return original(self, *args, **kwargs)

        return write

    with ExitStack() as stack:
        for name in _ITEM_WRITES:
            stack.enter_context(patch.object(DynamoDBBackend, name, locked(getattr(DynamoDBBackend, name))))
        yield


@contextmanager
def sqlite_handles(tmp_path: Path, adapter: Callable[[SqliteDatabase], T]) -> Iterator[tuple[Callable[[], T], Path]]:
    """A way to open the adapter over another connection to one SQLite file, and that file; closes them all."""
    path = tmp_path / "data" / "rearview.db"
    opened: list[SqliteDatabase] = []

    def another() -> T:
        db = SqliteDatabase(path, embedder_name=None, dim=None)
        opened.append(db)
        return adapter(db)

    yield another, path
    for db in opened:
        db.close()


@contextmanager
def dynamodb_handles(
    table_name: str, adapter: Callable[..., T], region: str = "us-east-1"
) -> Iterator[tuple[T, Callable[[], T]]]:
    """On moto, the table made and the adapter over the client that made it, and a way to open the adapter over
    another client: `adapter(table_name, client=...)`."""
    with mock_aws(), atomic_item_writes():
        client: Any = boto3.client("dynamodb", region_name=region)
        create_table(client, table_name)

        def another() -> T:
            return adapter(table_name, client=boto3.client("dynamodb", region_name=region))

        yield adapter(table_name, client=client), another
