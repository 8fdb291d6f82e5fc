"""Retention: each namespace's policy (how long episodes live, when consolidated ones are archived into what was
learnt from them, which are kept for being used), kept by `RetentionPolicies` and enforced by `sweep`, which the
local server runs on a timer and a scheduled function runs on AWS; and the purge of expired working memory and of
expired memories.

Forgetting goes through the ForgetService, so a swept episode leaves exactly what a caller's forget would leave:
with cascade (the max age) the facts induced from it alone go too; without (the archive) they stay.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from rearview.domain.forget import ForgetRequest
from rearview.domain.memory import Episode
from rearview.domain.namespaces import validate_namespace
from rearview.domain.retention import (
    NamespaceRetention,
    RetentionPolicy,
    RetentionReport,
    RetentionSweep,
    governing_policy,
)
from rearview.domain.search import MemoryFilter
from rearview.ports import Clock, MemoryManagement, MemoryReader, MemoryUsage, RetentionPolicies, WorkingMemoryStore
from rearview.service.forget import ForgetService

logger = logging.getLogger(__name__)


class RetentionStore(MemoryReader, MemoryManagement, MemoryUsage, WorkingMemoryStore, Protocol):
    """What the sweep asks of the store: the namespaces and their old episodes, the access counts it settles, and the
    purge of expired working memory."""


# Episodes one rule handles in one namespace per sweep, at most (oldest first); the next sweep goes on. Bounds
# the time a sweep holds the store, and the size of what one forget deletes.
MAX_EPISODES_PER_RULE = 5000
# ForgetRequest.ids takes at most this many.
_FORGET_CHUNK = 1000


def _chunks(ids: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


class RetentionService:
    def __init__(
        self, store: RetentionStore, policies: RetentionPolicies, forgetter: ForgetService, clock: Clock
    ) -> None:
        self._store = store
        self._policies = policies
        self._forgetter = forgetter
        self._clock = clock

    # --- policies -----------------------------------------------------------------------------------------------

    def set_policy(self, namespace: str, policy: RetentionPolicy) -> NamespaceRetention:
        """Set the namespace's own policy (replacing any), which also governs the namespaces under it without one."""
        validate_namespace(namespace)
        now = self._clock.now()
        self._policies.put(namespace, policy, now)
        return NamespaceRetention(namespace=namespace, policy=policy, set_on=namespace, updated_at=now)

    def policy(self, namespace: str) -> NamespaceRetention:
        """The policy that governs the namespace: its own, or the nearest one above it, or none."""
        validate_namespace(namespace)
        governing = governing_policy(namespace, self._policies.all())
        if governing is None:
            return NamespaceRetention(namespace=namespace)
        owner, policy, updated_at = governing
        return NamespaceRetention(namespace=namespace, policy=policy, set_on=owner, updated_at=updated_at)

    def clear_policy(self, namespace: str) -> NamespaceRetention:
        """Remove the namespace's own policy; the answer is what governs it now (a policy above it, or none)."""
        validate_namespace(namespace)
        self._policies.delete(namespace)
        return self.policy(namespace)

    # --- enforcement --------------------------------------------------------------------------------------------

    def sweep(self, out_of_time: Callable[[], bool] | None = None) -> RetentionSweep:
        """Apply every namespace's governing policy once, and purge expired working memory. A namespace that fails
        is logged and skipped (the next sweep tries again); the others are swept.

        `out_of_time()` (the Lambda's remaining time, say) is asked before each namespace and each batch of
        deletes: once it says yes the sweep stops and counts the namespaces it did not reach (`unfinished`). The
        namespaces are taken in an order that starts at a different one each hour, so a sweep cut short every time
        still reaches them all in turn."""
        now = self._clock.now()
        result = RetentionSweep(at=now, working_purged=self.purge_working(), expired=self.purge_expired(out_of_time))
        namespaces = sorted(self._store.list_namespaces())
        policies = self._policies.all()
        governed = [
            (namespace, governing[0], governing[1])
            for namespace in namespaces
            if (governing := governing_policy(namespace, policies)) is not None
        ]
        start = int(now.timestamp() // 3600) % len(governed) if governed else 0
        order = governed[start:] + governed[:start]
        for done, (namespace, owner, policy) in enumerate(order):
            if out_of_time is not None and out_of_time():
                result.unfinished = len(order) - done
                logger.warning("retention sweep out of time: %d namespaces left for the next", result.unfinished)
                break
            try:
                # The counts `keep_accessed_at_least` reads, folded first (a store that keeps them apart).
                result.access_settled += self._store.settle_access(namespace, now)
                report = self.sweep_namespace(namespace, owner, policy, now, out_of_time)
            except Exception:
                logger.exception("retention sweep of %s failed; the next sweep tries again", namespace)
                continue
            if report.forgotten or report.archived or report.kept:
                result.namespaces.append(report)
        swept = {namespace for namespace, _, _ in governed}
        result.access_settled += self._settle_access([n for n in namespaces if n not in swept], now, out_of_time)
        return result

    def _settle_access(self, namespaces: list[str], now: datetime, out_of_time: Callable[[], bool] | None) -> int:
        """The access counts of the namespaces no policy governs, folded while time remains (the next sweep goes on)."""
        settled = 0
        for namespace in namespaces:
            if out_of_time is not None and out_of_time():
                break
            try:
                settled += self._store.settle_access(namespace, now)
            except Exception:
                logger.exception("settling the access counts of %s failed; the next sweep tries again", namespace)
        return settled

    def sweep_namespace(
        self,
        namespace: str,
        owner: str,
        policy: RetentionPolicy,
        now: datetime,
        out_of_time: Callable[[], bool] | None = None,
    ) -> RetentionReport:
        """Apply one policy to one namespace: the max age (with cascade), then the archive (without); between
        batches of deletes, stop when `out_of_time()` says so (the rest is for the next sweep)."""
        stop = out_of_time or (lambda: False)
        report = RetentionReport(namespace=namespace, set_on=owner)
        kept: set[str] = set()
        if policy.episode_max_age_days is not None:
            cutoff = now - timedelta(days=policy.episode_max_age_days)
            gone = self._aged(namespace, cutoff, policy, kept, consolidated=None)
            for chunk in _chunks(gone, _FORGET_CHUNK):
                if stop():
                    return report
                receipt = self._forgetter.forget(namespace, ForgetRequest(ids=chunk, cascade=True))
                report.forgotten += receipt.deleted["episodic"]
                report.facts_removed += receipt.deleted["semantic"]
        if policy.archive_after_days is not None:
            cutoff = now - timedelta(days=policy.archive_after_days)
            gone = self._aged(namespace, cutoff, policy, kept, consolidated=True)
            for chunk in _chunks(gone, _FORGET_CHUNK):
                if stop():
                    return report
                receipt = self._forgetter.forget(namespace, ForgetRequest(ids=chunk, cascade=False))
                report.archived += receipt.deleted["episodic"]
        report.kept = len(kept)
        if report.forgotten or report.archived:
            logger.info(
                "retention: %s forgot %d episodes and archived %d (policy of %s)",
                namespace,
                report.forgotten,
                report.archived,
                owner,
            )
        return report

    def _aged(
        self, namespace: str, cutoff: datetime, policy: RetentionPolicy, kept: set[str], *, consolidated: bool | None
    ) -> list[str]:
        """Ids of the episodes last seen before `cutoff` (a merged repeat counts from its latest occurrence), minus
        those recalled often enough to keep (added to `kept`)."""
        flt = MemoryFilter(layers=("episodic",), until=cutoff, consolidated=consolidated)
        old = self._store.list_memories(namespace, flt, limit=MAX_EPISODES_PER_RULE)
        gone: list[str] = []
        for memory in old:
            if not isinstance(memory, Episode) or memory.last_seen_at >= cutoff:
                continue
            if policy.keep_accessed_at_least is not None and memory.access_count >= policy.keep_accessed_at_least:
                kept.add(memory.id)
                continue
            gone.append(memory.id)
        return gone

    def purge_working(self) -> int:
        """Delete expired working memory from storage; how many rows went."""
        purged = self._store.purge_expired_working(self._clock.now())
        if purged:
            logger.info("retention: purged %d expired working-memory entries", purged)
        return purged

    def purge_expired(self, out_of_time: Callable[[], bool] | None = None) -> int:
        """Forget the memories whose `expires_at` has come (`ttl_seconds`, `expires_at` on a write), through the
        forget path with cascade, as a caller's forget would (what was induced from them alone goes too), a batch
        at a time until none is left or `out_of_time()`; how many went. Reads leave them out from their expiry on;
        this deletes them. (On DynamoDB too: the item's TTL is set a grace later, as a backstop.)"""
        stop = out_of_time or (lambda: False)
        forgotten = 0
        while not stop():
            due = self._store.expired_memories(self._clock.now(), _FORGET_CHUNK)
            by_namespace: dict[str, list[str]] = {}
            for namespace, memory_id in due:
                by_namespace.setdefault(namespace, []).append(memory_id)
            went = 0
            for namespace, ids in by_namespace.items():
                went += len(self._forgetter.forget(namespace, ForgetRequest(ids=ids, cascade=True)).ids)
            forgotten += went
            if len(due) < _FORGET_CHUNK or not went:
                break
        if forgotten:
            logger.info("retention: forgot %d expired memories", forgotten)
        return forgotten

    def purge(self) -> int:
        """The timer's purge: expired working memory and expired memories; how many went in all."""
        return self.purge_working() + self.purge_expired()
