"""Consolidation as a user drives it: over real HTTP (the local server) and over MCP (the SDK's client against
`/mcp`), the behaviours a user of agent memory relies on: repeated requests become a preference stated anew, a
failure streak and the call that worked become a lesson, outcomes are returned and filtered on, a changed
preference supersedes the old one, and forgetting a source leaves no trace of it."""

from __future__ import annotations

import json
import urllib.request
from datetime import timedelta
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from rearview.api.local_server import LocalServer
from rearview.clock import ManualClock
from support.mcp_calls import run

pytestmark = pytest.mark.integration
NS = "acme:u-9"


def http(server: LocalServer, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{server.url}/v1/namespaces/{NS}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as response:  # noqa: S310 - the local test server
        return json.loads(response.read())


class Days:
    """Moves the clock to a number of days after the test's start and says when that is (ISO 8601)."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.start = clock.now()

    def __call__(self, days: float) -> str:
        moment = self.start + timedelta(days=days)
        self.clock.set(moment)
        return moment.isoformat()


@pytest.fixture
def at(clock: ManualClock) -> Days:
    return Days(clock)


def test_over_http_requests_become_a_preference_and_a_changed_one_supersedes_it(server: LocalServer, at: Days) -> None:
    wishes = ["Please answer in Chinese from now on.", "Chinese please, not English",
              "Can you reply in Chinese? It's easier.", "Write your answers in Chinese."]  # fmt: skip
    for day, text in enumerate(wishes):
        http(server, "POST", "/memories", {"content": text, "session_id": f"s{day}", "occurred_at": at(day)})
    at(5)
    first = http(server, "POST", "/consolidate", {})
    assert first["induced"] == {"preference": 1, "fact": 0, "lesson": 0} and first["inducer"] == "rules"
    recalled = http(
        server, "POST", "/recall", {"query": "which language should replies be in?", "kinds": ["preference"]}
    )
    [preference] = recalled["results"]
    assert preference["kind"] == "preference" and "Chinese" in preference["content"]
    assert preference["evidence"]["occurrences"] == 4 and preference["facets"] == {"replies": "Chinese"}

    for day, text in enumerate(["From now on reply in Spanish.", "Spanish please.", "Answer in Spanish please."]):
        http(server, "POST", "/memories", {"content": text, "session_id": f"t{day}", "occurred_at": at(40 + day)})
    at(45)
    second = http(server, "POST", "/consolidate", {})
    assert second["superseded"] == 1
    now = http(server, "POST", "/recall", {"query": "which language should replies be in?", "kinds": ["preference"]})
    assert [h["facets"] for h in now["results"]] == [{"replies": "Spanish"}]
    history = http(server, "POST", "/recall", {"query": "which language should replies be in?", "kinds": ["preference"],
                                              "include_superseded": True})  # fmt: skip
    assert {h["status"] for h in history["results"]} == {"active", "superseded"}


def test_over_http_a_failure_streak_and_its_fix_become_a_lesson_and_forgetting_restates_it(
    server: LocalServer, at: Days
) -> None:
    ids = []
    for i, size in enumerate((300, 200, 150, 50)):
        written = http(server, "POST", "/memories", {
            "content": f"Called the geocoding API with a batch of {size} addresses", "session_id": "s1",
            "event_type": "tool_call", "entities": ["geocoding API"], "occurred_at": at(i * 0.01),
            "outcome": "200 OK" if size == 50 else "HTTP 413 Payload Too Large",
        })  # fmt: skip
        ids.append(written["id"])
    failures = http(server, "POST", "/recall", {"query": "geocoding API batch", "outcomes": ["failure"], "top_k": 20})
    assert {h["outcome_status"] for h in failures["results"]} == {"failure"}
    at(1)
    http(server, "POST", "/consolidate", {})
    [lesson] = http(server, "POST", "/recall", {"query": "geocoding API batch size", "kinds": ["lesson"]})["results"]
    assert "413" in lesson["content"] and "50 addresses" in lesson["content"]

    receipt = http(server, "POST", "/forget", {"ids": [ids[0]]})
    assert receipt["facts_updated"] == [lesson["id"]]
    restated = http(server, "GET", f"/memories/{lesson['id']}")
    assert "300" not in restated["content"] and ids[0] not in restated["provenance"]


async def _mcp(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    http_client = create_mcp_http_client()
    async with http_client, Client(streamable_http_client(url, http_client=http_client)) as client:
        return [await client.call_tool(name, args) for name, args in calls]


def test_over_mcp_remember_takes_outcomes_and_recall_filters_them(server: LocalServer, at: Days) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("remember", {"namespace": NS, "content": f"Deployed the api service to prod, attempt {i}",
                      "event_type": "deploy", "outcome": "failed: permission denied on iam:PassRole",
                      "occurred_at": at(i * 0.1)})
        for i in range(3)
    ]  # fmt: skip
    calls.append(("recall", {"namespace": NS, "query": "prod deploy", "outcomes": ["failure"], "format": "json"}))
    calls.append(("consolidate", {"namespace": NS}))
    calls.append(
        (
            "recall",
            {"namespace": NS, "query": "deploying the api service to prod", "kinds": ["lesson"], "format": "json"},
        )
    )
    at(1)
    *writes, failures, consolidated, lessons = run(_mcp(server.url + "/mcp", calls))
    assert all(w.structured_content["status"] == "stored" for w in writes)
    assert {h["outcome_status"] for h in failures.structured_content["results"]} == {"failure"}
    assert consolidated.structured_content["induced"]["lesson"] == 1
    [lesson] = lessons.structured_content["results"]
    assert lesson["kind"] == "lesson" and "permission denied" in lesson["content"]


def test_over_http_a_habit_changed_in_the_third_person_supersedes_the_old_one(server: LocalServer, at: Days) -> None:
    before = ["The user drives to work every day.",
              "Checked traffic on the ring road for the user, who drives to work every day.",
              "User asked when his car is due for its service; he drives to work every day."]  # fmt: skip
    after = ["The user said the car is sold, now he rides the metro to work.",
             "Checked metro delays for the user, who rides the metro.",
             "The user rides the metro now."]  # fmt: skip
    for day, text in enumerate(before):
        body = {"content": text, "session_id": f"c{day}", "event_type": "agent_note", "occurred_at": at(5 * day)}
        http(server, "POST", "/memories", body)
    at(12)
    first = http(server, "POST", "/consolidate", {})
    assert first["induced"]["fact"] == 1
    for day, text in enumerate(after):
        body = {"content": text, "session_id": f"m{day}", "event_type": "agent_note", "occurred_at": at(45 + 4 * day)}
        http(server, "POST", "/memories", body)
    at(60)
    second = http(server, "POST", "/consolidate", {})

    assert second["superseded"] == 1
    query = {"query": "how does the user get to work?", "kinds": ["fact"]}
    active = http(server, "POST", "/recall", query)["results"]
    assert [h["status"] for h in active] == ["active"] and "metro" in active[0]["content"]
    history = http(server, "POST", "/recall", {**query, "include_superseded": True})["results"]
    [old] = [h for h in history if h["status"] == "superseded"]
    assert "drive" in old["content"]
