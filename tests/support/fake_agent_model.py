"""A local fake OpenAI-compatible chat model for agent frameworks (the OpenAI Agents SDK, CrewAI) to run against
offline: `POST /v1/chat/completions` over real HTTP, answering each request with the next step of a script.

TEST DOUBLE, NOT A MODEL. A step either calls a tool (`ToolCall`: refused with a 400, as a model API refuses an
unknown tool, unless the request offers a tool of that name) or answers text (`Reply`), in which `{tool}` stands for
the content of the last tool result the request carries: so an answer shows what the tool gave the model. Every
request is recorded (`requests`), to check what a framework put in front of the model (its memory, its tools).

    with FakeAgentModel(ToolCall("recall", {"query": "seat"}), Reply("You like {tool}")) as model:
        ...  # point the framework at model.url
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from support.http_double import HttpAnswer, JsonHttpDouble, RecordedRequest


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    text: str


Step = ToolCall | Reply


class FakeAgentModel(JsonHttpDouble):
    """`url` is the base URL a client is given (`.../v1`); the script's steps answer the requests in order (the last
    one answers every request after it)."""

    def __init__(self, *steps: Step) -> None:
        super().__init__()
        self.steps = list(steps)
        self._ids = itertools.count(1)

    @property
    def url(self) -> str:
        return f"{self.root_url}/v1"

    def offered_tools(self, request: RecordedRequest) -> list[str]:
        return [t["function"]["name"] for t in request.body.get("tools") or [] if t.get("type") == "function"]

    def texts(self) -> list[str]:
        """Every message's text of every request, oldest first: what the model was shown."""
        return [_text(m) for r in self.requests for m in r.body.get("messages", [])]

    def answer(self, request: RecordedRequest) -> HttpAnswer:
        body = request.body
        if request.path != "/v1/chat/completions" or not isinstance(body, dict) or not body.get("messages"):
            return _error(404 if request.path != "/v1/chat/completions" else 400, "a chat completion is expected")
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        message: dict[str, Any]
        if isinstance(step, ToolCall):
            if step.name not in self.offered_tools(request):
                return _error(400, f"tool {step.name!r} is not among the request's tools")
            call = {"id": f"call_{next(self._ids)}", "type": "function",
                    "function": {"name": step.name, "arguments": json.dumps(step.arguments)}}  # fmt: skip
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            results = [_text(m) for m in body["messages"] if m.get("role") == "tool"]
            message = {"role": "assistant", "content": step.text.replace("{tool}", results[-1] if results else "")}
            finish = "stop"
        completion = {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": 1767225600,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        return HttpAnswer(200, completion)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _error(status: int, message: str) -> HttpAnswer:
    return HttpAnswer(status, {"error": {"message": message, "type": "invalid_request_error", "param": None}})
