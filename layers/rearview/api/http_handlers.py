"""The HTTP API's route functions: each parses its request into a model (Powertools validates it against the
OpenAPI schema), calls one service, and returns a model.

`HttpOperations` holds one method per operation of `rearview.api.routes.API_ROUTES`, named as the table names it;
`rearview.api.http` registers them from the table.
"""

# No `from __future__ import annotations` here: Powertools reads the route functions' annotations when
# they are registered and resolves string annotations against module globals only.

from collections.abc import Callable
from http import HTTPStatus
from typing import Annotated, Any, Protocol
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from pydantic import BaseModel, Field

from rearview import __version__
from rearview.bootstrap import Services
from rearview.domain.access import KEY_ID_PATTERN, Principal
from rearview.domain.brief import BriefRequest, BriefResponse, FeedbackRequest, FeedbackResult
from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.forget import ForgetReceipt, ForgetRequest
from rearview.domain.http_bodies import Cleared, Health, KeyCreate, KeyCreated, KeyInfo, KeyLimit, KeyList
from rearview.domain.memory import Episode, Fact
from rearview.domain.namespaces import validate_namespace
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.retention import NamespaceRetention, RetentionPolicy
from rearview.domain.stats import Stats
from rearview.domain.working import SessionEnded, WorkingEntry, WorkingView, WorkingWrite
from rearview.domain.write import BatchResult, BatchWrite, MemoryWrite, WriteResult
from rearview.errors import NotFound


class ResolvingApp(Protocol):
    """What the route functions ask of the resolver that calls them (`rearview.api.http.RearviewResolver`)."""

    def principal(self) -> Principal:
        """The principal of the request being resolved."""
        ...

    def openapi_document(self) -> str:
        """The API's OpenAPI document, as JSON."""
        ...


# The request and response bodies of the HTTP API alone live in `rearview.domain.http_bodies` (the Python client
# reads them too); imported here by name, as Powertools resolves the route functions' annotations in this module.
StoredMemory = Annotated[Episode | Fact, Field(discriminator="layer")]

# Path parameters, URL-decoded by the routes (API Gateway and the local server pass the raw, encoded path).
NamespacePath = Annotated[
    str, Path(description="1 to 4 `:`-separated segments of `[A-Za-z0-9_.@-]{1,64}`, e.g. `acme:u-42`")
]
SessionPath = Annotated[str, Path(description="Session id: 1 to 128 characters of `A-Z a-z 0-9 _ . : @ -`")]
WorkingKeyPath = Annotated[str, Path(description="Up to 256 characters, no control characters or '/'")]
MemoryIdPath = Annotated[str, Path(description="The memory's id (as returned by a write)")]
KeyIdPath = Annotated[str, Path(description=f"The key's id (`{KEY_ID_PATTERN}`), as listed")]


def decoded(value: str) -> str:
    return unquote(value, errors="strict")


def namespace_of(raw: str) -> str:
    """The URL-decoded namespace path segment (`acme%3Au-42` -> `acme:u-42`), validated."""
    return validate_namespace(decoded(raw))


def _json(body: BaseModel, status: int, headers: dict[str, str] | None = None) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body, headers=headers)


def _write_status(result: WriteResult) -> int:
    if result.status == "accepted":
        return HTTPStatus.ACCEPTED.value
    if result.status == "stored" and result.reason is None:
        return HTTPStatus.CREATED.value
    return HTTPStatus.OK.value


