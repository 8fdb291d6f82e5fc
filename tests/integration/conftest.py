"""Integration fixtures: the real services, and the local server over them on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.settings import Settings


@pytest.fixture
def world(settings: Settings, clock: ManualClock) -> Iterator[Services]:
    """The services a server runs over, with the test's clock."""
    services = build(settings, clock=clock)
    yield services
    services.close()


@pytest.fixture
def server(settings: Settings, world: Services) -> Iterator[LocalServer]:
    """The local server over `world`, on a free port."""
    with LocalServer(settings, world, port=0) as srv:
        yield srv


@pytest.fixture
def live(settings: Settings) -> Iterator[tuple[LocalServer, Services]]:
    """The local server on a free port over services on the system clock, for clients that stamp times of their own
    (agent frameworks, other vendors' clients)."""
    services = build(settings)
    with LocalServer(settings, services, host="127.0.0.1", port=0) as srv:
        yield srv, services
    services.close()
