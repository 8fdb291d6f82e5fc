"""The mem0 platform API over Rearview's services: each call finds its namespace from the entities it names (the
mapping is `rearview.domain.mem0`'s), checks the caller's access to that namespace, and runs the service that does
the same thing in Rearview (write, recall, list, edit, forget, history), answering in mem0's shapes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from rearview.domain.access import ALL_NAMESPACES, Principal
from rearview.domain.edit import MemoryEdit
from rearview.domain.forget import ForgetRequest
from rearview.domain.history import MemoryVersion
from rearview.domain.listing import MAX_PAGE, ListQuery
from rearview.domain.mem0 import (
    Entities,
    Mem0Add,
    Mem0Added,
    Mem0Done,
    Mem0Found,
    Mem0HistoryEntry,
    Mem0List,
    Mem0Memory,
    Mem0Message,
    Mem0Page,
    Mem0Ping,
    Mem0Result,
    Mem0Search,
    Mem0Update,
    MemoryEvent,
    Scope,
    bound_time,
    expiry_of,
    mem0_id,
    scope_of,
    split_mem0_id,
)
from rearview.domain.memory import Episode, Memory
from rearview.domain.namespaces import Namespace
from rearview.domain.permissions import Permission
from rearview.domain.recall import RecallHit, RecallQuery
from rearview.domain.timestamps import utc_from_epoch
from rearview.domain.write import MemoryWrite, WriteResult
from rearview.errors import InvalidInput
from rearview.service.access import AccessService
from rearview.service.forget import ForgetService
from rearview.service.manage.edit import EditService
from rearview.service.manage.history import HistoryService
from rearview.service.manage.listing import ListingService
from rearview.service.recall import RecallService
from rearview.service.redaction import check_verbatim
from rearview.service.write import WriteService

# The organisation mem0's clients are told they work in: the deployment (it has one).
ORGANISATION = "rearview"
# mem0's clients page get_all by number; this is its default page size.
DEFAULT_PAGE_SIZE = 100
# The roles whose messages are remembered: the system prompt is configuration, not something that happened.
_SKIPPED_ROLES = frozenset({"system"})
_EVENTS: dict[str, MemoryEvent] = {"stored": "ADD", "merged": "UPDATE", "accepted": "NONE"}


# What names the namespace and the session of a call.
_ENTITY_FIELDS = ("user_id", "agent_id", "app_id", "run_id")


class Mem0Api:
    """mem0's operations, each over the Rearview service that does it."""

    def __init__(
        self,
        *,
        writer: WriteService,
        recaller: RecallService,
        listing: ListingService,
        editor: EditService,
        history: HistoryService,
        forgetter: ForgetService,
        access: AccessService,
        default_namespace: str,
    ) -> None:
        self._writer = writer
        self._recaller = recaller
        self._listing = listing
        self._editor = editor
        self._history = history
        self._forgetter = forgetter
        self._access = access
        self._default_namespace = default_namespace

    # --- where a call acts

    def _base(self, caller: Principal) -> str:
        """The namespace entities go under: the caller's scope, or the default one for an unscoped caller."""
        return self._default_namespace if caller.scope == ALL_NAMESPACES else caller.scope

    def _namespace(self, caller: Principal, entities: Entities, permission: Permission) -> Namespace:
        # The entities name a namespace (and the run a session), stored as given: none may hold a secret.
        for name in _ENTITY_FIELDS:
            value = getattr(entities, name)
            if value is not None:
                check_verbatim(value, name)
        namespace = entities.namespace_under(self._base(caller))
        self._access.authorize(caller, namespace, permission)
        return namespace

    def _located(self, caller: Principal, memory_id: str, permission: Permission) -> tuple[Namespace, str]:
        namespace, own_id = split_mem0_id(check_verbatim(memory_id, "memory_id"))
        self._access.authorize(caller, namespace, permission)
        return namespace, own_id

    # --- the operations

    def ping(self, caller: Principal) -> Mem0Ping:
        """What mem0's clients check first: the key works; its project is the namespace entities go under."""
        return Mem0Ping(org_id=ORGANISATION, project_id=self._base(caller))

    def add(self, caller: Principal, request: Mem0Add) -> Mem0Added:
        """Each message an episode of the entities' namespace (of the run's session), written in one batch."""
        scope = scope_of(request)
        namespace = self._namespace(caller, scope.entities, Permission.WRITE)
        messages = [Mem0Message(content=request.messages)] if isinstance(request.messages, str) else request.messages
        when = utc_from_epoch(request.timestamp) if request.timestamp is not None else None
        kept = [(i, m) for i, m in enumerate(messages) if m.role not in _SKIPPED_ROLES and m.content.strip()]
        if not kept:
            raise InvalidInput("messages: no user or assistant message with content", field="messages")
        extra = {"metadata": request.metadata or {}, "expires_at": expiry_of(request.expiration_date)}
        items = [_episode(i, m, scope.entities.run_id, when, extra) for i, m in kept]
        results = self._writer.submit(namespace, items, field_prefix="messages")
        return Mem0Added(
            results=[
                _result(namespace, item, result)
                for item, result in zip(items, results, strict=True)
                if result.status != "skipped"
            ]
        )

    def search(self, caller: Principal, request: Mem0Search) -> Mem0Found:
        scope = scope_of(request, request.categories, request.metadata)
        namespace = self._namespace(caller, scope.entities, Permission.READ)
        query = RecallQuery(
            query=request.query,
            top_k=request.top_k or request.limit or 10,
            session_id=scope.entities.run_id,
            tags=scope.tags,
            since=scope.since,
            until=scope.until,
            metadata=scope.metadata or None,
            rerank=request.rerank if request.rerank is not None else True,
        )
        response = self._recaller.recall(namespace, query)
        return Mem0Found(results=[_found(namespace, hit) for hit in response.results])

    def page(self, caller: Principal, request: Mem0List, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE) -> Mem0Page:
        """The entities' memories newest first, page `page` of `page_size`; `count` is how many match in all."""
        if page < 1 or not 1 <= page_size <= MAX_PAGE:
            raise InvalidInput(f"page_size: pages are numbered from 1, of 1 to {MAX_PAGE} memories", field="page_size")
        scope = scope_of(request, request.categories, request.metadata)
        if request.start_date is not None:
            bound_time(scope, {"gte": request.start_date}, "start_date")
        if request.end_date is not None:
            bound_time(scope, {"lte": request.end_date}, "end_date")
        namespace = self._namespace(caller, scope.entities, Permission.READ)
        matching = list(self._matching(namespace, scope))
        start = (page - 1) * page_size
        window = matching[start : start + page_size]
        more = start + page_size < len(matching)
        return Mem0Page(
            count=len(matching),
            next=f"page={page + 1}&page_size={page_size}" if more else None,
            previous=f"page={page - 1}&page_size={page_size}" if page > 1 else None,
            results=[_memory(namespace, m) for m in window],
        )

    def _matching(self, namespace: Namespace, scope: Scope) -> Iterator[Memory]:
        """Every memory of the namespace the scope selects, newest first, read page by page."""
        query = ListQuery(since=scope.since, until=scope.until, limit=MAX_PAGE, metadata=scope.metadata or None)
        tags, run = set(scope.tags), scope.entities.run_id
        while True:
            page = self._listing.page(namespace, query)
            for memory in page.items:
                if tags and not tags.intersection(memory.tags):
                    continue
                if run is not None and not (isinstance(memory, Episode) and run in memory.sessions):
                    continue
                yield memory
            if page.next_cursor is None:
                return
            query = query.model_copy(update={"cursor": page.next_cursor})

    def get(self, caller: Principal, memory_id: str) -> Mem0Memory:
        namespace, own_id = self._located(caller, memory_id, Permission.READ)
        return _memory(namespace, self._listing.memory(namespace, own_id))

    def update(self, caller: Principal, memory_id: str, update: Mem0Update) -> Mem0Memory:
        """A memory's new text, metadata or expiry: an edit (version + 1, the old state kept in its history)."""
        if update.timestamp is not None:
            raise InvalidInput("timestamp: not supported; a memory keeps when it happened", field="timestamp")
        changes: dict[str, object] = {"content": update.text, "metadata": update.metadata}
        changes = {name: value for name, value in changes.items() if value is not None}
        if "expiration_date" in update.model_fields_set:
            changes["expires_at"] = expiry_of(update.expiration_date)
        if not changes:
            raise InvalidInput("text: give the memory's new text, metadata or expiration_date", field="text")
        namespace, own_id = self._located(caller, memory_id, Permission.WRITE)
        edited = self._editor.edit(namespace, own_id, MemoryEdit.model_validate(changes), actor=caller.key_id)
        return _memory(namespace, edited)

    def delete(self, caller: Principal, memory_id: str) -> Mem0Done:
        namespace, own_id = self._located(caller, memory_id, Permission.FORGET)
        self._forgetter.forget_one(namespace, own_id, cascade=True)
        return Mem0Done(message="Memory deleted successfully!")

    def delete_all(self, caller: Principal, entities: Entities) -> Mem0Done:
        """Every memory of the entities (of their run only, when a run is named): a forget per layer."""
        namespace = self._namespace(caller, entities, Permission.FORGET)
        if entities.run_id is not None:
            self._forgetter.forget(namespace, ForgetRequest(layer="episodic", session_id=entities.run_id))
        else:
            for layer in ("episodic", "semantic"):
                self._forgetter.forget(namespace, ForgetRequest(layer=layer))
        return Mem0Done(message="Memories deleted successfully!")

    def history(self, caller: Principal, memory_id: str) -> list[Mem0HistoryEntry]:
        """The memory's states oldest first: the first an ADD, each later one an UPDATE from the one before."""
        namespace, own_id = self._located(caller, memory_id, Permission.READ)
        versions = self._history.history(namespace, own_id).versions
        return _history(namespace, memory_id, versions)


