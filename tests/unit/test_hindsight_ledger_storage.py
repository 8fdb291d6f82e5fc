"""What the ledger contract cannot see of the local ledgers: SQLite's lease held across processes on one file, its
tables and the index the unconsolidated count reads, and retention as runs are recorded."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.in_memory_ledger import InMemoryHindsightLedger
from rearview.adapters.sqlite import SqliteDatabase, SqliteHindsightLedger, SqliteMemoryStore
from rearview.clock import ManualClock
from rearview.domain.changes import ChangeSet
from rearview.domain.hindsight_runs import RUN_RETENTION, SPEND_RETENTION, ConsolidationRun, Spend
from rearview.domain.memory import Episode
from rearview.ports import HindsightLedger

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
NS = "acme:u-42"
LAYERS = Path(__file__).resolve().parents[2] / "layers"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SqliteDatabase]:
    database = SqliteDatabase(tmp_path / "rearview.db", embedder_name=None, dim=None)
    yield database
    database.close()


def _run(run_id: str, started_at: datetime, **fields: object) -> ConsolidationRun:
    return ConsolidationRun(
        run_id=run_id, namespace=NS, reason="manual", started_at=started_at, finished_at=started_at, **fields
    )


# --- SQLite ---------------------------------------------------------------------------------------------------


def test_migration_7_creates_the_ledger_tables(db: SqliteDatabase) -> None:
    tables = {row[0] for row in db.connection().execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    assert {
        "hindsight_leases",
        "hindsight_runs",
        "hindsight_spend",
        "hindsight_totals",
        "hindsight_induced",
        "hindsight_feedback",
    } <= tables


_OTHER_PROCESS = """
import sys
from datetime import datetime
from pathlib import Path
from rearview.adapters.sqlite import SqliteDatabase, SqliteHindsightLedger

db = SqliteDatabase(Path(sys.argv[1]), embedder_name=None, dim=None)
ledger = SqliteHindsightLedger(db)
taken = ledger.acquire_lease(sys.argv[2], sys.argv[3], datetime.fromisoformat(sys.argv[4]), 600.0)
db.close()
print("taken" if taken else "refused")
"""


def _acquire_in_another_process(path: Path, owner: str, now: datetime) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LAYERS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, str(path), NS, owner, now.isoformat()],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.slow  # other processes
def test_the_lease_holds_across_processes_on_one_file(db: SqliteDatabase) -> None:
    ledger = SqliteHindsightLedger(db)

    assert _acquire_in_another_process(db.path, "process-b", T0) == "taken"
    assert not ledger.acquire_lease(NS, "process-a", T0 + timedelta(seconds=1), 600.0)
    assert _acquire_in_another_process(db.path, "process-c", T0 + timedelta(seconds=2)) == "refused"
    assert ledger.acquire_lease(NS, "process-a", T0 + timedelta(seconds=601), 600.0)
    assert _acquire_in_another_process(db.path, "process-b", T0 + timedelta(seconds=602)) == "refused"


def test_the_unconsolidated_count_reads_the_partial_index(db: SqliteDatabase) -> None:
    plan = " ".join(
        str(row[-1])
        for row in db.connection().execute(
            "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM episodes WHERE namespace = ? AND consolidated = 0", ("acme",)
        )
    )

    assert "episodes_unconsolidated" in plan


def test_the_unconsolidated_count_follows_writes_on_sqlite(tmp_path: Path) -> None:
    embedder = HashingEmbedder(dim=16)
    with SqliteDatabase(tmp_path / "store.db", embedder_name=embedder.name, dim=embedder.dim) as database:
        store = SqliteMemoryStore(database, clock=ManualClock(T0))
        episodes = [
            Episode(id=f"e{i}", namespace=NS, content=f"note {i}", occurred_at=T0, created_at=T0, consolidated=i == 0)
            for i in range(4)
        ]
        store.apply(NS, ChangeSet(upserts=[(e, None) for e in episodes]))

        assert store.unconsolidated_count(NS) == 3
        assert store.unconsolidated_count("acme") == 0


# --- retention (SQLite and the in-memory ledger) ---------------------------------------------------------------


@pytest.fixture(params=["sqlite", "memory"])
def local_ledger(request: pytest.FixtureRequest, db: SqliteDatabase) -> HindsightLedger:
    return SqliteHindsightLedger(db) if request.param == "sqlite" else InMemoryHindsightLedger()


def test_runs_older_than_the_retention_go_as_new_runs_are_recorded(local_ledger: HindsightLedger) -> None:
    local_ledger.record_run(_run("old", T0))
    local_ledger.record_run(_run("kept", T0 + timedelta(days=1)))

    local_ledger.record_run(_run("new", T0 + RUN_RETENTION + timedelta(seconds=1)))

    assert [r.run_id for r in local_ledger.runs(NS)] == ["new", "kept"]
    # The totals are running totals: they keep counting what went.
    assert local_ledger.totals(NS).runs == 3


def test_spend_older_than_its_retention_goes_as_new_runs_are_recorded(local_ledger: HindsightLedger) -> None:
    first, kept = T0.date(), T0.date() + timedelta(days=1)
    local_ledger.record_run(_run("first", T0, tokens=10))
    local_ledger.record_run(_run("kept", T0 + timedelta(days=1), tokens=20))

    local_ledger.record_run(_run("today", T0 + SPEND_RETENTION + timedelta(days=1), tokens=30))

    assert local_ledger.spend(NS, first) == Spend(day=first)
    assert local_ledger.spend(NS, kept) == Spend(day=kept, runs=1, tokens=20)
