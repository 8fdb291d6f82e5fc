"""MemoryStore contract, recall counters by day (the stats page's chart): each UTC day counts its recalls and those
that found something, read back oldest first from a day on, kept apart per namespace and gone with an erase; on
every backend."""

from __future__ import annotations

from datetime import timedelta, timezone

import pytest

from rearview.domain.stats import RecallDay
from support.contract_backends import T0, Backend
from support.stats import usage_stats

pytestmark = pytest.mark.contract

DAY = timedelta(days=1)


def test_recalls_are_counted_per_utc_day(backend: Backend) -> None:
    store = backend.store
    store.record_recall("acme", True, T0 - 2 * DAY)
    store.record_recall("acme", False, T0 - 2 * DAY)
    store.record_recall("acme", True, T0)
    # 23:30 at UTC-2 is 01:30 the next day in UTC: a day is a UTC day.
    late = T0.replace(hour=23, minute=30, tzinfo=timezone(timedelta(hours=-2)))
    store.record_recall("acme", False, late)

    assert store.recall_days("acme", (T0 - 5 * DAY).date()) == [
        RecallDay(day=(T0 - 2 * DAY).date(), recalls=2, hits=1),
        RecallDay(day=T0.date(), recalls=1, hits=1),
        RecallDay(day=(T0 + DAY).date(), recalls=1, hits=0),
    ]
    # From a day on: the days before it are left out; the totals count every recall.
    assert [d.day for d in store.recall_days("acme", T0.date())] == [T0.date(), (T0 + DAY).date()]
    assert usage_stats(store, "acme", T0).recall_count == 4
    assert store.recall_days("nobody", (T0 - 5 * DAY).date()) == []


@pytest.mark.parametrize(("reader", "other"), [("acme", "acme:u-42"), ("acme:u-42", "acme"), ("acme", "acme2")])
def test_a_namespaces_recall_days_are_its_own(backend: Backend, reader: str, other: str) -> None:
    backend.store.record_recall(other, True, T0)
    backend.store.record_recall(reader, False, T0)

    assert backend.store.recall_days(reader, T0.date()) == [RecallDay(day=T0.date(), recalls=1, hits=0)]
    assert backend.store.recall_days(other, T0.date()) == [RecallDay(day=T0.date(), recalls=1, hits=1)]


def test_erasing_a_namespace_erases_its_recall_days(backend: Backend) -> None:
    backend.store.record_recall("acme", True, T0)
    backend.store.record_recall("acme2", True, T0)

    backend.store.erase_namespace("acme")

    assert backend.store.recall_days("acme", T0.date()) == []
    assert backend.store.recall_days("acme2", T0.date()) == [RecallDay(day=T0.date(), recalls=1, hits=1)]


def test_settling_the_access_counts_leaves_the_recall_days_as_they_read(backend: Backend) -> None:
    """A store that counts recalls apart from the days (DynamoDB's access windows) folds them into the days when it
    settles; what `recall_days` reads is the same before the fold, after it, and after more recalls."""
    store = backend.store
    store.record_recall("acme", True, T0 - DAY)
    store.record_recall("acme", False, T0)
    before = store.recall_days("acme", (T0 - 5 * DAY).date())

    store.settle_access("acme", T0 + timedelta(hours=2))
    assert store.recall_days("acme", (T0 - 5 * DAY).date()) == before

    store.record_recall("acme", True, T0)
    assert store.recall_days("acme", (T0 - 5 * DAY).date()) == [
        RecallDay(day=(T0 - DAY).date(), recalls=1, hits=1),
        RecallDay(day=T0.date(), recalls=2, hits=1),
    ]