# --- mem0's shapes of Rearview's answers ---------------------------------------------------------------------------


def _episode(
    index: int, message: Mem0Message, run_id: str | None, when: datetime | None, extra: dict[str, Any]
) -> MemoryWrite:
    try:
        return MemoryWrite(content=message.content, session_id=run_id, occurred_at=when, tags=[message.role], **extra)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = {"content": "content", "tags": "role"}.get(str(error["loc"][0]), str(error["loc"][0]))
        where = f"messages.{index}.{name}"
        raise InvalidInput(f"{where}: {error['msg']}", field=where) from None


def _result(namespace: str, item: MemoryWrite, result: WriteResult) -> Mem0Result:
    return Mem0Result(
        id=mem0_id(namespace, result.merged_into or result.id), memory=item.content, event=_EVENTS[result.status]
    )


def _found(namespace: str, hit: RecallHit) -> Mem0Memory:
    entities = Entities.of_namespace(namespace, hit.session_id)
    return Mem0Memory(
        id=mem0_id(namespace, hit.id),
        memory=hit.content,
        score=hit.score,
        metadata=hit.metadata or None,
        categories=hit.tags,
        created_at=hit.occurred_at,
        updated_at=hit.occurred_at,
        **entities.model_dump(),
    )


def _memory(namespace: str, memory: Memory) -> Mem0Memory:
    session = memory.session_id if isinstance(memory, Episode) else None
    entities = Entities.of_namespace(namespace, session)
    return Mem0Memory(
        id=mem0_id(namespace, memory.id),
        memory=memory.content,
        metadata=memory.metadata or None,
        categories=memory.tags,
        created_at=memory.created_at,
        updated_at=max(memory.created_at, memory.occurred_at),
        **entities.model_dump(),
    )


def _history(namespace: str, memory_id: str, versions: Sequence[MemoryVersion]) -> list[Mem0HistoryEntry]:
    entries: list[Mem0HistoryEntry] = []
    previous: str | None = None
    for version in versions:
        memory = version.memory
        session = memory.session_id if isinstance(memory, Episode) else None
        entries.append(
            Mem0HistoryEntry(
                id=f"{memory_id}#{version.version}",
                memory_id=mem0_id(namespace, memory.id),
                old_memory=previous,
                new_memory=memory.content,
                event="ADD" if previous is None else "UPDATE",
                categories=memory.tags,
                created_at=version.changed_at,
                updated_at=version.changed_at,
                **Entities.of_namespace(namespace, session).model_dump(),
            )
        )
        previous = memory.content
    return entries
