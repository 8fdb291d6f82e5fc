"""The mem0 platform API's shapes, as its clients send and read them (`mem0ai`'s `MemoryClient` with `host=`), and
how its entities map onto Rearview: so a mem0 user can try Rearview by changing a base URL.

The mapping, in one place (`rearview.service.mem0_api` applies it):

- **Entities are namespaces.** The entity ids a request names (`user_id`, `agent_id`, `app_id`) become segments under
  the caller's namespace (its API key's scope; `REARVIEW_DEFAULT_NAMESPACE` for an unscoped caller), one per entity,
  as `<kind>.<id>`: `user_id=alice` under `acme` is `acme:user.alice`, `user_id=alice, agent_id=planner` is
  `acme:user.alice:agent.planner`. A search names the same entities as the add, and sees nothing of another
  combination: namespaces isolate them as they isolate everything. An id is 1 to 58 characters of A-Z a-z 0-9 _ . @ -
  (a namespace segment, less its kind), and a namespace has at most four segments.
- **`run_id` is a session**: an add's messages are episodes of that session, a search filters on it.
- **Messages are episodes**: each message (not the system prompt) is one episodic memory, tagged with its role.
  Rearview does not rewrite them into facts on the way in; consolidation learns preferences, facts and lessons
  from them later, as it does from every episode.
- **Categories are tags**: a memory's tags come back as its `categories`, and a `categories` filter is a tag filter.
- **Metadata is metadata**: an add's `metadata` is stored with each of its memories and returned with them; a
  `metadata` filter (`filters: {"metadata": {...}}`) is Rearview's (a value, or `{"in": [...]}`, per key).
- **`expiration_date`** (`YYYY-MM-DD`) is when Rearview forgets the memory: the start of that day, UTC.
- **A memory's id carries its namespace**, `<namespace>~<memory id>` (`acme:user.alice~01J...`), so the routes that
  take an id alone (get, update, delete, history) know where to look and check the caller's access to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from rearview.domain.limits import MAX_BATCH, MAX_QUERY_CHARS, MAX_TOP_K, SESSION_PATTERN, SessionId
from rearview.domain.metadata import Metadata, MetadataFilter
from rearview.domain.namespaces import MAX_NAMESPACE_SEGMENTS, Namespace
from rearview.domain.timestamps import EARLIEST_EPOCH, EARLIEST_YEAR, LATEST_EPOCH, LATEST_YEAR, RequestDatetime
from rearview.errors import InvalidInput

# The entities that name a namespace segment, in the order their segments nest.
ENTITY_KINDS: tuple[tuple[str, str], ...] = (("user_id", "user"), ("agent_id", "agent"), ("app_id", "app"))
RUN_ID = "run_id"
# What an entity id may hold: a namespace segment's characters, leaving room for `<kind>.`.
_ENTITY_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,58}$")
# Between a memory's namespace and its id in the ids this API answers: in neither's alphabet, unreserved in URLs.
ID_SEPARATOR = "~"
_MEM0_ID_PATTERN = r"^[A-Za-z0-9_.:@-]{1,300}~[A-Za-z0-9_.:@#-]{1,128}$"

# mem0's expiration dates are days; Rearview forgets at the start of the day, UTC.
ExpirationDate = Annotated[date, Field(description="YYYY-MM-DD")]

Mem0IdParameter = Annotated[
    str,
    Field(
        pattern=_MEM0_ID_PATTERN,
        description="The memory's id as this API answered it: `<namespace>~<memory id>`",
    ),
]
EntityParameter = Annotated[
    str | None, Field(max_length=58, description="An entity id (user, agent or app) whose memories to delete")
]
RunParameter = Annotated[str | None, Field(max_length=128, description="Only the memories of this run (a session)")]
PageParameter = Annotated[int, Field(ge=1, description="The page, from 1")]
PageSizeParameter = Annotated[int, Field(ge=1, le=500, description="Memories a page, 1 to 500 (default 100)")]


def mem0_id(namespace: str, memory_id: str) -> str:
    """The id a memory has in this API: its namespace and its own id."""
    return f"{namespace}{ID_SEPARATOR}{memory_id}"


def split_mem0_id(value: str) -> tuple[Namespace, str]:
    """The namespace and the memory id of an id this API answered; InvalidInput (field `memory_id`) otherwise."""
    namespace, separator, memory_id = value.rpartition(ID_SEPARATOR)
    if not separator or not namespace or not memory_id:
        raise InvalidInput(
            "memory_id: not an id this API answered (`<namespace>~<memory id>`)", field="memory_id"
        ) from None
    try:
        return Namespace(namespace), memory_id
    except InvalidInput:
        raise InvalidInput("memory_id: its namespace part is not a namespace", field="memory_id") from None


class Entities(BaseModel):
    """The entities a request names, wherever it named them (top level, or inside `filters`)."""

    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None

    def namespace_under(self, base: str) -> Namespace:
        """The namespace of these entities under `base`; InvalidInput naming the entity that cannot be one."""
        segments = base.split(":")
        named = False
        for name, kind in ENTITY_KINDS:
            value = getattr(self, name)
            if value is None:
                continue
            if not _ENTITY_ID.match(value):
                raise InvalidInput(
                    f"{name}: must be 1 to 58 characters of A-Z a-z 0-9 _ . @ - (it names a namespace segment)",
                    field=name,
                )
            named = True
            # A key scoped to the entity already (`acme:user.alice`) acts in its own namespace, not one below it.
            if f"{kind}.{value}" not in segments:
                segments.append(f"{kind}.{value}")
        if not named:
            raise InvalidInput(
                "user_id: name at least one of user_id, agent_id or app_id (at the top level or in filters)",
                field="user_id",
            )
        if self.run_id is not None and not re.fullmatch(SESSION_PATTERN, self.run_id):
            raise InvalidInput(
                "run_id: must be 1 to 128 characters of A-Z a-z 0-9 _ . : @ - (it names a session)", field="run_id"
            )
        if len(segments) > MAX_NAMESPACE_SEGMENTS:
            raise InvalidInput(
                f"agent_id: {base!r} and these entities make {len(segments)} namespace segments, at most "
                f"{MAX_NAMESPACE_SEGMENTS} are allowed: name fewer entities",
                field="agent_id",
            )
        return Namespace(":".join(segments))

    @classmethod
    def of_namespace(cls, namespace: str, session_id: str | None = None) -> Entities:
        """The entities a namespace of this API names (its `<kind>.<id>` segments)."""
        found: dict[str, str | None] = {RUN_ID: session_id}
        kinds = {kind: field for field, kind in ENTITY_KINDS}
        for segment in namespace.split(":"):
            kind, dot, value = segment.partition(".")
            if dot and kind in kinds and value:
                found[kinds[kind]] = value
        return cls.model_validate(found)


class Mem0Message(BaseModel):
    """One message of a conversation, as mem0's clients send it."""

    model_config = ConfigDict(extra="ignore")

    role: str = Field("user", max_length=64, description="user, assistant or system (system messages are not kept)")
    content: str = Field(description="What was said")


