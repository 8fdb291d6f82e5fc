"""BedrockInducer: the Inducer port on Amazon Bedrock's Converse API (`bedrock-runtime` `converse`: any Bedrock chat
model, Claude, Nova, Llama, Mistral), with the prompt and answer checks the OpenAI-compatible inducer uses
(`induction_prompt`, `chat_induction`).

A guardrail or content filter that stops the answer (`stopReason` `guardrail_intervened` / `content_filtered`) is a
refusal; a timeout, throttling after botocore's retries or any other error marks that cluster failed for the rule
inducer to state. `induce` never raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    ReadTimeoutError,
)
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from rearview.adapters.chat_induction import TIMEOUT, UNAVAILABLE, NoReply, Reply, Turn, induce_by_chat
from rearview.adapters.induction_prompt import MAX_ANSWER_TOKENS
from rearview.domain.hindsight import EvidenceCluster, Induction

_REFUSED_STOPS = ("guardrail_intervened", "content_filtered")
# Bedrock's error codes that mean the same as an unanswered request anywhere; others are recorded by their code.
_ERROR_REASONS = {
    "ModelTimeoutException": TIMEOUT,
    "ServiceUnavailableException": UNAVAILABLE,
    "ModelNotReadyException": UNAVAILABLE,
    "InternalServerException": UNAVAILABLE,
    "ThrottlingException": "throttled",
}


class BedrockInducer:
    """States memories with a Bedrock chat model through a bedrock-runtime client (`aws_clients.boto3_client` gives
    it the settings' region, timeouts and retries); `name` says which model."""

    def __init__(self, model_id: str, *, client: Any, max_tokens: int = MAX_ANSWER_TOKENS) -> None:
        self.model_id = model_id
        self.name = f"bedrock:{model_id}"
        self.client = client
        self.max_tokens = max_tokens

    def induce(self, clusters: Sequence[EvidenceCluster]) -> Induction:
        return induce_by_chat(self._reply, clusters, name=self.name)

    def _reply(self, system: str, turns: Sequence[Turn]) -> Reply:
        try:
            response = self.client.converse(
                modelId=self.model_id,
                system=[{"text": system}],
                messages=[{"role": turn.role, "content": [{"text": turn.text}]} for turn in turns],
                inferenceConfig={"maxTokens": self.max_tokens, "temperature": 0.0},
            )
        except (ReadTimeoutError, ConnectTimeoutError):
            raise NoReply(TIMEOUT) from None
        except (BotocoreConnectionError, ConnectionClosedError):
            raise NoReply(UNAVAILABLE) from None
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code") or "ClientError")
            raise NoReply(_ERROR_REASONS.get(code, code)) from None
        except BotoCoreError as exc:
            raise NoReply(type(exc).__name__) from None
        blocks = ((response.get("output") or {}).get("message") or {}).get("content") or []
        usage = response.get("usage") or {}
        stop = response.get("stopReason")
        return Reply(
            text="".join(block.get("text", "") for block in blocks),
            tokens=int(usage.get("totalTokens") or usage.get("inputTokens", 0) + usage.get("outputTokens", 0)),
            refused=stop in _REFUSED_STOPS,
            cut_off=stop == "max_tokens",
        )
