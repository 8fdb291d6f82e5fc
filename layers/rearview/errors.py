"""Domain errors. Each carries a stable code, a message naming the field and the limit, and an HTTP status.

The edges (HTTP, MCP, CLI) map these through one table; the core never builds responses itself.
"""

from __future__ import annotations


class RearviewError(Exception):
    """Base of every error the service reports to a caller."""

    status: int = 400
    code: str = "bad_request"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_dict(self) -> dict[str, str]:
        body = {"error": self.code, "message": self.message}
        if self.field:
            body["field"] = self.field
        return body

    def headers(self) -> dict[str, str]:
        """HTTP headers the edges add to this error's response (none but for a few errors)."""
        return {}


class InvalidInput(RearviewError):
    """A request field breaks a rule (empty, too long, control characters, wrong shape)."""

    status = 422
    code = "invalid_input"


class MemoryTooLarge(InvalidInput):
    code = "too_large"


class IdConflict(InvalidInput):
    """A write names an id that a memory with other content already holds: storing it would lose one of them, and
    answering `stored` would say it was kept. Retrying cannot help; a new id (or none) can."""

    status = 409
    code = "id_conflict"


class NotFound(RearviewError):
    status = 404
    code = "not_found"


class Unauthorized(RearviewError):
    status = 401
    code = "unauthorized"


class NamespaceForbidden(RearviewError):
    status = 403
    code = "forbidden"


class Throttled(RearviewError):
    """The API key made as many requests as its limit allows in this window (`rearview.domain.quota`). Nothing of
    the request was done; retry after `retry_after` seconds (the `Retry-After` header)."""

    status = 429
    code = "throttled"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class ConcurrentUpdate(RearviewError):
    """Optimistic locking lost: the memory changed between read and write. Safe to retry."""

    status = 409
    code = "conflict"


class PreconditionFailed(RearviewError):
    """An `If-Match` version that is no longer the stored one: the memory changed since the caller read it."""

    status = 412
    code = "precondition_failed"


class RunInProgress(RearviewError):
    """Another consolidation run holds the namespace's lease. Retry when it is done (or its lease expires)."""

    status = 409
    code = "consolidation_running"


class EmbeddingMismatch(RearviewError):
    """The data directory holds vectors of another embedder or dimension than the one configured."""

    status = 409
    code = "embedding_mismatch"


class SearchUnavailable(RearviewError):
    """The search index cannot answer: missing, unreachable, refusing or throttling. Recall and the write path's
    near-duplicate check fall back to the store's own search (`service.search_fallback`); only a caller without a
    fallback sees it (503)."""

    status = 503
    code = "search_unavailable"


class StorageFull(RearviewError):
    """The store cannot write: its disk is full, or its data directory is read-only. Nothing of the request was
    stored; what is stored stays readable."""

    status = 507
    code = "insufficient_storage"


class ConfigurationError(RearviewError):
    status = 500
    code = "configuration_error"
