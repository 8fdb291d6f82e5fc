"""Contract suite fixtures: one `backend` fixture, parametrised over every backend in BACKENDS."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.clock import ManualClock
from rearview.domain.memory import Episode, Fact
from support.contract_backends import BACKENDS, ON_REAL_CLUSTER, T0, Backend, make_episode, make_fact


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A fresh, empty backend with a HashingEmbedder(dim=512) and a ManualClock at T0. A backend on a real
    OpenSearch cluster takes the session's (and skips when there is none)."""
    factory = BACKENDS[request.param]
    if request.param in ON_REAL_CLUSTER:
        factory = ON_REAL_CLUSTER[request.param](request.getfixturevalue("opensearch_cluster"))
    opened: list[Backend] = []
    yield factory(tmp_path, HashingEmbedder(dim=512), ManualClock(T0), opened.append)
    for each in opened:
        each.close()


@pytest.fixture
def episode() -> Callable[..., Episode]:
    return make_episode


@pytest.fixture
def fact() -> Callable[..., Fact]:
    return make_fact
