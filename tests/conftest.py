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
# The fixtures through which the contract suites take each backend (storage, key store, inducer, reranker).
CONTRACT_FIXTURES = ("backend", "keys", "inducer", "reranker")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backends",
        default=None,
        help="run the contract suites against these backends only, comma-separated, as their fixtures name them "
        "(memory, sqlite, dynamodb, opensearch, opensearch-serverless; rules, openai, bedrock; fake, onnx); "
        "default: every backend. `make test-fast` runs the fakes and SQLite.",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen = config.getoption("--backends")
    if not chosen:
        return
    wanted = {name.strip() for name in chosen.split(",") if name.strip()}
    offered: set[str] = set()
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        backends = _contract_backends(item)
        offered.update(backends)
        (kept if set(backends) <= wanted else dropped).append(item)
    unknown = wanted - offered
    if offered and unknown:
        raise pytest.UsageError(f"--backends: no contract test runs on {sorted(unknown)}; known: {sorted(offered)}")
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _contract_backends(item: pytest.Item) -> list[str]:
    """The backends a contract test item runs on (none for other tests)."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or item.get_closest_marker("contract") is None:
        return []
    return [str(callspec.params[name]) for name in CONTRACT_FIXTURES if name in callspec.params]


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
