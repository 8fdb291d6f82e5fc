"""Hindsight as an agent lives it, over real HTTP (the local server) and the real MCP SDK client, with the local
consolidation worker on: failures of one tool become a lesson with no consolidate call, `brief` offers it first
with why, `feedback` confirms it (and `stats` counts the adoption) or corrects it, and a session's end runs a
consolidation. Brief and feedback stay within their namespace.

The tests wait for the worker's queue to drain (a condition it signals), never a fixed time."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, local_consolidation
from rearview.clock import ManualClock
from rearview.service.hindsight.local_worker import LocalConsolidationWorker
from rearview.settings import HindsightSettings, Settings
from support.mcp_calls import run

pytestmark = pytest.mark.integration
NS = "acme:u-11"
# Bound on the worker's runs (a few milliseconds each here); a test that reaches it has failed.
DEADLINE_SECONDS = 10.0


class Api:
    """JSON over real HTTP to one namespace of the server, with an optional API key."""

    def __init__(self, server: LocalServer, namespace: str = NS, key: str | None = None) -> None:
        self.base = f"{server.url}/v1/namespaces/{namespace}"
        self.key = key

    def __call__(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        status, answer = self.send(method, path, body)
        assert status < 300, (status, answer)
        return answer

    def send(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the local test server
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            with err:
                return err.code, json.loads(err.read())


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The defaults but the schedule: its sweep would consolidate a namespace that never ran once these tests' clock
    passes the hour, and these tests are about the other triggers (the sweeps are the unit tests' and the e2e's)."""
    return Settings(data_dir=tmp_path / "data", embedder="hashing", hindsight=HindsightSettings(schedule_hours=0))


@pytest.fixture
def live(settings: Settings, world: Services) -> Iterator[tuple[LocalServer, LocalConsolidationWorker]]:
    """The local server with the consolidation worker on, as `rearview serve` runs them."""
    with local_consolidation(world) as worker, LocalServer(settings, world, port=0) as server:
        assert worker is not None
        yield server, worker


def geocoding_failures(api: Api, clock: ManualClock, count: int = 3) -> list[str]:
    ids = []
    for n in range(count):
        clock.advance(minutes=5)
        written = api("POST", "/memories", {
            "content": f"Called the geocoding API with a batch of {100 + n * 50} addresses", "session_id": "s1",
            "event_type": "tool_call", "entities": ["geocoding API"], "outcome": "HTTP 413 Payload Too Large",
        })  # fmt: skip
        ids.append(written["id"])
    return ids


def test_over_http_failures_become_a_lesson_that_brief_offers_and_feedback_judges(
    live: tuple[LocalServer, LocalConsolidationWorker], clock: ManualClock
) -> None:
    server, worker = live
    api = Api(server)
    geocoding_failures(api, clock)

    assert worker.drain(DEADLINE_SECONDS)
    [lesson] = api("POST", "/recall", {"query": "geocoding API batch", "kinds": ["lesson"]})["results"]
    assert "413" in lesson["content"] and "geocoding" in lesson["content"].lower()
    hindsight = api("GET", "/stats")["hindsight"]
    assert (hindsight["runs"], hindsight["last_run_reason"], hindsight["unconsolidated"]) == (1, "failure_streak", 0)

    clock.advance(minutes=5)
    brief = api("POST", "/brief", {"task": "Geocode the new customer addresses", "tool": "geocoding API"})
    first = brief["items"][0]
    assert first["memory"]["id"] == lesson["id"] and "geocoding API" in first["why"]

    useful = api("POST", "/feedback", {"memory_id": lesson["id"], "verdict": "useful"})
    assert useful["adopted"] is True and useful["confidence_after"] > useful["confidence_before"]
    feedback = api("GET", "/stats")["hindsight"]["feedback"]
    assert feedback["lesson"] == {"useful": 1, "not_useful": 0, "wrong": 0, "adopted": 1}

    correction = "The geocoding API takes batches of at most 50 addresses; split bigger ones."
    wrong = api("POST", "/feedback", {"memory_id": lesson["id"], "verdict": "wrong", "correction": correction})
    assert wrong["corrected_by"] and wrong["confidence_after"] < useful["confidence_after"]
    superseded = api("GET", f"/memories/{lesson['id']}")
    assert (superseded["status"], superseded["superseded_by"]) == ("superseded", wrong["corrected_by"])
    again = api("POST", "/brief", {"task": "Geocode the new customer addresses", "tool": "geocoding API"})
    assert again["items"][0]["memory"]["content"] == correction
    assert lesson["id"] not in [item["memory"]["id"] for item in again["items"]]


def test_a_session_end_over_http_runs_a_consolidation(
    live: tuple[LocalServer, LocalConsolidationWorker], clock: ManualClock
) -> None:
    server, worker = live
    api = Api(server)
    for n, text in enumerate(["Please answer in Chinese from now on.", "Chinese please, not English",
                              "Can you reply in Chinese? It's easier.", "Write your answers in Chinese."]):  # fmt: skip
        clock.advance(days=1)
        api("POST", "/memories", {"content": text, "session_id": f"s{n}"})
    api("PUT", "/sessions/s3/working/draft", {"value": {"step": 2}})
    assert worker.drain(DEADLINE_SECONDS)
    assert api("GET", "/stats")["hindsight"]["runs"] == 0  # nothing was due yet

    ended = api("POST", "/sessions/s3/end")
    assert (ended["cleared"], ended["consolidation_job_sent"]) == (1, True)
    assert worker.drain(DEADLINE_SECONDS)
    hindsight = api("GET", "/stats")["hindsight"]
    assert (hindsight["runs"], hindsight["last_run_reason"], hindsight["unconsolidated"]) == (1, "session_end", 0)
    query = {"query": "which language should replies be in?", "kinds": ["preference"]}
    [preference] = api("POST", "/recall", query)["results"]
    assert "Chinese" in preference["content"]


