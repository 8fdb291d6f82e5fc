"""The HTTP API's route functions for memory by hand: list, edit, history, export and import, the namespaces and
their erasure, and the inspector's static page. Registered from the route table with the others
(`rearview.api.http`); each parses its request, calls one service and returns a model or a response."""

# No `from __future__ import annotations` here: Powertools reads the route functions' annotations when
# they are registered and resolves string annotations against module globals only.

from http import HTTPStatus
from typing import Annotated, Any, Protocol, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from pydantic import BaseModel, ValidationError

from rearview.api import field_errors, ui
from rearview.api.http_handlers import MemoryIdPath, NamespacePath, StoredMemory, decoded, namespace_of
from rearview.bootstrap import Services
from rearview.domain.access import ALL_NAMESPACES, Principal
from rearview.domain.edit import MemoryEdit
from rearview.domain.erase import EraseReceipt, NamespaceList
from rearview.domain.history import MemoryHistory
from rearview.domain.listing import MAX_PAGE, ListQuery, MemoryPage
from rearview.domain.memory import Kind, StoredLayer
from rearview.domain.timestamps import RequestDatetime
from rearview.domain.transfer import NDJSON, ImportResult
from rearview.errors import InvalidInput, NotFound
from rearview.service.manage.transfer import parse_import

# The header that carries an export page's successor (AWS answers one page per response).
NEXT_CURSOR_HEADER = "X-Next-Cursor"
_Model = TypeVar("_Model", bound=BaseModel)


class ManagingApp(Protocol):
    """What these route functions ask of the resolver (`rearview.api.http.RearviewResolver`)."""

    def principal(self) -> Principal: ...

    def request_body(self) -> str:
        """The request's body, decoded ("" when there is none)."""
        ...


def validated(model: type[_Model], data: dict[str, Any]) -> _Model:
    """`model` from request parts, a validation error as the API's 422 (naming the field)."""
    try:
        return model.model_validate({k: v for k, v in data.items() if v is not None})
    except ValidationError as exc:
        message, field = field_errors.describe(exc.errors())
        raise InvalidInput(message, field=field) from None


def _version(if_match: str | None) -> int | None:
    """The version an `If-Match` header names (`3`, `"3"` or `W/"3"`), or None."""
    if if_match is None:
        return None
    text = if_match.strip().removeprefix("W/").strip('"')
    if not text.isdigit():
        raise InvalidInput("if-match: must be the memory's version, a whole number", field="if-match")
    return int(text)


class ManageOperations:
    """The management routes over one set of services; each public method serves the route of the same name."""

    def __init__(self, services: Services, app: ManagingApp) -> None:
        self._services = services
        self._app = app

    def list_memories(  # noqa: PLR0913 - one parameter per query parameter, each documented in OpenAPI
        self,
        ns: NamespacePath,
        layer: Annotated[StoredLayer | None, Query(description="episodic or semantic")] = None,
        tag: Annotated[str | None, Query(max_length=64, description="Only memories with this tag")] = None,
        event_type: Annotated[str | None, Query(max_length=64, description="Only episodes of this type")] = None,
        kind: Annotated[Kind | None, Query(description="Only facts of this kind")] = None,
        since: Annotated[RequestDatetime | None, Query(description="From this time on, ISO 8601")] = None,
        until: Annotated[RequestDatetime | None, Query(description="Before this time, ISO 8601")] = None,
        include_superseded: Annotated[bool, Query(description="Also superseded facts")] = False,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"Page size, 1 to {MAX_PAGE}")] = 50,
        cursor: Annotated[str | None, Query(max_length=1024, description="next_cursor of the last page")] = None,
    ) -> MemoryPage:
        query = validated(
            ListQuery,
            {
                "layer": layer,
                "tag": tag,
                "event_type": event_type,
                "kind": kind,
                "since": since,
                "until": until,
                "include_superseded": include_superseded,
                "limit": limit,
                "cursor": cursor,
            },
        )
        return self._services.listing.page(namespace_of(ns), query)

    def edit_memory(
        self,
        ns: NamespacePath,
        id: MemoryIdPath,
        edit: Annotated[MemoryEdit, Body()],
        if_match: Annotated[
            str | None, Header(alias="If-Match", description="The version the edit applies to (412 if stale)")
        ] = None,
    ) -> StoredMemory:
        actor = self._app.principal().key_id
        return self._services.editor.edit(
            namespace_of(ns), decoded(id), edit, expected_version=_version(if_match), actor=actor
        )

    def memory_history(self, ns: NamespacePath, id: MemoryIdPath) -> MemoryHistory:
        return self._services.history.history(namespace_of(ns), decoded(id))

    def export_memories(
        self,
        ns: NamespacePath,
        cursor: Annotated[
            str | None, Query(max_length=1024, description=f"The {NEXT_CURSOR_HEADER} of the last page")
        ] = None,
    ) -> Response[str]:
        page = self._services.transfer.export_page(namespace_of(ns), cursor)
        headers = {NEXT_CURSOR_HEADER: page.next_cursor} if page.next_cursor else {}
        return Response(status_code=200, content_type=NDJSON, body=page.body(), headers=headers)

    def import_memories(
        self,
        ns: NamespacePath,
        content_type: Annotated[str | None, Header(alias="content-type")] = None,
    ) -> ImportResult:
        namespace = namespace_of(ns)
        ndjson = (content_type or "").split(";")[0].strip().lower() in (NDJSON, "application/jsonl")
        return self._services.transfer.restore(namespace, parse_import(self._app.request_body(), ndjson))

    def list_namespaces(
        self,
        prefix: Annotated[str | None, Query(max_length=300, description="Only namespaces starting with this")] = None,
    ) -> NamespaceList:
        principal = self._app.principal()
        scope = None if principal.scope == ALL_NAMESPACES else principal.scope
        return self._services.listing.namespaces(principal.reaches, prefix, scope)

    def erase_namespace(
        self,
        ns: NamespacePath,
        subtree: Annotated[bool, Query(description="Also every namespace under it")] = False,
    ) -> EraseReceipt:
        return self._services.eraser.erase(namespace_of(ns), subtree, caller=self._app.principal())

    # --- the inspector's static files

    def ui_page(self) -> Response[str]:
        return self.ui_asset("index.html")

    def ui_asset(self, asset: str) -> Response[str]:
        found = ui.asset(decoded(asset))
        if found is None:
            raise NotFound(f"{asset[:80]!r}: no such file", field="asset")
        content_type, body = found
        headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff", **ui.SECURITY_HEADERS}
        return Response(status_code=HTTPStatus.OK.value, content_type=content_type, body=body, headers=headers)
