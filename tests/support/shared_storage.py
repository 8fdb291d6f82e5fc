"""Handles on one storage, for the contract suites of adapters that several processes or Lambda containers share
(the hindsight ledger, the request quota): each handle opened on the storage as another process would open it
(another SQLite connection, another boto3 client). A suite wraps its adapter around these."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import boto3
from moto import mock_aws

from rearview.adapters.dynamodb import create_table
from rearview.adapters.sqlite import SqliteDatabase

T = TypeVar("T")


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
    with mock_aws():
        client: Any = boto3.client("dynamodb", region_name=region)
        create_table(client, table_name)

        def another() -> T:
            return adapter(table_name, client=boto3.client("dynamodb", region_name=region))

        yield adapter(table_name, client=client), another
