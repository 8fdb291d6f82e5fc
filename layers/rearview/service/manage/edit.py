"""Editing a memory: the fields a person corrects, under the write path's content rules, re-embedded so that recall
finds the new text and never the old.

An edit is one ChangeSet (cause `edit`): the memory at version + 1, its earlier state archived by the store. A new
text is checked and redacted as a write's is and embedded again (an episode with its context, as the write path
embeds it); the episodes after it in its session that carry its text as context get the new text instead (and new
vectors). A fact given a dimension that an active fact holds supersedes that fact, as a write does. An edit that
is refused changes nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

import numpy as np

from rearview.domain.changes import ChangeSet
from rearview.domain.edit import MemoryEdit
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.namespaces import validate_namespace
from rearview.domain.search import MemoryFilter
from rearview.errors import InvalidInput, PreconditionFailed
from rearview.ports import Clock, Embedder, MemoryReader, MemoryWriter
from rearview.service.content_rules import check_content
from rearview.service.manage.listing import unexpired
from rearview.service.redaction import redact_request


class EditStore(MemoryReader, MemoryWriter, Protocol):
    """What an edit asks of the store: the memory and the active fact of a dimension, and one ChangeSet applied."""


# How far after an episode the write path may have copied its text into a later episode's context.
_CONTEXT_WINDOW = timedelta(days=1)
_EPISODIC_ONLY: tuple[str, ...] = ()
_SEMANTIC_ONLY = ("confidence", "dimension")
_NOT_NULL = ("content", "tags", "entities", "importance", "confidence", "metadata", "ttl_seconds")


def _expiry_update(update: dict[str, object], now: datetime) -> dict[str, object]:
    """`ttl_seconds` as the time it ends (from `now`); InvalidInput for both, or an expiry already past."""
    ttl = update.pop("ttl_seconds", None)
    if isinstance(ttl, int):
        if "expires_at" in update:
            raise InvalidInput("ttl_seconds: give ttl_seconds or expires_at, not both", field="ttl_seconds")
        update["expires_at"] = now + timedelta(seconds=ttl)
    expires_at = update.get("expires_at")
    if isinstance(expires_at, datetime) and expires_at <= now:
        raise InvalidInput(f"expires_at: must be a time to come (got {expires_at.isoformat()})", field="expires_at")
    return update


def embedding_text(memory: Memory) -> str:
    """What the write path embeds for a memory: an episode's text after its context, a fact's text."""
    if isinstance(memory, Episode) and memory.context:
        return f"{memory.context}\n{memory.content}"
    return memory.content


def replace_turn(context: str, old: str, new: str) -> str:
    """The context with every whole-line occurrence of one turn's text replaced (see forget.without_turn)."""
    lines = context.split("\n")
    old_lines = old.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i : i + len(old_lines)] == old_lines:
            out.append(new)
            i += len(old_lines)
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


class EditService:
    def __init__(self, store: EditStore, embedder: Embedder, clock: Clock) -> None:
        self._store = store
        self._embedder = embedder
        self._clock = clock

    def edit(
        self,
        namespace: str,
        memory_id: str,
        edit: MemoryEdit,
        *,
        expected_version: int | None = None,
        actor: str | None = None,
    ) -> Memory:
        """The memory as edited (version + 1). NotFound, PreconditionFailed on a stale `expected_version`,
        InvalidInput for a field its layer lacks or content that breaks a rule; ConcurrentUpdate on a race."""
        validate_namespace(namespace)
        now = self._clock.now()
        memory = unexpired(self._store.get(namespace, memory_id), namespace, memory_id, now)
        if expected_version is not None and memory.version != expected_version:
            raise PreconditionFailed(
                f"if-match: memory {memory_id!r} is at version {memory.version}, not {expected_version}",
                field="if-match",
            )
        update = self._checked_update(memory, edit, now)
        edited = memory.model_copy(update={**update, "version": memory.version + 1})
        changes = ChangeSet(cause="edit", actor=actor)
        vector = self._embed(edited) if "content" in update else None
        changes.upserts.append((edited, vector))
        if isinstance(memory, Episode) and isinstance(edited, Episode) and edited.content != memory.content:
            self._carry_into_contexts(namespace, memory, edited.content, changes)
        if isinstance(edited, Fact) and edited.dimension and edited.dimension != getattr(memory, "dimension", None):
            self._supersede_dimension(namespace, edited, changes)
        self._store.apply(namespace, changes)
        return self._store.get(namespace, memory_id) or edited

    def _checked_update(self, memory: Memory, edit: MemoryEdit, now: datetime) -> dict[str, object]:
        """The model fields to change, checked against the memory's layer and the content rules; the new source
        and metadata redacted as a write's are, a time to live turned into the time it expires."""
        update = _expiry_update(edit.changes(), now)
        for name, value in update.items():
            if value is None and name in _NOT_NULL:
                raise InvalidInput(f"{name}: must not be null (leave it out to keep it)", field=name)
            wrong = _SEMANTIC_ONLY if memory.layer == "episodic" else _EPISODIC_ONLY
            if name in wrong:
                owner = "semantic" if memory.layer == "episodic" else "episodic"
                raise InvalidInput(f"{name}: only {owner} memories have {name}", field=name)

        content = update.get("content")
        if isinstance(content, str):
            check_content(content, memory.layer, field="content")
        # Every field the caller gives, redacted on the one path every write takes (tags, entities, source and
        # metadata too); a time to live stays the expiry worked out above.
        redacted, kinds = redact_request(edit)
        given = edit.changes()
        update = {name: getattr(redacted, name) if name in given else value for name, value in update.items()}
        if kinds:
            update["redacted"] = True
        return update

    def _embed(self, memory: Memory) -> np.ndarray:
        return np.asarray(self._embedder.embed([embedding_text(memory)])[0])

    def _carry_into_contexts(self, namespace: str, before: Episode, text: str, changes: ChangeSet) -> None:
        """The later episodes of its session whose context holds its old text hold the new text instead."""
        if not before.session_id:
            return
        window = MemoryFilter(
            layers=("episodic",),
            session_id=before.session_id,
            since=before.occurred_at,
            until=before.occurred_at + _CONTEXT_WINDOW + timedelta(microseconds=1),
        )
        for later in self._store.list_memories(namespace, window):
            if later.id == before.id or not isinstance(later, Episode) or not later.context:
                continue
            context = replace_turn(later.context, before.content, text)
            if context != later.context:
                moved = later.model_copy(update={"context": context, "version": later.version + 1})
                changes.upserts.append((moved, self._embed(moved)))

    def _supersede_dimension(self, namespace: str, fact: Fact, changes: ChangeSet) -> None:
        held = self._store.active_fact_for_dimension(namespace, fact.dimension or "")
        if held is None or held.id == fact.id or fact.status != "active":
            return
        now = self._clock.now()
        update = {"status": "superseded", "superseded_by": fact.id, "superseded_at": now, "version": held.version + 1}
        changes.upserts.append((held.model_copy(update=update), None))
