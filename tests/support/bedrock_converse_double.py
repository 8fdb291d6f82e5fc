"""A TEST DOUBLE of bedrock-runtime's Converse API (`POST /model/{modelId}/converse`) over real HTTP on 127.0.0.1,
for the real `BedrockInducer` and a real botocore client (pointed at it by `endpoint_url`) to talk to.

It checks what the real API checks that an adapter could get wrong (a system prompt of text blocks, messages that
alternate from a user turn, no blank text block, maxTokens of at least 1) and answers with the steps of a
`ScriptedModel` (tests/support/scripted_model.py): scripted or recorded answers, guardrail stops, errors with
Bedrock's error types, delays; then, like the OpenAI double, answers from the rule inducer. It is not a model.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from support.http_double import HttpAnswer, JsonHttpDouble, RecordedRequest
from support.scripted_model import ScriptedModel, Step, load_recorded, usage_of

_PATH = re.compile(r"^/model/(?P<model>[^/]+)/converse$")
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "filtered": "guardrail_intervened"}
_ERROR_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


class BedrockConverseDouble(JsonHttpDouble):
    """`url` is the endpoint URL a bedrock-runtime client is given; `models()` the model id of every request."""

    def __init__(self, model: ScriptedModel | None = None) -> None:
        super().__init__()
        self.model = model or ScriptedModel()

    @property
    def url(self) -> str:
        return self.root_url

    def script(self, *steps: Step) -> None:
        self.model.script(*steps)

    def models(self) -> list[str]:
        return [unquote(m.group("model")) for r in self.requests if (m := _PATH.match(r.path))]

    def answer(self, request: RecordedRequest) -> HttpAnswer:
        if not _PATH.match(request.path):
            return _error(404, f"no route {request.path}")
        problem = _invalid(request.body)
        if problem:
            return _error(400, problem)
        messages = request.body["messages"]
        step = self.model.next_step(messages[0]["content"][0]["text"])
        if step.status != 200:
            return _error(step.status, "scripted failure")
        if step.recorded is not None:
            return HttpAnswer(200, load_recorded(step.recorded), delay=step.delay)
        if step.raw is not None:
            return HttpAnswer(200, step.raw.encode(), delay=step.delay)
        text = step.text or ""
        prompts = [b["text"] for b in request.body.get("system", [])]
        prompts += [b["text"] for m in messages for b in m["content"]]
        input_tokens, output_tokens = usage_of(prompts, text)
        converse = {
            "output": {"message": {"role": "assistant", "content": [{"text": text}] if text else []}},
            "stopReason": _STOP_REASONS[step.finish],
            "usage": {
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
                "totalTokens": input_tokens + output_tokens,
            },
            "metrics": {"latencyMs": 1 + int(step.delay * 1000)},
        }
        return HttpAnswer(200, converse, delay=step.delay)


def _invalid(body: Any) -> str | None:
    """What the real Converse API would reject in the request, or None."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    system = body.get("system", [])
    if not all(isinstance(b, dict) and str(b.get("text", "")).strip() for b in system):
        return "system: text blocks, none blank"
    messages = body.get("messages") or []
    roles = [m.get("role") for m in messages]
    if not roles or roles[0] != "user" or any(a == b for a, b in zip(roles, roles[1:], strict=False)):
        return "messages: a conversation must start with a user message and alternate user and assistant"
    for m in messages:
        if not m.get("content") or not all(str(b.get("text", "")).strip() for b in m["content"]):
            return "messages: a text content block must not be blank"
    max_tokens = (body.get("inferenceConfig") or {}).get("maxTokens", 1)
    if not isinstance(max_tokens, int) or max_tokens < 1:
        return "inferenceConfig.maxTokens: at least 1"
    return None


def _error(status: int, message: str) -> HttpAnswer:
    kind = _ERROR_TYPES.get(status, "InternalServerException")
    return HttpAnswer(status, {"message": message}, {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/"})
