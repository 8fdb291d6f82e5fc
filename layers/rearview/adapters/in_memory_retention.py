"""`InMemoryRetentionPolicies`: retention policies in a dict (tests, the `memory` backend)."""

from __future__ import annotations

import threading
from datetime import datetime

from rearview.domain.retention import RetentionPolicy


class InMemoryRetentionPolicies:
    def __init__(self) -> None:
        self._policies: dict[str, tuple[RetentionPolicy, datetime]] = {}
        self._lock = threading.Lock()

    def get(self, namespace: str) -> tuple[RetentionPolicy, datetime] | None:
        with self._lock:
            return self._policies.get(namespace)

    def put(self, namespace: str, policy: RetentionPolicy, at: datetime) -> None:
        with self._lock:
            self._policies[namespace] = (policy.model_copy(), at)

    def delete(self, namespace: str) -> bool:
        with self._lock:
            return self._policies.pop(namespace, None) is not None

    def all(self) -> dict[str, tuple[RetentionPolicy, datetime]]:
        with self._lock:
            return dict(self._policies)
