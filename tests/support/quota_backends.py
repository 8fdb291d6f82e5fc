"""The request-quota backends of the contract suite (`tests/contract/test_request_quota_contract.py`): each a quota,
a way to open another over the same storage (another connection, client or handle, as another process or Lambda
container would), and how many requests a window counted. A backend joins the suite by one factory in QUOTAS."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import boto3
from moto import mock_aws

from rearview.adapters.dynamodb import DynamoDBRequestQuota, create_table
from rearview.adapters.in_memory_quota import InMemoryRequestQuota
from rearview.adapters.sqlite import SqliteDatabase, SqliteRequestQuota
from rearview.domain.quota import QuotaWindow
from rearview.ports import RequestQuota


class CountingQuota(RequestQuota, Protocol):
    def counted(self, key_id: str, window: QuotaWindow) -> int: ...


@dataclass
class QuotaBackend:
    name: str
    quota: CountingQuota
    another: Callable[[], CountingQuota]
    # The SQLite file, for tests that open it from other processes (None elsewhere).
    path: Path | None = None


def _sqlite(tmp_path: Path) -> Iterator[QuotaBackend]:
    path = tmp_path / "data" / "rearview.db"
    opened: list[SqliteDatabase] = []

    def open_quota() -> SqliteRequestQuota:
        db = SqliteDatabase(path, embedder_name=None, dim=None)
        opened.append(db)
        return SqliteRequestQuota(db)

    yield QuotaBackend("sqlite", open_quota(), open_quota, path)
    for db in opened:
        db.close()


def _dynamodb(tmp_path: Path) -> Iterator[QuotaBackend]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        create_table(client, "rearview-quota")

        def open_quota() -> DynamoDBRequestQuota:
            return DynamoDBRequestQuota("rearview-quota", client=boto3.client("dynamodb", region_name="eu-west-1"))

        yield QuotaBackend("dynamodb", DynamoDBRequestQuota("rearview-quota", client=client), open_quota)


def _memory(tmp_path: Path) -> Iterator[QuotaBackend]:
    quota = InMemoryRequestQuota()
    # One process's memory is the storage: another handle on it is the same object.
    yield QuotaBackend("memory", quota, lambda: quota)


QUOTAS: dict[str, Callable[[Path], Iterator[QuotaBackend]]] = {
    "sqlite": _sqlite,
    "memory": _memory,
    "dynamodb": _dynamodb,
}
