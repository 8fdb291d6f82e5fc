"""Shared fixtures: the real service stack on a temporary data directory, with an injected clock."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rearview.clock import ManualClock
from rearview.collector import paused
from support import opensearch_node
from support.opensearch_node import OpenSearchCluster

if TYPE_CHECKING:
    from rearview.bootstrap import Services
    from rearview.settings import Settings

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)  # a Tuesday
# The suite builds services thousands of times in one process, and some tests collect what they built unclosed:
# nothing is frozen here (tests/unit/test_collector.py checks the freeze in a process of its own).
os.environ.setdefault("REARVIEW_FREEZE_START_UP_HEAP", "false")
# The fixtures through which the contract suites take each backend (storage, key store, inducer, reranker).
CONTRACT_FIXTURES = ("backend", "filter_backend", "keys", "inducer", "reranker")
# Where the run's processes find what they share (the OpenSearch node its workers use): set by the controller.
SHARED_RUN_DIR = "REARVIEW_TEST_RUN_DIR"
_OWN_RUN_DIR = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backends",
        default=None,
        help="run the contract suites against these backends only, comma-separated, as their fixtures name them "
        "(memory, sqlite, dynamodb, opensearch, opensearch-serverless; rules, openai, bedrock; fake, onnx); "
        "default: every backend. `make test-fast` runs the fakes and SQLite.",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _keep_chosen_backends(config, items)
    # The files holding a test marked slow first, each file's tests in their own order (a stable sort): `make test`
    # hands whole files to its workers in this order (`--no-loadscope-reorder`), so the long files start early and
    # the many short ones even the workers out at the end. xdist's own order, the files with the most tests first,
    # left the longest files (one or two tests each) to start last, on an otherwise finished run.
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)


def _keep_chosen_backends(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--backends`: deselect the contract tests on any other backend."""
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


def pytest_configure(config: pytest.Config) -> None:
    if _runs_tests(config):
        _install_test_speedups()
    if not hasattr(config, "workerinput") and SHARED_RUN_DIR not in os.environ:
        # The run's controller: a directory its xdist workers share (they inherit the environment). A pytest run
        # started inside a test inherits it too, and leaves it to the run that made it.
        config.stash[_OWN_RUN_DIR] = os.environ[SHARED_RUN_DIR] = tempfile.mkdtemp(prefix="rearview-test-run-")


def _runs_tests(config: pytest.Config) -> bool:
    """False in the controller of an xdist run, which hands the tests to its workers and runs none: it skips the
    imports and patches below (about 1.4 s before any worker starts)."""
    return hasattr(config, "workerinput") or config.getoption("dist", "no") == "no"


def _install_test_speedups() -> None:
    from support import moto_speedups, sqlite_schema_template

    # moto without its quadratic projections, transactions and retention checks, and with its DynamoDB responses
    # written without its alias search (same answers): support/moto_speedups.
    moto_speedups.install()
    # A new SQLite database takes today's schema as a copy of one migrated once per process (the same pages):
    # support/sqlite_schema_template.
    sqlite_schema_template.install()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """Collection runs with the cyclic collector paused, and what it leaves alive (modules, classes, pydantic's
    schemas, parameters) is frozen at its end: the full collections the tests trigger then never walk it. Measured
    on `make test-fast`, idle: about 3 s of its 68 s wall. The tests run with the collector on, as a host runs."""
    with paused():
        try:
            return (yield)
        finally:
            gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    run_dir = config.stash.get(_OWN_RUN_DIR, None)
    if run_dir is not None:
        opensearch_node.end_shared(Path(run_dir))
        shutil.rmtree(run_dir, ignore_errors=True)
        os.environ.pop(SHARED_RUN_DIR, None)


@pytest.fixture(scope="session")
def opensearch_cluster() -> Iterator[OpenSearchCluster]:
    """A real OpenSearch cluster for the session: the one OPENSEARCH_URL names, else a node assembled from Maven
    Central and started on first use (stopped when the session ends; under xdist, one node for all the workers,
    stopped when the run ends). When there is none, the tests that need it
    skip, saying why (pytest keeps the reason for the session: the node is tried once)."""
    named = OpenSearchCluster.from_environment()
    if named is not None:
        yield named
        return
    if os.environ.get("REARVIEW_OPENSEARCH_NODE", "1") == "0":
        pytest.skip("no OpenSearch cluster: REARVIEW_OPENSEARCH_NODE=0 and no OPENSEARCH_URL")
    run_dir = os.environ.get(SHARED_RUN_DIR)
    if run_dir and os.environ.get("PYTEST_XDIST_WORKER"):
        # One node for every worker of the run (each test makes indices of its own names), ended by the controller.
        try:
            url = opensearch_node.shared(Path(run_dir), owner_pid=os.getppid())
        except opensearch_node.NodeUnavailable as exc:
            pytest.skip(f"no OpenSearch cluster: set OPENSEARCH_URL, or fix the local node: {exc}")
        yield OpenSearchCluster(url)
        return
    try:
        node = opensearch_node.start()
    except opensearch_node.NodeUnavailable as exc:
        pytest.skip(f"no OpenSearch cluster: set OPENSEARCH_URL, or fix the local node: {exc}")
    try:
        yield OpenSearchCluster(node.url)
    finally:
        node.stop()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    from rearview.settings import Settings

    return Settings(data_dir=tmp_path / "data", embedder="hashing")


@pytest.fixture
def services(settings: Settings, clock: ManualClock) -> Iterator[Services]:
    from rearview.bootstrap import build

    svc = build(settings, clock=clock)
    yield svc
    svc.close()
