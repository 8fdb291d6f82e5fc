"""The request-quota backends of the contract suite (`tests/contract/test_request_quota_contract.py`): each a quota,
a way to open another over the same storage (another connection, client or handle, as another process or Lambda
container would), and how many requests a window counted. A backend joins the suite by one factory in QUOTAS."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rearview.adapters.dynamodb import DynamoDBRequestQuota
from rearview.adapters.in_memory_quota import InMemoryRequestQuota
from rearview.adapters.sqlite import SqliteRequestQuota
from rearview.domain.quota import QuotaWindow
from rearview.ports import RequestQuota
from support.shared_storage import dynamodb_handles, sqlite_handles


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
    with sqlite_handles(tmp_path, SqliteRequestQuota) as (another, path):
        yield QuotaBackend("sqlite", another(), another, path)


def _dynamodb(tmp_path: Path) -> Iterator[QuotaBackend]:
    with dynamodb_handles("rearview-quota", DynamoDBRequestQuota, region="eu-west-1") as (quota, another):
        yield QuotaBackend("dynamodb", quota, another)


def _memory(tmp_path: Path) -> Iterator[QuotaBackend]:
    quota = InMemoryRequestQuota()
    # One process's memory is the storage: another handle on it is the same object.
    yield QuotaBackend("memory", quota, lambda: quota)


QUOTAS: dict[str, Callable[[Path], Iterator[QuotaBackend]]] = {
    "sqlite": _sqlite,
    "memory": _memory,
    "dynamodb": _dynamodb,
}