class _Scoped(BaseModel):
    """The entity fields every mem0 request may carry at the top level, and the mem0 fields Rearview reads without
    acting on them (accepted so that clients' requests pass; what each does here is in its description)."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(None, description="The user: a namespace segment `user.<id>`")
    agent_id: str | None = Field(None, description="The agent: a namespace segment `agent.<id>`")
    app_id: str | None = Field(None, description="The application: a namespace segment `app.<id>`")
    run_id: SessionId | None = Field(None, description="The run or conversation: a session")
    filters: dict[str, Any] | None = Field(
        None,
        description="Entity ids (`{'user_id': 'alice'}`, or `{'AND': [...]}` of them), `run_id`, `categories` "
        "(`{'in': [...]}`: tags), `created_at` (`gte`, `lte`, `gt`, `lt`), `metadata` (`{'key': value}` or "
        "`{'key': {'in': [...]}}`); `OR` is not supported",
    )
    org_id: str | None = Field(None, description="Ignored: a Rearview deployment is one organisation")
    project_id: str | None = Field(None, description="Ignored: a Rearview deployment is one project")


class Mem0Add(_Scoped):
    """`POST /v1/memories/` and `/v3/memories/add/`: messages to remember for the entities named."""

    messages: Annotated[list[Mem0Message], Field(min_length=1, max_length=MAX_BATCH)] | str = Field(
        description=f"The conversation (at most {MAX_BATCH} messages), or one user message as text"
    )
    metadata: Metadata | None = Field(None, description="Stored with each message's memory, returned and filterable")
    timestamp: int | float | None = Field(
        None,
        ge=EARLIEST_EPOCH,
        le=LATEST_EPOCH,
        description=f"When the messages were said, epoch seconds (UTC), years {EARLIEST_YEAR} to {LATEST_YEAR}",
    )
    infer: bool | None = Field(
        None, description="Ignored: messages are kept as they were said; consolidation infers facts from them later"
    )
    version: str | None = Field(None, description="Ignored (mem0's API version)")
    output_format: str | None = Field(None, description="Ignored: results come as `{results: [...]}`")
    async_mode: bool | None = Field(None, description="Ignored: the embedded backend stores before answering")
    custom_categories: list[dict[str, Any]] | None = Field(None, description="Ignored")
    custom_instructions: str | None = Field(None, description="Ignored")
    agent_custom_instructions: str | None = Field(None, description="Ignored")
    includes: str | None = Field(None, description="Ignored")
    excludes: str | None = Field(None, description="Ignored")
    enable_graph: bool | None = Field(None, description="Ignored")
    immutable: bool | None = Field(None, description="Ignored")
    expiration_date: ExpirationDate | None = Field(None, description="When to forget them, YYYY-MM-DD (UTC)")
    structured_data_schema: dict[str, Any] | None = Field(None, description="Ignored")


class Mem0Search(_Scoped):
    """`POST /v3/memories/search/` (and `/v1/memories/search/`): a search among the entities' memories."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to find, in natural language")
    top_k: int | None = Field(
        None, ge=1, le=MAX_TOP_K, description=f"How many at most (default 10, at most {MAX_TOP_K})"
    )
    limit: int | None = Field(None, ge=1, le=MAX_TOP_K, description="The same as top_k (mem0's v1 name)")
    threshold: float | None = Field(
        None, description="Ignored: recall judges relevance itself and answers nothing rather than noise"
    )
    rerank: bool | None = Field(None, description="Re-order with the deployment's rerank model, if it has one")
    metadata: MetadataFilter | None = Field(
        None, description="Only memories whose metadata matches, as filters.metadata"
    )
    fields: list[str] | None = Field(None, description="Ignored: every field is answered")
    categories: list[str] | None = Field(None, description="Only memories with any of these tags")
    keyword_search: bool | None = Field(None, description="Ignored: recall is hybrid (keywords and meaning) always")
    latest_only: bool | None = Field(None, description="Ignored: superseded facts are left out unless asked for")
    show_expired: bool | None = Field(None, description="Ignored")
    reference_date: str | int | None = Field(None, description="Ignored")
    version: str | None = Field(None, description="Ignored (mem0's API version)")
    output_format: str | None = Field(None, description="Ignored")
    enable_graph: bool | None = Field(None, description="Ignored")


