"""LlamaCppInducer: the Inducer port on any GGUF model file the user points to, run in this process by llama.cpp
(`llama-cpp-python`, the `local-llm` extra; `REARVIEW_INDUCER=llama_cpp`, `REARVIEW_INDUCER_MODEL_PATH=...`).

In-process rather than through a server: nothing to start or keep running, and llama.cpp constrains the answer to
the answer's JSON schema by a grammar, so even a very small model answers valid JSON (what it says is still
checked: `induction_prompt.parse_answer`, then consolidation's checker). The same models also run behind
`python -m llama_cpp.server` (OpenAI-compatible), for the `openai` inducer.

The model is loaded on the first cluster, once per process, under a lock (llama.cpp's context is not thread-safe).
"""

from __future__ import annotations

import copy
import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rearview.adapters.chat_induction import UNAVAILABLE, NoReply, Reply, Turn, induce_by_chat
from rearview.adapters.induction_prompt import ANSWER_SCHEMA, MAX_ANSWER_TOKENS
from rearview.domain.hindsight import EvidenceCluster, Induction
from rearview.errors import ConfigurationError

logger = logging.getLogger(__name__)

# The context the model is loaded with: a prompt of 40 episodes of 600 characters is about 6,000 tokens.
CONTEXT_TOKENS = 8192


class LlamaCppInducer:
    """States memories with the GGUF model at `model_path`; `name` says which file."""

    def __init__(self, model_path: Path, *, max_tokens: int = MAX_ANSWER_TOKENS, threads: int | None = None) -> None:
        if not model_path.is_file():
            raise ConfigurationError(
                f"inducer_model_path: no GGUF model file at {str(model_path)[:300]!r}", field="inducer_model_path"
            )
        self.model_path = model_path
        self.name = f"llama_cpp:{model_path.name}"
        self.max_tokens = max_tokens
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def induce(self, clusters: Sequence[EvidenceCluster]) -> Induction:
        return induce_by_chat(self._reply, clusters, name=self.name)

    def _loaded(self) -> Any:
        if self._model is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:  # the extra is not installed
                raise NoReply(f"{UNAVAILABLE}: llama-cpp-python is not installed ({exc})") from None
            self._model = Llama(
                model_path=str(self.model_path), n_ctx=CONTEXT_TOKENS, n_threads=self.threads, verbose=False
            )
        return self._model

    def _reply(self, system: str, turns: Sequence[Turn]) -> Reply:
        messages = [{"role": "system", "content": system}, *({"role": t.role, "content": t.text} for t in turns)]
        with self._lock:
            model = self._loaded()
            try:
                completion = model.create_chat_completion(
                    messages=messages,
                    temperature=0.0,
                    max_tokens=self.max_tokens,
                    response_format={"type": "json_object", "schema": _schema_for(turns)},
                )
            except ValueError as exc:  # a prompt longer than the context, among others
                raise NoReply(f"llama.cpp: {exc}"[:200]) from None
        choice = (completion.get("choices") or [{}])[0]
        usage = completion.get("usage") or {}
        return Reply(
            text=str((choice.get("message") or {}).get("content") or ""),
            tokens=int(usage.get("total_tokens") or 0),
            cut_off=choice.get("finish_reason") == "length",
        )


_EPISODE_ID = re.compile(r'"id": "([^"]+)"')


def _schema_for(turns: Sequence[Turn]) -> dict[str, Any]:
    """The answer's schema with the group's own episode ids as the only provenance the grammar lets through: a
    small model otherwise cites its worked example's."""
    ids = list(dict.fromkeys(_EPISODE_ID.findall(turns[0].text))) if turns else []
    if not ids:
        return ANSWER_SCHEMA
    schema = copy.deepcopy(ANSWER_SCHEMA)
    memory = schema["properties"]["memory"]["anyOf"][1]
    provenance = {"type": "array", "items": {"enum": ids}, "minItems": 1, "maxItems": len(ids)}
    memory["properties"]["provenance"] = provenance
    return schema
