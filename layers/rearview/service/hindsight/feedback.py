"""Feedback: what an agent says of a memory it was given, and what that does to the memory.

- `useful`: the memory is confirmed: its confidence closes `USEFUL_STEP` of the gap to 1.0 (from what is
  left of it after decay), and `last_confirmed_at` is now, so the decay starts again;
- `not_useful`: it did not apply to this task: counted, nothing changes (it may apply to the next);
- `wrong`: it is not true: its confidence is multiplied by `WRONG_FACTOR`; with a correction, the
  correction is stored as a memory of the same kind and dimension that supersedes it (kept as history).
An episode's importance plays the part of a semantic memory's confidence (a correction of an episode is stored as
a fact citing it). Every verdict is counted per namespace and kind in the ledger; a `useful` on a memory that a
recall or a brief had returned (`access_count > 0`) counts as adopted: how induction quality is judged in practice.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

import numpy as np

from rearview.domain.brief import FeedbackRequest, FeedbackResult
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.namespaces import validate_namespace
from rearview.errors import InvalidInput, NotFound
from rearview.ids import new_ulid
from rearview.ports import Clock, Embedder, HindsightLedger, MemoryReader, MemoryWriter
from rearview.service.content_rules import check_content
from rearview.service.hindsight.signals import signals_of
from rearview.service.redaction import redact_request
from rearview.settings import RecallTuning


class FeedbackStore(MemoryReader, MemoryWriter, Protocol):
    """What feedback asks of the store: the memory, and its change applied."""


# Confidence a confirmed memory reaches at most (certainty is never claimed).
MAX_CONFIDENCE = 0.99
# Confidence of a correction: the agent's or user's explicit statement.
CORRECTION_CONFIDENCE = 0.9
# How much a useful episode gains in importance.
IMPORTANCE_STEP = 0.1
# `useful` closes this share of the gap to 1.0: confirmations add up, none reaches certainty at once.
USEFUL_STEP = 0.25
# `wrong` multiplies the confidence by this: one report halves it, so a memory reported wrong soon leaves briefs.
WRONG_FACTOR = 0.5


class FeedbackService:
    def __init__(
        self,
        store: FeedbackStore,
        ledger: HindsightLedger,
        embedder: Embedder,
        clock: Clock,
        recall_tuning: RecallTuning,
    ) -> None:
        self._store = store
        self._ledger = ledger
        self._embedder = embedder
        self._clock = clock
        self._half_life = recall_tuning.confidence_half_life_days

    def feedback(self, namespace: str, req: FeedbackRequest) -> FeedbackResult:
        validate_namespace(namespace)
        if req.correction is not None and req.verdict != "wrong":
            raise InvalidInput("correction: only with verdict 'wrong'", field="correction")
        if req.correction is not None:
            check_content(req.correction, "semantic", field="correction")
        req, _ = redact_request(req)  # the one redaction path every stored text takes
        memory = self._store.get(namespace, req.memory_id)
        now = self._clock.now()
        if memory is None or memory.expired(now):
            raise NotFound(f"memory_id: no memory {req.memory_id!r} in this namespace", field="memory_id")
        adopted = memory.access_count > 0
        updated: Memory
        if isinstance(memory, Fact):
            before, updated = self._fact(memory, req, now)
        else:
            before, updated = self._episode(memory, req)
        after = updated.confidence if isinstance(updated, Fact) else updated.importance
        changes = ChangeSet(
            upserts=[(updated.model_copy(update={"version": memory.version + 1}), None)], cause="feedback"
        )
        corrected_by = None
        if req.correction is not None:
            correction = self._correction(namespace, memory, req.correction, now)
            corrected_by = correction.id
            changes.upserts.append((correction, self._embed(correction.content)))
            if isinstance(updated, Fact) and updated.status == "active":
                superseded = updated.model_copy(
                    update={
                        "status": "superseded",
                        "superseded_by": correction.id,
                        "superseded_at": now,
                        "version": memory.version + 1,
                    }
                )
                changes.upserts[0] = (superseded, None)
        self._store.apply(namespace, changes)
        kind = memory.kind if isinstance(memory, Fact) else "episode"
        self._ledger.record_feedback(namespace, kind, req.verdict, adopted and req.verdict == "useful")
        return FeedbackResult(
            memory_id=memory.id,
            verdict=req.verdict,
            confidence_before=before,
            confidence_after=round(after, 4),
            adopted=adopted,
            corrected_by=corrected_by,
        )

    def _fact(self, fact: Fact, req: FeedbackRequest, now: datetime) -> tuple[float, Fact]:
        before = fact.confidence_at(now, self._half_life)
        if req.verdict == "useful":
            confidence = min(MAX_CONFIDENCE, before + (1.0 - before) * USEFUL_STEP)
            update = {
                "confidence": round(max(confidence, before), 4),
                "last_confirmed_at": now,
                "confirmations": fact.confirmations + 1,
            }
            return before, fact.model_copy(update=update)
        if req.verdict == "wrong":
            confidence = round(fact.confidence * WRONG_FACTOR, 4)
            return before, fact.model_copy(update={"confidence": confidence})
        return before, fact

    def _episode(self, episode: Episode, req: FeedbackRequest) -> tuple[float, Episode]:
        before = episode.importance
        if req.verdict == "useful":
            return before, episode.model_copy(update={"importance": min(1.0, before + IMPORTANCE_STEP)})
        if req.verdict == "wrong":
            return before, episode.model_copy(update={"importance": before * WRONG_FACTOR})
        return before, episode

    def _correction(self, namespace: str, wrong: Memory, text: str, now: datetime) -> Fact:
        """The correction as a semantic memory: the wrong one's kind and dimension, facets read from its text by
        the rules where they recognise it."""
        content = text
        kind = wrong.kind if isinstance(wrong, Fact) else "fact"
        dimension = wrong.dimension if isinstance(wrong, Fact) else None
        facets = {s.facet: s.value for s in signals_of(content) if s.kind == kind and s.dimension == dimension}
        return Fact(
            id=new_ulid(now),
            namespace=namespace,
            content=content,
            kind=kind,
            dimension=dimension,
            facets=facets,
            confidence=CORRECTION_CONFIDENCE,
            # A correction of an episode cites it (forgetting the episode forgets its correction); a correction of
            # a semantic memory cites nothing: re-inducing it from the wrong memory's episodes would undo it.
            provenance=[wrong.id] if isinstance(wrong, Episode) else [],
            induced_by="feedback",
            created_at=now,
            first_seen_at=now,
            last_confirmed_at=now,
        )

    def _embed(self, text: str) -> np.ndarray:
        return np.asarray(self._embedder.embed([text])[0], dtype=np.float32)
