"""No field a caller gives comes back unredacted (issue 40): every string field of every request model the HTTP API
and the MCP tools take, at every depth, found by walking the models, gets a known secret through the real surface
(HTTP to the local server, JSON-RPC to its /mcp), and the secret must then appear nowhere: not in what list, export,
recall, history, working memory and the key listing answer, not in the database's files, not in the server's log.

A new field is covered without anyone adding it here: the walk finds it. A new route or tool with a model of its own
needs a valid body in BODIES / TOOL_ARGS first (the test says so), so nothing is left unwalked."""

from __future__ import annotations

import copy
import enum
import http.client
import inspect
import json
import logging
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel

from rearview.api.local_server import LocalServer
from rearview.api.mcp import TOOLS
from rearview.api.routes import route_named
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.transfer import ImportRequest
from rearview.operations.catalogue import OPERATIONS
from rearview.operations.signature import signature
from rearview.settings import Settings

pytestmark = pytest.mark.integration

SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"  # fits every id, label and dimension pattern the models have
PART = "4eC39HqLyjWDarjt"
TOKEN = "admin-token-for-redaction-tests"
SEED_ID = "m-seed"
SEED = "Deployment notes for the Lisbon release, written by the platform team"

# A valid body for each request model an HTTP route takes; the walk puts the secret into each string of it.
BODIES: dict[str, dict[str, Any]] = {
    "put_working": {"value": {"note": "draft plan", "steps": ["a"]}},
    "write_memory": {
        "content": "Deployment notes for the Lisbon release are ready",
        "tags": ["ops"],
        "entities": ["Lisbon"],
        "event_type": "deploy",
        "outcome": "went fine",
        "session_id": "s-1",
    },
    "write_batch": {"items": [{"content": "Deployment notes for the Lisbon release", "tags": ["ops"]}]},
    "load_episodes": {
        "items": [{"content": "Deployment notes for the Lisbon release", "tags": ["ops"], "session_id": "s-1"}]
    },
    "edit_memory": {"content": "Deployment notes for the Lisbon release, revised", "tags": ["ops"]},
    "recall": {"query": "deployment notes Lisbon", "tags": ["ops"], "session_id": "s-1"},
    "forget": {"tags": ["nothing-carries-this"]},
    "consolidate": {},
    "brief": {"task": "ship the Lisbon release", "tool": "deploy", "entities": ["Lisbon"], "session_id": "s-1"},
    "feedback": {"memory_id": SEED_ID, "verdict": "wrong", "correction": "The Lisbon release notes are in the wiki"},
    "put_retention": {"episode_max_age_days": 30},
    "create_key": {"namespace": "t", "permissions": ["read"], "description": "for the dashboard"},
    "set_key_limit": {"requests_per_minute": 5},
    # The mem0-compatible API: the user's memories live in a namespace of their own (`user.u-1` under the caller's).
    "mem0_add": {
        "messages": [{"role": "user", "content": "Deployment notes for the Lisbon release are ready"}],
        "user_id": "u-1",
        "run_id": "s-1",
        "metadata": {"team": "ops"},
    },
    "mem0_search": {"query": "deployment notes Lisbon", "user_id": "u-1"},
    "mem0_list": {"user_id": "u-1"},
    "mem0_update": {"text": "Deployment notes for the Lisbon release, revised", "metadata": {"team": "ops"}},
}
BODIES["mem0_add_v3"] = BODIES["mem0_add"]
BODIES["mem0_search_v1"] = BODIES["mem0_search"]
_EPISODE_LINE = {
    "id": "imported-1",
    "namespace": "elsewhere",
    "layer": "episodic",
    "content": "Deployment notes for the Lisbon release, imported",
    "tags": ["ops"],
    "entities": ["Lisbon"],
    "event_type": "deploy",
    "outcome": "fine",
    "session_id": "s-1",
    "session_ids": ["s-2"],
    "context": "the turn before",
    "created_at": "2026-01-02T03:04:05Z",
    "occurred_at": "2026-01-02T03:04:05Z",
    "version": 2,
    "history": [
        {
            "memory": {
                "id": "imported-1",
                "namespace": "elsewhere",
                "layer": "episodic",
                "content": "Deployment notes, first draft",
                "tags": ["ops"],
                "created_at": "2026-01-02T03:04:05Z",
                "occurred_at": "2026-01-02T03:04:05Z",
            },
            "replaced_by": "edit",
            "replaced_at": "2026-01-03T03:04:05Z",
            "actor": "0123456789abcdef",
        }
    ],
}
_FACT_LINE = {
    "id": "imported-2",
    "namespace": "elsewhere",
    "layer": "semantic",
    "content": "The Lisbon release ships on Fridays",
    "tags": ["ops"],
    "dimension": "release_day",
    "facets": {"day": "friday"},
    "provenance": ["imported-1"],
    "induced_by": "rules",
    "created_at": "2026-01-02T03:04:05Z",
    "last_confirmed_at": "2026-01-02T03:04:05Z",
}
IMPORT_LINES = {"episodic": _EPISODE_LINE, "semantic": _FACT_LINE}
# Stored path segments a route takes besides its body, and ones it only reads.
PATH_VALUES = {"sid": "s-1", "key": "plan", "id": SEED_ID, "key_id": "0123456789abcdef"}