class Mem0List(_Scoped):
    """`POST /v3/memories/`: the entities' memories, newest first, a page at a time (`page`, `page_size` in the
    query string)."""

    start_date: str | None = Field(None, description="Only memories from this time on, ISO 8601")
    end_date: str | None = Field(None, description="Only memories up to this time, ISO 8601")
    categories: list[str] | None = Field(None, description="Only memories with any of these tags")
    metadata: MetadataFilter | None = Field(
        None, description="Only memories whose metadata matches, as filters.metadata"
    )
    show_expired: bool | None = Field(None, description="Ignored")
    latest_only: bool | None = Field(None, description="Ignored")
    version: str | None = Field(None, description="Ignored (mem0's API version)")
    output_format: str | None = Field(None, description="Ignored")
    enable_graph: bool | None = Field(None, description="Ignored")


class Mem0Update(BaseModel):
    """`PUT /v1/memories/{memory_id}/`: a memory's new text."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, min_length=1, description="The memory's new text")
    metadata: Metadata | None = Field(None, description="The memory's metadata, replacing the old object")
    timestamp: int | float | str | None = Field(None, description="Not supported: refused unless null")
    expiration_date: ExpirationDate | None = Field(None, description="When to forget it, YYYY-MM-DD (UTC)")


MemoryEvent = Literal["ADD", "UPDATE", "DELETE", "NONE"]


class Mem0Memory(BaseModel):
    """A memory as mem0's clients read it."""

    id: str = Field(description="`<namespace>~<memory id>`: what get, update, delete and history take")
    memory: str
    score: float | None = None
    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None
    categories: list[str] = Field(default_factory=list, description="The memory's tags")
    hash: str | None = None
    created_at: datetime
    updated_at: datetime


class Mem0Result(BaseModel):
    """One memory an add created or confirmed."""

    id: str
    memory: str
    event: MemoryEvent = Field(description="ADD: stored; UPDATE: said before, confirmed; NONE: accepted for writing")


class Mem0Added(BaseModel):
    results: list[Mem0Result]


class Mem0Found(BaseModel):
    results: list[Mem0Memory]


class Mem0Page(BaseModel):
    count: int = Field(description="How many memories match in all")
    next: str | None = Field(None, description="The query string of the next page, or null")
    previous: str | None = Field(None, description="The query string of the previous page, or null")
    results: list[Mem0Memory]


class Mem0HistoryEntry(BaseModel):
    id: str
    memory_id: str
    old_memory: str | None = None
    new_memory: str | None = None
    event: MemoryEvent
    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None
    categories: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime


class Mem0Done(BaseModel):
    message: str


class Mem0Ping(BaseModel):
    status: Literal["ok"] = "ok"
    org_id: str | None = None
    project_id: str | None = None
    user_email: str | None = None


# --- what a request's entities and filters select ------------------------------------------------------------------

_TIME: TypeAdapter[datetime] = TypeAdapter(RequestDatetime)
_TIME_BOUNDS = ("gte", "gt", "lte", "lt")


