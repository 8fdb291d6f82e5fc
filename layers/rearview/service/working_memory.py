"""Working memory: per-session scratch state, JSON values by key, with a TTL. Returned as-is, never searched."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta

from rearview.domain.limits import MAX_WORKING_KEY_CHARS, MAX_WORKING_VALUE_BYTES, SESSION_PATTERN
from rearview.domain.namespaces import validate_namespace
from rearview.domain.working import SessionEnded, WorkingEntry, WorkingView, WorkingWrite
from rearview.errors import InvalidInput, MemoryTooLarge
from rearview.ports import Clock, WorkingMemoryStore
from rearview.service.redaction import check_verbatim, redact_given_text, redact_request

_KEY = re.compile(rf"[^\x00-\x1f\x7f/]{{1,{MAX_WORKING_KEY_CHARS}}}")
_SESSION = re.compile(SESSION_PATTERN)


def check_session_id(session_id: str) -> str:
    if not _SESSION.fullmatch(session_id):
        raise InvalidInput("session_id: must be 1 to 128 characters of A-Z a-z 0-9 _ . : @ -", field="session_id")
    return check_verbatim(session_id, "session_id")


def _check_size(value: object) -> str:
    encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    size = len(encoded.encode())
    if size > MAX_WORKING_VALUE_BYTES:
        raise MemoryTooLarge(
            f"value: must be at most {MAX_WORKING_VALUE_BYTES} bytes of JSON (got {size})", field="value"
        )
    return encoded


class WorkingMemoryService:
    def __init__(
        self,
        store: WorkingMemoryStore,
        clock: Clock,
        default_ttl_seconds: int,
        on_session_end: Callable[[str, str], bool] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._default_ttl = default_ttl_seconds
        # Told of each session that ends (namespace, session id); True if it sent a consolidation job.
        self._on_session_end = on_session_end

    def put(self, namespace: str, session_id: str, key: str, write: WorkingWrite) -> WorkingEntry:
        """Set one key of a session; the TTL restarts with every write."""
        validate_namespace(namespace)
        check_session_id(session_id)
        if not _KEY.fullmatch(key):
            raise InvalidInput(
                f"key: must be 1 to {MAX_WORKING_KEY_CHARS} characters without control characters or '/'",
                field="key",
            )
        _check_size(write.value)
        # The key and the value are redacted like memories (on the one path every request takes): scratch state is
        # stored on disk too, listed, and read back into prompts.
        key, _ = redact_given_text(key)
        write, _ = redact_request(write)
        encoded = _check_size(write.value)
        now = self._clock.now()
        ttl = write.ttl_seconds or self._default_ttl
        entry = WorkingEntry(
            namespace=namespace,
            session_id=session_id,
            key=key,
            value=json.loads(encoded),
            updated_at=now,
            expires_at=now + timedelta(seconds=ttl),
        )
        self._store.put_working(entry)
        return entry

    def get(self, namespace: str, session_id: str) -> WorkingView:
        validate_namespace(namespace)
        check_session_id(session_id)
        entries = self._store.get_working(namespace, session_id, self._clock.now())
        return WorkingView(
            namespace=namespace,
            session_id=session_id,
            entries={e.key: e.value for e in entries},
            expires_at={e.key: e.expires_at for e in entries},
        )

    def clear(self, namespace: str, session_id: str) -> int:
        """End a session's scratch state (task end or reset); returns how many keys were removed."""
        validate_namespace(namespace)
        check_session_id(session_id)
        return self._store.clear_working(namespace, session_id)

    def end_session(self, namespace: str, session_id: str) -> SessionEnded:
        """A session is over: its working memory is cleared and the session-end trigger fires."""
        removed = self.clear(namespace, session_id)
        sent = self._on_session_end(namespace, session_id) if self._on_session_end is not None else False
        return SessionEnded(namespace=namespace, session_id=session_id, cleared=removed, consolidation_job_sent=sent)
