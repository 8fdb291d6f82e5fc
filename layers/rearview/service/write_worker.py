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

A write of a namespace erased after it was accepted (`ErasureMarks`) is dropped, not stored: the erase asked for
everything of the namespace to go, and a write still in the queue must not bring it back. It is counted and logged
(without its content), never dead-lettered: a dead-letter queue would keep what the erase removed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from rearview.domain.transfer import ImportRequest, ImportResult, QueuedImport
from rearview.domain.write import PoisonMessage, QueuedWrite, WriteResult, parse_queued_write, short_error
from rearview.errors import InvalidInput
from rearview.ports import DeadLetters, ErasureMarks
from rearview.service.write import WriteService

DeadLetterReason = Literal["poison", "invalid", "retries_exhausted"]


@dataclass(frozen=True)
class WorkOutcome:
    """What became of one message: stored (with the write results) or sent to the dead letters (with why)."""

    status: Literal["stored", "dead_lettered", "dropped_erased"]
    namespace: str | None = None
    results: tuple[WriteResult, ...] = ()
    reason: DeadLetterReason | None = None
    error: str | None = None


class WriteWorker:
    """Stores queued writes; parks the ones that cannot be stored in the dead letters, with the reason."""

    def __init__(
        self,
        writer: WriteService,
        dead_letters: DeadLetters,
        *,
        max_receive_count: int,
        erasures: ErasureMarks | None = None,
        restore: Callable[[str, ImportRequest], ImportResult] | None = None,
    ) -> None:
        self._writer = writer
        self._dead_letters = dead_letters
        self._max_receive_count = max_receive_count
        self._erasures = erasures
        # The import path (TransferService.restore, without a queue): a chunk of an accepted import.
        self._restore = restore

    def process(self, body: str, receive_count: int) -> WorkOutcome:
        """Handle one message on its `receive_count`-th receive (1 for the first).

        Returns the outcome when the message is done with (stored, or dead-lettered); raises the write's error when
        the queue should deliver it again.
        """
        try:
            queued = _parse(body) if self._restore is not None else parse_queued_write(body)
        except PoisonMessage as exc:
            return self._dead_letter(body, "poison", str(exc), None)
        if self._erased_since_accepted(queued.namespace, queued.accepted_at):
            return WorkOutcome(status="dropped_erased", namespace=queued.namespace)
        try:
            if isinstance(queued, QueuedImport):
                assert self._restore is not None
                self._restore(queued.namespace, ImportRequest(items=queued.restore))
                return WorkOutcome(status="stored", namespace=queued.namespace)
            results = self._writer.write_batch(queued.namespace, queued.items)
        except InvalidInput as exc:
            return self._dead_letter(body, "invalid", short_error(exc), queued.namespace)
        except Exception as exc:
            if receive_count >= self._max_receive_count:
                return self._dead_letter(body, "retries_exhausted", short_error(exc), queued.namespace)
            raise
        return WorkOutcome(status="stored", namespace=queued.namespace, results=tuple(results))

    def _erased_since_accepted(self, namespace: str, accepted_at: datetime) -> bool:
        if self._erasures is None:
            return False
        erased_at = self._erasures.erased_at(namespace)
        return erased_at is not None and accepted_at <= erased_at

    def _dead_letter(self, body: str, reason: DeadLetterReason, error: str, namespace: str | None) -> WorkOutcome:
        self._dead_letters.send(body, reason, error)
        return WorkOutcome(status="dead_lettered", namespace=namespace, reason=reason, error=error)


def _parse(body: str) -> QueuedWrite | QueuedImport:
    """A queued write, or a chunk of a queued import (its memories under `restore`); PoisonMessage otherwise."""
    if '"restore"' not in body:
        return parse_queued_write(body)
    try:
        return QueuedImport.model_validate_json(body)
    except ValueError as exc:
        raise PoisonMessage(short_error(exc)) from exc