@dataclass
class Scope:
    """What a request selects: its entities (a namespace, and a run as a session), tags, and a time range."""

    entities: Entities = field(default_factory=Entities)
    tags: list[str] = field(default_factory=list)
    since: datetime | None = None
    until: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def name(self, field_name: str, value: Any, where: str) -> None:
        """Set an entity, InvalidInput when a request names it twice with two values."""
        if value is None:
            return
        if not isinstance(value, str):
            raise InvalidInput(f"{where}: an entity id is a string", field=where)
        held = getattr(self.entities, field_name)
        if held is not None and held != value:
            raise InvalidInput(f"{where}: names {field_name} {value!r}, the request named {held!r}", field=where)
        setattr(self.entities, field_name, value)


def scope_of(request: _Scoped, categories: list[str] | None = None, metadata: Mapping[str, Any] | None = None) -> Scope:
    """The entities, tags, time range and metadata conditions a request names at its top level and in its
    `filters`."""
    scope = Scope(metadata=dict(metadata or {}))
    for name in (*(f for f, _ in ENTITY_KINDS), RUN_ID):
        scope.name(name, getattr(request, name), name)
    scope.tags.extend(categories or [])
    _read_filters(scope, request.filters or {}, "filters")
    return scope


def _read_filters(scope: Scope, filters: Mapping[str, Any], where: str) -> None:
    for key, value in filters.items():
        at = f"{where}.{key}"
        reader = _FILTER_READERS.get(key)
        if reader is None:
            raise InvalidInput(
                f"{at}: not a filter this API reads (entity ids, run_id, categories, created_at, metadata, AND)",
                field=at,
            )
        reader(scope, key, value, at)


def _read_and(scope: Scope, key: str, value: Any, at: str) -> None:
    if not isinstance(value, list) or not all(isinstance(part, dict) for part in value):
        raise InvalidInput(f"{at}: must be a list of filters", field=at)
    for i, part in enumerate(value):
        _read_filters(scope, part, f"{at}.{i}")


def _read_or(scope: Scope, key: str, value: Any, at: str) -> None:
    raise InvalidInput(f"{at}: OR filters are not supported: search each entity on its own", field=at)


def _read_entity(scope: Scope, key: str, value: Any, at: str) -> None:
    scope.name(key, _equal_to(value, at), at)


def _read_categories(scope: Scope, key: str, value: Any, at: str) -> None:
    scope.tags.extend(_any_of(value, at))


def _read_time(scope: Scope, key: str, value: Any, at: str) -> None:
    bound_time(scope, value, at)


def _read_metadata(scope: Scope, key: str, value: Any, at: str) -> None:
    if not isinstance(value, dict):
        raise InvalidInput(f"{at}: a metadata filter is an object of keys and values", field=at)
    scope.metadata.update(value)


_FILTER_READERS: dict[str, Callable[[Scope, str, Any, str], None]] = {
    "AND": _read_and,
    "OR": _read_or,
    **dict.fromkeys((*(f for f, _ in ENTITY_KINDS), RUN_ID), _read_entity),
    "categories": _read_categories,
    "created_at": _read_time,
    "updated_at": _read_time,
    "metadata": _read_metadata,
}


def _equal_to(value: Any, at: str) -> Any:
    if isinstance(value, dict):
        if set(value) != {"eq"}:
            raise InvalidInput(f"{at}: an entity filter is its id, or {{'eq': id}}", field=at)
        return value["eq"]
    if value == "*":
        raise InvalidInput(f"{at}: '*' (every entity) is not supported: each entity is a namespace", field=at)
    return value


def _any_of(value: Any, at: str) -> list[str]:
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("in", "contains", "eq"):
        value = next(iter(value.values()))
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidInput(f"{at}: categories are a string, a list, or {{'in': [...]}}", field=at)
    return values


def bound_time(scope: Scope, value: Any, at: str) -> None:
    """Narrow the scope's time range by a time filter (`{'gte': '2024-07-01'}` ...)."""
    if not isinstance(value, dict) or not value or not set(value) <= set(_TIME_BOUNDS):
        raise InvalidInput(f"{at}: a time filter is {{'gte'|'gt'|'lte'|'lt': time}}", field=at)
    for bound, raw in value.items():
        try:
            when = _TIME.validate_python(raw)
        except ValidationError:
            raise InvalidInput(f"{at}.{bound}: not a time (ISO 8601)", field=f"{at}.{bound}") from None
        if bound in ("gte", "gt"):
            scope.since = when if bound == "gte" else when + timedelta(microseconds=1)
        else:
            scope.until = when + timedelta(microseconds=1) if bound == "lte" else when


def expiry_of(day: date | None) -> datetime | None:
    """When a memory with mem0's `expiration_date` is forgotten: the start of that day, UTC."""
    return datetime.combine(day, time(), tzinfo=UTC) if day is not None else None
