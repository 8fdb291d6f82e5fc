"""Forgetting: by id, by session (working memory), or by filter; with cascade to the memories induced from what goes.

A long text stored as chunks is forgotten whole by its first chunk's id (the id its write answered); a later chunk
forgotten alone goes alone.

Cascade (default on): a semantic memory induced from a forgotten episode is induced again from the sources left
(its statement, facets, evidence and confidence then owe nothing to what was forgotten), or deleted when what is
left no longer passes the guards; superseded history is treated alike. A memory written directly with provenance
loses the deleted ids. The receipt says what went, layer by layer.

An episode keeps the text of the turns before it in its session as its `context` (see write.context_turns); a
forgotten episode's text is taken out of the context of the episodes after it, so no search finds it any more.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta
from typing import Protocol

import numpy as np

from rearview.domain.changes import ChangeSet
from rearview.domain.forget import ForgetReceipt, ForgetRequest
from rearview.domain.memory import Episode, Fact, Memory, StoredLayer
from rearview.domain.namespaces import validate_namespace
from rearview.domain.search import MemoryFilter
from rearview.domain.timestamps import check_time_range
from rearview.errors import InvalidInput, NotFound
from rearview.ports import MemoryReader, MemoryWriter, WorkingMemoryStore
from rearview.service.chunking import chunk_id


class ForgetStore(MemoryReader, MemoryWriter, WorkingMemoryStore, Protocol):
    """What a forget asks of the store: what matches and the facts citing it, working memory, one ChangeSet applied."""


# How far after an episode the write path may have copied its text into a later episode's context.
_CONTEXT_WINDOW = timedelta(days=1)


class Reinduction(Protocol):
    """Induces a semantic memory again from the sources left after some were forgotten (consolidation does)."""

    def reinduce(self, namespace: str, fact: Fact, sources: Sequence[Episode]) -> tuple[Fact, np.ndarray] | None:
        """The memory restated from `sources` (with its new vector), or None if they no longer support it."""
        ...


class ForgetService:
    def __init__(self, store: ForgetStore, reinduction: Reinduction | None = None) -> None:
        self._store = store
        self._reinduction = reinduction

    def forget(self, namespace: str, req: ForgetRequest) -> ForgetReceipt:
        validate_namespace(namespace)
        receipt = ForgetReceipt(namespace=namespace)
        has_filter = any(v is not None for v in (req.layer, req.since, req.until, req.tags, req.session_id))
        if req.ids is None and not has_filter:
            raise InvalidInput(
                "ids: give ids, or at least one filter (layer, since, until, tags, session_id); "
                "an empty request would wipe the namespace",
                field="ids",
            )
        check_time_range(req.since, req.until)

        if req.session_id is not None and req.layer in (None, "working") and not req.ids:
            receipt.deleted["working"] = self._store.clear_working(namespace, req.session_id)
        elif req.layer == "working":
            receipt.deleted["working"] = self._store.clear_working(namespace, None)
        if req.layer == "working":
            return receipt

        victims: list[Memory]
        if req.ids is not None:
            found = self._store.get_many(namespace, req.ids)
            victims = [found[i] for i in req.ids if i in found]
            if req.layer is not None:
                victims = [m for m in victims if m.layer == req.layer]
        elif req.session_id is not None and req.layer is None:
            # A session forget without a layer is about working memory only (handled above).
            return receipt
        else:
            layers: tuple[StoredLayer, ...] = (req.layer,) if req.layer else ("episodic", "semantic")
            victims = self._store.list_memories(
                namespace,
                MemoryFilter(
                    layers=layers,
                    since=req.since,
                    until=req.until,
                    tags=tuple(req.tags or ()),
                    session_id=req.session_id,
                    include_superseded=True,
                ),
            )
        self._delete(namespace, victims, req.cascade, receipt)
        return receipt

    def forget_one(self, namespace: str, memory_id: str, cascade: bool = True) -> ForgetReceipt:
        """Delete one memory by id; NotFound if the namespace holds no such memory."""
        validate_namespace(namespace)
        memory = self._store.get(namespace, memory_id)
        if memory is None:
            raise NotFound(f"memory {memory_id!r} not found in namespace {namespace!r}", field="id")
        receipt = ForgetReceipt(namespace=namespace)
        self._delete(namespace, [memory], cascade, receipt)
        return receipt

    def _with_chunks(self, namespace: str, victims: Sequence[Memory]) -> list[Memory]:
        """The victims, and the other chunks of every long text whose first chunk (the id its write answered) is
        among them: forgetting a text forgets all of it."""
        found = {m.id: m for m in victims}
        more = [
            chunk_id(m.id, index)
            for m in victims
            if isinstance(m, Episode) and m.parent_id == m.id and m.chunk_count
            for index in range(1, m.chunk_count)
        ]
        if more:
            found.update((m.id, m) for m in self._store.get_many(namespace, more).values() if m.id not in found)
        return list(found.values())

    def _delete(self, namespace: str, victims: Sequence[Memory], cascade: bool, receipt: ForgetReceipt) -> None:
        # Nothing forgotten survives in a memory's past: the history of what goes, and of what is restated
        # without it, goes too.
        victims = self._with_chunks(namespace, victims)
        changes = ChangeSet(cause="forget")
        doomed = {m.id for m in victims}
        for memory in victims:
            changes.deletes.append(memory.id)
            receipt.deleted[memory.layer] += 1
        episode_ids = {m.id for m in victims if isinstance(m, Episode)}
        if cascade and episode_ids:
            for fact in self._store.facts_citing(namespace, episode_ids):
                if fact.id not in doomed:
                    self._cascade(namespace, fact, episode_ids, changes, doomed, receipt)
        self._drop_from_contexts(namespace, [m for m in victims if isinstance(m, Episode)], doomed, changes)
        receipt.ids = list(changes.deletes)
        changes.purge_history = list(receipt.facts_updated)
        if changes:
            self._store.apply(namespace, changes)

    def _cascade(
        self,
        namespace: str,
        fact: Fact,
        forgotten: set[str],
        changes: ChangeSet,
        doomed: set[str],
        receipt: ForgetReceipt,
    ) -> None:
        """Restate, trim or delete one memory citing forgotten episodes."""
        remaining = [p for p in fact.provenance if p not in forgotten]
        restated = None
        if remaining and self._reinduction is not None:
            found = self._store.get_many(namespace, remaining)
            sources = [m for m in (found.get(i) for i in remaining) if isinstance(m, Episode)]
            restated = self._reinduction.reinduce(namespace, fact, sources)
            if restated is None:
                remaining = []
        if not remaining:
            changes.deletes.append(fact.id)
            doomed.add(fact.id)
            receipt.deleted["semantic"] += 1
            return
        if restated is not None:
            memory, vector = restated
            changes.upserts.append((memory.model_copy(update={"version": fact.version + 1}), vector))
        else:
            changes.upserts.append(
                (fact.model_copy(update={"provenance": remaining, "version": fact.version + 1}), None)
            )
        receipt.facts_updated.append(fact.id)

    def _drop_from_contexts(
        self, namespace: str, victims: Sequence[Episode], doomed: set[str], changes: ChangeSet
    ) -> None:
        """The surviving episodes of a victim's session within the day after it lose the victim's text from their
        context (the write path takes the context from that window)."""
        by_session: dict[str, list[Episode]] = defaultdict(list)
        for victim in victims:
            if victim.session_id and victim.content:
                by_session[victim.session_id].append(victim)
        for session, gone in by_session.items():
            window = MemoryFilter(
                layers=("episodic",),
                session_id=session,
                since=min(v.occurred_at for v in gone),
                # The write path reaches back a whole day, inclusive: so does this window, inclusive.
                until=max(v.occurred_at for v in gone) + _CONTEXT_WINDOW + timedelta(microseconds=1),
                include_superseded=True,
            )
            for later in self._store.list_memories(namespace, window):
                if later.id in doomed or not isinstance(later, Episode) or not later.context:
                    continue
                context = later.context
                for victim in gone:
                    if victim.occurred_at <= later.occurred_at:
                        context = without_turn(context, victim.content)
                if context != later.context:
                    update = {"context": context, "version": later.version + 1}
                    changes.upserts.append((later.model_copy(update=update), None))


def without_turn(context: str, content: str) -> str:
    """The context with every whole occurrence of one turn's text removed. The write path joins the turns of a
    context with newlines, so a turn is a run of whole lines: "ok" is removed from "ok\nbooked it" as a line,
    never from inside "booked"."""
    kept = f"\n{context}\n"
    while f"\n{content}\n" in kept:
        kept = kept.replace(f"\n{content}\n", "\n")
    return kept.strip("\n")
