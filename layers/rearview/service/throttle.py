"""Per-key throttling: every authenticated request counts against its API key's limit (`rearview.domain.quota`).

The edges call `RequestThrottle.admit` once per request, right after the caller is known and before anything of
the request is done (a write refused here was never accepted, so it cannot be lost). The counters live in a
`RequestQuota` shared by every process and function (the gateway authorizer's answer is cached per key, so the
functions count, not the authorizer), and are kept per key: one tenant's flood spends its own quota only.

The open local mode (nobody authenticated) is not counted; the bootstrap admin token is, under its own id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rearview.domain.access import Principal
from rearview.domain.quota import QuotaWindow, RequestLimit
from rearview.errors import Throttled
from rearview.ports import Clock, RequestQuota

logger = logging.getLogger(__name__)

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
        if self.quota.take(principal.key_id, window, limit.per_minute):
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
