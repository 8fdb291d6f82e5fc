"""Contract suite fixtures: one `backend` fixture, parametrised over every backend in BACKENDS, and one backend per
module holding the filter data set, parametrised the same way, for the tests that only read it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.clock import ManualClock
from rearview.domain.memory import Episode, Fact
from support.contract_backends import (
    BACKENDS,
    ON_REAL_CLUSTER,
    T0,
    Backend,
    filter_dataset,
    make_episode,
    make_fact,
)


@contextmanager
def _opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A fresh, empty backend of the fixture's parameter with a HashingEmbedder(dim=512) and a ManualClock at T0,
    closed (with whatever it reopened) on leaving. A backend on a real OpenSearch cluster takes the session's (and
    skips when there is none)."""
    factory = BACKENDS[request.param]
    if request.param in ON_REAL_CLUSTER:
        factory = ON_REAL_CLUSTER[request.param](request.getfixturevalue("opensearch_cluster"))
    opened: list[Backend] = []
    try:
        yield factory(tmp_path, HashingEmbedder(dim=512), ManualClock(T0), opened.append)
    finally:
        for each in opened:
            each.close()


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A fresh, empty backend (see `_opened`)."""
    with _opened(request, tmp_path) as fresh:
        yield fresh


@pytest.fixture(scope="module", params=list(BACKENDS))
def filter_backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """One backend for the module's filter tests, which only read it: `filter_dataset()` in "acme", and the same
    with one more memory in "other" (which no search of "acme" may return). Written once, not once for each of
    FILTERS: on the backends with a server (DynamoDB on moto, OpenSearch) that set-up was most of the suite's time."""
    with _opened(request, tmp_path_factory.mktemp(f"filters-{request.param}")) as shared:
        shared.write("acme", *filter_dataset())
        shared.write("other", *filter_dataset("other"), make_episode("other", "extra", "a trip to Berlin"))
        yield shared


@pytest.fixture
def episode() -> Callable[..., Episode]:
    return make_episode


@pytest.fixture
def fact() -> Callable[..., Fact]:
    return make_fact
