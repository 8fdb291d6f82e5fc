"""LangChain tools over Rearview's HTTP API: `remember`, `recall` and `brief`, for any LangChain or LangGraph agent
(`create_react_agent(model, tools=rearview_tools(client, "acme:u-42"))`), acting in one namespace.

```python
from rearview.client import RearviewClient
from rearview.integrations.langchain_tools import rearview_tools

tools = rearview_tools(RearviewClient("http://127.0.0.1:8765"), "acme:u-42")
```

Each tool answers text a model reads: what was stored, the memories found with their dates and ids, or that nothing
relevant is remembered (say so rather than guess)."""

from __future__ import annotations

from typing import Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from rearview.client import RearviewClient
from rearview.domain.brief import BriefRequest
from rearview.domain.limits import MAX_TOP_K


class _Remember(BaseModel):
    content: str = Field(description="A self-contained sentence worth remembering, e.g. 'The user prefers aisle seats'")
    kind: Literal["event", "fact", "preference"] = Field(
        "event",
        description="'event' for something that happened, 'fact' for a lasting fact about the user or the world, "
        "'preference' for what the user wants (brief returns preferences before a task)",
    )


class _Recall(BaseModel):
    query: str = Field(description="What to recall, in natural language; may say when, e.g. 'last week'")
    top_k: int = Field(5, ge=1, le=MAX_TOP_K, description="How many memories at most")


class _Brief(BaseModel):
    task: str = Field(description="What you are about to do, e.g. 'book a flight to Lisbon'")
    tool: str | None = Field(None, description="The tool you will use, if any, e.g. 'flight search API'")


def rearview_tools(client: RearviewClient, namespace: str) -> list[BaseTool]:
    """The three memory tools over `client`, acting in `namespace`."""

    def remember(content: str, kind: str = "event") -> str:
        if kind == "event":
            result = client.write(namespace, content)
        else:
            result = client.write(namespace, content, layer="semantic", kind=kind)
        return f"{result.status} as {result.id}" + (f" (into {result.merged_into})" if result.merged_into else "")

    def recall(query: str, top_k: int = 5) -> str:
        found = client.recall(namespace, query, top_k=top_k)
        if found.no_relevant_memory or not found.results:
            return "Nothing relevant is remembered."
        return "\n".join(f"- {hit.content} ({hit.occurred_at:%Y-%m-%d}, id {hit.id})" for hit in found.results)

    def brief(task: str, tool: str | None = None) -> str:
        answer = client.brief(namespace, BriefRequest(task=task, tool=tool))
        if answer.no_relevant_memory or not answer.items:
            return "No preference or lesson applies."
        return "\n".join(
            f"- {item.memory.content} (why: {item.why}; confidence {item.confidence:.2f}; id {item.memory.id})"
            for item in answer.items
        )

    return [
        StructuredTool.from_function(
            remember,
            name="remember",
            description="Store something worth remembering: an event, a lasting fact, or a preference of the user.",
            args_schema=_Remember,
        ),
        StructuredTool.from_function(
            recall,
            name="recall",
            description="Search long-term memory for what was said, done or learnt before. 'Nothing relevant is "
            "remembered' means it is not known: say so instead of guessing.",
            args_schema=_Recall,
        ),
        StructuredTool.from_function(
            brief,
            name="brief",
            description="Before starting a task: the user's preferences and the lessons from earlier attempts that "
            "apply to it, best first, each with why it applies.",
            args_schema=_Brief,
        ),
    ]
