"""A local fake OpenAI-compatible server over real HTTP (`POST /v1/chat/completions`, stdlib http.server in a
thread), for the real `OpenAICompatibleInducer` and the real `openai` client to talk to, in tests and benchmarks.

TEST DOUBLE, NOT A MODEL. Each request takes the next step of a script (`tests/support/scripted_model.py`: a valid
answer, one in a code fence, invalid JSON, a refusal, `finish_reason: content_filter`, a delay past the client's
timeout, an HTTP error, a recorded response); once the script is spent it answers *as a model would* from the
cluster in the prompt, which means: it parses the episodes out of the prompt's JSON layout and answers with the
memory the deterministic `RuleInducer` states for them, with invalid JSON, timeouts and refusals injected at the
rates of `Faults` (seeded). So figures measured through it measure the plumbing (prompt, HTTP, parsing, retry) and
the fallback to the rules, not a model's judgement.

    with FakeOpenAIServer(ScriptedModel(faults=Faults(invalid_json=0.1, seed=7))) as server:
        inducer = OpenAICompatibleInducer(OpenAISettings(base_url=server.url, model="fake"))
        ...
        server.prompts()  # the first user message of every request
"""

from __future__ import annotations

import itertools
from typing import Any

from support.http_double import HttpAnswer, JsonHttpDouble, RecordedRequest
from support.scripted_model import ScriptedModel, Step, load_recorded, usage_of

_FINISH_REASONS = {"stop": "stop", "length": "length", "filtered": "content_filter"}
# What LM Studio answers to `response_format: {"type": "json_object"}`, for the server that rejects it.
RESPONSE_FORMAT_REJECTED = "'response_format.type' must be 'json_schema' or 'text'"


class FakeOpenAIServer(JsonHttpDouble):
    """`url` is the base URL a client is given (`.../v1`). `rejects_response_format` answers 400 to a request that
    asks for JSON mode, as servers without it do."""

    def __init__(self, model: ScriptedModel | None = None, *, rejects_response_format: bool = False) -> None:
        super().__init__()
        self.model = model or ScriptedModel()
        self.rejects_response_format = rejects_response_format
        self._ids = itertools.count(1)

    @property
    def url(self) -> str:
        return f"{self.root_url}/v1"

    def script(self, *steps: Step) -> None:
        self.model.script(*steps)

    def prompts(self) -> list[str]:
        """The first user message of every request (the cluster's layout), oldest first."""
        return [_texts(r.body["messages"], "user")[0] for r in self.requests]

    def answer(self, request: RecordedRequest) -> HttpAnswer:
        body = request.body
        if request.path != "/v1/chat/completions":
            return _error(404, f"no route {request.path}")
        if not isinstance(body, dict) or not body.get("model") or not body.get("messages"):
            return _error(400, "model and messages are required")
        if self.rejects_response_format and "response_format" in body:
            return _error(400, RESPONSE_FORMAT_REJECTED)
        step = self.model.next_step(_texts(body["messages"], "user")[0])
        if step.status != 200:
            return HttpAnswer(step.status, _error(step.status, "scripted failure").body, {"retry-after-ms": "10"})
        if step.recorded is not None:
            return HttpAnswer(200, load_recorded(step.recorded), delay=step.delay)
        if step.raw is not None:
            return HttpAnswer(200, step.raw.encode(), delay=step.delay)
        text = step.text or ""
        prompt_tokens, answer_tokens = usage_of(_texts(body["messages"]), text)
        completion = {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": 1767225600,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": _FINISH_REASONS[step.finish],
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": answer_tokens,
                "total_tokens": prompt_tokens + answer_tokens,
            },
        }
        return HttpAnswer(200, completion, delay=step.delay)


def _texts(messages: list[dict[str, Any]], role: str | None = None) -> list[str]:
    return [str(m.get("content") or "") for m in messages if role is None or m.get("role") == role]


def _error(status: int, message: str) -> HttpAnswer:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return HttpAnswer(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})
