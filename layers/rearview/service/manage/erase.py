"""Erasing a namespace, or a namespace and every namespace under it: its memories in every layer, their history,
the search index's documents, consolidation's ledger, the namespace's own retention policy, and the API keys whose
whole scope is gone.

A key is revoked (kept as revoked, never deleted, so its id stays taken) when its scope is an erased namespace and
nothing under that scope is left: with `subtree`, every key scoped at or under the namespace; without, a key scoped
to the namespace itself only when no namespace under it holds memory. Revoking a key takes the `admin` permission,
as the key routes do: a caller with `forget` alone erases the memories, and the keys stay active (the receipt counts
them), so erasing an empty namespace is no way to revoke a key one could not revoke directly.

Where writes are queued (AWS), each namespace is marked erased before anything of it is deleted (`ErasureMarks`): a
write accepted before the erase and still in the queue is then dropped by the worker instead of bringing the
namespace back, however late it arrives. The receipt says until when, and what no erase reaches (dead-letter queues,
backups).
"""

from __future__ import annotations

from rearview.domain.access import Principal
from rearview.domain.erase import ErasedCounts, EraseReceipt
from rearview.domain.namespaces import namespace_within, validate_namespace
from rearview.domain.permissions import Permission
from rearview.ports import Clock, ErasureMarks, HindsightLedger, IndexMaintenance, MemoryManagement, RetentionPolicies
from rearview.service.access import AccessService


class EraseService:
    def __init__(
        self,
        store: MemoryManagement,
        ledger: HindsightLedger,
        access: AccessService,
        index: IndexMaintenance | None = None,
        policies: RetentionPolicies | None = None,
        marks: tuple[ErasureMarks, Clock] | None = None,
    ) -> None:
        self._store = store
        # The erasure marks and the clock they are dated by; None where writes are never queued.
        self._marks = marks
        self._policies = policies
        self._ledger = ledger
        self._access = access
        self._index = index

    def erase(self, namespace: str, subtree: bool = False, caller: Principal | None = None) -> EraseReceipt:
        """Erase `namespace` (and, with `subtree`, every namespace under it); the receipt counts what went. `caller`:
        who asks (None: this machine's own operator, as the CLI is); without `admin` it revokes no key."""
        validate_namespace(namespace)
        below = self._store.list_namespaces(namespace + ":")
        targets = [namespace, *(below if subtree else [])]
        receipt = EraseReceipt(namespace=namespace, subtree=subtree, namespaces={})
        if self._marks is not None:
            marks, clock = self._marks
            at = clock.now()
            placed = [marks.mark(each, at) for each in targets]
            receipt.queued_writes_dropped_until, receipt.not_reached = placed[0].holds_until, placed[0].not_reached
        for each in targets:
            receipt.namespaces[each] = self._erase_one(each)
        left_below = bool(below) and not subtree
        may_revoke = caller is None or Permission.ADMIN in caller.permissions
        for key in self._access.list_keys():
            if key.revoked_at is not None or not namespace_within(key.scope, namespace):
                continue
            if key.scope == namespace and left_below:
                continue
            if key.scope != namespace and not subtree:
                continue
            if not may_revoke:
                receipt.keys_left_active += 1
                continue
            self._access.revoke(key.key_id)
            receipt.keys_revoked.append(key.key_id)
        return receipt

    def _erase_one(self, namespace: str) -> ErasedCounts:
        # The ledger first: on DynamoDB its items share the namespace's partition, which the store then empties.
        ledger = self._ledger.erase_namespace(namespace)
        # Likewise the retention policy (a `RETENTION` item on DynamoDB).
        policy = self._policies.delete(namespace) if self._policies is not None else False
        counts = self._store.erase_namespace(namespace)
        counts.ledger = ledger
        counts.retention_policy = policy
        if self._index is not None:
            counts.index = self._index.delete_namespace(namespace)
        return counts
