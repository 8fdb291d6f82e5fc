"""A memory's provenance (`GET .../memories/{id}/sources`), added as one row of the operation catalogue: a semantic
memory's source episodes with their text, id, time and outcome, an episode's semantic memories; on HTTP (a real
local server), both Python clients, MCP (the SDK's client) and the command line, local and over --url; and another
namespace never sees it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

from rearview.api.local_server import LocalServer
from rearview.api.mcp import create_mcp_server, fixed_principal
from rearview.bootstrap import Services, build
from rearview.cli import app
from rearview.client import AsyncRearviewClient, RearviewClient
from rearview.domain.access import Principal
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Fact
from rearview.domain.write import MemoryWrite
from rearview.errors import NotFound
from rearview.settings import Settings
from support.mcp_calls import run

pytestmark = pytest.mark.integration

NS, OTHER = "acme:u-42", "acme:u-7"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[LocalServer, Services, str, list[str]]]:
    """A server over a data directory holding two episodes and the preference induced from them."""
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    written = services.writer.write_batch(
        NS,
        [
            MemoryWrite(
                content="Asked for an aisle seat on the Lisbon flight",
                outcome="seat given",
                occurred_at=datetime(2026, 3, 1, 9, 0, tzinfo=UTC),
            ),
            MemoryWrite(
                content="Asked for an aisle seat again on the Porto train",
                outcome_status="failure",
                occurred_at=datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
            ),
        ],
    )
    episodes = [result.id for result in written]
    first = services.store.get(NS, episodes[0])
    assert first is not None
    fact = Fact(
        id="pref-aisle",
        namespace=NS,
        content="The user prefers aisle seats",
        kind="preference",
        provenance=list(reversed(episodes)),
        created_at=first.created_at + timedelta(seconds=1),
        last_confirmed_at=first.created_at + timedelta(seconds=1),
    )
    services.store.apply(NS, ChangeSet(upserts=[(fact, services.embedder.embed([fact.content])[0])]))
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as running:
        yield running, services, fact.id, episodes
    services.close()


def test_a_semantic_memory_gives_its_episodes_and_an_episode_what_it_fed(
    world: tuple[LocalServer, Services, str, list[str]],
) -> None:
    running, _, fact_id, episodes = world
    with RearviewClient(running.url) as rv:
        found = rv.sources(NS, fact_id)
        fed = rv.sources(NS, episodes[1])

    assert found.layer == "semantic" and found.fed == []
    assert [source.id for source in found.sources] == episodes  # oldest first
    assert found.sources[0].content == "Asked for an aisle seat on the Lisbon flight"
    assert found.sources[0].outcome == "seat given"
    assert found.sources[1].outcome_status == "failure"
    assert found.sources[0].occurred_at < found.sources[1].occurred_at
    assert fed.layer == "episodic" and fed.sources == []
    assert [(m.id, m.kind, m.status) for m in fed.fed] == [(fact_id, "preference", "active")]


def test_another_namespace_sees_nothing_of_it(world: tuple[LocalServer, Services, str, list[str]]) -> None:
    running, services, fact_id, episodes = world
    services.writer.write(OTHER, MemoryWrite(content="Asked for a window seat"))
    with RearviewClient(running.url) as rv:
        with pytest.raises(NotFound):
            rv.sources(OTHER, fact_id)
        with pytest.raises(NotFound):
            rv.sources(OTHER, episodes[0])
    scoped = services.access.create_key(OTHER, ["read"])[1]
    with RearviewClient(running.url, token=scoped) as rv, pytest.raises(Exception) as refused:
        rv.sources(NS, fact_id)
    assert getattr(refused.value, "status", 403) == 403 or type(refused.value).__name__ == "NamespaceForbidden"


def test_the_async_client_and_the_mcp_tool(world: tuple[LocalServer, Services, str, list[str]]) -> None:
    running, services, fact_id, episodes = world

    async def by_client() -> list[str]:
        async with AsyncRearviewClient(running.url) as rv:
            return [source.id for source in (await rv.sources(NS, fact_id)).sources]

    assert asyncio.run(by_client()) == episodes

    async def by_tool() -> tuple[object, object]:
        async with Client(create_mcp_server(services, fixed_principal(Principal.open_local()))) as client:
            mine = await client.call_tool("memory_sources", {"memory_id": fact_id, "namespace": NS})
            theirs = await client.call_tool("memory_sources", {"memory_id": fact_id, "namespace": OTHER})
            return mine, theirs

    mine, theirs = run(by_tool())
    assert not mine.is_error and [s["id"] for s in mine.structured_content["sources"]] == episodes  # type: ignore[attr-defined]
    assert theirs.is_error  # type: ignore[attr-defined]


def test_the_command_line_locally_and_over_url(
    world: tuple[LocalServer, Services, str, list[str]], tmp_path: Path
) -> None:
    running, services, fact_id, episodes = world
    runner = CliRunner()
    remote = runner.invoke(app, ["--url", running.url, "sources", NS, fact_id, "--json"])
    assert remote.exit_code == 0, remote.output
    assert [source["id"] for source in json.loads(remote.stdout)["sources"]] == episodes

    local_dir = tmp_path / "local"
    env = {"REARVIEW_DATA_DIR": str(local_dir), "REARVIEW_EMBEDDER": "hashing"}
    wrote = runner.invoke(app, ["remember", NS, "Asked for an aisle seat", "--json"], env=env)
    episode_id = json.loads(wrote.stdout)["id"]
    local = runner.invoke(app, ["sources", NS, episode_id], env=env)
    assert local.exit_code == 0, local.output
    assert json.loads(local.stdout) == {
        "namespace": NS,
        "memory_id": episode_id,
        "layer": "episodic",
        "sources": [],
        "fed": [],
    }
    missing = runner.invoke(app, ["sources", OTHER, episode_id], env=env)
    assert missing.exit_code == 2 and "not found" in missing.stderr
