"""OpenAICompatibleInducer: the Inducer port on any OpenAI-compatible chat-completions endpoint (Ollama, vLLM,
LM Studio, llama.cpp's server, OpenAI), through the official `openai` client (the `llm` extra).

One request per cluster, one more when its answer must be corrected (`chat_induction`). A timeout, an unreachable
server or an HTTP error (after the client's own retries) marks that cluster failed for the rule inducer to state;
`induce` never raises. JSON mode (`response_format`) is asked for but not relied on: every answer is checked the
same, a server that ignores the parameter is fine, and one that rejects it is asked again without it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from openai import APIConnectionError, APIError, APIStatusError, APITimeoutError, BadRequestError, OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.completion_usage import CompletionUsage

from rearview.adapters.chat_induction import TIMEOUT, UNAVAILABLE, NoReply, Reply, Turn, induce_by_chat
from rearview.domain.hindsight import EvidenceCluster, Induction
from rearview.settings import OpenAISettings

logger = logging.getLogger(__name__)

# The client's own retries of a timeout, a connection error, a 429 or a 5xx, before the cluster falls back to the
# rules.
MAX_RETRIES = 2
# An answer is one JSON object of about 100 tokens: the cap stops a model that rambles, not a good answer.
MAX_ANSWER_TOKENS = 400


class OpenAICompatibleInducer:
    """States memories with the chat model `settings.model` at `settings.base_url`; `name` says which model."""

    def __init__(
        self,
        settings: OpenAISettings,
        *,
        client: OpenAI | None = None,
        max_retries: int = MAX_RETRIES,
        max_tokens: int = MAX_ANSWER_TOKENS,
    ) -> None:
        self.model = settings.model
        self.name = f"openai:{settings.model}"
        self.max_tokens = max_tokens
        self.client = client or OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            timeout=settings.timeout_seconds,
            max_retries=max_retries,
        )
        # Cleared when the server rejects `response_format` (LM Studio takes only a JSON schema there).
        self.json_mode = True

    def induce(self, clusters: Sequence[EvidenceCluster]) -> Induction:
        return induce_by_chat(self._reply, clusters, name=self.name)

    def _reply(self, system: str, turns: Sequence[Turn]) -> Reply:
        messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": system}]
        messages += [_message(turn) for turn in turns]
        try:
            completion = self._complete(messages)
        except APITimeoutError:
            raise NoReply(TIMEOUT) from None
        except APIConnectionError:
            raise NoReply(UNAVAILABLE) from None
        except APIStatusError as exc:
            raise NoReply(f"http {exc.status_code}") from None
        except APIError as exc:
            raise NoReply(f"bad response: {type(exc).__name__}") from None
        except ValueError:
            # A 200 whose body is not JSON: a proxy's page, or a base URL that is not the API's.
            raise NoReply("bad response: not JSON") from None
        return _reply_of(completion)

    def _complete(self, messages: list[ChatCompletionMessageParam]) -> ChatCompletion:
        if self.json_mode:
            try:
                return self.client.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    temperature=0.0,
                    max_tokens=self.max_tokens,
                    response_format={"type": "json_object"},
                )
            except BadRequestError as exc:
                if "response_format" not in str(exc):
                    raise
                logger.info("%s: the server rejects response_format; asking without it from now on", self.name)
                self.json_mode = False
        return self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=0.0, max_tokens=self.max_tokens
        )


def _reply_of(completion: ChatCompletion) -> Reply:
    """The first choice's answer. The client builds the response without validating it (servers differ), so a
    field a server left out reads as absent, and an answer without text is sent back like any invalid one."""
    tokens = _tokens(getattr(completion, "usage", None))
    choices = getattr(completion, "choices", None) or []
    if not choices:
        return Reply(text="", tokens=tokens)
    finish = getattr(choices[0], "finish_reason", None)
    message = getattr(choices[0], "message", None)
    return Reply(
        text=str(getattr(message, "content", None) or ""),
        tokens=tokens,
        # A content filter stopped the answer, or the model declined in the API's refusal field.
        refused=finish == "content_filter" or bool(getattr(message, "refusal", None)),
        cut_off=finish == "length",
    )


def _message(turn: Turn) -> ChatCompletionMessageParam:
    if turn.role == "assistant":
        return {"role": "assistant", "content": turn.text}
    return {"role": "user", "content": turn.text}


def _tokens(usage: CompletionUsage | None) -> int:
    """Prompt and answer tokens, from the total or its parts (servers differ in which they fill)."""
    if usage is None:
        return 0
    total = getattr(usage, "total_tokens", None)
    return int(total or (getattr(usage, "prompt_tokens", None) or 0) + (getattr(usage, "completion_tokens", None) or 0))
