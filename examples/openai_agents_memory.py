"""An OpenAI Agents SDK agent with Rearview as its long-term memory, two ways:

- function tools (`recall`, `remember`, `brief`) over Rearview's Python client (`memory_tools`);
- Rearview's MCP server (`/mcp`, Streamable HTTP), whose tools the SDK's MCP connector lists for the agent.

Any OpenAI-compatible chat endpoint drives it (Ollama, vLLM, LM Studio, OpenAI). With a local Ollama:

    pip install -e '.[client,openai-agents]'         # from a clone of Rearview
    rearview serve &                                 # http://127.0.0.1:8765, open on loopback
    OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=qwen2.5:7b-instruct \
        python examples/openai_agents_memory.py "Book me a flight to Lisbon next Friday"
    python examples/openai_agents_memory.py --mcp "Which seat do I like?"

REARVIEW_URL, REARVIEW_TOKEN (an API key) and REARVIEW_NAMESPACE say which Rearview and which memory. Tracing to
OpenAI's servers is turned off: nothing leaves for a service the user did not choose.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence

from agents import Agent, OpenAIChatCompletionsModel, Runner, Tool, function_tool, set_tracing_disabled
from agents.mcp import MCPServer, MCPServerStreamableHttp
from openai import AsyncOpenAI

from rearview.client import AsyncRearviewClient

INSTRUCTIONS = (
    "You are an assistant with long-term memory. Before a task, call `brief` with what you are about to do and "
    "follow the preferences and lessons it returns. When the user asks about the past, call `recall`. When the "
    "user tells you something worth keeping (a preference, a fact about them, how a task went), call `remember`."
)


def memory_tools(rv: AsyncRearviewClient, namespace: str) -> list[Tool]:
    """The agent's memory as three function tools over the client, acting in `namespace`."""

    @function_tool
    async def recall(query: str) -> str:
        """Search long-term memory for what was said or learnt before.

        Args:
            query: What to recall, in natural language, e.g. "which seat does the user prefer?".
        """
        found = await rv.recall(namespace, query, top_k=5)
        if found.no_relevant_memory or not found.results:
            return "Nothing relevant is remembered."
        return "\n".join(f"- {hit.content} ({hit.occurred_at:%Y-%m-%d}, id {hit.id})" for hit in found.results)

    @function_tool
    async def remember(content: str, lasting_fact: bool = False) -> str:
        """Store something worth remembering later.

        Args:
            content: A self-contained sentence, e.g. "The user prefers aisle seats".
            lasting_fact: True for a lasting fact or preference about the user, false for an event.
        """
        result = await rv.write(namespace, content, layer="semantic" if lasting_fact else "episodic")
        return f"{result.status} as {result.id}"

    @function_tool
    async def brief(task: str, tool: str | None = None) -> str:
        """The preferences and lessons that apply to a task about to start.

        Args:
            task: What you are about to do, e.g. "book a flight to Lisbon".
            tool: The tool you will use, if any, e.g. "flight search API".
        """
        answer = await rv.brief(namespace, {"task": task, "tool": tool} if tool else {"task": task})
        if answer.no_relevant_memory:
            return "Nothing applies."
        return "\n".join(f"- {item.memory.content} (why: {item.why})" for item in answer.items)

    return [recall, remember, brief]


def chat_model(base_url: str, model: str, api_key: str = "not-needed") -> OpenAIChatCompletionsModel:
    """A model on any OpenAI-compatible chat completions endpoint."""
    return OpenAIChatCompletionsModel(model=model, openai_client=AsyncOpenAI(base_url=base_url, api_key=api_key))


def memory_agent(
    model: OpenAIChatCompletionsModel, tools: Sequence[Tool] = (), mcp_servers: Sequence[MCPServer] = ()
) -> Agent:
    return Agent(
        name="assistant", instructions=INSTRUCTIONS, model=model, tools=list(tools), mcp_servers=list(mcp_servers)
    )


async def ask(
    question: str, model: OpenAIChatCompletionsModel, rearview_url: str, token: str | None, namespace: str
) -> str:
    """One turn of the agent with the function tools."""
    set_tracing_disabled(True)
    async with AsyncRearviewClient(rearview_url, token=token) as rv:
        result = await Runner.run(memory_agent(model, tools=memory_tools(rv, namespace)), question)
    return str(result.final_output)


async def ask_over_mcp(question: str, model: OpenAIChatCompletionsModel, rearview_url: str, token: str | None) -> str:
    """One turn of the agent with Rearview's MCP tools (they act in the key's namespace, or the server's default)."""
    set_tracing_disabled(True)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with MCPServerStreamableHttp(
        params={"url": f"{rearview_url.rstrip('/')}/mcp", "headers": headers}, name="rearview", cache_tools_list=True
    ) as rearview:
        result = await Runner.run(memory_agent(model, mcp_servers=[rearview]), question)
    return str(result.final_output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question")
    parser.add_argument("--mcp", action="store_true", help="use Rearview's MCP server instead of the function tools")
    args = parser.parse_args()
    model = chat_model(
        os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
        os.environ.get("OPENAI_MODEL", "qwen2.5:7b-instruct"),
        os.environ.get("OPENAI_API_KEY", "not-needed"),
    )
    url, token = os.environ.get("REARVIEW_URL", "http://127.0.0.1:8765"), os.environ.get("REARVIEW_TOKEN")
    if args.mcp:
        print(asyncio.run(ask_over_mcp(args.question, model, url, token)))
    else:
        print(asyncio.run(ask(args.question, model, url, token, os.environ.get("REARVIEW_NAMESPACE", "default"))))


if __name__ == "__main__":
    main()
