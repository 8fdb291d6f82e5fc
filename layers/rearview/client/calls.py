"""Every call of the HTTP API as data: the request (method, path, query, headers, body) and how to read the answer,
made from the operation catalogue (`call_of`), or shaped here where the client builds a body from arguments, sends
a header or reads ndjson. The sync and async clients run the same calls."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, TypeAdapter

from rearview.domain.bulk_load import EpisodeLoad, LoadRequest, LoadResult
from rearview.domain.edit import MemoryEdit
from rearview.domain.history import StoredMemory
from rearview.domain.http_bodies import KeyCreate, KeyCreated, KeyInfo, KeyLimit
from rearview.domain.listing import ListQuery, MemoryPage
from rearview.domain.memory import Memory
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.transfer import NDJSON, ExportedEpisode, ExportedFact, ExportedMemory, ImportResult
from rearview.domain.working import WorkingEntry, WorkingWrite
from rearview.domain.write import BatchResult, BatchWrite, MemoryWrite, WriteResult
from rearview.operations.catalogue import OPERATIONS
from rearview.operations.offers import NAMESPACE_SEGMENT, Operation
from rearview.operations.signature import signature

T = TypeVar("T")
MEMORY: TypeAdapter[Memory] = TypeAdapter(StoredMemory)
EXPORT_LINE: TypeAdapter[ExportedEpisode | ExportedFact] = TypeAdapter(ExportedMemory)
NEXT_CURSOR = "x-next-cursor"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and the reader of its answer's body (JSON already parsed, or text for ndjson)."""

    method: str
    path: str
    read: Callable[[Any], T]
    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    json_body: Any = None
    content: bytes | None = None


def _dump(model: BaseModel, **kw: Any) -> Any:
    return model.model_dump(mode="json", exclude_none=True, **kw)


# --- every operation of the catalogue, from its row ---------------------------------------------------------------


def client_operation(name: str) -> Operation:
    """The operation the client offers as method `name`; AttributeError if none."""
    for operation in OPERATIONS:
        if operation.client == name:
            return operation
    raise AttributeError(name)


def call_of(operation: Operation, *args: Any, **kwargs: Any) -> Call[Any]:
    """The call of `operation` with the arguments its function takes (the services and the caller left out):
    the namespace and path parameters fill the path, the request model is the JSON body (a GET's query string),
    the other parameters go in the query string. Answers are read as the operation's response type. The calls the
    client shapes itself (a header, a null that is sent) are made as below."""
    shaped = _SHAPED.get(operation.name)
    if shaped is not None:
        return shaped(*args, **kwargs)
    taken = [p for p in signature(operation).parameters if p.kind != "caller"]
    bound = inspect.Signature(
        [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default) for p in taken]
    ).bind(*args, **kwargs)
    bound.apply_defaults()
    path: dict[str, str] = {}
    query: dict[str, Any] = {}
    body: Any = None
    for p in taken:
        value = bound.arguments[p.name]
        if p.kind == "namespace":
            path[NAMESPACE_SEGMENT] = value
        elif p.kind == "path":
            path[p.wire] = value
        elif p.kind == "query":
            query[p.name] = value
        elif value is not None:
            model = value if isinstance(value, BaseModel) else p.model.model_validate(value)
            if operation.route.method == "GET":
                query.update(model.model_dump(mode="json", exclude_none=True))
            else:
                body = _dump(model)
    read = _reader(operation)
    route = operation.route
    return Call(route.method, route.url_path(**path), read, params=_params(query), json_body=body)


def _reader(operation: Operation) -> Callable[[Any], Any]:
    return TypeAdapter(signature(operation).response).validate_python


def _params(query: Mapping[str, Any]) -> dict[str, str]:
    """Query parameters as text: a boolean as `true`/`false`, an object (a metadata filter) as its JSON."""
    return {k: _param(v) for k, v in query.items() if v is not None}


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


# --- the calls the client shapes itself: a body built from arguments, a header, ndjson ---------------------------


def write(namespace: str, item: MemoryWrite) -> Call[WriteResult]:
    return call_of(OPERATIONS.named("write_memory"), namespace, item)