def test_brief_and_feedback_stay_in_their_namespace(
    live: tuple[LocalServer, LocalConsolidationWorker], world: Services, clock: ManualClock
) -> None:
    server, worker = live
    mine = world.access.create_key(NS, ["read", "write"])[1]
    theirs_ns = "acme:u-12"
    theirs = world.access.create_key(theirs_ns, ["read", "write"])[1]
    geocoding_failures(Api(server, key=mine), clock)
    assert worker.drain(DEADLINE_SECONDS)
    [lesson] = Api(server, key=mine)("POST", "/recall", {"query": "geocoding API", "kinds": ["lesson"]})["results"]
    task = {"task": "Geocode the new customer addresses", "tool": "geocoding API"}

    other = Api(server, theirs_ns, key=theirs)
    assert other("POST", "/brief", task) == {"items": [], "working": None, "no_relevant_memory": True,
                                             "truncated": False}  # fmt: skip
    status, body = other.send("POST", "/feedback", {"memory_id": lesson["id"], "verdict": "wrong"})
    assert (status, body["error"], body["field"]) == (404, "not_found", "memory_id")
    for path, body_ in (("/brief", task), ("/feedback", {"memory_id": lesson["id"], "verdict": "wrong"})):
        status, denied = Api(server, NS, key=theirs).send("POST", path, body_)
        assert (status, denied["error"]) == (403, "forbidden")
    held = Api(server, key=mine)("GET", f"/memories/{lesson['id']}")
    assert (held["status"], held["confidence"]) == ("active", lesson["confidence"])
    assert Api(server, key=mine)("GET", "/stats")["hindsight"]["feedback"] == {}


async def _mcp_flow(url: str, worker: LocalConsolidationWorker, clock: ManualClock) -> tuple[list[Any], Any, Any, Any]:
    http_client = create_mcp_http_client()
    async with http_client, Client(streamable_http_client(url, http_client=http_client)) as client:
        for n in range(3):
            clock.advance(minutes=5)
            await client.call_tool("remember", {
                "namespace": NS, "content": f"Deployed the api service to prod, attempt {n}", "event_type": "deploy",
                "entities": ["deploy pipeline"], "outcome": "failed: permission denied on iam:PassRole",
            })  # fmt: skip
        drained = worker.drain(DEADLINE_SECONDS)
        brief = await client.call_tool("brief", {"namespace": NS, "task": "Deploy the api service to prod",
                                                 "tool": "deploy pipeline", "format": "json"})  # fmt: skip
        lesson_id = brief.structured_content["items"][0]["memory"]["id"]
        feedback = await client.call_tool("feedback", {"namespace": NS, "memory_id": lesson_id, "verdict": "useful"})
        stats = await client.call_tool("memory_stats", {"namespace": NS})
        return [drained], brief, feedback, stats


def test_over_mcp_the_lesson_comes_by_itself_and_brief_and_feedback_use_it(
    live: tuple[LocalServer, LocalConsolidationWorker], clock: ManualClock
) -> None:
    server, worker = live
    [drained], brief, feedback, stats = run(_mcp_flow(server.url + "/mcp", worker, clock))

    assert drained
    [first, *_] = brief.structured_content["items"]
    assert first["memory"]["kind"] == "lesson" and "permission denied" in first["memory"]["content"]
    assert "deploy pipeline" in first["why"]
    assert not feedback.is_error and feedback.structured_content["adopted"] is True
    hindsight = stats.structured_content["hindsight"]
    assert hindsight["last_run_reason"] == "failure_streak"
    assert hindsight["feedback"]["lesson"]["adopted"] == 1


def test_over_http_a_turn_written_with_extract_is_remembered_at_once_and_only_in_its_namespace(
    live: tuple[LocalServer, LocalConsolidationWorker], world: Services, clock: ManualClock
) -> None:
    server, worker = live
    mine = world.access.create_key(NS, ["read", "write"])[1]
    other_ns = "acme:u-12"
    theirs = world.access.create_key(other_ns, ["read", "write"])[1]
    api = Api(server, key=mine)
    turn = api("POST", "/memories", {"content": "I'm vegetarian and I live in Lisbon.", "extract": True})
    Api(server, other_ns, key=theirs)("POST", "/memories", {"content": "I live in Oslo.", "session_id": "s1"})
    assert worker.drain(DEADLINE_SECONDS)

    found = api("POST", "/recall", {"query": "where does the user live?", "layers": ["semantic"]})["results"]
    assert [(r["dimension"], r["provenance"]) for r in found if r["dimension"] == "home_city"] == [
        ("home_city", [turn["id"]])
    ]
    assert "Lisbon" in found[0]["content"]
    hindsight = api("GET", "/stats")["hindsight"]
    assert (hindsight["last_run_reason"], hindsight["induced"]["fact"]) == ("extract", 2)
    assert hindsight["unconsolidated"] == 1  # the turn still counts for consolidation
    query = {"query": "where do I live?", "layers": ["semantic"]}
    nothing = Api(server, other_ns, key=theirs)("POST", "/recall", query)
    assert nothing["results"] == []  # written without extract: one turn teaches nothing there

    status, refused = api.send("POST", "/memories", {"content": "x", "layer": "semantic", "extract": True})
    assert (status, refused["field"]) == (422, "extract")
