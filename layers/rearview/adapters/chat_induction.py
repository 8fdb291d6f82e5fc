"""The conversation a model-backed inducer has about each cluster, whatever API carries it (an adapter gives a
`Chat`: one request, one `Reply`): the prompt of `induction_prompt`, the answer checked, one retry that tells the
model what was wrong, and every way it can fail recorded in `Induction.failed` for the rule inducer to state that
cluster instead. Nothing raises out of `induce_by_chat`: one bad cluster never costs the batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from rearview.adapters.induction_prompt import (
    SYSTEM_PROMPT,
    InvalidAnswer,
    Refusal,
    correction,
    parse_answer,
    user_message,
)
from rearview.domain.hindsight import EvidenceCluster, InducedMemory, Induction

logger = logging.getLogger(__name__)

# The reasons `Induction.failed` records (an adapter adds its API's own, such as "http 503").
TIMEOUT = "timeout"
UNAVAILABLE = "unavailable"
REFUSED = "refused"
INVALID = "invalid answer"
# After this many clusters in a row got no reply at all (a timeout, an unreachable server, an HTTP error), the rest
# of the batch is left to the rules untried: a server that is down would otherwise cost every cluster the client's
# whole timeout and retries, and a run that outlives its Lambda's time limit applies nothing.
GIVE_UP_AFTER = 3


@dataclass(frozen=True)
class Turn:
    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True)
class Reply:
    """A model's answer to one request: its text, the tokens the request cost (prompt and answer), whether the
    API says the model or a content filter declined, and whether it stopped at the token limit."""

    text: str
    tokens: int = 0
    refused: bool = False
    cut_off: bool = False


class NoReply(Exception):
    """A request that got no answer; `reason` is what `Induction.failed` records for its cluster."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# One request: the system prompt and the conversation so far, to the model's reply (raises NoReply).
Chat = Callable[[str, Sequence[Turn]], Reply]


@dataclass
class _Outcome:
    memory: InducedMemory | None = None
    tokens: int = 0
    failure: str | None = None
    unanswered: bool = False


def induce_by_chat(chat: Chat, clusters: Sequence[EvidenceCluster], *, name: str) -> Induction:
    """One result per cluster, in order; the clusters the model could not handle in `failed`, with the reason."""
    induction = Induction(memories=[])
    unanswered = 0
    for index, cluster in enumerate(clusters):
        if unanswered >= GIVE_UP_AFTER:
            outcome = _Outcome(failure=f"not tried after {GIVE_UP_AFTER} unanswered requests")
        else:
            outcome = _converse(chat, cluster)
            unanswered = unanswered + 1 if outcome.unanswered else 0
        induction.memories.append(outcome.memory)
        induction.tokens += outcome.tokens
        if outcome.failure is not None:
            induction.failed[index] = outcome.failure
            logger.warning(
                "%s: cluster %d of %d left to the rules: %s", name, index + 1, len(clusters), outcome.failure
            )
    return induction


def _converse(chat: Chat, cluster: EvidenceCluster) -> _Outcome:
    """Ask about one cluster; send an invalid answer back once with what was wrong."""
    outcome = _Outcome()
    turns = [Turn("user", user_message(cluster))]
    for attempt in (1, 2):
        try:
            reply = chat(SYSTEM_PROMPT, turns)
        except NoReply as exc:
            outcome.failure, outcome.unanswered = exc.reason, True
            return outcome
        outcome.tokens += reply.tokens
        if reply.refused:
            outcome.failure = REFUSED
            return outcome
        try:
            outcome.memory = parse_answer(reply.text, cluster)
            return outcome
        except Refusal:
            outcome.failure = REFUSED
            return outcome
        except InvalidAnswer as exc:
            problem = exc.problem + (" (the answer stopped at the token limit: keep it short)" if reply.cut_off else "")
            logger.info("invalid answer (attempt %d): %s", attempt, problem)
            # A turn may not be empty (Bedrock refuses a blank content block).
            turns += [Turn("assistant", reply.text.strip() or "(no answer)"), Turn("user", correction(problem))]
    outcome.failure = INVALID
    return outcome