def write_batch(namespace: str, items: Sequence[MemoryWrite]) -> Call[BatchResult]:
    return call_of(OPERATIONS.named("write_batch"), namespace, BatchWrite(items=list(items)))


def load(namespace: str, items: Sequence[EpisodeLoad | Mapping[str, Any]]) -> Call[LoadResult]:
    """Episodes for the bulk load: models, or dicts of their fields (`vector` optional)."""
    request = LoadRequest(items=[i if isinstance(i, EpisodeLoad) else EpisodeLoad.model_validate(i) for i in items])
    return call_of(OPERATIONS.named("load_episodes"), namespace, request)


def recall(namespace: str, query: RecallQuery) -> Call[RecallResponse]:
    return call_of(OPERATIONS.named("recall"), namespace, query)


def put_working(namespace: str, session_id: str, key: str, write: WorkingWrite) -> Call[WorkingEntry]:
    return call_of(OPERATIONS.named("put_working"), namespace, session_id, key, write)


def create_key(
    namespace: str,
    permissions: Sequence[str],
    expires_at: datetime | None = None,
    description: str | None = None,
    requests_per_minute: int | None = None,
) -> Call[KeyCreated]:
    request = KeyCreate.model_validate(
        {
            "namespace": namespace,
            "permissions": list(permissions),
            "expires_at": expires_at,
            "description": description,
            "requests_per_minute": requests_per_minute,
        }
    )
    return call_of(OPERATIONS.named("create_key"), request)


def set_key_limit(key_id: str, requests_per_minute: int | None) -> Call[KeyInfo]:
    call = call_of(OPERATIONS.named("set_key_limit"), key_id, KeyLimit(requests_per_minute=requests_per_minute))
    # null is the limit's own value here (back to the default), so it is sent, not left out.
    body = {"requests_per_minute": requests_per_minute}
    return Call(call.method, call.path, call.read, json_body=body)


def list_memories(namespace: str, query: ListQuery | None = None) -> Call[MemoryPage]:
    return call_of(OPERATIONS.named("list_memories"), namespace, query or ListQuery())


def edit(namespace: str, memory_id: str, edit: MemoryEdit, if_version: int | None = None) -> Call[Memory]:
    route = OPERATIONS.named("edit_memory").route
    body = edit.model_dump(mode="json", exclude_unset=True)
    headers = {} if if_version is None else {"If-Match": str(if_version)}
    return Call(
        route.method,
        route.url_path(ns=namespace, id=memory_id),
        MEMORY.validate_python,
        headers=headers,
        json_body=body,
    )


def export_page(namespace: str, cursor: str | None = None) -> Call[str]:
    route = OPERATIONS.named("export_memories").route
    return Call(route.method, route.url_path(ns=namespace), str, params=_params({"cursor": cursor}))


def import_memories(
    namespace: str, items: Iterable[ExportedEpisode | ExportedFact | Mapping[str, Any]] | str
) -> Call[ImportResult]:
    """Lines as `export` gives them: models, dicts, or ndjson text."""
    route = OPERATIONS.named("import_memories").route
    if isinstance(items, str):
        text = items
    else:
        text = "".join(
            (item.model_dump_json() if isinstance(item, BaseModel) else json.dumps(dict(item), default=str)) + "\n"
            for item in items
        )
    return Call(
        route.method,
        route.url_path(ns=namespace),
        ImportResult.model_validate,
        headers={"Content-Type": NDJSON},
        content=text.encode("utf-8"),
    )


def export_lines(text: str) -> list[ExportedEpisode | ExportedFact]:
    """The export lines of an ndjson body."""
    return [EXPORT_LINE.validate_json(line) for line in text.splitlines() if line.strip()]


# The operations whose HTTP request is not made from the row alone: `call_of` makes these instead.
_SHAPED: dict[str, Callable[..., Call[Any]]] = {
    "edit_memory": lambda namespace, memory_id, edit_, expected_version=None: edit(
        namespace, memory_id, edit_, expected_version
    ),
    "set_key_limit": lambda key_id, limit: set_key_limit(key_id, limit.requests_per_minute),
}
