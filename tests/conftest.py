"""Shared fixtures: the real service stack on a temporary data directory, with an injected clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.settings import Settings

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)  # a Tuesday


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", embedder="hashing")


@pytest.fixture
def services(settings: Settings, clock: ManualClock) -> Iterator[Services]:
    svc = build(settings, clock=clock)
    yield svc
    svc.close()
