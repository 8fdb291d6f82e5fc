"""The route functions that HTTP shapes itself: a write's status by what became of it, a new key's 201 and
`no-store`, an edit's `If-Match`, the export's ndjson pages and the import's ndjson body; and the routes that are
no operation (the API's OpenAPI document, the inspector's files). Each calls its operation from the catalogue; the
others are made from the catalogue alone (`rearview.api.http_handlers`)."""

# No `from __future__ import annotations` here: Powertools reads the route functions' annotations when
# they are registered and resolves string annotations against module globals only.

from http import HTTPStatus
from typing import Annotated, Any, Protocol

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from pydantic import BaseModel, Field

from rearview.api import ui
from rearview.api.http_handlers import NAMESPACE_DESCRIPTION, decoded
from rearview.bootstrap import Services
from rearview.domain.access import Principal
from rearview.domain.edit import MemoryEdit
from rearview.domain.http_bodies import KeyCreate, KeyCreated
from rearview.domain.memory import Episode, Fact
from rearview.domain.namespaces import Namespace
from rearview.domain.transfer import NDJSON, ImportResult
from rearview.domain.write import MemoryWrite, WriteResult
from rearview.errors import InvalidInput, NotFound
from rearview.operations import catalogue
from rearview.service.manage.transfer import parse_import

# The header that carries an export page's successor (AWS answers one page per response).
NEXT_CURSOR_HEADER = "X-Next-Cursor"

StoredMemory = Annotated[Episode | Fact, Field(discriminator="layer")]
NamespacePath = Annotated[str, Path(description=NAMESPACE_DESCRIPTION)]
MemoryIdPath = Annotated[
    str, Path(description="The memory's id, as a write, `recall`, `brief` or `list_memories` gave it")
]


class ShapingApp(Protocol):
    """What these route functions ask of the resolver (`rearview.api.http.RearviewResolver`)."""

    def principal(self) -> Principal: ...

    def namespace(self) -> Namespace: ...

    def openapi_document(self) -> str:
        """The API's OpenAPI document, as JSON."""
        ...

    def request_body(self) -> str:
        """The request's body, decoded ("" when there is none)."""
        ...


def _json(body: BaseModel, status: int, headers: dict[str, str] | None = None) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body, headers=headers)


def _write_status(result: WriteResult) -> int:
    if result.status == "accepted":
        return HTTPStatus.ACCEPTED.value
    if result.status == "stored" and result.reason is None:
        return HTTPStatus.CREATED.value
    return HTTPStatus.OK.value


def _version(if_match: str | None) -> int | None:
    """The version an `If-Match` header names (`3`, `"3"` or `W/"3"`), or None."""
    if if_match is None:
        return None
    text = if_match.strip().removeprefix("W/").strip('"')
    if not text.isdigit():
        raise InvalidInput("if-match: must be the memory's version, a whole number", field="if-match")
    return int(text)


class ShapedRoutes:
    """The route functions HTTP shapes itself; each public method serves the route of the same name."""

    def __init__(self, services: Services, app: ShapingApp) -> None:
        self._services = services
        self._app = app

    def write_memory(self, ns: NamespacePath, item: Annotated[MemoryWrite, Body()]) -> Response[WriteResult]:
        result = catalogue.write_memory(self._services, self._app.namespace(), item)
        return _json(result, _write_status(result))

    def create_key(self, request: Annotated[KeyCreate, Body()]) -> Response[KeyCreated]:
        created = catalogue.create_key(self._services, self._app.principal(), request)
        return _json(created, HTTPStatus.CREATED.value, {"Cache-Control": "no-store"})

    def edit_memory(
        self,
        ns: NamespacePath,
        id: MemoryIdPath,
        edit: Annotated[MemoryEdit, Body()],
        if_match: Annotated[
            str | None, Header(alias="If-Match", description="The version the edit applies to (412 if stale)")
        ] = None,
    ) -> StoredMemory:
        principal, version = self._app.principal(), _version(if_match)
        return catalogue.edit_memory(self._services, self._app.namespace(), decoded(id), edit, principal, version)

    def export_memories(
        self,
        ns: NamespacePath,
        cursor: Annotated[
            str | None, Query(max_length=1024, description=f"The {NEXT_CURSOR_HEADER} of the last page")
        ] = None,
    ) -> Response[str]:
        page = catalogue.export_memories(self._services, self._app.namespace(), cursor)
        headers = {NEXT_CURSOR_HEADER: page.next_cursor} if page.next_cursor else {}
        return Response(status_code=200, content_type=NDJSON, body=page.body(), headers=headers)

    def import_memories(
        self,
        ns: NamespacePath,
        content_type: Annotated[str | None, Header(alias="content-type")] = None,
    ) -> ImportResult:
        namespace = self._app.namespace()
        ndjson = (content_type or "").split(";")[0].strip().lower() in (NDJSON, "application/jsonl")
        request = parse_import(self._app.request_body(), ndjson)
        return catalogue.import_memories(self._services, namespace, request)

    # --- the API's own document and the inspector's static files

    def openapi_document(self) -> Response[str]:
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=self._app.openapi_document())

    def ui_page(self) -> Response[str]:
        return self.ui_asset("index.html")

    def ui_asset(self, asset: str) -> Response[str]:
        found = ui.asset(decoded(asset))
        if found is None:
            raise NotFound(f"{asset[:80]!r}: no such file", field="asset")
        content_type, body = found
        headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff", **ui.SECURITY_HEADERS}
        return Response(status_code=HTTPStatus.OK.value, content_type=content_type, body=body, headers=headers)


def shaped_routes(services: Services, app: ShapingApp) -> dict[str, Any]:
    """The route functions of ShapedRoutes by operation name."""
    routes = ShapedRoutes(services, app)
    return {
        name: getattr(routes, name)
        for name, member in vars(ShapedRoutes).items()
        if callable(member) and not name.startswith("_")
    }