# --- walking a model's strings -----------------------------------------------------------------------------------

Path_ = tuple[Any, ...]
AS_KEY = "<as a key>"  # a path starting with this puts the secret in a dict's key, at the path that follows


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = annotation.__origin__
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return tuple(members)
            annotation = members[0]
        else:
            return annotation


def string_paths(annotation: Any, body: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Where a string goes in a body of this type (`(AS_KEY, path)` for a dict's key), following `body` for the
    member of a union of models."""
    annotation = _unwrap(annotation)
    if isinstance(annotation, tuple):  # a union: of models, told apart by the body; else each member in turn
        members = [m for m in annotation if inspect.isclass(m) and issubclass(m, BaseModel)]
        if not members:
            for member in annotation:
                yield from string_paths(member, body, path)
            return
        chosen = [m for m in members if _fits(m, body)] or members[:1]
        yield from string_paths(chosen[0], body, path)
        return
    origin = typing.get_origin(annotation)
    if origin is Literal or (inspect.isclass(annotation) and issubclass(annotation, enum.Enum)):
        return
    if annotation is str:
        yield path
    elif annotation is Any:
        yield path
        yield (AS_KEY, path)
    elif inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        for name, info in annotation.model_fields.items():
            sub = body.get(name) if isinstance(body, dict) else None
            yield from string_paths(info.annotation, sub, (*path, name))
    elif origin in (list, tuple):
        inner = typing.get_args(annotation)[0] if typing.get_args(annotation) else Any
        first = body[0] if isinstance(body, list) and body else None
        yield from string_paths(inner, first, (*path, 0))
    elif origin is dict:
        key_type, value_type = typing.get_args(annotation)
        if _unwrap(key_type) is str:
            yield (AS_KEY, path)
        yield from string_paths(value_type, None, (*path, "k"))


def _fits(model: type[BaseModel], body: Any) -> bool:
    layer = model.model_fields.get("layer")
    return isinstance(body, dict) and layer is not None and body.get("layer") == layer.default


def with_secret(body: Any, path: Path_) -> Any:
    """A copy of `body` with the secret at `path` (a dict's key for `(AS_KEY, path)`)."""
    body = copy.deepcopy(body)
    as_key = path[:1] == (AS_KEY,)
    target = path[1] if as_key else path
    if not target:
        return {SECRET: "x"} if as_key else SECRET
    holder = body
    for step, following in zip(target[:-1], target[1:], strict=True):
        empty: Any = [] if isinstance(following, int) else {}
        if isinstance(holder, list):
            while len(holder) <= step:
                holder.append(copy.deepcopy(empty))
            holder = holder[step]
        else:
            if not isinstance(holder.get(step), (dict, list)):
                holder[step] = empty
            holder = holder[step]
    last = target[-1]
    if as_key:
        if isinstance(holder, list):
            holder.extend(None for _ in range(last + 1 - len(holder)))
        holder[last] = {SECRET: "x"}
    elif isinstance(holder, list):
        holder[:] = [*holder[:last], SECRET, *holder[last + 1 :]]
    else:
        holder[last] = SECRET
    return body


def _body_models() -> dict[str, type[BaseModel]]:
    """The request model each HTTP route takes as its body, found in the operation catalogue's signatures."""
    models: dict[str, type[BaseModel]] = {"import_memories": ImportRequest}
    for operation in OPERATIONS:
        body = signature(operation).body
        if body is not None and operation.route.method != "GET":
            models.setdefault(operation.name, body.model)
    return models


def _shown(path: Path_) -> str:
    if path[:1] == (AS_KEY,):
        return "key of " + (_shown(path[1]) or "body")
    return ".".join(map(str, path))


@dataclass(frozen=True)
class Case:
    surface: str
    operation: str
    where: str
    method: str
    path: str
    body: Any


def _route_path(operation: str, **values: str) -> str:
    return route_named(operation).url_path(**{"ns": "{ns}", **PATH_VALUES, **values}).replace("%7Bns%7D", "{ns}")


def http_cases() -> list[Case]:
    cases: list[Case] = []
    for operation, model in sorted(_body_models().items()):
        route = route_named(operation)
        if operation == "import_memories":
            for layer, line in IMPORT_LINES.items():
                base: dict[str, Any] = {"items": [line]}
                for path in string_paths(model, base):
                    where = f"{layer}:" + _shown(path)
                    cases.append(
                        Case("http", operation, where, route.method, _route_path(operation), with_secret(base, path))
                    )
            continue
        assert operation in BODIES, f"{operation} takes {model.__name__}: give it a valid body in BODIES"
        base = BODIES[operation]
        paths = list(string_paths(model, base))
        for path in [(), *paths] if paths else []:
            body = base if path == () else with_secret(base, path)
            where = _shown(path) or "(valid body)"
            # A mem0 memory id carries its namespace: the seed's, `<ns>~<id>`.
            values = {"id": "{ns}~" + SEED_ID} if operation.startswith("mem0_") else {}
            cases.append(Case("http", operation, where, route.method, _route_path(operation, **values), body))
    for name in ("key", "sid"):
        body = BODIES["put_working"]
        cases.append(
            Case("http", "put_working", f"path:{name}", "PUT", _route_path("put_working", **{name: SECRET}), body)
        )
    return cases


def mcp_cases() -> list[Case]:
    from support.mcp_calls import TOOL_ARGS

    cases: list[Case] = []
    for spec in TOOLS.specs:
        base = dict(TOOL_ARGS[spec.name])
        if spec.name in ("feedback", "edit_memory", "memory_history", "memory_sources"):
            base = {**base, "memory_id": SEED_ID}
        if spec.name == "feedback":
            base = {**base, "verdict": "wrong", "correction": "The Lisbon release notes are in the wiki"}
        paths: list[Path_] = [()]
        for name, parameter in spec.signature.parameters.items():
            if name in ("ctx", "namespace"):
                continue
            model_field = spec.request[1].model_fields.get(name) if spec.request else None
            annotation = model_field.annotation if model_field is not None else parameter.annotation
            if spec.request and model_field is None and name not in spec.passed:
                continue
            paths += list(string_paths(annotation, base.get(name), (name,)))
        for path in paths:
            body = base if path == () else with_secret(base, path)
            where = _shown(path) or "(valid call)"
            cases.append(Case("mcp", spec.name, where, "POST", "/mcp", body))
    return cases


CASES = http_cases() + mcp_cases()


# --- the server and what it gives back ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, LocalServer, ManualClock]]:
    data = tmp_path_factory.mktemp("redaction") / "data"
    settings = Settings(data_dir=data, embedder="hashing", api_token=TOKEN)
    clock = ManualClock()
    services = build(settings, clock=clock)
    with LocalServer(settings, services, host="127.0.0.1", port=0) as server:
        yield services, server, clock
    services.close()


def _send(server: LocalServer, method: str, path: str, body: Any = None, ndjson: bool = False) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    payload = None
    if body is not None:
        headers["Content-Type"] = "application/x-ndjson" if ndjson else "application/json"
        payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    connection.request(method, path, body=payload, headers=headers)
    response = connection.getresponse()
    answer = response.status, response.read().decode("utf-8", "replace")
    connection.close()
    return answer


def _mcp_body(tool: str, arguments: dict[str, Any], namespace: str) -> dict[str, Any]:
    params = {"name": tool, "arguments": {**arguments, "namespace": namespace}}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def _parts_stored(services: Services, server: LocalServer) -> int:
    """How many times the secret's part is in the database's files and the key listing (they hold every namespace).
    Counted in the files' bytes: the part is ASCII, so that is the count in their text, without decoding files
    that grow with every case."""
    data_dir = services.settings.data_dir
    on_disk = sum(f.read_bytes().count(PART.encode()) for f in sorted(data_dir.iterdir()) if f.is_file())
    return on_disk + _send(server, "GET", "/v1/keys")[1].count(PART)


def _read_back(services: Services, server: LocalServer, ns: str) -> str:
    """Everything the surfaces give back of namespace `ns`, as one text."""
    base = f"/v1/namespaces/{ns}"
    texts = [
        _send(server, "GET", f"{base}/memories?include_superseded=true&limit=200")[1],
        _send(server, "GET", f"{base}/export")[1],
        _send(server, "POST", f"{base}/recall", {"query": "deployment notes Lisbon release", "top_k": 50})[1],
        _send(server, "GET", f"{base}/sessions/s-1/working")[1],
    ]
    for line in texts[1].splitlines():
        if line.strip():
            texts.append(_send(server, "GET", f"{base}/memories/{json.loads(line)['id']}/history")[1])
    return "\n".join(texts)


def _prepare(services: Services, server: LocalServer, ns: str) -> None:
    status, text = _send(server, "POST", f"/v1/namespaces/{ns}/memories", {"content": SEED, "id": SEED_ID})
    assert status == 201, text


@pytest.mark.parametrize("case", CASES, ids=[f"{c.surface}-{c.operation}-{c.where}" for c in CASES])
def test_no_field_brings_a_secret_back(
    running: tuple[Services, LocalServer, ManualClock], case: Case, caplog: pytest.LogCaptureFixture
) -> None:
    services, server, clock = running
    clock.advance(minutes=1)  # a fresh minute of the admin token's request limit for each case
    ns = f"t:{abs(hash((case.surface, case.operation, case.where))) % 10**12}"
    _prepare(services, server, ns)
    on_disk = _parts_stored(services, server)  # the module's server is shared: what earlier cases left is not ours
    caplog.set_level(logging.DEBUG)
    if case.surface == "mcp":
        status, text = _send(server, "POST", "/mcp", _mcp_body(case.operation, case.body, ns))
    else:
        status, text = _send(server, case.method, case.path.replace("{ns}", ns), case.body)
    assert status < 500, text
    if case.where.startswith("(valid"):
        assert status < 300 and '"isError": true' not in text.replace('"isError":true', '"isError": true'), text
    back = _read_back(services, server, ns)
    assert PART not in back, f"{case}: the secret came back"
    assert _parts_stored(services, server) == on_disk, f"{case}: the secret was stored"
    assert PART not in caplog.text, f"{case}: the secret reached the log"


def test_the_walk_covers_what_the_issue_found() -> None:
    """The fields issue 40 found stored verbatim are among those walked, on both surfaces."""
    walked = {(c.surface, c.operation, c.where) for c in CASES}
    for expected in [
        ("http", "import_memories", "episodic:items.0.tags.0"),
        ("http", "import_memories", "episodic:items.0.entities.0"),
        ("http", "import_memories", "episodic:items.0.outcome"),
        ("http", "import_memories", "episodic:items.0.history.0.memory.content"),
        ("http", "edit_memory", "tags.0"),
        ("http", "edit_memory", "entities.0"),
        ("mcp", "edit_memory", "tags.0"),
        ("http", "put_working", "path:key"),
        ("mcp", "working_memory_set", "key"),
    ]:
        assert expected in walked, expected
    assert len(CASES) > 120, len(CASES)
    # Every route that takes a body with a string in it is walked.
    with_strings = {op for op, model in _body_models().items() if list(string_paths(model, BODIES.get(op, {})))}
    assert {c.operation for c in CASES if c.surface == "http"} >= with_strings
    assert with_strings >= {
        "write_memory",
        "write_batch",
        "load_episodes",
        "edit_memory",
        "import_memories",
        "put_working",
        "feedback",
    }
