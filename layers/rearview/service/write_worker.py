"""The queue side of the asynchronous write path: a queued request becomes one `write_batch`.

The message body is JSON `{"namespace", "items", "accepted_at"}`, written by `queued_write_body` (the queue adapter)
and read by `parse_queued_write` (the worker), so both ends agree on one format. Every item carries the id it was
accepted with, which makes a redelivered message harmless: `write_batch` answers `duplicate_id` for what it stored
before.

The dead-letter policy (`WriteWorker.process`):
- a body that is not a queued write (unparseable, wrong shape, invalid items) is poison: retrying cannot help, so it
  goes straight to the dead letters with reason `poison`;
- a request the write path refuses as invalid (a domain InvalidInput, e.g. content rules changed since it was
  accepted) goes straight to the dead letters with reason `invalid`;
- any other failure (throttling, a conflict, the index or embedder down) is retried by the queue, until the
  message's last allowed receive: then it goes to the dead letters with reason `retries_exhausted` and the error,
  instead of being moved by the queue's redrive policy without one.
A message sent to the dead letters counts as handled (deleted from the queue).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rearview.errors import InvalidInput, RearviewError
from rearview.model import MAX_BATCH, MemoryWrite, Namespace, UtcDatetime, WriteResult
from rearview.ports import DeadLetters
from rearview.service.write import WriteService

# Longest error text kept with a dead letter (SQS message attributes count against the 256 KiB message size).
MAX_ERROR_CHARS = 1000

DeadLetterReason = Literal["poison", "invalid", "retries_exhausted"]


class QueuedWrite(BaseModel):
    """One accepted write request as it travels through the queue."""

    model_config = ConfigDict(extra="forbid")

    namespace: Namespace
    items: list[MemoryWrite] = Field(min_length=1, max_length=MAX_BATCH)
    accepted_at: UtcDatetime


def queued_write_body(namespace: str, items: Sequence[MemoryWrite], accepted_at: datetime) -> str:
    """The message body of one accepted request (unset optional fields left out, to keep messages small)."""
    message = QueuedWrite(namespace=namespace, items=list(items), accepted_at=accepted_at)
    return message.model_dump_json(exclude_none=True, exclude_defaults=True)


class PoisonMessage(ValueError):
    """A message body that is not a queued write."""


def parse_queued_write(body: str) -> QueuedWrite:
    """The queued write in a message body; PoisonMessage if it is not one."""
    try:
        return QueuedWrite.model_validate_json(body)
    except (ValidationError, ValueError, RearviewError) as exc:
        raise PoisonMessage(_short(exc)) from exc


@dataclass(frozen=True)
class WorkOutcome:
    """What became of one message: stored (with the write results) or sent to the dead letters (with why)."""

    status: Literal["stored", "dead_lettered"]
    namespace: str | None = None
    results: tuple[WriteResult, ...] = ()
    reason: DeadLetterReason | None = None
    error: str | None = None


class WriteWorker:
    """Stores queued writes; parks the ones that cannot be stored in the dead letters, with the reason."""

    def __init__(self, writer: WriteService, dead_letters: DeadLetters, *, max_receive_count: int) -> None:
        self._writer = writer
        self._dead_letters = dead_letters
        self._max_receive_count = max_receive_count

    def process(self, body: str, receive_count: int) -> WorkOutcome:
        """Handle one message on its `receive_count`-th receive (1 for the first).

        Returns the outcome when the message is done with (stored, or dead-lettered); raises the write's error when
        the queue should deliver it again.
        """
        try:
            queued = parse_queued_write(body)
        except PoisonMessage as exc:
            return self._dead_letter(body, "poison", str(exc), None)
        try:
            results = self._writer.write_batch(queued.namespace, queued.items)
        except InvalidInput as exc:
            return self._dead_letter(body, "invalid", _short(exc), queued.namespace)
        except Exception as exc:
            if receive_count >= self._max_receive_count:
                return self._dead_letter(body, "retries_exhausted", _short(exc), queued.namespace)
            raise
        return WorkOutcome(status="stored", namespace=queued.namespace, results=tuple(results))

    def _dead_letter(self, body: str, reason: DeadLetterReason, error: str, namespace: str | None) -> WorkOutcome:
        self._dead_letters.send(body, reason, error)
        return WorkOutcome(status="dead_lettered", namespace=namespace, reason=reason, error=error)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ValidationError):
        # pydantic's message is long and multi-line; the first errors name the fields.
        text = "ValidationError: " + json.dumps(
            [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()[:5]], ensure_ascii=False
        )
    return text[:MAX_ERROR_CHARS]
