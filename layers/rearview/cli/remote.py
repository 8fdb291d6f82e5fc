"""The CLI against a remote Rearview server: `--url` / `REARVIEW_URL` with `--token` / `REARVIEW_TOKEN`.

A small urllib client over the HTTP API (the route table the local server and Lambda serve), so remember, recall,
forget, consolidate, stats, brief, feedback, session end and keys work the same against a laptop's data directory
and a deployed service.
The server's JSON errors come back as the matching domain errors, so the CLI reports them the way it reports
local ones (`error: <message>`, exit 2).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

import typer
from pydantic import TypeAdapter

from rearview.api.routes import route_named
from rearview.bootstrap import Services
from rearview.cli.invocation import EmbedderChoice, open_services, user_errors
from rearview.domain.brief import BriefRequest, BriefResponse, FeedbackRequest, FeedbackResult
from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.edit import MemoryEdit
from rearview.domain.erase import EraseReceipt
from rearview.domain.forget import ForgetReceipt, ForgetRequest
from rearview.domain.history import MemoryHistory, StoredMemory
from rearview.domain.listing import ListQuery, MemoryPage
from rearview.domain.memory import Memory
from rearview.domain.namespaces import validate_namespace
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.stats import Stats
from rearview.domain.working import SessionEnded
from rearview.domain.write import MemoryWrite, WriteResult
from rearview.errors import (
    ConfigurationError,
    InvalidInput,
    NamespaceForbidden,
    NotFound,
    PreconditionFailed,
    RearviewError,
    RunInProgress,
    Unauthorized,
)

# Recall and consolidation on a cold Lambda can take a few seconds; past this the server is not answering.
DEFAULT_TIMEOUT_SECONDS = 60.0

_MEMORY: TypeAdapter[Memory] = TypeAdapter(StoredMemory)

_ERRORS: dict[int, type[RearviewError]] = {
    401: Unauthorized,
    403: NamespaceForbidden,
    404: NotFound,
    412: PreconditionFailed,
    422: InvalidInput,
}
# Codes that say more than their status (409 is also a concurrent update).
_ERRORS_BY_CODE: dict[str, type[RearviewError]] = {RunInProgress.code: RunInProgress}


class RemoteError(RearviewError):
    """The server answered with an error that has no more specific domain error (400, 409, 5xx ...)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class RemoteTarget:
    """Where the CLI's commands go when `--url` is given: set once by the app's callback."""

    url: str
    token: str | None

    def client(self) -> RemoteClient:
        return RemoteClient(self.url, self.token)


def remote_target(ctx: typer.Context) -> RemoteTarget | None:
    """The `--url` target of the running command (set on the root context), or None for the local data directory.

    Taken from the command's own context, not a global lookup: typer may ship its own copy of click, whose
    context stack `click.get_current_context` would not see.
    """
    obj = ctx.find_root().obj
    return obj if isinstance(obj, RemoteTarget) else None


_Answer = TypeVar("_Answer")


def answer(
    ctx: typer.Context,
    data_dir: Path | None,
    embedder: EmbedderChoice | None,
    *,
    remote: Callable[[RemoteClient], _Answer],
    local: Callable[[Services], _Answer],
) -> _Answer:
    """A command's answer: from the server at `--url` when one is given, else from the local data directory (the
    services built for this call and closed after it). User errors exit 2 either way."""
    target = remote_target(ctx)
    if target is not None:
        with user_errors():
            return remote(target.client())
    with open_services(data_dir, embedder) as services:
        return local(services)


