"""The HindsightLedger contract, against every ledger: SQLite (a file on disk), DynamoDB (on moto) and the in-memory
fake. Times are injected, never slept through."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from rearview.adapters.dynamodb import DynamoDBHindsightLedger
from rearview.adapters.in_memory_ledger import InMemoryHindsightLedger
from rearview.adapters.sqlite import SqliteHindsightLedger
from rearview.domain.hindsight_runs import ConsolidationRun, FeedbackCounts, LedgerTotals, Spend
from rearview.errors import InvalidInput
from rearview.ports import HindsightLedger
from support.shared_storage import dynamodb_handles, sqlite_handles

pytestmark = pytest.mark.contract

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
NS = "acme:u-42"
LEASE_SECONDS = 600.0


@dataclass
class LedgerBackend:
    """A ledger, and a way to open another ledger over the same storage (another connection, client or handle)."""

    name: str
    ledger: HindsightLedger
    another: Callable[[], HindsightLedger]


def _sqlite(tmp_path: Path) -> Iterator[LedgerBackend]:
    with sqlite_handles(tmp_path, SqliteHindsightLedger) as (another, _):
        yield LedgerBackend("sqlite", another(), another)


def _dynamodb(tmp_path: Path) -> Iterator[LedgerBackend]:
    with dynamodb_handles("rearview-ledger", DynamoDBHindsightLedger) as (ledger, another):
        yield LedgerBackend("dynamodb", ledger, another)


def _memory(tmp_path: Path) -> Iterator[LedgerBackend]:
    ledger = InMemoryHindsightLedger()
    # One process's memory is the storage: another handle on it is the same object.
    yield LedgerBackend("memory", ledger, lambda: ledger)


LEDGERS: dict[str, Callable[[Path], Iterator[LedgerBackend]]] = {
    "sqlite": _sqlite,
    "memory": _memory,
    "dynamodb": _dynamodb,
}


@pytest.fixture(params=list(LEDGERS))
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LedgerBackend]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    yield from LEDGERS[request.param](tmp_path)


@pytest.fixture
def ledger(backend: LedgerBackend) -> HindsightLedger:
    return backend.ledger


def make_run(run_id: str, started_at: datetime = T0, namespace: str = NS, **fields: Any) -> ConsolidationRun:
    fields.setdefault("reason", "manual")
    fields.setdefault("finished_at", started_at + timedelta(seconds=5))
    return ConsolidationRun(run_id=run_id, namespace=namespace, started_at=started_at, **fields)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# --- nothing ran ----------------------------------------------------------------------------------------------


def test_a_namespace_where_nothing_ran_reads_as_zeros(ledger: HindsightLedger) -> None:
    assert ledger.runs(NS) == []
    assert ledger.spend(NS, T0.date()) == Spend(day=T0.date())
    assert ledger.totals(NS) == LedgerTotals()


# --- the lease ------------------------------------------------------------------------------------------------


def test_the_lease_is_refused_to_another_owner_until_released(ledger: HindsightLedger) -> None:
    assert ledger.acquire_lease(NS, "worker-a", T0, LEASE_SECONDS)
    assert not ledger.acquire_lease(NS, "worker-b", at(1), LEASE_SECONDS)

    ledger.release_lease(NS, "worker-a")

    assert ledger.acquire_lease(NS, "worker-b", at(2), LEASE_SECONDS)


def test_releasing_a_lease_one_does_not_hold_leaves_it_held(ledger: HindsightLedger) -> None:
    assert ledger.acquire_lease(NS, "worker-a", T0, LEASE_SECONDS)

    ledger.release_lease(NS, "worker-b")
    ledger.release_lease("acme", "worker-a")

    assert not ledger.acquire_lease(NS, "worker-b", at(1), LEASE_SECONDS)


def test_releasing_when_nobody_holds_the_lease_does_nothing(ledger: HindsightLedger) -> None:
    ledger.release_lease(NS, "worker-a")

    assert ledger.acquire_lease(NS, "worker-b", T0, LEASE_SECONDS)


def test_an_expired_lease_goes_to_the_next_owner(ledger: HindsightLedger) -> None:
    assert ledger.acquire_lease(NS, "crashed", T0, LEASE_SECONDS)

    assert not ledger.acquire_lease(NS, "worker-b", at(LEASE_SECONDS - 1), LEASE_SECONDS)
    # Held up to its end, inclusive, on every backend.
    assert not ledger.acquire_lease(NS, "worker-b", at(LEASE_SECONDS), LEASE_SECONDS)
    assert ledger.acquire_lease(NS, "worker-b", at(LEASE_SECONDS + 1), LEASE_SECONDS)
    # ... and is worker-b's now: the crashed run's owner, come back, is refused.
    assert not ledger.acquire_lease(NS, "crashed", at(LEASE_SECONDS + 2), LEASE_SECONDS)


def test_the_same_owner_takes_its_lease_again_and_extends_it(ledger: HindsightLedger) -> None:
    assert ledger.acquire_lease(NS, "worker-a", T0, 60)
    assert ledger.acquire_lease(NS, "worker-a", at(30), 60)  # now held until T0 + 90 s

    assert not ledger.acquire_lease(NS, "worker-b", at(80), 60)
    assert ledger.acquire_lease(NS, "worker-b", at(91), 60)


def test_another_connection_to_the_same_storage_sees_the_lease(backend: LedgerBackend) -> None:
    other = backend.another()

    assert backend.ledger.acquire_lease(NS, "worker-a", T0, LEASE_SECONDS)
    assert not other.acquire_lease(NS, "worker-b", at(1), LEASE_SECONDS)

    backend.ledger.release_lease(NS, "worker-a")
    assert other.acquire_lease(NS, "worker-b", at(2), LEASE_SECONDS)
    assert not backend.ledger.acquire_lease(NS, "worker-a", at(3), LEASE_SECONDS)


@pytest.mark.parametrize("backend", ["sqlite", "memory"], indirect=True)
def test_workers_racing_for_the_lease_have_exactly_one_winner(backend: LedgerBackend) -> None:
    """Each worker on its own connection (SQLite: its own SqliteDatabase on the file), all released at once.
    (DynamoDB's conditional put is atomic on the service; moto is not a concurrency oracle.)"""
    workers = 8
    ledgers = [backend.another() for _ in range(workers)]
    start = threading.Barrier(workers)
    won: list[bool] = [False] * workers

    def race(i: int) -> None:
        start.wait()
        won[i] = ledgers[i].acquire_lease(NS, f"worker-{i}", T0, LEASE_SECONDS)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sum(won) == 1
    winner = won.index(True)
    assert not backend.ledger.acquire_lease(NS, "late", at(1), LEASE_SECONDS)
    backend.ledger.release_lease(NS, f"worker-{winner}")
    assert backend.ledger.acquire_lease(NS, "late", at(2), LEASE_SECONDS)


# --- runs, totals and spend -----------------------------------------------------------------------------------


def test_a_recorded_run_comes_back_whole_and_adds_to_totals_and_spend(ledger: HindsightLedger) -> None:
    first = make_run(
        "run-1",
        reason="count",
        episodes_considered=40,
        new_episodes=12,
        clusters=3,
        clusters_deferred=1,
        induced={"preference": 2, "fact": 1},
        confirmed=4,
        superseded=1,
        tokens=1200,
        inducer="openai",
        fallback="rules",
    )
    second = make_run("run-2", at(3600), reason="schedule", clusters=1, induced={"lesson": 1, "fact": 0}, tokens=300)

    ledger.record_run(first)
    ledger.record_run(second)

    assert ledger.runs(NS) == [second, first]
    assert ledger.totals(NS) == LedgerTotals(
        runs=2,
        runs_failed=0,
        induced={"preference": 2, "fact": 1, "lesson": 1},
        tokens=1500,
        last_run_at=at(3600),
        last_run_reason="schedule",
    )
    assert ledger.spend(NS, T0.date()) == Spend(day=T0.date(), runs=2, clusters=4, tokens=1500)


def test_times_come_back_in_utc(ledger: HindsightLedger) -> None:
    paris = timezone(timedelta(hours=1))
    ledger.record_run(make_run("run-1", datetime(2026, 3, 1, 10, 30, tzinfo=paris)))

    (run,) = ledger.runs(NS)
    totals = ledger.totals(NS)

    assert run.started_at == T0 and run.started_at.utcoffset() == timedelta(0)
    assert totals.last_run_at == T0
    assert totals.last_run_at is not None and totals.last_run_at.utcoffset() == timedelta(0)


def test_spend_is_counted_on_the_utc_day_the_run_started(ledger: HindsightLedger) -> None:
    day = date(2026, 3, 1)
    late = datetime(2026, 3, 1, 23, 59, 59, 999999, tzinfo=UTC)
    # 01:00 in UTC+2 on the 2nd is 23:00 UTC on the 1st.
    east = datetime(2026, 3, 2, 1, 0, tzinfo=timezone(timedelta(hours=2)))
    midnight = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
    # 20:00 in UTC-5 on the 1st is 01:00 UTC on the 2nd.
    west = datetime(2026, 3, 1, 20, 0, tzinfo=timezone(timedelta(hours=-5)))

    ledger.record_run(make_run("late", late, clusters=1, tokens=10))
    ledger.record_run(make_run("east", east, clusters=2, tokens=20))
    ledger.record_run(make_run("midnight", midnight, clusters=4, tokens=40))
    ledger.record_run(make_run("west", west, clusters=8, tokens=80))

    assert ledger.spend(NS, day) == Spend(day=day, runs=2, clusters=3, tokens=30)
    assert ledger.spend(NS, date(2026, 3, 2)) == Spend(day=date(2026, 3, 2), runs=2, clusters=12, tokens=120)
    assert ledger.spend(NS, date(2026, 2, 28)) == Spend(day=date(2026, 2, 28))


def test_a_failed_run_is_kept_and_counted_as_failed(ledger: HindsightLedger) -> None:
    ledger.record_run(make_run("ok", T0, tokens=100, clusters=2, induced={"fact": 1}))
    failed = make_run("boom", at(60), reason="failure_streak", tokens=40, clusters=1, error="model timed out")

    ledger.record_run(failed)

    assert ledger.runs(NS)[0] == failed
    totals = ledger.totals(NS)
    assert (totals.runs, totals.runs_failed, totals.tokens) == (2, 1, 140)
    assert totals.induced == {"fact": 1}
    assert (totals.last_run_at, totals.last_run_reason) == (at(60), "failure_streak")
    assert ledger.spend(NS, T0.date()) == Spend(day=T0.date(), runs=2, clusters=3, tokens=140)


def test_a_run_recorded_twice_is_counted_once(ledger: HindsightLedger) -> None:
    run = make_run("run-1", tokens=100, clusters=2, induced={"preference": 1})

    ledger.record_run(run)
    ledger.record_run(run)

    assert ledger.runs(NS) == [run]
    assert ledger.totals(NS).runs == 1 and ledger.totals(NS).tokens == 100
    assert ledger.spend(NS, T0.date()).runs == 1


def test_runs_are_the_latest_first_up_to_the_limit(ledger: HindsightLedger) -> None:
    starts = {"r3": at(300), "r1": at(100), "r5": at(500), "r2": at(200), "r4": at(400)}
    for run_id, started in starts.items():
        ledger.record_run(make_run(run_id, started))

    assert [r.run_id for r in ledger.runs(NS)] == ["r5", "r4", "r3", "r2", "r1"]
    assert [r.run_id for r in ledger.runs(NS, limit=2)] == ["r5", "r4"]
    assert ledger.runs(NS, limit=0) == []


def test_runs_that_started_at_the_same_instant_are_ordered_by_id(ledger: HindsightLedger) -> None:
    for run_id in ("b", "c", "a"):
        ledger.record_run(make_run(run_id, T0))

    assert [r.run_id for r in ledger.runs(NS)] == ["c", "b", "a"]


def test_many_runs_are_all_listed(ledger: HindsightLedger) -> None:
    for i in range(30):
        ledger.record_run(make_run(f"r{i:02d}", at(i)))

    assert [r.run_id for r in ledger.runs(NS, limit=25)] == [f"r{i:02d}" for i in range(29, 4, -1)]
    assert ledger.totals(NS).runs == 30


# --- feedback -------------------------------------------------------------------------------------------------


def test_feedback_is_counted_by_kind_and_verdict(ledger: HindsightLedger) -> None:
    ledger.record_feedback(NS, "preference", "useful", True)
    ledger.record_feedback(NS, "preference", "useful", False)
    ledger.record_feedback(NS, "preference", "wrong", False)
    ledger.record_feedback(NS, "fact", "not_useful", False)
    ledger.record_feedback(NS, "episode", "useful", True)

    assert ledger.totals(NS).feedback == {
        "preference": FeedbackCounts(useful=2, wrong=1, adopted=1),
        "fact": FeedbackCounts(not_useful=1),
        "episode": FeedbackCounts(useful=1, adopted=1),
    }


def test_feedback_and_runs_add_to_the_same_totals(ledger: HindsightLedger) -> None:
    ledger.record_feedback(NS, "lesson", "useful", True)
    ledger.record_run(make_run("run-1", induced={"lesson": 1}))
    ledger.record_feedback(NS, "lesson", "wrong", False)

    totals = ledger.totals(NS)
    assert totals.runs == 1 and totals.induced == {"lesson": 1}
    assert totals.feedback == {"lesson": FeedbackCounts(useful=1, wrong=1, adopted=1)}


def test_an_unknown_verdict_is_refused_and_counts_nothing(ledger: HindsightLedger) -> None:
    with pytest.raises(InvalidInput):
        ledger.record_feedback(NS, "fact", "great", True)  # type: ignore[arg-type]

    assert ledger.totals(NS) == LedgerTotals()


# --- namespace isolation --------------------------------------------------------------------------------------

# (namespace, another): a parent and its child, and two names where one is a string prefix of the other.
NAMESPACE_PAIRS = [("acme", "acme:u-42"), ("acme:u-42", "acme"), ("acme", "acme2"), ("acme2", "acme")]


@pytest.mark.parametrize(("namespace", "other"), NAMESPACE_PAIRS)
def test_a_namespace_never_sees_another_namespaces_ledger(ledger: HindsightLedger, namespace: str, other: str) -> None:
    ledger.record_run(make_run("run-1", namespace=other, tokens=100, clusters=2, induced={"fact": 1}))
    ledger.record_run(make_run("run-2", namespace=other, error="boom"))
    ledger.record_feedback(other, "fact", "useful", True)
    assert ledger.acquire_lease(other, "worker-a", T0, LEASE_SECONDS)

    assert ledger.runs(namespace) == []
    assert ledger.spend(namespace, T0.date()) == Spend(day=T0.date())
    assert ledger.totals(namespace) == LedgerTotals()
    assert ledger.acquire_lease(namespace, "worker-b", at(1), LEASE_SECONDS)
    # The other namespace's own view is intact, and its lease still its own.
    assert [r.run_id for r in ledger.runs(other)] == ["run-2", "run-1"]
    assert ledger.totals(other).runs == 2
    assert not ledger.acquire_lease(other, "worker-b", at(2), LEASE_SECONDS)


def test_the_same_run_id_in_two_namespaces_is_two_runs(ledger: HindsightLedger) -> None:
    ledger.record_run(make_run("run-1", namespace="acme", tokens=1))
    ledger.record_run(make_run("run-1", namespace="zeta", tokens=2))

    assert [r.namespace for r in ledger.runs("acme")] == ["acme"]
    assert [r.namespace for r in ledger.runs("zeta")] == ["zeta"]
    assert (ledger.totals("acme").tokens, ledger.totals("zeta").tokens) == (1, 2)


# --- erasing a namespace --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("namespace", "other"), NAMESPACE_PAIRS)
def test_erasing_a_namespace_removes_its_ledger_and_no_other(
    ledger: HindsightLedger, namespace: str, other: str
) -> None:
    for each in (namespace, other):
        ledger.record_run(make_run("run-1", namespace=each, tokens=10, clusters=1, induced={"fact": 1}))
        ledger.record_feedback(each, "fact", "useful", True)
        assert ledger.acquire_lease(each, "worker-a", T0, LEASE_SECONDS)

    assert ledger.erase_namespace(namespace) >= 3

    assert ledger.runs(namespace) == []
    assert ledger.totals(namespace) == LedgerTotals()
    assert ledger.spend(namespace, T0.date()) == Spend(day=T0.date())
    assert ledger.acquire_lease(namespace, "worker-b", at(1), LEASE_SECONDS)
    assert [r.run_id for r in ledger.runs(other)] == ["run-1"]
    assert ledger.totals(other).feedback["fact"].useful == 1
    assert not ledger.acquire_lease(other, "worker-b", at(1), LEASE_SECONDS)
    assert ledger.erase_namespace("nobody") == 0
