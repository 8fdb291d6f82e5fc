"""`build` gives the services a ledger on each backend's own storage, or the one it is passed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from rearview.adapters.in_memory_ledger import InMemoryHindsightLedger
from rearview.adapters.sqlite import SqliteHindsightLedger
from rearview.bootstrap import build, build_dynamodb_ledger
from rearview.clock import ManualClock
from rearview.domain.hindsight_runs import ConsolidationRun
from rearview.settings import AwsSettings, Settings

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
NS = "acme:u-42"


def _run(run_id: str, started_at: datetime) -> ConsolidationRun:
    return ConsolidationRun(run_id=run_id, namespace=NS, reason="manual", started_at=started_at, finished_at=started_at)


def test_the_sqlite_backend_keeps_its_ledger_in_the_data_directory(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing")
    services = build(settings, clock=ManualClock(T0))
    try:
        assert isinstance(services.ledger, SqliteHindsightLedger)
        services.ledger.record_run(_run("run-1", T0))
    finally:
        services.close()

    again = build(settings, clock=ManualClock(T0))
    try:
        assert [r.run_id for r in again.ledger.runs(NS)] == ["run-1"]
    finally:
        again.close()


def test_the_memory_backend_has_an_in_memory_ledger(tmp_path: Path) -> None:
    services = build(Settings(backend="memory", data_dir=tmp_path / "unused", embedder="hashing"))
    try:
        assert isinstance(services.ledger, InMemoryHindsightLedger)
    finally:
        services.close()


def test_a_ledger_passed_to_build_is_the_one_used(tmp_path: Path) -> None:
    ledger = InMemoryHindsightLedger()
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), ledger=ledger)
    try:
        assert services.ledger is ledger
    finally:
        services.close()


def test_the_aws_backend_ledger_is_on_the_configured_table() -> None:
    ledger = build_dynamodb_ledger(Settings(aws=AwsSettings(region="eu-west-1", table_name="memories")))

    assert ledger.table_name == "memories"  # type: ignore[attr-defined]