class RemoteClient:
    """The HTTP API over urllib, with `Authorization: Bearer <key>` on every request."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigurationError(f"url: expected http(s)://host[:port] (got {base_url[:200]!r})", field="url")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """Send one request; return the parsed JSON body, or raise the domain error the server reported."""
        raw, _ = self.send(method, path, body, query, headers)
        return json.loads(raw) if raw else None

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[bytes, dict[str, str]]:
        """Send one request; return the raw body and the response headers, or raise the server's domain error."""
        url = self.base_url + path + (f"?{urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        sent = {"Accept": "application/json", "User-Agent": "rearview-cli", **(headers or {})}
        if data is not None:
            sent["Content-Type"] = "application/json"
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(url, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read(), {k.lower(): v for k, v in resp.headers.items()}
        except urllib.error.HTTPError as err:
            with err:
                raise _error_from(err.code, err.read()) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConfigurationError(f"url: cannot reach {self.base_url} ({reason})", field="url") from None

    def call(self, operation: str, body: Any = None, query: dict[str, str] | None = None, **path: str) -> Any:
        """Send the request of one operation of the route table, its path parameters filled in."""
        route = route_named(operation)
        return self.request(route.method, route.url_path(**path), body, query)

    # --- the operations -----------------------------------------------------------------------------------

    def write(self, namespace: str, item: MemoryWrite) -> WriteResult:
        body = item.model_dump(mode="json", exclude_none=True)
        return WriteResult.model_validate(self.call("write_memory", body, ns=validate_namespace(namespace)))

    def recall(self, namespace: str, query: RecallQuery) -> RecallResponse:
        body = query.model_dump(mode="json", exclude_none=True)
        return RecallResponse.model_validate(self.call("recall", body, ns=validate_namespace(namespace)))

    def forget(self, namespace: str, request: ForgetRequest) -> ForgetReceipt:
        body = request.model_dump(mode="json", exclude_none=True)
        return ForgetReceipt.model_validate(self.call("forget", body, ns=validate_namespace(namespace)))

    def forget_one(self, namespace: str, memory_id: str, cascade: bool = True) -> ForgetReceipt:
        query = {"cascade": "true" if cascade else "false"}
        receipt = self.call("delete_memory", query=query, ns=validate_namespace(namespace), id=memory_id)
        return ForgetReceipt.model_validate(receipt)

    def consolidate(self, namespace: str, request: ConsolidateRequest) -> ConsolidateResult:
        body = request.model_dump(mode="json", exclude_none=True)
        return ConsolidateResult.model_validate(self.call("consolidate", body, ns=validate_namespace(namespace)))

    def stats(self, namespace: str) -> Stats:
        return Stats.model_validate(self.call("stats", ns=validate_namespace(namespace)))

    def brief(self, namespace: str, request: BriefRequest) -> BriefResponse:
        body = request.model_dump(mode="json", exclude_none=True)
        return BriefResponse.model_validate(self.call("brief", body, ns=validate_namespace(namespace)))

    def feedback(self, namespace: str, request: FeedbackRequest) -> FeedbackResult:
        body = request.model_dump(mode="json", exclude_none=True)
        return FeedbackResult.model_validate(self.call("feedback", body, ns=validate_namespace(namespace)))

    def end_session(self, namespace: str, session_id: str) -> SessionEnded:
        return SessionEnded.model_validate(self.call("end_session", ns=validate_namespace(namespace), sid=session_id))

    # --- memory by hand -----------------------------------------------------------------------------------

    def list_memories(self, namespace: str, query: ListQuery) -> MemoryPage:
        params = {
            k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in query.model_dump(mode="json").items()
        }
        params = {k: v for k, v in params.items() if v != "None"}
        return MemoryPage.model_validate(self.call("list_memories", query=params, ns=validate_namespace(namespace)))

    def edit_memory(self, namespace: str, memory_id: str, edit: MemoryEdit, version: int | None = None) -> Memory:
        route = route_named("edit_memory")
        path = route.url_path(ns=validate_namespace(namespace), id=memory_id)
        headers = {"If-Match": str(version)} if version is not None else None
        found = self.request(route.method, path, edit.model_dump(mode="json", exclude_unset=True), headers=headers)
        return _MEMORY.validate_python(found)

    def memory_history(self, namespace: str, memory_id: str) -> MemoryHistory:
        found = self.call("memory_history", ns=validate_namespace(namespace), id=memory_id)
        return MemoryHistory.model_validate(found)

    def export_lines(self, namespace: str) -> Iterator[str]:
        """Every export line of the namespace, following the server's page cursor (AWS answers page by page)."""
        route = route_named("export_memories")
        path = route.url_path(ns=validate_namespace(namespace))
        cursor: str | None = None
        while True:
            raw, headers = self.send(route.method, path, query={"cursor": cursor} if cursor else None)
            yield from (line for line in raw.decode("utf-8").splitlines() if line.strip())
            cursor = headers.get("x-next-cursor")
            if not cursor:
                return

    def erase(self, namespace: str, subtree: bool) -> EraseReceipt:
        query = {"subtree": "true" if subtree else "false"}
        return EraseReceipt.model_validate(self.call("erase_namespace", query=query, ns=validate_namespace(namespace)))

    # --- keys (admin) -------------------------------------------------------------------------------------

    def create_key(
        self,
        namespace: str,
        permissions: list[str],
        expires_at: datetime | None = None,
        description: str | None = None,
        requests_per_minute: int | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"namespace": namespace, "permissions": permissions}
        if requests_per_minute is not None:
            body["requests_per_minute"] = requests_per_minute
        if expires_at is not None:
            body["expires_at"] = expires_at.isoformat()
        if description is not None:
            body["description"] = description
        return dict(self.call("create_key", body))

    def list_keys(self) -> list[dict[str, Any]]:
        return list(self.call("list_keys")["keys"])

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        return dict(self.call("revoke_key", key_id=key_id))

    def set_key_limit(self, key_id: str, requests_per_minute: int | None) -> dict[str, Any]:
        return dict(self.call("set_key_limit", {"requests_per_minute": requests_per_minute}, key_id=key_id))


def _error_from(status: int, raw: bytes) -> RearviewError:
    """The domain error for an error response in the API's `{error, message, field?}` shape."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return RemoteError(status, "http_error", f"server answered HTTP {status}")
    code = str(body.get("error") or "http_error")
    message = str(body.get("message") or f"server answered HTTP {status}")
    field = body.get("field") if isinstance(body.get("field"), str) else None
    error_class = _ERRORS_BY_CODE.get(code) or _ERRORS.get(status)
    if error_class is not None:
        return error_class(message, field=field)
    return RemoteError(status, code, message, field)
