"""A CrewAI crew with Rearview as its memory, two ways:

- CrewAI's external memory (`ExternalMemory` over `RearviewStorage`): before each task the crew recalls what
  applies and puts it in the agent's prompt, after each task it stores the result;
- tools the agent may call itself (`recall`, `remember`, `brief`).

Any OpenAI-compatible chat endpoint drives it (Ollama, vLLM, LM Studio, OpenAI). With a local Ollama:

    pip install -e '.[client,crewai]'                # from a clone of Rearview
    rearview serve &                                 # http://127.0.0.1:8765, open on loopback
    OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=qwen2.5:7b-instruct \
        python examples/crewai_memory.py "Plan the team dinner on Friday"

REARVIEW_URL, REARVIEW_TOKEN (an API key) and REARVIEW_NAMESPACE say which Rearview and which memory. CrewAI's
telemetry is turned off here unless the environment says otherwise, and its first-run trace collection declined:
nothing leaves for a service the user did not choose.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")

from crewai import LLM, Agent, Crew, Task  # noqa: E402 - after the telemetry switch, which crewai reads on import
from crewai.events.listeners.tracing.utils import mark_first_execution_done  # noqa: E402
from crewai.memory.external.external_memory import ExternalMemory  # noqa: E402
from crewai.memory.storage.interface import Storage  # noqa: E402
from crewai.tools import BaseTool, tool  # noqa: E402

from rearview.client import RearviewClient  # noqa: E402
from rearview.domain.forget import ForgetRequest  # noqa: E402

# The tag of what the crew's external memory stores, so `reset` forgets that and nothing else.
CREW_TAG = "crewai"


class RearviewStorage(Storage):
    """CrewAI's storage interface over Rearview: `save` writes an episode, `search` is Rearview's recall (which
    judges relevance itself, so `score_threshold`, on another scale, is not applied), `reset` forgets what the crew
    stored."""

    def __init__(self, rv: RearviewClient, namespace: str) -> None:
        self.rv = rv
        self.namespace = namespace

    def save(self, value: Any, metadata: dict[str, Any]) -> None:
        # A task's output as the agent wrote it: what follows its last "Final Answer:" is the answer, the rest is
        # the agent's reasoning format.
        text = str(value).rsplit("Final Answer:", 1)[-1].strip()
        agent = metadata.get("agent")
        self.rv.write(self.namespace, text, tags=[CREW_TAG], entities=[agent] if agent else [])

    def search(self, query: str, limit: int, score_threshold: float) -> list[dict[str, Any]]:
        found = self.rv.recall(self.namespace, query[:2000], top_k=limit)
        return [{"content": hit.content, "score": hit.score, "metadata": {"id": hit.id}} for hit in found.results]

    def reset(self) -> None:
        self.rv.forget(self.namespace, ForgetRequest(tags=[CREW_TAG]))


def memory_tools(rv: RearviewClient, namespace: str) -> list[BaseTool]:
    """Rearview as three tools the agent may call, acting in `namespace`."""

    @tool("recall")
    def recall(query: str) -> str:
        """Search long-term memory for what was said or learnt before; `query` in natural language."""
        found = rv.recall(namespace, query, top_k=5)
        if found.no_relevant_memory or not found.results:
            return "Nothing relevant is remembered."
        return "\n".join(f"- {hit.content}" for hit in found.results)

    @tool("remember")
    def remember(content: str) -> str:
        """Store a self-contained sentence worth remembering later, e.g. 'The user prefers aisle seats'."""
        result = rv.write(namespace, content)
        return f"{result.status} as {result.id}"

    @tool("brief")
    def brief(task: str) -> str:
        """The preferences and lessons that apply to a task about to start; `task` says what you will do."""
        answer = rv.brief(namespace, {"task": task})
        if answer.no_relevant_memory:
            return "Nothing applies."
        return "\n".join(f"- {item.memory.content} (why: {item.why})" for item in answer.items)

    return [recall, remember, brief]


def chat_llm(base_url: str, model: str, api_key: str = "not-needed") -> LLM:
    """A model on any OpenAI-compatible chat completions endpoint, through CrewAI's native OpenAI provider."""
    return LLM(model=model, provider="openai", base_url=base_url, api_key=api_key)


def memory_crew(llm: LLM, rv: RearviewClient, namespace: str, request: str) -> Crew:
    """One agent and one task, with Rearview as the crew's external memory and as the agent's tools."""
    # CrewAI's first run offers to collect traces (a prompt that waits 20 s); decline it unless the user chose already.
    mark_first_execution_done(user_consented=False)
    planner = Agent(
        role="Personal assistant",
        goal="Do what the user asks the way they like it, remembering what they told you before",
        backstory="You assist one user over many conversations and keep track of their preferences.",
        llm=llm,
        tools=memory_tools(rv, namespace),
        verbose=False,
    )
    task = Task(description=request, expected_output="A short plan that respects the user's preferences", agent=planner)
    return Crew(
        agents=[planner],
        tasks=[task],
        external_memory=ExternalMemory(storage=RearviewStorage(rv, namespace)),
        verbose=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("request")
    args = parser.parse_args()
    llm = chat_llm(
        os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
        os.environ.get("OPENAI_MODEL", "qwen2.5:7b-instruct"),
        os.environ.get("OPENAI_API_KEY", "not-needed"),
    )
    url, token = os.environ.get("REARVIEW_URL", "http://127.0.0.1:8765"), os.environ.get("REARVIEW_TOKEN")
    with RearviewClient(url, token=token) as rv:
        print(memory_crew(llm, rv, os.environ.get("REARVIEW_NAMESPACE", "default"), args.request).kickoff())


if __name__ == "__main__":
    main()
