"""Every call of the HTTP API as data: the request (method, path from the route table, query, headers, body) and how
to read the answer. The sync and async clients run the same calls, so a route is described once for both."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, TypeAdapter

from rearview.api.routes import route_named
from rearview.domain.brief import BriefRequest, BriefResponse, FeedbackRequest, FeedbackResult
from rearview.domain.consolidate import ConsolidateRequest, ConsolidateResult
from rearview.domain.edit import MemoryEdit
from rearview.domain.erase import EraseReceipt, NamespaceList
from rearview.domain.forget import ForgetReceipt, ForgetRequest
from rearview.domain.history import MemoryHistory, StoredMemory
from rearview.domain.http_bodies import Cleared, Health, KeyCreate, KeyCreated, KeyInfo, KeyLimit, KeyList
from rearview.domain.listing import ListQuery, MemoryPage
from rearview.domain.memory import Memory
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.stats import Stats
from rearview.domain.transfer import NDJSON, ExportedEpisode, ExportedFact, ExportedMemory, ImportResult
from rearview.domain.working import SessionEnded, WorkingEntry, WorkingView, WorkingWrite
from rearview.domain.write import BatchResult, BatchWrite, MemoryWrite, WriteResult

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


def _call(operation: str, read: Callable[[Any], T], body: Any = None, query: Any = None, **path: str) -> Call[T]:
    route = route_named(operation)
    params = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (query or {}).items() if v is not None}
    return Call(route.method, route.url_path(**path), read, params=params, json_body=body)


def _dump(model: BaseModel, **kw: Any) -> Any:
    return model.model_dump(mode="json", exclude_none=True, **kw)


# --- the operations, one function each, named as the client methods are ------------------------------------------


def health() -> Call[Health]:
    return _call("health", Health.model_validate)


def write(namespace: str, item: MemoryWrite) -> Call[WriteResult]:
    return _call("write_memory", WriteResult.model_validate, _dump(item), ns=namespace)


def write_batch(namespace: str, items: Sequence[MemoryWrite]) -> Call[BatchResult]:
    return _call("write_batch", BatchResult.model_validate, _dump(BatchWrite(items=list(items))), ns=namespace)


def get(namespace: str, memory_id: str) -> Call[Memory]:
    return _call("get_memory", MEMORY.validate_python, ns=namespace, id=memory_id)


def delete(namespace: str, memory_id: str, cascade: bool = True) -> Call[ForgetReceipt]:
    return _call("delete_memory", ForgetReceipt.model_validate, query={"cascade": cascade}, ns=namespace, id=memory_id)


def recall(namespace: str, query: RecallQuery) -> Call[RecallResponse]:
    return _call("recall", RecallResponse.model_validate, _dump(query), ns=namespace)


def forget(namespace: str, request: ForgetRequest) -> Call[ForgetReceipt]:
    return _call("forget", ForgetReceipt.model_validate, _dump(request), ns=namespace)


def consolidate(namespace: str, request: ConsolidateRequest | None = None) -> Call[ConsolidateResult]:
    body = _dump(request or ConsolidateRequest())
    return _call("consolidate", ConsolidateResult.model_validate, body, ns=namespace)


def stats(namespace: str) -> Call[Stats]:
    return _call("stats", Stats.model_validate, ns=namespace)


def brief(namespace: str, request: BriefRequest) -> Call[BriefResponse]:
    return _call("brief", BriefResponse.model_validate, _dump(request), ns=namespace)


def feedback(namespace: str, request: FeedbackRequest) -> Call[FeedbackResult]:
    return _call("feedback", FeedbackResult.model_validate, _dump(request), ns=namespace)


def end_session(namespace: str, session_id: str) -> Call[SessionEnded]:
    return _call("end_session", SessionEnded.model_validate, ns=namespace, sid=session_id)


def put_working(namespace: str, session_id: str, key: str, write: WorkingWrite) -> Call[WorkingEntry]:
    return _call("put_working", WorkingEntry.model_validate, _dump(write), ns=namespace, sid=session_id, key=key)


def get_working(namespace: str, session_id: str) -> Call[WorkingView]:
    return _call("get_working", WorkingView.model_validate, ns=namespace, sid=session_id)


def clear_working(namespace: str, session_id: str) -> Call[Cleared]:
    return _call("clear_working", Cleared.model_validate, ns=namespace, sid=session_id)


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
    return _call("create_key", KeyCreated.model_validate, _dump(request))


def list_keys() -> Call[KeyList]:
    return _call("list_keys", KeyList.model_validate)


def revoke_key(key_id: str) -> Call[KeyInfo]:
    return _call("revoke_key", KeyInfo.model_validate, key_id=key_id)


def set_key_limit(key_id: str, requests_per_minute: int | None) -> Call[KeyInfo]:
    body = KeyLimit(requests_per_minute=requests_per_minute).model_dump(mode="json")
    return _call("set_key_limit", KeyInfo.model_validate, body, key_id=key_id)


def list_memories(namespace: str, query: ListQuery | None = None) -> Call[MemoryPage]:
    params = (query or ListQuery()).model_dump(mode="json", exclude_none=True)
    return _call("list_memories", MemoryPage.model_validate, query=params, ns=namespace)


def edit(namespace: str, memory_id: str, edit: MemoryEdit, if_version: int | None = None) -> Call[Memory]:
    body = edit.model_dump(mode="json", exclude_unset=True)
    call = _call("edit_memory", MEMORY.validate_python, body, ns=namespace, id=memory_id)
    if if_version is None:
        return call
    return Call(call.method, call.path, call.read, headers={"If-Match": str(if_version)}, json_body=call.json_body)


def history(namespace: str, memory_id: str) -> Call[MemoryHistory]:
    return _call("memory_history", MemoryHistory.model_validate, ns=namespace, id=memory_id)


def export_page(namespace: str, cursor: str | None = None) -> Call[str]:
    return _call("export_memories", str, query={"cursor": cursor}, ns=namespace)


def import_memories(
    namespace: str, items: Iterable[ExportedEpisode | ExportedFact | Mapping[str, Any]] | str
) -> Call[ImportResult]:
    """Lines as `export` gives them: models, dicts, or ndjson text."""
    route = route_named("import_memories")
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


def list_namespaces(prefix: str | None = None) -> Call[NamespaceList]:
    return _call("list_namespaces", NamespaceList.model_validate, query={"prefix": prefix})


def erase(namespace: str, subtree: bool = False) -> Call[EraseReceipt]:
    return _call("erase_namespace", EraseReceipt.model_validate, query={"subtree": subtree}, ns=namespace)


def export_lines(text: str) -> list[ExportedEpisode | ExportedFact]:
    """The export lines of an ndjson body."""
    return [EXPORT_LINE.validate_json(line) for line in text.splitlines() if line.strip()]
