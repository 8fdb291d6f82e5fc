"""The agent framework examples of examples/ run as a user runs them, offline: the real OpenAI Agents SDK and CrewAI,
a live local Rearview server, and a fake OpenAI-compatible model (`support.fake_agent_model`) whose script makes
the agent call its memory tools; what the tools stored and what the model was shown are then checked."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services
from rearview.domain.listing import ListQuery
from rearview.domain.write import MemoryWrite
from support.fake_agent_model import FakeAgentModel, Reply, ToolCall

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NS = "acme:u-42"


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def remembered(services: Services, namespace: str = NS) -> list[str]:
    return [m.content for m in services.listing.page(namespace, ListQuery(limit=100)).items]


# --- the OpenAI Agents SDK ---------------------------------------------------------------------------------------


def test_agents_sdk_function_tools_remember_then_recall(live: tuple[LocalServer, Services]) -> None:
    server, services = live
    agents_example = example("openai_agents_memory")
    token = services.access.create_key(NS, ["read", "write"])[1]

    first = FakeAgentModel(
        ToolCall("remember", {"content": "The user prefers aisle seats on long flights", "lasting_fact": True}),
        Reply("Noted ({tool})."),
    )
    with first:
        model = agents_example.chat_model(first.url, "fake")
        answer = asyncio.run(agents_example.ask("I like aisle seats", model, server.url, token, NS))
    assert answer.startswith("Noted (stored as ")
    assert remembered(services) == ["The user prefers aisle seats on long flights"]
    assert {"recall", "remember", "brief"} <= set(first.offered_tools(first.requests[0]))

    second = FakeAgentModel(ToolCall("recall", {"query": "aisle seats on long flights"}), Reply("From memory: {tool}"))
    with second:
        model = agents_example.chat_model(second.url, "fake")
        answer = asyncio.run(agents_example.ask("Book my seat", model, server.url, token, NS))
    assert "The user prefers aisle seats on long flights" in answer


def test_agents_sdk_over_rearviews_mcp_server(live: tuple[LocalServer, Services]) -> None:
    server, services = live
    agents_example = example("openai_agents_memory")
    token = services.access.create_key(NS, ["read", "write"])[1]
    services.writer.write(NS, _fact("The user is vegetarian and avoids fish"))

    model_double = FakeAgentModel(ToolCall("recall", {"query": "is the user vegetarian?"}), Reply("Memory: {tool}"))
    with model_double:
        model = agents_example.chat_model(model_double.url, "fake")
        answer = asyncio.run(agents_example.ask_over_mcp("Plan dinner", model, server.url, token))
    # The SDK listed Rearview's MCP tools for the model, and the recall went through /mcp with the key's scope.
    assert {"recall", "remember", "brief", "forget"} <= set(model_double.offered_tools(model_double.requests[0]))
    assert "The user is vegetarian and avoids fish" in answer


def _fact(content: str) -> MemoryWrite:
    return MemoryWrite(layer="semantic", content=content)


# --- CrewAI ------------------------------------------------------------------------------------------------------


@pytest.fixture
def crewai_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CrewAI keeps its user data (its trace consent) under XDG_DATA_HOME, and reads its telemetry switch."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CREWAI_DISABLE_TELEMETRY", "true")


def test_crewai_external_memory_and_tools(live: tuple[LocalServer, Services], crewai_home: None) -> None:
    from rearview.client import RearviewClient

    server, services = live
    crew_example = example("crewai_memory")
    services.writer.write(NS, _fact("The user is allergic to peanuts"))
    react = FakeAgentModel(
        Reply('Thought: I should check what I know\nAction: recall\nAction Input: {"query": "allergic to peanuts"}'),
        Reply("Thought: I now know the final answer\nFinal Answer: Friday dinner at the peanut-free bistro, 19:30"),
    )
    token = services.access.create_key(NS, ["read", "write"])[1]
    with react, RearviewClient(server.url, token=token) as rv:
        llm = crew_example.chat_llm(react.url, "gpt-4o-mini")
        output = crew_example.memory_crew(
            llm, rv, NS, "Plan the team dinner on Friday: what is the user allergic to?"
        ).kickoff()

    assert "peanut-free bistro" in str(output)
    first, second = react.requests[0].body["messages"], react.requests[1].body["messages"]
    # Before the task, the crew's external memory put what Rearview recalled in the prompt ...
    assert "External memories:\n- The user is allergic to peanuts" in first[-1]["content"]
    # ... the agent's recall tool answered its Action with what is remembered ...
    assert "- The user is allergic to peanuts" in second[-1]["content"].split("Action Input:")[-1]
    # ... and after the task the crew stored its result.
    assert "Friday dinner at the peanut-free bistro, 19:30" in remembered(services)