class HttpOperations:
    """The API's operations over one set of services; each public method serves the route of the same name."""

    def __init__(self, services: Services, app: ResolvingApp) -> None:
        self._services = services
        self._app = app

    # --- health and documents -------------------------------------------------------------------------------

    def health(self) -> Health:
        embedder = self._services.embedder
        return Health(version=__version__, embedder=embedder.name, dim=embedder.dim)

    def openapi_document(self) -> Response[str]:
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=self._app.openapi_document())

    # --- working memory -------------------------------------------------------------------------------------

    def put_working(
        self, ns: NamespacePath, sid: SessionPath, key: WorkingKeyPath, write: Annotated[WorkingWrite, Body()]
    ) -> WorkingEntry:
        return self._services.working.put(namespace_of(ns), decoded(sid), decoded(key), write)

    def get_working(self, ns: NamespacePath, sid: SessionPath) -> WorkingView:
        return self._services.working.get(namespace_of(ns), decoded(sid))

    def clear_working(self, ns: NamespacePath, sid: SessionPath) -> Cleared:
        return Cleared(cleared=self._services.working.end_session(namespace_of(ns), decoded(sid)).cleared)

    # --- memories -------------------------------------------------------------------------------------------

    def write_memory(self, ns: NamespacePath, item: Annotated[MemoryWrite, Body()]) -> Response[WriteResult]:
        result = self._services.writer.submit(namespace_of(ns), [item], field_prefix="")[0]
        return _json(result, _write_status(result))

    def write_batch(self, ns: NamespacePath, batch: Annotated[BatchWrite, Body()]) -> BatchResult:
        return BatchResult(results=self._services.writer.submit(namespace_of(ns), batch.items))

    def get_memory(self, ns: NamespacePath, id: MemoryIdPath) -> StoredMemory:
        namespace, memory_id = namespace_of(ns), decoded(id)
        memory = self._services.store.get(namespace, memory_id)
        if memory is None:
            raise NotFound(f"memory {memory_id!r} not found in namespace {namespace!r}", field="id")
        return memory

    def delete_memory(
        self,
        ns: NamespacePath,
        id: MemoryIdPath,
        cascade: Annotated[bool, Query(description="Also update or delete facts induced from it")] = True,
    ) -> ForgetReceipt:
        return self._services.forgetter.forget_one(namespace_of(ns), decoded(id), cascade)

    # --- the operations -------------------------------------------------------------------------------------

    def recall(self, ns: NamespacePath, query: Annotated[RecallQuery, Body()]) -> RecallResponse:
        return self._services.recaller.recall(namespace_of(ns), query)

    def forget(self, ns: NamespacePath, request: Annotated[ForgetRequest, Body()]) -> ForgetReceipt:
        return self._services.forgetter.forget(namespace_of(ns), request)

    def consolidate(
        self, ns: NamespacePath, request: Annotated[ConsolidateRequest | None, Body()] = None
    ) -> ConsolidateResult:
        return self._services.consolidation.consolidate(namespace_of(ns), request or ConsolidateRequest())

    def stats(self, ns: NamespacePath) -> Stats:
        return self._services.stats.of(namespace_of(ns))

    # --- hindsight: before a task and after it --------------------------------------------------------------

    def brief(self, ns: NamespacePath, request: Annotated[BriefRequest, Body()]) -> BriefResponse:
        return self._services.briefer.brief(namespace_of(ns), request)

    def feedback(self, ns: NamespacePath, request: Annotated[FeedbackRequest, Body()]) -> FeedbackResult:
        return self._services.feedback.feedback(namespace_of(ns), request)

    def end_session(self, ns: NamespacePath, sid: SessionPath) -> SessionEnded:
        return self._services.working.end_session(namespace_of(ns), decoded(sid))

    # --- retention --------------------------------------------------------------------------------------------

    def get_retention(self, ns: NamespacePath) -> NamespaceRetention:
        return self._services.retention.policy(namespace_of(ns))

    def put_retention(self, ns: NamespacePath, policy: Annotated[RetentionPolicy, Body()]) -> NamespaceRetention:
        return self._services.retention.set_policy(namespace_of(ns), policy)

    def delete_retention(self, ns: NamespacePath) -> NamespaceRetention:
        return self._services.retention.clear_policy(namespace_of(ns))

    # --- API keys (admin) ------------------------------------------------------------------------------------

    def create_key(self, request: Annotated[KeyCreate, Body()]) -> Response[KeyCreated]:
        access = self._services.access
        key, plaintext = access.create_key_as(
            self._app.principal(),
            request.namespace,
            request.permissions,
            request.expires_at,
            request.description,
            request.requests_per_minute,
        )
        info = KeyInfo.of(key, self._services.clock.now())
        created = KeyCreated(**info.model_dump(), key=plaintext)
        return _json(created, HTTPStatus.CREATED.value, {"Cache-Control": "no-store"})

    def list_keys(self) -> KeyList:
        now = self._services.clock.now()
        scope = self._app.principal().scope
        return KeyList(keys=[KeyInfo.of(key, now) for key in self._services.access.list_keys(scope)])

    def revoke_key(self, key_id: KeyIdPath) -> KeyInfo:
        key = self._services.access.revoke_as(self._app.principal(), decoded(key_id))
        return KeyInfo.of(key, self._services.clock.now())

    def set_key_limit(self, key_id: KeyIdPath, limit: Annotated[KeyLimit, Body()]) -> KeyInfo:
        access = self._services.access
        key = access.set_requests_per_minute_as(self._app.principal(), decoded(key_id), limit.requests_per_minute)
        return KeyInfo.of(key, self._services.clock.now())


def route_functions(operations: object) -> dict[str, Callable[..., Any]]:
    """The route functions of `operations` (an HttpOperations, a ManageOperations) by operation name: the public
    methods its class defines."""
    return {
        name: getattr(operations, name)
        for name, member in vars(type(operations)).items()
        if callable(member) and not name.startswith("_")
    }
