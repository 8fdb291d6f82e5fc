"""Per-key throttling: every authenticated request counts against its API key's limit (`rearview.domain.quota`).

The edges call `RequestThrottle.admit` once per request, right after the caller is known and before anything of
the request is done (a write refused here was never accepted, so it cannot be lost). The counters live in a
`RequestQuota` shared by every process and function (the gateway authorizer's answer is cached per key, so the
functions count, not the authorizer), and are kept per key: one tenant's flood spends its own quota only.

The open local mode (nobody authenticated) is not counted; the bootstrap admin token is, under its own id.

Leases: a process counts several requests of a key at a time in the shared counter and admits them from its own
memory, so most requests write nothing (on AWS the counter is a DynamoDB item: a recall's only other write is its
access window). A key's lease starts at one request in each window and doubles while it is spent, up to
`LEASE_SHARE` of the key's limit (`MAX_LEASE` at most), so a process that serves a key now and then counts exactly
and a busy one writes a few times a minute. The shared counter never admits past the limit: a lease that does not
fit is not taken, and the process goes back to counting one request at a time for the rest of the window. What a
lease costs: a key at its limit may be refused while other processes still hold leased requests they do not use,
at most a lease each.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from rearview.domain.access import Principal
from rearview.domain.quota import QuotaWindow, RequestLimit
from rearview.errors import Throttled
from rearview.ports import Clock, RequestQuota

logger = logging.getLogger(__name__)

# A lease is at most this share of the key's per-minute limit (1/50: a key at 1,200 a minute leases up to 24), and
# at most MAX_LEASE requests; below 100 a minute a key is counted one request at a time, exactly.
LEASE_SHARE = 50
MAX_LEASE = 100

# Told of every refused request (the key's id), for a metric; never of the namespace or anything of the request.
ThrottleListener = Callable[[str], None]


class RequestThrottle:
    """Admits or refuses (Throttled, 429) each request of a principal against its key's limit."""

    def __init__(
        self,
        quota: RequestQuota,
        clock: Clock,
        default_per_minute: int,
        *,
        on_throttled: ThrottleListener | None = None,
    ) -> None:
        self.quota = quota
        self.clock = clock
        self.default_per_minute = default_per_minute
        self._on_throttled = on_throttled
        self._lock = threading.Lock()
        self._window = 0  # the window the leases were counted in
        self._leases: dict[str, _Lease] = {}

    def limit_for(self, principal: Principal) -> RequestLimit | None:
        """The limit on the principal's requests (None: unlimited)."""
        if principal.open:
            return None
        return RequestLimit.effective(principal.requests_per_minute, self.default_per_minute)

    def admit(self, principal: Principal) -> None:
        """Count one request of the principal's key; raise Throttled (nothing counted) once its limit is reached."""
        limit = self.limit_for(principal)
        if limit is None:
            return
        now = self.clock.now()
        window = QuotaWindow.containing(now)
        if self._admitted(principal.key_id, window, limit):
            return
        retry_after = window.retry_after(now)
        logger.info("request throttled", extra={"key_id": principal.key_id, "limit": limit.per_minute})
        if self._on_throttled is not None:
            self._on_throttled(principal.key_id)
        raise Throttled(
            f"rate limit: this API key may make {limit.describe()}, and has made them in this minute; "
            f"retry after {retry_after} s",
            retry_after=retry_after,
        )

    def _admitted(self, key_id: str, window: QuotaWindow, limit: RequestLimit) -> bool:
        """Admit one request from the key's lease in this process, else count a new lease (or one request) in the
        shared counter; False when the window's quota is spent."""
        with self._lock:
            if window.epoch != self._window:
                # A new window (or a clock that went back): no lease outlives the window it was counted in.
                self._window, self._leases = window.epoch, {}
            lease = self._leases.setdefault(key_id, _Lease())
            if lease.left > 0:
                lease.left -= 1
                return True
            size = 1 if lease.exact or lease.size == 0 else min(lease.size * 2, lease_cap(limit))
        if size > 1 and self.quota.take(key_id, window, limit.per_minute, size):
            with self._lock:
                lease.left, lease.size = lease.left + size - 1, size
            return True
        if self.quota.take(key_id, window, limit.per_minute):
            with self._lock:
                # A lease that did not fit: the key is near its limit, counted one request at a time from now on.
                lease.exact = lease.exact or size > 1
                lease.size = max(lease.size, 1)
            return True
        return False


def lease_cap(limit: RequestLimit) -> int:
    """The most requests of a key with this limit one lease counts at once."""
    return max(1, min(MAX_LEASE, limit.per_minute // LEASE_SHARE))


@dataclass
class _Lease:
    """A key's requests counted by this process in the current window: how many are left to admit, the size of the
    last lease (0: none yet), and whether the window is counted one request at a time (a lease did not fit)."""

    left: int = 0
    size: int = 0
    exact: bool = False
