"""The bulk door: a history of episodes loaded through the store's bulk path (`MemoryWriter.load_episodes`), each
with the vector its caller brings or embedded here in one batch.

A load is checked as a write is (the write path's own checks, the content rules, a secret in an id refused, every
text redacted before anything embeds or stores it), scores importance and skips what a write would skip, and
stores what a write would store for each episode: its context (the turn before it in its session, stored or
earlier in the load) and a vector of the same text the write path embeds. An id stored already is skipped, so a
load repeats safely. It does not merge a near-duplicate into a stored memory (a history has none to merge; write
through the write path where it may), and it does not chunk: a line is one episode.

Where writes are queued (AWS), the load is applied by the write function itself, so each line must bring its
vector: embedding a thousand texts does not fit in a request's time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

import numpy as np

from rearview.domain.bulk_load import EpisodeLoad, LoadRequest, LoadResult
from rearview.domain.episode_columns import EpisodeColumns
from rearview.domain.limits import MAX_EPISODE_CHARS
from rearview.domain.namespaces import validate_namespace
from rearview.domain.write import MemoryWrite
from rearview.errors import InvalidInput, MemoryTooLarge
from rearview.ids import new_ulid
from rearview.ports import Clock, Embedder, MemoryReader, MemoryWriter
from rearview.service.content_rules import score_importance
from rearview.service.expiry import with_expiry
from rearview.service.hindsight.outcomes import recognise_outcome
from rearview.service.write import WriteService, redact_write
from rearview.settings import WriteTuning


class LoadStore(MemoryReader, MemoryWriter, Protocol):
    """What a load asks of the store: which ids it holds, and the bulk insert."""


class _Line(NamedTuple):
    """A line the load keeps: its place in the request, the line redacted (with its id), its importance, and
    whether redaction changed it."""

    origin: int
    item: MemoryWrite
    importance: float
    redacted: bool


class BulkLoadService:
    def __init__(
        self, store: LoadStore, writer: WriteService, embedder: Embedder, clock: Clock, tuning: WriteTuning
    ) -> None:
        self._store = store
        # The write path's checks and its session contexts, so that a loaded episode is stored as a written one.
        self._writer = writer
        self._embedder = embedder
        self._clock = clock
        self._tuning = tuning

    def load(self, namespace: str, request: LoadRequest) -> LoadResult:
        """Store the request's episodes, or none of them: an invalid line refuses the request, naming its field."""
        validate_namespace(namespace)
        now = self._clock.now()
        items = request.items
        self._check(namespace, items, now)
        kept: list[_Line] = []
        low_importance = 0
        for i, raw in enumerate(items):
            item, kinds = redact_write(raw, f"items.{i}")
            item = with_expiry(item, now)
            importance = score_importance(
                item.content, layer="episodic", entities=item.entities, explicit=item.importance
            )
            if importance < self._tuning.importance_threshold:
                low_importance += 1
                continue
            kept.append(_Line(i, item.model_copy(update={"id": item.id or new_ulid(now)}), importance, bool(kinds)))
        stored = self._store.get_many(namespace, [line.item.id for line in kept if line.item.id is not None])
        for line in kept:
            # The same episode loaded again is skipped; another under its id is a conflict, as for a write.
            item = line.item
            WriteService.check_id_free(namespace, item, stored.get(item.id or ""), f"items.{line.origin}.id")
        fresh = [line for line in kept if line.item.id not in stored]
        result = LoadResult(
            namespace=namespace, loaded=0, skipped=len(kept) - len(fresh), low_importance=low_importance
        )
        if not fresh:
            return result
        origins = [line.origin for line in fresh]
        episodes = [line.item for line in fresh]
        contexts, vector_texts = self._writer.session_contexts(namespace, episodes, [e.content for e in episodes], now)
        vectors, embedded = self._vectors([items[i].vector for i in origins], vector_texts)
        columns = EpisodeColumns.of(
            id=[e.id for e in episodes],
            content=[e.content for e in episodes],
            occurred_at=[(e.occurred_at or now).timestamp() for e in episodes],
            created_at=[now.timestamp()] * len(episodes),
            entities=[e.entities for e in episodes],
            tags=[e.tags for e in episodes],
            importance=[line.importance for line in fresh],
            event_type=[e.event_type for e in episodes],
            outcome=[e.outcome for e in episodes],
            outcome_status=[e.outcome_status or recognise_outcome(e.outcome) for e in episodes],
            session_id=[e.session_id for e in episodes],
            context=contexts,
            redacted=[line.redacted for line in fresh],
            metadata=[e.metadata for e in episodes],
            source=[e.source for e in episodes],
            expires_at=[e.expires_at.timestamp() if e.expires_at else None for e in episodes],
        )
        self._store.load_episodes(namespace, columns, vectors)
        return result.model_copy(
            update={
                "loaded": len(episodes),
                "embedded": embedded,
                "redacted": sum(columns.redacted or ()),
                "ids": list(columns.id),
            }
        )

    def _check(self, namespace: str, items: Sequence[EpisodeLoad], now: datetime) -> None:
        """What refuses a load before anything is stored: what refuses a write, a semantic line, a text longer than
        one episode, an id given twice, a vector of another dimension (or missing where writes are queued)."""
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            prefix = f"items.{i}."
            if item.layer != "episodic":
                raise InvalidInput(
                    f"{prefix}layer: a load stores episodes; write semantic memories through the write path",
                    field=f"{prefix}layer",
                )
            if len(item.content) > MAX_EPISODE_CHARS:
                raise MemoryTooLarge(
                    f"{prefix}content: at most {MAX_EPISODE_CHARS} characters in a load, which stores a line as one "
                    f"episode (got {len(item.content)}); write a longer text through the write path, which chunks it",
                    field=f"{prefix}content",
                )
            if item.id is not None:
                if item.id in seen:
                    raise InvalidInput(
                        f"{prefix}id: {item.id!r} appears twice (items.{seen[item.id]} too)", field=f"{prefix}id"
                    )
                seen[item.id] = i
            self._check_vector(item.vector, f"{prefix}vector")
        self._writer.validate(namespace, items, "items", now)

    def _check_vector(self, vector: Sequence[float] | None, field: str) -> None:
        if vector is None:
            if self._writer.queued:
                raise InvalidInput(
                    f"{field}: required where writes are queued (the load is stored by this request, which has no "
                    f"time to embed): bring each episode's vector from {self._embedder.name}",
                    field=field,
                )
            return
        dim = self._embedder.dim
        if len(vector) != dim:
            raise InvalidInput(
                f"{field}: {dim} values, the dimension of this deployment's embedder ({self._embedder.name}); "
                f"got {len(vector)}",
                field=field,
            )
        array = np.asarray(vector, dtype=np.float64)
        if not np.isfinite(array).all() or not np.any(array):
            raise InvalidInput(f"{field}: every value finite, and not all zero", field=field)

    def _vectors(self, given: Sequence[Sequence[float] | None], texts: list[str]) -> tuple[np.ndarray, int]:
        """One unit-length float32 row per episode: the caller's, or this embedder's of its text (in one batch)."""
        missing = [i for i, vector in enumerate(given) if vector is None]
        out = np.zeros((len(given), self._embedder.dim), dtype=np.float32)
        if missing:
            out[missing] = self._embedder.embed([texts[i] for i in missing])
        brought = [i for i, vector in enumerate(given) if vector is not None]
        if brought:
            rows = np.asarray([given[i] for i in brought], dtype=np.float64)
            out[brought] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
        return out, len(missing)
