"""StoreScanIndex: the store's own search, for when the search index kept apart from it cannot answer.

It reads a bounded sample of the namespace from the store (its newest `scan_limit` episodes, and up to as many active
facts, with their vectors) and searches that sample exactly as the in-memory backend searches everything: BM25 as
FTS5 computes it (statistics over the sample) and an exact cosine scan. So a recall while the index is missing or
unreachable still finds what the namespace said lately and what it learned, and never fails for want of an index;
an old episode outside the sample is what it gives up. `service.search_fallback.FallbackSearchIndex` decides when
to ask it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from rearview.adapters.in_memory import InMemoryData, InMemorySearchIndex
from rearview.domain.memory import Memory
from rearview.domain.search import Candidate, EntityShares, MemoryFilter, SearchTraits
from rearview.ports import MemoryReader, SearchIndex

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class StoreScanIndex(SearchIndex):
    """SearchIndex over a sample of the store read for each search: no index of its own to be missing."""

    # Every search reads the store (a round trip on DynamoDB) and scans the sample here.
    traits = SearchTraits(round_trip=True, local_scan=True)

    def __init__(self, store: MemoryReader, *, scan_limit: int = 500) -> None:
        self.store = store
        self.scan_limit = scan_limit

    def sample(self, namespace: str, flt: MemoryFilter) -> InMemorySearchIndex:
        """The memories of the namespace that pass `flt` among its newest episodes and its facts (or, for a filter
        by ids, those ids), with their vectors, in an in-memory index of their own."""
        layers = flt.matchable_layers()
        memories: list[Memory] = []
        if flt.ids is not None:
            memories = list(self.store.get_many(namespace, flt.ids).values())
        else:
            if "episodic" in layers:
                memories.extend(self.store.recent_episodes(namespace, _EPOCH, limit=self.scan_limit))
            if "semantic" in layers:
                facts = MemoryFilter(layers=("semantic",), include_superseded=flt.include_superseded)
                memories.extend(self.store.list_memories(namespace, facts, limit=self.scan_limit))
        chosen = [memory for memory in memories if flt.matches(memory)]
        vectors = self.store.get_vectors(namespace, [memory.id for memory in chosen])
        data = InMemoryData()
        for memory in chosen:
            data.put(namespace, memory, vectors.get(memory.id))
        return InMemorySearchIndex(data)

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]:
        return self.sample(namespace, flt).keyword_search(namespace, text, flt, limit, context_weight)

    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]:
        return self.sample(namespace, flt).vector_search(namespace, vector, flt, limit)

    def vector_search_many(
        self, namespace: str, vectors: np.ndarray, flt: MemoryFilter, limit: int
    ) -> list[list[Candidate]]:
        """One sample for the whole batch (the write path's near-duplicate check)."""
        sampled = self.sample(namespace, flt)
        return [sampled.vector_search(namespace, vector, flt, limit) for vector in vectors]

    def hybrid_search(
        self,
        namespace: str,
        text: str,
        vector: np.ndarray,
        flt: MemoryFilter,
        limit: int,
        context_weight: float = 0.0,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Both lists from one sample."""
        sampled = self.sample(namespace, flt)
        return (
            sampled.keyword_search(namespace, text, flt, limit, context_weight),
            sampled.vector_search(namespace, vector, flt, limit),
        )

    def entity_shares(self, namespace: str) -> EntityShares:
        """None counted: recall then leaves no common name out of its vector query (a sample would cost a read)."""
        return EntityShares(episodes=0, shares={})
