"""What one consolidation run may spend: clusters, model tokens and time. The runner fills it from the settings'
per-run and per-day caps and the ledger's spend; consolidation stops starting clusters when it runs out, and the
clusters left wait for the next run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Clusters given to a model inducer at a time between budget checks: small enough that a cap is overshot by at
# most one chunk's tokens, large enough that a model that is down is recognised within one chunk.
CHUNK = 4


@dataclass(frozen=True)
class RunBudget:
    max_clusters: int = 1000
    # Model tokens (None: no cap; the rule inducer spends none).
    max_tokens: int | None = None
    # Seconds left before the run must stop starting clusters (None: no deadline).
    seconds_left: Callable[[], float] | None = None

    def next_chunk(self, tokens_spent: int, clusters_done: int) -> int:
        """How many more clusters to induce next (0: stop), judged by the tokens a cluster has cost so far."""
        if self.seconds_left is not None and self.seconds_left() <= 0:
            return 0
        if self.max_tokens is None:
            return CHUNK
        room = self.max_tokens - tokens_spent
        if room <= 0:
            return 0
        if clusters_done == 0:
            return 1  # what one cluster costs is not known before the first
        if tokens_spent == 0:
            return CHUNK
        per_cluster = tokens_spent / clusters_done
        return max(0, min(CHUNK, int(room // per_cluster)))
