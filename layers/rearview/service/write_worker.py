"""The queue side of the asynchronous write path: a queued request becomes one `write_batch`.

The message body is JSON `{"namespace", "items", "accepted_at"}`, written by `queued_write_body` (the queue adapter)
and read by `parse_queued_write` (the worker), both in `rearview.domain.write`, so both ends agree on one format.
Every item carries the id it was accepted with, which makes a redelivered message harmless: `write_batch` answers
`duplicate_id` for what it stored before.

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

from dataclasses import dataclass
from typing import Literal

from rearview.domain.write import PoisonMessage, WriteResult, parse_queued_write, short_error
from rearview.errors import InvalidInput
from rearview.ports import DeadLetters
from rearview.service.write import WriteService

DeadLetterReason = Literal["poison", "invalid", "retries_exhausted"]


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
            return self._dead_letter(body, "invalid", short_error(exc), queued.namespace)
        except Exception as exc:
            if receive_count >= self._max_receive_count:
                return self._dead_letter(body, "retries_exhausted", short_error(exc), queued.namespace)
            raise
        return WorkOutcome(status="stored", namespace=queued.namespace, results=tuple(results))

    def _dead_letter(self, body: str, reason: DeadLetterReason, error: str, namespace: str | None) -> WorkOutcome:
        self._dead_letters.send(body, reason, error)
        return WorkOutcome(status="dead_lettered", namespace=namespace, reason=reason, error=error)
