"""What both clients share around a call: building the httpx request, reading the answer (the API's errors as the
domain's exceptions), and the retry policy for 429 and 503."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from rearview.client.calls import Call
from rearview.errors import (
    ConcurrentUpdate,
    InvalidInput,
    NamespaceForbidden,
    NotFound,
    PreconditionFailed,
    RearviewError,
    RunInProgress,
    Throttled,
    Unauthorized,
)

T = TypeVar("T")
RETRIED_STATUSES = frozenset({429, 503})
_ERRORS: dict[int, type[RearviewError]] = {
    401: Unauthorized,
    403: NamespaceForbidden,
    404: NotFound,
    409: ConcurrentUpdate,
    412: PreconditionFailed,
    422: InvalidInput,
}
_ERRORS_BY_CODE: dict[str, type[RearviewError]] = {RunInProgress.code: RunInProgress}


class ApiError(RearviewError):
    """An error answer with no more specific domain error (400, 413, 429 or 503 once retries ran out, 5xx)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class Retry:
    """Retries of a call answered 429 (too many requests) or 503 (unavailable): up to `attempts` more, waiting
    `Retry-After` when the server says, else `base * 2**n` seconds (at most `cap`) with full jitter."""

    attempts: int = 3
    base: float = 0.25
    cap: float = 8.0

    def delay(self, attempt: int, response: httpx.Response) -> float:
        after = response.headers.get("retry-after", "")
        if after.replace(".", "", 1).isdigit():
            return min(float(after), self.cap)
        return random.uniform(0, min(self.cap, self.base * 2**attempt))


def request_of(client: httpx.Client | httpx.AsyncClient, call: Call[Any], token: str | None) -> httpx.Request:
    headers = {"Accept": "application/json", "User-Agent": "rearview-python-client", **call.headers}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if call.content is not None:
        return client.build_request(call.method, call.path, params=call.params, headers=headers, content=call.content)
    return client.build_request(call.method, call.path, params=call.params, headers=headers, json=call.json_body)


def answer(call: Call[T], response: httpx.Response) -> T:
    """The call's result from a response, or the domain error the API answered."""
    if response.is_success:
        content_type = response.headers.get("content-type", "")
        body: Any = response.json() if content_type.startswith("application/json") else response.text
        return call.read(body)
    raise error_of(response)


def error_of(response: httpx.Response) -> RearviewError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return ApiError(response.status_code, "http_error", f"server answered HTTP {response.status_code}")
    code = str(body.get("error") or "http_error")
    message = str(body.get("message") or f"server answered HTTP {response.status_code}")
    field = body.get("field") if isinstance(body.get("field"), str) else None
    if code == Throttled.code:
        after = response.headers.get("retry-after", "")
        return Throttled(message, retry_after=int(after) if after.isdigit() else 1)
    error_class = _ERRORS_BY_CODE.get(code) or _ERRORS.get(response.status_code)
    if error_class is None:
        return ApiError(response.status_code, code, message, field)
    return error_class(message, field=field)
