"""What the inspector reads beyond the memories themselves, on a real local server: a text filter over a big
namespace's listing (bounded reads, a cursor that goes on), recall counters per day and more of consolidation's runs
in `stats`; over HTTP, the Python client, MCP and the command line, and never another namespace's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from mcp import Client
from typer.testing import CliRunner

from rearview.api.local_server import LocalServer
from rearview.api.mcp import create_mcp_server, fixed_principal
from rearview.bootstrap import Services, build
from rearview.cli import app
from rearview.client import RearviewClient
from rearview.clock import ManualClock
from rearview.domain.access import Principal
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.listing import TEXT_SCAN_LIMIT, ListQuery
from rearview.domain.recall import RecallQuery
from rearview.domain.write import MemoryWrite
from rearview.errors import InvalidInput
from support.mcp_calls import run

pytestmark = pytest.mark.integration

NS, OTHER = "acme:u-42", "acme:u-4"
T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
# More episodes than one text-filtered page reads, so the filter's cursor has to go on.
EPISODES = TEXT_SCAN_LIMIT + 600


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalServer, Services, ManualClock]]:
    from rearview.settings import Settings

    clock = ManualClock(T0)
    services = build(Settings(data_dir=tmp_path_factory.mktemp("data"), embedder="hashing"), clock=clock)
    # A big namespace: every 100th episode mentions the harbour, newest first at the top.
    items = [
        MemoryWrite(
            content=f"Checked the {'harbour' if n % 100 == 0 else 'garden'} logbook, entry {n}",
            occurred_at=T0 - timedelta(minutes=EPISODES - n),
            importance=0.5,
        )
        for n in range(EPISODES)
    ]
    for start in range(0, len(items), 100):
        services.writer.write_batch(NS, items[start : start + 100])
    services.writer.write(OTHER, MemoryWrite(content="The Harbour master called about the mooring"))
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        yield server, services, clock
    services.close()


def test_a_text_filter_reads_a_bounded_page_and_goes_on(world: tuple[LocalServer, Services, ManualClock]) -> None:
    server, _, _ = world
    found: list[str] = []
    scanned: list[int] = []
    with RearviewClient(server.url) as rv:
        query = ListQuery(layer="episodic", text="HARBOUR", limit=20)
        while True:
            page = rv.list_memories(NS, query)
            found += [m.content for m in page.items]
            assert page.scanned is not None
            scanned.append(page.scanned)
            if page.next_cursor is None:
                break
            query = query.model_copy(update={"cursor": page.next_cursor})
        unfiltered = rv.list_memories(NS, ListQuery(layer="episodic", limit=3))
    # Every match, once, newest first; no page read more than the bound; the reads add up to the namespace.
    expected = [f"Checked the harbour logbook, entry {n}" for n in reversed(range(0, EPISODES, 100))]
    assert found == expected
    assert max(scanned) <= TEXT_SCAN_LIMIT and sum(scanned) == EPISODES
    # Without `text`, nothing changes: a plain page, no `scanned`.
    assert unfiltered.scanned is None and len(unfiltered.items) == 3


def test_a_text_filter_never_reads_another_namespace(world: tuple[LocalServer, Services, ManualClock]) -> None:
    server, _, _ = world
    with RearviewClient(server.url) as rv:
        theirs = rv.list_memories(OTHER, ListQuery(text="harbour"))
        with pytest.raises(InvalidInput) as too_long:
            rv.list_memories(NS, ListQuery.model_construct(text="x" * 201))
    assert [m.content for m in theirs.items] == ["The Harbour master called about the mooring"]
    assert theirs.scanned == 1
    assert too_long.value.field is not None and "text" in too_long.value.field


def test_stats_count_recalls_per_day_and_return_the_runs_asked_for(
    world: tuple[LocalServer, Services, ManualClock],
) -> None:
    server, services, clock = world
    services.recaller.recall(NS, RecallQuery(query="harbour logbook"))
    services.recaller.recall(NS, RecallQuery(query="quantum chromodynamics lattice"))
    clock.advance(days=1)
    services.recaller.recall(NS, RecallQuery(query="garden logbook"))
    services.recaller.recall(OTHER, RecallQuery(query="mooring"))
    for _ in range(3):
        services.consolidation.consolidate(NS, ConsolidateRequest())

    with RearviewClient(server.url) as rv:
        stats = rv.stats(NS, runs=3)
        few = rv.stats(NS)
        theirs = rv.stats(OTHER)
    days = [(d.day, d.recalls, d.hits) for d in stats.recalls_by_day]
    assert days == [(T0.date(), 2, 1), ((T0 + timedelta(days=1)).date(), 1, 1)]
    assert stats.hindsight is not None and len(stats.hindsight.recent_runs) == 3
    assert few.hindsight is not None and len(few.hindsight.recent_runs) == 3  # the default (5) holds all three
    assert [(d.recalls, d.hits) for d in theirs.recalls_by_day] == [(1, 1)]
    assert theirs.hindsight is not None and theirs.hindsight.recent_runs == []

    async def by_tool() -> object:
        async with Client(create_mcp_server(services, fixed_principal(Principal.open_local()))) as client:
            return await client.call_tool("memory_stats", {"namespace": NS, "runs": 1})

    answer = run(by_tool())
    structured = answer.structured_content  # type: ignore[attr-defined]
    assert len(structured["hindsight"]["recent_runs"]) == 1 and len(structured["recalls_by_day"]) == 2

    cli = CliRunner().invoke(app, ["--url", server.url, "stats", NS, "--runs", "2", "--json"])
    assert cli.exit_code == 0, cli.output
    assert len(json.loads(cli.stdout)["hindsight"]["recent_runs"]) == 2


def test_stats_refuse_a_runs_count_out_of_range(world: tuple[LocalServer, Services, ManualClock]) -> None:
    server, _, _ = world
    with RearviewClient(server.url) as rv, pytest.raises(InvalidInput) as refused:
        rv.stats(NS, runs=101)
    assert refused.value.field is not None and "runs" in refused.value.field
