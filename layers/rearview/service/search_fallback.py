"""Search that degrades instead of failing: a search index kept apart from the store (OpenSearch), and the store's
own search for when that index cannot answer.

An index that is missing (a new deployment before its first write, an index dropped to be rebuilt), unreachable,
refusing or throttling raises `SearchUnavailable`; the search is then answered by the fallback (the store's own
search over a recent sample of the namespace) and reported once through the log and, for every answer the fallback
gives, through `on_fallback` (the Lambda functions count it as the `SearchFallbacks` metric). For
`retry_after_seconds` after a failure the index is not asked at all, so an unreachable cluster costs one timeout,
not one per request; then it is tried again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from rearview.domain.search import Candidate, EntityShares, MemoryFilter
from rearview.errors import SearchUnavailable
from rearview.ports import IndexMaintenance, SearchIndex

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
# What `on_fallback` is told: the search answered by the fallback, and why (the index's error, or `retry_after`
# while the index is left alone after a failure).
FallbackListener = Callable[[str, str], None]


class FallbackSearchIndex(SearchIndex):
    """`primary` while it answers, `fallback` while it cannot (see the module doc). It states the primary's traits
    and write side: recall asks it as it would ask the index, and index sync keeps writing the index."""

    def __init__(
        self,
        primary: SearchIndex,
        fallback: SearchIndex,
        *,
        retry_after_seconds: float = 30.0,
        on_fallback: FallbackListener | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.primary = primary
        self.fallback = fallback
        self.traits = primary.traits
        self.retry_after_seconds = retry_after_seconds
        self.on_fallback = on_fallback
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._skip_until = float("-inf")

    def maintenance(self) -> IndexMaintenance | None:
        return self.primary.maintenance()

    @property
    def degraded(self) -> bool:
        """True while the index is left alone after a failure."""
        return self._monotonic() < self._skip_until

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]:
        return self._answer(
            "keyword_search", lambda index: index.keyword_search(namespace, text, flt, limit, context_weight)
        )

    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]:
        return self._answer("vector_search", lambda index: index.vector_search(namespace, vector, flt, limit))

    def vector_search_many(
        self, namespace: str, vectors: np.ndarray, flt: MemoryFilter, limit: int
    ) -> list[list[Candidate]]:
        return self._answer(
            "vector_search_many", lambda index: index.vector_search_many(namespace, vectors, flt, limit)
        )

    def hybrid_search(
        self,
        namespace: str,
        text: str,
        vector: np.ndarray,
        flt: MemoryFilter,
        limit: int,
        context_weight: float = 0.0,
    ) -> tuple[list[Candidate], list[Candidate]]:
        return self._answer(
            "hybrid_search",
            lambda index: index.hybrid_search(namespace, text, vector, flt, limit, context_weight),
        )

    def entity_shares(self, namespace: str) -> EntityShares:
        return self._answer("entity_shares", lambda index: index.entity_shares(namespace))

    def _answer(self, operation: str, search: Callable[[SearchIndex], _T]) -> _T:
        if self.degraded:
            self._notify(operation, "retry_after")
            return search(self.fallback)
        try:
            return search(self.primary)
        except SearchUnavailable as exc:
            with self._lock:
                self._skip_until = self._monotonic() + self.retry_after_seconds
            logger.warning(
                "search index unavailable: answering from the store for %.0f s (%s: %s)",
                self.retry_after_seconds,
                operation,
                exc.message,
                extra={"search_operation": operation, "search_error": exc.message},
            )
            self._notify(operation, exc.message)
            return search(self.fallback)

    def _notify(self, operation: str, reason: str) -> None:
        if self.on_fallback is None:
            return
        try:
            self.on_fallback(operation, reason)
        except Exception:  # a listener (a metric) never fails the search it reports on
            logger.exception("search fallback listener failed")
