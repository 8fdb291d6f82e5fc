"""The write path: validate, redact, score importance, then insert, merge a near-duplicate, or supersede.

A batch is planned item by item (each item sees the ones before it) and applied as one ChangeSet, so a batch is
stored whole or not at all. Idempotency: an id written twice is stored once, and a write that merged, sent again
for the same time, confirms its memory once (`_said_again`).

With a WriteQueue (the AWS backend), `accept` validates a request exactly as `write_batch` does, assigns the ids and
times now, and queues it; a worker later calls `write_batch` with the same items, so a redelivered message stores
nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import numpy as np

from rearview.domain.changes import ChangeSet
from rearview.domain.limits import MAX_CHUNKS, MAX_EPISODE_CHARS
from rearview.domain.memory import MAX_EPISODE_SESSIONS, Episode, Fact, Memory
from rearview.domain.namespaces import validate_namespace
from rearview.domain.search import Candidate, MemoryFilter
from rearview.domain.write import MemoryWrite, WriteResult
from rearview.errors import ConfigurationError, IdConflict, InvalidInput, MemoryTooLarge
from rearview.ids import new_ulid
from rearview.ports import Clock, Embedder, MemoryReader, MemoryWriter, SearchIndex, WriteQueue
from rearview.service.chunking import MAX_PARENT_ID_CHARS, chunk_id, chunk_text
from rearview.service.content_rules import check_content, score_importance
from rearview.service.contradiction import Scale, judge, related_similarity
from rearview.service.expiry import check_expiry, with_expiry
from rearview.service.hindsight.outcomes import recognise_outcome
from rearview.service.redaction import redact_request
from rearview.service.same_memory import says_the_same
from rearview.service.write_plan import WritePlan
from rearview.settings import WriteTuning
from rearview.text_analysis import asks_question, without_speaker_label


class WriteStore(MemoryReader, MemoryWriter, Protocol):
    """What the write path asks of the store: near-duplicates and the active fact of a dimension, one ChangeSet
    applied."""


# How many stored nearest neighbours are checked for a near-duplicate of a new memory.
_DEDUP_NEIGHBOURS = 3
# How many nearest facts are checked for contradiction with a new fact.
_CONTRADICTION_NEIGHBOURS = 5


@dataclass(frozen=True)
class _Chunk:
    """Where a piece of a long write stands among its chunks (`rearview.service.chunking`)."""

    parent_id: str
    index: int
    count: int
    # The whole text's importance, which every chunk takes (a chunk is neither skipped nor merged on its own).
    importance: float


@dataclass(frozen=True)
class _Piece:
    """What one item of a write is stored as: itself, or (a long text) one of its chunks."""

    origin: int  # the item's position in the request
    item: MemoryWrite  # redacted, with its expiry as a time, and (a chunk) the chunk's text and id
    redacted: bool
    chunk: _Chunk | None = None


@dataclass(frozen=True)
class _Prepared:
    """One piece of a write, ready to plan: its redacted content, its session context, its vector, and the nearest
    stored memories of its layer."""

    item: MemoryWrite
    content: str
    context: str
    redacted: bool
    vector: np.ndarray
    neighbours: list[Candidate]
    field: str  # where its id is, for errors: `items.3.id`, or `id` for a single write
    chunk: _Chunk | None = None


class WriteService:
    def __init__(
        self,
        store: WriteStore,
        index: SearchIndex,
        embedder: Embedder,
        clock: Clock,
        tuning: WriteTuning,
        queue: WriteQueue | None = None,
        on_stored: Callable[[str, list[Episode], list[str]], None] | None = None,
    ) -> None:
        self._store = store
        # Told of the episodes each write stored or merged into (after they are stored), and of those to extract
        # from: the hindsight triggers.
        self.on_stored = on_stored
        self._index = index
        self._embedder = embedder
        self._clock = clock
        self._tuning = tuning
        self._queue = queue

    @property
    def queued(self) -> bool:
        """True if writes go through a queue (`accept`) rather than straight to the store."""
        return self._queue is not None

    def submit(self, namespace: str, items: Sequence[MemoryWrite], field_prefix: str = "items") -> list[WriteResult]:
        """Write through the queue when one is configured (`accepted`, stored later by the worker), else now."""
        if self.queued:
            return self.accept(namespace, items, field_prefix=field_prefix)
        return self.write_batch(namespace, items, field_prefix=field_prefix)

    # --- public -----------------------------------------------------------------------------------------------

    def write(self, namespace: str, item: MemoryWrite) -> WriteResult:
        return self.write_batch(namespace, [item], field_prefix="")[0]

    def write_batch(
        self, namespace: str, items: Sequence[MemoryWrite], field_prefix: str = "items"
    ) -> list[WriteResult]:
        """Write items in one transaction. Any invalid item rejects the whole batch before anything is stored."""
        now = self._clock.now()
        self.validate(namespace, items, field_prefix, now)
        # Every text field is redacted before it is chunked, embedded, stored or planned against anything.
        pieces = [piece for i, item in enumerate(items) for piece in self._pieces(i, item, now, _item(field_prefix, i))]
        stored = [piece.item for piece in pieces]
        texts = [item.content for item in stored]
        contexts, vector_texts = self.session_contexts(namespace, stored, texts, now)
        vectors = self._embedder.embed(vector_texts)
        neighbours = self._stored_neighbours(namespace, stored, vectors, now)
        prepared = [
            _Prepared(
                p.item,
                p.item.content,
                contexts[i],
                p.redacted,
                vectors[i],
                neighbours[i],
                _field(field_prefix, p.origin),
                p.chunk,
            )
            for i, p in enumerate(pieces)
        ]
        plan = WritePlan(stored=self._stored_under_ids(namespace, [p.item for p in pieces]))
        planned = [self._plan_one(namespace, each, now, plan) for each in prepared]
        if plan.upserts:
            self._store.apply(namespace, ChangeSet(upserts=list(plan.upserts.values())))
            episodes = [m for m, _ in plan.upserts.values() if isinstance(m, Episode)]
            if episodes and self.on_stored is not None:
                self.on_stored(namespace, episodes, _to_extract(pieces, planned, episodes))
        return _per_item(len(items), pieces, planned)

    def _pieces(self, origin: int, raw: MemoryWrite, now: datetime, field: str = "") -> list[_Piece]:
        """The item redacted (a secret in an id refused naming `field`), with its expiry as a time; an episodic text
        too long for one episode as its chunks."""
        item, kinds = redact_write(raw, field)
        item = with_expiry(item, now)
        if item.layer != "episodic" or len(item.content) <= MAX_EPISODE_CHARS:
            return [_Piece(origin, item, bool(kinds))]
        parts = chunk_text(item.content)
        if len(parts) > MAX_CHUNKS:
            raise MemoryTooLarge(
                f"content: splits into {len(parts)} chunks, at most {MAX_CHUNKS}; send a shorter text", field="content"
            )
        parent = item.id or new_ulid(now)
        importance = score_importance(item.content, layer="episodic", entities=item.entities, explicit=item.importance)
        return [
            _Piece(
                origin,
                item.model_copy(update={"content": part, "id": chunk_id(parent, index)}),
                bool(kinds),
                _Chunk(parent, index, len(parts), importance),
            )
            for index, part in enumerate(parts)
        ]

    def accept(self, namespace: str, items: Sequence[MemoryWrite], field_prefix: str = "items") -> list[WriteResult]:
        """Validate like `write_batch`, then queue the items for a worker and answer `accepted` with their ids.

        Nothing invalid is ever accepted. Each item gets its id (the caller's, or a new ULID) and its occurred_at
        (default: now, the time it was submitted, not the time a worker gets to it) before it is queued. Items
        under the importance threshold are answered `skipped` here and never queued.
        """
        if self._queue is None:
            raise ConfigurationError("write queue: not configured; use write_batch", field="write_queue_url")
        now = self._clock.now()
        self.validate(namespace, items, field_prefix, now)
        # Redacted here, before the queue: SQS, the dead-letter queue and the worker never see a raw secret. A long
        # text is queued whole (the worker chunks it, under the id given here).
        redacted = [redact_write(raw, _item(field_prefix, i)) for i, raw in enumerate(items)]
        stored = self._stored_under_ids(namespace, [item for item, _ in redacted])
        queued: list[MemoryWrite] = []
        results: list[WriteResult] = []
        for i, (item, kinds) in enumerate(redacted):
            item = with_expiry(item, now)
            if item.id is not None:
                # A long text's id is its first chunk's: the same text sent again finds that chunk stored.
                first = (
                    item.model_copy(update={"content": chunk_text(item.content)[0]})
                    if item.layer == "episodic"
                    else item
                )
                self.check_id_free(namespace, first, stored.get(item.id), _field(field_prefix, i))
            memory_id = item.id or new_ulid(now)
            importance = score_importance(
                item.content, layer=item.layer, entities=item.entities, explicit=item.importance
            )
            if importance < self._tuning.importance_threshold:
                results.append(
                    WriteResult(
                        id=memory_id,
                        status="skipped",
                        reason="low_importance",
                        redacted=bool(kinds),
                        importance=importance,
                    )
                )
                continue
            queued.append(item.model_copy(update={"id": memory_id, "occurred_at": item.occurred_at or now}))
            results.append(WriteResult(id=memory_id, status="accepted", redacted=bool(kinds), importance=importance))
        if queued:
            self._queue.send(namespace, queued)
        return results

    def _stored_under_ids(self, namespace: str, items: Sequence[MemoryWrite]) -> dict[str, Memory]:
        """The stored memories under the items' ids, in one read (nothing is applied before they are checked)."""
        return self._store.get_many(namespace, list(dict.fromkeys(item.id for item in items if item.id)))

    def validate(self, namespace: str, items: Sequence[MemoryWrite], field_prefix: str, now: datetime) -> None:
        """The checks every write passes before anything is stored or queued (a bad item rejects the request)."""
        validate_namespace(namespace)
        for i, item in enumerate(items):
            prefix = f"{field_prefix}.{i}." if field_prefix else ""
            check_content(item.content, item.layer, field=f"{prefix}content", chunked=True)
            check_expiry(item, now, prefix)
            if len(item.content) > MAX_EPISODE_CHARS and item.id is not None and len(item.id) > MAX_PARENT_ID_CHARS:
                raise InvalidInput(
                    f"{prefix}id: at most {MAX_PARENT_ID_CHARS} characters for a text stored as chunks "
                    f"(their ids add '#<n>'; got {len(item.id)})",
                    field=f"{prefix}id",
                )
            semantic_only = {"dimension": item.dimension, "confidence": item.confidence, "kind": item.kind}
            episodic_only = {
                "outcome": item.outcome,
                "outcome_status": item.outcome_status,
                "event_type": item.event_type,
                "extract": item.extract or None,
            }
            wrong = semantic_only if item.layer == "episodic" else episodic_only
            for name, value in wrong.items():
                if value is not None:
                    owner = "semantic" if item.layer == "episodic" else "episodic"
                    raise InvalidInput(f"{prefix}{name}: only for {owner} memories", field=f"{prefix}{name}")

    # --- planning ---------------------------------------------------------------------------------------------

    def session_contexts(
        self, namespace: str, items: Sequence[MemoryWrite], texts: list[str], now: datetime
    ) -> tuple[list[str], list[str]]:
        """Each item's context and the text its vector embeds. The context: with `context_turns` > 0, the text of
        the episodes just before an episode in its session (stored, or earlier in the batch), else "". An episode
        is embedded with its context and keyword search matches the context at a lower weight (contextual
        indexing): a reply such as "Yes, twice last year!" means nothing alone, and is found by the question it
        answers. The embedded text leaves out the speaker labels ("Ana: ...") naming a turn's own entities: in a chat
        of short turns the name would outweigh what was said (bench/RESULTS.md, "Off by default: kept or gone")."""
        turns = self._tuning.context_turns
        contexts: list[str] = []
        embedded: list[str] = []
        previous: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {}
        for item, text in zip(items, texts, strict=True):
            own = without_speaker_label(text, item.entities)
            session = item.session_id
            if turns <= 0 or item.layer != "episodic" or not session:
                contexts.append("")
                embedded.append(own)
                continue
            if session not in previous:
                previous[session] = self._stored_session_tail(namespace, session, item.occurred_at or now, turns)
            before = previous[session][-turns:]
            contexts.append("\n".join(said for said, _, _ in before))
            embedded.append(
                "\n".join([*(said for _, said, _ in before), own]) if self._embeds_context(item, before) else own
            )
            previous[session].append((text, own, tuple(item.entities)))
        return contexts, embedded

    def _embeds_context(self, item: MemoryWrite, before: list[tuple[str, str, tuple[str, ...]]]) -> bool:
        """Whether an episode's vector carries its context (`embed_context`): always, never, or for a reply, a turn
        whose previous turn asks a question and was said by someone else."""
        mode = self._tuning.embed_context
        if mode != "replies" or not before:
            return mode == "all" and bool(before)
        content, _, speakers = before[-1]
        # Without speakers on either turn, a question's next turn is taken as its answer.
        return asks_question(content) and (set(speakers) != set(item.entities) or not item.entities)

    def _stored_session_tail(
        self, namespace: str, session: str, before: datetime, turns: int
    ) -> list[tuple[str, str, tuple[str, ...]]]:
        """The last `turns` stored episodes of a session before a time (within a day): (content, embedded text,
        entities)."""
        earlier = self._store.list_memories(
            namespace,
            MemoryFilter(layers=("episodic",), session_id=session, since=before - timedelta(days=1), until=before),
        )
        return [
            (m.content, without_speaker_label(m.content, entities), tuple(entities))
            for m in earlier[-turns:]
            for entities in [getattr(m, "entities", [])]
        ]

    def _stored_neighbours(
        self, namespace: str, items: Sequence[MemoryWrite], vectors: np.ndarray, now: datetime
    ) -> list[list[Candidate]]:
        """The nearest unexpired stored memories of each item's layer (near-duplicate candidates), in one pass per
        layer where the index can batch."""
        found: list[list[Candidate]] = [[] for _ in items]
        for layer in ("episodic", "semantic"):
            rows = [i for i, item in enumerate(items) if item.layer == layer]
            if not rows:
                continue
            flt = MemoryFilter(layers=(layer,), alive_at=now)
            batch = self._index.vector_search_many(namespace, vectors[rows], flt, _DEDUP_NEIGHBOURS)
            for i, cands in zip(rows, batch, strict=True):
                found[i] = cands
        return found

    def _plan_one(self, namespace: str, prepared: _Prepared, now: datetime, plan: WritePlan) -> WriteResult:
        """Plan one item: stored already (by id), skipped, merged into a near-duplicate, or inserted. A chunk of a
        long text is never merged: it is part of its text, not a memory said again."""
        item, redacted = prepared.item, prepared.redacted
        if item.id is not None:
            existing = plan.pending.get(item.id) or plan.stored.get(item.id)
            if existing is not None:
                self.check_id_free(namespace, item, existing, prepared.field)
                return WriteResult(id=item.id, status="stored", reason="duplicate_id", redacted=redacted)
        if prepared.chunk is not None:
            importance = prepared.chunk.importance
        else:
            importance = score_importance(
                prepared.content, layer=item.layer, entities=item.entities, explicit=item.importance
            )
        if importance < self._tuning.importance_threshold:
            return WriteResult(
                id=item.id or new_ulid(now),
                status="skipped",
                reason="low_importance",
                redacted=redacted,
                importance=importance,
            )
        duplicate = self._near_duplicate(namespace, prepared, plan) if prepared.chunk is None else None
        if duplicate is not None:
            target, how = duplicate.id, "same_occurrence"
            if not _said_again(duplicate, item):
                merged = self._merge(duplicate, item, now)
                plan.update(merged)
                target, how = merged.id, "near_duplicate"
            return _merged(target, how, redacted, importance)
        memory = self._new_memory(namespace, prepared, importance, now)
        superseded: list[str] = []
        reason = None
        if isinstance(memory, Fact):
            judged = self._judged(namespace, memory, prepared.vector, plan)
            kept = next(((old, verdict) for old, verdict in judged if verdict in ("confirms", "refines")), None)
            if kept is not None and not any(v == "contradicts" for _, v in judged):
                target, how = self._kept(kept[0], memory, kept[1], item, prepared.vector, now, plan)
                return _merged(target, how, redacted, importance)
            superseded, newer = self._supersede(memory, judged, now, plan)
            if newer is not None:
                # Said before what the namespace holds now (a late or retried write): kept as history, never current.
                memory = memory.model_copy(update={"status": "superseded", "superseded_by": newer.id,
                                                   "superseded_at": now})  # fmt: skip
                reason = "superseded_on_arrival"
        plan.insert(memory, prepared.vector)
        return WriteResult(
            id=memory.id,
            status="stored",
            reason=reason,
            redacted=redacted,
            importance=importance,
            superseded=superseded,
        )

    @staticmethod
    def check_id_free(namespace: str, item: MemoryWrite, existing: Memory | None, field: str) -> None:
        """IdConflict when the id is held by a memory of other content or layer: the same write said again is
        idempotent (`duplicate_id`), a different one under its id is not."""
        if existing is None or (existing.content == item.content and existing.layer == item.layer):
            return
        raise IdConflict(
            f"{field}: {item.id!r} already names another memory in {namespace!r} (its content differs); "
            "send a new id, or none",
            field=field,
        )

    def _new_memory(self, namespace: str, prepared: _Prepared, importance: float, now: datetime) -> Memory:
        """The memory a new item becomes."""
        item, chunk = prepared.item, prepared.chunk
        memory_id = item.id or new_ulid(now)
        # The fields every layer has (the metadata and expiry as the caller gave them, redacted, `_pieces`).
        common = {
            "id": memory_id,
            "namespace": namespace,
            "content": prepared.content,
            "entities": item.entities,
            "tags": item.tags,
            "importance": importance,
            "created_at": now,
            "redacted": prepared.redacted,
            "metadata": item.metadata,
            "source": item.source,
            "expires_at": item.expires_at,
        }
        if item.layer == "episodic":
            return Episode(
                **common,
                occurred_at=item.occurred_at or now,
                event_type=item.event_type,
                outcome=item.outcome,
                outcome_status=item.outcome_status or recognise_outcome(item.outcome),
                session_id=item.session_id,
                context=prepared.context,
                parent_id=chunk.parent_id if chunk else None,
                chunk_index=chunk.index if chunk else None,
                chunk_count=chunk.count if chunk else None,
            )
        return Fact(
            **common,
            kind=item.kind or "fact",
            first_seen_at=item.occurred_at or now,
            dimension=item.dimension,
            confidence=item.confidence if item.confidence is not None else self._tuning.default_fact_confidence,
            last_confirmed_at=item.occurred_at or now,
        )

    def _near_duplicate(self, namespace: str, prepared: _Prepared, plan: WritePlan) -> Memory | None:
        """The most similar memory of the same layer at or above the dedup threshold that says the same
        (`_says_the_same`)."""
        item, vector = prepared.item, prepared.vector
        best: tuple[float, str] | None = None
        candidates = plan.mergeable_rows(item.layer)
        if candidates.size:
            sims = plan.similarities(vector)[candidates]
            top = int(np.argmax(sims))
            best = (float(sims[top]), plan.vector_ids[int(candidates[top])])
        for candidate in prepared.neighbours:
            if best is None or candidate.score > best[0]:
                best = (candidate.score, candidate.id)
        if best is None or best[0] < self._tuning.dedup_threshold:
            return None
        found = plan.pending.get(best[1]) or self._store.get(namespace, best[1])
        return found if found is not None and says_the_same(found, item, prepared.content) else None

    def _merge(self, existing: Memory, item: MemoryWrite, now: datetime) -> Memory:
        """The same memory said again: confirm it, keep the union of labels."""
        update: dict[str, object] = {
            "confirmations": existing.confirmations + 1,
            "tags": _union(existing.tags, item.tags),
            "entities": _union(existing.entities, item.entities),
            # Kept as long as either write wants it: never, if one of them never expires.
            "expires_at": None
            if existing.expires_at is None or item.expires_at is None
            else max(existing.expires_at, item.expires_at),
            "source": existing.source or item.source,
        }
        if isinstance(existing, Episode):
            # One more occurrence of the same episode: consolidation counts it as evidence.
            when = item.occurred_at or now
            update["last_occurred_at"] = max(existing.last_seen_at, when)
            if item.session_id and item.session_id not in existing.sessions:
                update["session_ids"] = [*existing.session_ids, item.session_id][-MAX_EPISODE_SESSIONS:]
        else:
            update["last_confirmed_at"] = max(existing.last_confirmed_at, item.occurred_at or now)
            # Each independent confirmation closes a fifth of the remaining doubt.
            update["confidence"] = round(existing.confidence + (1.0 - existing.confidence) * 0.2, 4)
        return existing.model_copy(update=update)

    def _judged(self, namespace: str, new: Fact, vector: np.ndarray, plan: WritePlan) -> list[tuple[Fact, str]]:
        """The active facts near a new one (and the one on its dimension), each with the verdict on the new one
        against it: confirms, refines, contradicts or unrelated (`contradiction.judge`). A fact on the same
        dimension is contradicted by any other value of it."""
        candidates: dict[str, tuple[Fact, float]] = {}
        if new.dimension:
            same_dimension = [
                m
                for m in plan.pending.values()
                if isinstance(m, Fact) and m.status == "active" and m.dimension == new.dimension
            ]
            stored = self._store.active_fact_for_dimension(namespace, new.dimension)
            if stored is not None and stored.id not in plan.pending:
                same_dimension.append(stored)
            candidates.update({f.id: (f, 0.0) for f in same_dimension})
        neighbours = self._index.vector_search(
            namespace, vector, MemoryFilter(layers=("semantic",)), limit=_CONTRADICTION_NEIGHBOURS
        )
        scored = [(c.id, c.score) for c in neighbours]
        scored += [(mid, float(v @ vector)) for mid, v in plan.vectors.items() if mid in plan.pending]
        for memory_id, cosine in scored:
            old = plan.pending.get(memory_id) or self._store.get(namespace, memory_id)
            if isinstance(old, Fact) and old.status == "active":
                previous = candidates.get(old.id)
                candidates[old.id] = (old, max(cosine, previous[1] if previous else cosine))
        scale = Scale(related=related_similarity(self._embedder.scale), same=self._tuning.dedup_threshold)
        judged = []
        for old, cosine in candidates.values():
            same = bool(new.dimension) and old.dimension == new.dimension
            verdict = "contradicts" if same and old.content != new.content else None
            judged.append((old, verdict or judge(new.content, old.content, cosine, scale, same_dimension=same)))
        return judged

    def _supersede(
        self, new: Fact, judged: list[tuple[Fact, str]], now: datetime, plan: WritePlan
    ) -> tuple[list[str], Fact | None]:
        """The active facts the new fact contradicts, superseded by it (kept as history), and the newest of them said
        after it, if any: an older write never supersedes a newer one (writes go through a standard queue, which may
        deliver a retried message after a later one), it is superseded by it instead."""
        victims = {old.id: old for old, verdict in judged if verdict == "contradicts"}
        newer = [old for old in victims.values() if old.last_confirmed_at > new.last_confirmed_at]
        if newer:
            return [], max(newer, key=lambda f: (f.last_confirmed_at, f.id))
        for old in victims.values():
            plan.update(old.model_copy(update={"status": "superseded", "superseded_by": new.id, "superseded_at": now}))
        return sorted(victims), None

    def _kept(
        self, old: Fact, new: Fact, verdict: str, item: MemoryWrite, vector: np.ndarray, now: datetime, plan: WritePlan
    ) -> tuple[str, str]:
        """The active fact a new one confirms or refines, updated (`_supplemented`), and how: "confirms",
        "refines", or "same_occurrence" for a confirmation it took in already (`_said_again`)."""
        if verdict == "confirms" and _said_again(old, item):
            return old.id, "same_occurrence"
        return self._supplemented(old, new, verdict, vector, now, plan).id, verdict

    def _supplemented(
        self, old: Fact, new: Fact, verdict: str, vector: np.ndarray, now: datetime, plan: WritePlan
    ) -> Fact:
        """The active fact a new one confirms (confirmed once more) or refines (its content becomes the new, more
        precise statement; the store keeps the old version as history)."""
        update: dict[str, object] = {
            "confirmations": old.confirmations + 1,
            "last_confirmed_at": max(old.last_confirmed_at, new.last_confirmed_at),
            "confidence": round(old.confidence + (1.0 - old.confidence) * 0.2, 4),
            "tags": _union(old.tags, new.tags),
        }
        if verdict == "refines":
            update.update({"content": new.content, "dimension": old.dimension or new.dimension})
        merged = old.model_copy(update=update)
        plan.update(merged, vector if verdict == "refines" else None)
        return merged


def _to_extract(pieces: Sequence[_Piece], planned: Sequence[WriteResult], stored: Sequence[Episode]) -> list[str]:
    """The ids of the stored episodes (a turn, a chunk of one, or a held turn it merged into) whose write asked for
    extraction."""
    held = {e.id for e in stored}
    wanted = (r.merged_into or r.id for p, r in zip(pieces, planned, strict=True) if p.item.extract)
    return list(dict.fromkeys(i for i in wanted if i in held))


def _merged(target: str, reason: str, redacted: bool, importance: float) -> WriteResult:
    """The answer to a write that merged into `target` (confirmed it, refined it, or was its occurrence again)."""
    return WriteResult(
        id=target, status="merged", reason=reason, redacted=redacted, importance=importance, merged_into=target
    )


def _said_again(existing: Memory, item: MemoryWrite) -> bool:
    """Whether a write that matches `existing` is the occurrence `existing` last took in, delivered again: written
    for the very time of its latest occurrence (a queued write redelivered after it merged, a line imported
    twice). That is one occurrence, not a new confirmation. Only for a write that states its time (a queued write
    always does: `accept` sets it); a write timed by the clock is a new occurrence."""
    when = item.occurred_at
    if when is None:
        return False
    if isinstance(existing, Episode):
        return existing.last_seen_at == when and (item.session_id is None or item.session_id in existing.sessions)
    return isinstance(existing, Fact) and existing.last_confirmed_at == when


def _field(prefix: str, index: int) -> str:
    return f"{prefix}.{index}.id" if prefix else "id"


def _item(prefix: str, index: int) -> str:
    return f"{prefix}.{index}" if prefix else ""


def redact_write(item: MemoryWrite, field: str = "") -> tuple[MemoryWrite, tuple[str, ...]]:
    """The item with every string a caller chose redacted (`redact_request`), and the kinds found; InvalidInput
    naming the field (under `field`) for an id or session id that holds a secret."""
    return redact_request(item, field)


def _per_item(count: int, pieces: Sequence[_Piece], planned: Sequence[WriteResult]) -> list[WriteResult]:
    """One result per item of the request: a piece's own, or for a long text stored as chunks, one for them all
    under the first chunk's id, listing every chunk's (stored if any chunk was new; duplicate_id if none was)."""
    results: list[WriteResult | None] = [None] * count
    chunked: dict[int, list[tuple[_Chunk, WriteResult]]] = {}
    for piece, result in zip(pieces, planned, strict=True):
        if piece.chunk is None:
            results[piece.origin] = result
        else:
            chunked.setdefault(piece.origin, []).append((piece.chunk, result))
    for origin, parts in chunked.items():
        first, answered = parts[0]
        new = [r for _, r in parts if r.status == "stored" and r.reason is None]
        status = "skipped" if answered.status == "skipped" else "stored"
        reason = answered.reason if status == "skipped" or not new else None
        results[origin] = WriteResult(
            id=first.parent_id,
            status=status,
            reason=reason,
            redacted=answered.redacted,
            importance=first.importance,
            chunks=[r.id for _, r in parts],
        )
    return [result for result in results if result is not None]


def _union(a: Sequence[str], b: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))
