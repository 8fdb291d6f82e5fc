"""A memory's history: the facts it superseded (the chain back, oldest first), then its own earlier versions, then
what it is now; and its provenance (the episodes a semantic memory came from, or what an episode fed)."""

from __future__ import annotations

from typing import Protocol

from rearview.clock import SystemClock
from rearview.domain.history import MemoryHistory, MemoryVersion, origin, version_chain
from rearview.domain.memory import Episode, Fact
from rearview.domain.namespaces import validate_namespace
from rearview.domain.provenance import FedMemory, MemorySources, SourceEpisode
from rearview.ports import Clock, MemoryManagement, MemoryReader
from rearview.service.manage.listing import unexpired


class HistoryStore(MemoryReader, MemoryManagement, Protocol):
    """What a memory's history asks of the store: the memory, its archived versions, the facts it superseded."""


# How far back a chain of superseded facts is followed.
MAX_CHAIN = 50


class HistoryService:
    def __init__(self, store: HistoryStore, clock: Clock | None = None) -> None:
        self._store = store
        self._clock: Clock = clock or SystemClock()

    def history(self, namespace: str, memory_id: str) -> MemoryHistory:
        validate_namespace(namespace)
        memory = unexpired(self._store.get(namespace, memory_id), namespace, memory_id, self._clock.now())
        versions = version_chain(memory, self._store.history(namespace, memory_id))
        superseded = self._superseded_chain(namespace, memory.id) if isinstance(memory, Fact) else []
        return MemoryHistory(namespace=namespace, memory_id=memory_id, versions=[*superseded, *versions])

    def sources(self, namespace: str, memory_id: str) -> MemorySources:
        """A memory's provenance: a semantic memory's source episodes, or the semantic memories an episode fed."""
        validate_namespace(namespace)
        now = self._clock.now()
        memory = unexpired(self._store.get(namespace, memory_id), namespace, memory_id, now)
        found = MemorySources(namespace=namespace, memory_id=memory_id, layer=memory.layer)
        if isinstance(memory, Fact):
            cited = [m for m in self._store.get_many(namespace, memory.provenance).values() if not m.expired(now)]
            episodes = sorted((m for m in cited if isinstance(m, Episode)), key=lambda e: (e.occurred_at, e.id))
            found.sources = [SourceEpisode.of(episode) for episode in episodes]
        else:
            citing = [f for f in self._store.facts_citing(namespace, [memory.id]) if not f.expired(now)]
            facts = sorted(citing, key=lambda f: (f.created_at, f.id))
            found.fed = [FedMemory.of(fact) for fact in facts]
        return found

    def _superseded_chain(self, namespace: str, fact_id: str) -> list[MemoryVersion]:
        """The facts this one replaced, and those they replaced, oldest first."""
        found: dict[str, Fact] = {}
        frontier = [fact_id]
        while frontier and len(found) < MAX_CHAIN:
            earlier = [f for each in frontier for f in self._store.facts_superseded_by(namespace, each)]
            earlier = [f for f in earlier if f.id not in found and f.id != fact_id]
            found.update((f.id, f) for f in earlier)
            frontier = [f.id for f in earlier]
        ordered = sorted(found.values(), key=lambda f: (f.created_at, f.id))[:MAX_CHAIN]
        return [
            MemoryVersion(
                version=f.version,
                relation="superseded",
                memory=f,
                changed_by=origin(f),
                changed_at=f.created_at,
            )
            for f in ordered
        ]
