"""The access-control matrix, for EVERY route of the route table, through three doors:

- real HTTP against the LocalServer (Authorization header, keys in the data directory);
- the resolver with API Gateway v2 events carrying the Authorization header (Lambda without an authorizer);
- the resolver with API Gateway v2 events carrying `requestContext.authorizer.lambda`, as the Lambda authorizer
  (functions/authorizer) produces it: the functions re-check namespace and permission (defence in depth).

No key -> 401; bad key -> 401; revoked -> 401; expired -> 401; right key but another namespace (a sibling
`acme2` of scope `acme`, the parent `acme` of scope `acme:u-42`, an unrelated one) -> 403; missing permission ->
403; right key -> 2xx. The routes are enumerated from the resolver and its OpenAPI document, and every one must
have a request below, so a new route cannot be left out.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import pytest

from rearview.api.http import create_resolver
from rearview.api.local_server import LocalServer, local_context
from rearview.api.routes import API_ROUTES
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.permissions import ALL_PERMISSIONS, Permission
from rearview.domain.write import MemoryWrite
from rearview.service.access import split_key
from rearview.settings import Settings
from support.events import load_event
from support.modules import load_module

pytestmark = pytest.mark.integration

NS = "acme:u-42"
SCOPE = "acme"


AUTHORIZER = load_module("functions/authorizer/handler.py", "authorizer_handler")
# The route table as the resolver registers it: (method, Powertools path) -> the permission it needs.
ROUTE_PERMISSIONS = {(route.method, route.powertools_path): route.permission for route in API_ROUTES}


# --- the world: services on a temporary data directory, keys, memories -------------------------------------


@dataclass
class World:
    services: Services
    clock: ManualClock
    counter: list[int] = field(default_factory=lambda: [0])

    def key(self, scope: str, permissions: Any, **kw: Any) -> str:
        return self.services.access.create_key(scope, permissions, **kw)[1]

    def memory(self, namespace: str) -> str:
        self.counter[0] += 1
        n = self.counter[0]
        item = MemoryWrite(
            content=f"Booked venue number {n} in Lisbon for the {namespace} offsite, contact Dana {n * 7919}",
            id=f"m-{n}",
        )
        result = self.services.writer.write(namespace, item)
        return result.merged_into or result.id


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: Any = None
    query: dict[str, str] | None = None


def ns_path(namespace: str, rest: str) -> str:
    return f"/v1/namespaces/{quote(namespace, safe=':')}{rest}"


# One valid request per route, for namespace `ns` (the key routes take it as the new key's scope).
RequestBuilder = Callable[[World, str], Request]
REQUESTS: dict[tuple[str, str], RequestBuilder] = {
    ("PUT", "/v1/namespaces/<ns>/sessions/<sid>/working/<key>"): lambda w, ns: Request(
        "PUT", ns_path(ns, "/sessions/s-1/working/task"), {"value": {"goal": "plan the offsite"}}
    ),
    ("GET", "/v1/namespaces/<ns>/sessions/<sid>/working"): lambda w, ns: Request(
        "GET", ns_path(ns, "/sessions/s-1/working")
    ),
    ("DELETE", "/v1/namespaces/<ns>/sessions/<sid>/working"): lambda w, ns: Request(
        "DELETE", ns_path(ns, "/sessions/s-1/working")
    ),
    ("POST", "/v1/namespaces/<ns>/memories"): lambda w, ns: Request(
        "POST", ns_path(ns, "/memories"), {"content": "Signed the Lisbon venue contract for the March offsite"}
    ),
    ("POST", "/v1/namespaces/<ns>/memories/batch"): lambda w, ns: Request(
        "POST",
        ns_path(ns, "/memories/batch"),
        {"items": [{"content": "Dana confirmed the catering order for the Lisbon offsite"}]},
    ),
    ("POST", "/v1/namespaces/<ns>/load"): lambda w, ns: Request(
        "POST",
        ns_path(ns, "/load"),
        {"items": [{"content": "Dana's notes from the Lisbon offsite, loaded from the old tool"}]},
    ),
    ("GET", "/v1/namespaces/<ns>/memories/<id>"): lambda w, ns: Request(
        "GET", ns_path(ns, f"/memories/{w.memory(ns)}")
    ),
    ("DELETE", "/v1/namespaces/<ns>/memories/<id>"): lambda w, ns: Request(
        "DELETE", ns_path(ns, f"/memories/{w.memory(ns)}")
    ),
    ("POST", "/v1/namespaces/<ns>/recall"): lambda w, ns: Request(
        "POST", ns_path(ns, "/recall"), {"query": "Lisbon offsite venue"}
    ),
    ("POST", "/v1/namespaces/<ns>/forget"): lambda w, ns: Request(
        "POST", ns_path(ns, "/forget"), {"ids": [w.memory(ns)]}
    ),
    ("POST", "/v1/namespaces/<ns>/consolidate"): lambda w, ns: Request("POST", ns_path(ns, "/consolidate"), {}),
    ("GET", "/v1/namespaces/<ns>/stats"): lambda w, ns: Request("GET", ns_path(ns, "/stats")),
    ("POST", "/v1/namespaces/<ns>/brief"): lambda w, ns: Request(
        "POST", ns_path(ns, "/brief"), {"task": "Plan the Lisbon offsite", "tool": "venue booking"}
    ),
    ("POST", "/v1/namespaces/<ns>/feedback"): lambda w, ns: Request(
        "POST", ns_path(ns, "/feedback"), {"memory_id": w.memory(ns), "verdict": "useful"}
    ),
    ("POST", "/v1/namespaces/<ns>/sessions/<sid>/end"): lambda w, ns: Request("POST", ns_path(ns, "/sessions/s-1/end")),
    ("GET", "/v1/namespaces/<ns>/retention"): lambda w, ns: Request("GET", ns_path(ns, "/retention")),
    ("PUT", "/v1/namespaces/<ns>/retention"): lambda w, ns: Request(
        "PUT", ns_path(ns, "/retention"), {"episode_max_age_days": 365, "archive_after_days": 90}
    ),
    ("DELETE", "/v1/namespaces/<ns>/retention"): lambda w, ns: Request("DELETE", ns_path(ns, "/retention")),
    ("POST", "/v1/keys"): lambda w, ns: Request("POST", "/v1/keys", {"namespace": ns, "permissions": ["admin"]}),
    ("GET", "/v1/keys"): lambda w, ns: Request("GET", "/v1/keys"),
    ("DELETE", "/v1/keys/<key_id>"): lambda w, ns: Request("DELETE", f"/v1/keys/{split_key(w.key(ns, ['read']))[0]}"),
    ("PATCH", "/v1/keys/<key_id>"): lambda w, ns: Request(
        "PATCH", f"/v1/keys/{split_key(w.key(ns, ['read']))[0]}", {"requests_per_minute": 10}
    ),
    ("GET", "/v1/namespaces/<ns>/memories"): lambda w, ns: Request(
        "GET", ns_path(ns, "/memories"), query={"limit": "5"}
    ),
    ("PATCH", "/v1/namespaces/<ns>/memories/<id>"): lambda w, ns: Request(
        "PATCH", ns_path(ns, f"/memories/{w.memory(ns)}"), {"content": "Moved the Lisbon offsite venue to Porto"}
    ),
    ("GET", "/v1/namespaces/<ns>/memories/<id>/history"): lambda w, ns: Request(
        "GET", ns_path(ns, f"/memories/{w.memory(ns)}/history")
    ),
    ("GET", "/v1/namespaces/<ns>/memories/<id>/sources"): lambda w, ns: Request(
        "GET", ns_path(ns, f"/memories/{w.memory(ns)}/sources")
    ),
    ("GET", "/v1/namespaces/<ns>/export"): lambda w, ns: Request("GET", ns_path(ns, "/export")),
    ("POST", "/v1/namespaces/<ns>/import"): lambda w, ns: Request("POST", ns_path(ns, "/import"), _import_body(w, ns)),
    ("GET", "/v1/namespaces"): lambda w, ns: Request("GET", "/v1/namespaces"),
    ("DELETE", "/v1/namespaces/<ns>"): lambda w, ns: Request("DELETE", ns_path(ns, ""), query={"subtree": "true"}),
    # The mem0-compatible routes: the namespace comes from the caller's scope and the entities named, or from the
    # memory id, which carries it (`<namespace>~<id>`).
    ("GET", "/v1/ping/"): lambda w, ns: Request("GET", "/v1/ping/"),
    ("POST", "/v1/memories/"): lambda w, ns: Request("POST", "/v1/memories/", _mem0_add()),
    ("POST", "/v3/memories/add/"): lambda w, ns: Request("POST", "/v3/memories/add/", _mem0_add()),
    ("POST", "/v3/memories/search/"): lambda w, ns: Request(
        "POST", "/v3/memories/search/", {"query": "Lisbon offsite venue", "filters": {"user_id": "alice"}}
    ),
    ("POST", "/v1/memories/search/"): lambda w, ns: Request(
        "POST", "/v1/memories/search/", {"query": "Lisbon offsite venue", "user_id": "alice"}
    ),
    ("POST", "/v3/memories/"): lambda w, ns: Request("POST", "/v3/memories/", {"filters": {"user_id": "alice"}}),
    ("DELETE", "/v1/memories/"): lambda w, ns: Request("DELETE", "/v1/memories/", query={"user_id": "alice"}),
    ("GET", "/v1/memories/<id>/"): lambda w, ns: Request("GET", f"/v1/memories/{ns}~{w.memory(ns)}/"),
    ("PUT", "/v1/memories/<id>/"): lambda w, ns: Request(
        "PUT", f"/v1/memories/{ns}~{w.memory(ns)}/", {"text": "Moved the Lisbon offsite venue to Porto"}
    ),
    ("DELETE", "/v1/memories/<id>/"): lambda w, ns: Request("DELETE", f"/v1/memories/{ns}~{w.memory(ns)}/"),
    ("GET", "/v1/memories/<id>/history/"): lambda w, ns: Request("GET", f"/v1/memories/{ns}~{w.memory(ns)}/history/"),
    ("GET", "/ui"): lambda w, ns: Request("GET", "/ui"),
    ("GET", "/ui/<asset>"): lambda w, ns: Request("GET", "/ui/app.js"),
    ("GET", "/v1/health"): lambda w, ns: Request("GET", "/v1/health"),
    ("GET", "/openapi.json"): lambda w, ns: Request("GET", "/openapi.json"),
    ("GET", "/docs"): lambda w, ns: Request("GET", "/docs"),
}


def _mem0_add() -> dict[str, Any]:
    return {"user_id": "alice", "messages": [{"role": "user", "content": "Signed the Lisbon venue contract for March"}]}


def _import_body(world: World, namespace: str) -> dict[str, Any]:
    world.counter[0] += 1
    at = "2026-03-01T09:00:00Z"
    line = {"id": f"imported-{world.counter[0]}", "namespace": namespace, "layer": "episodic", "occurred_at": at,
            "created_at": at, "content": "Imported: the Lisbon offsite ended with a dinner by the river"}  # fmt: skip
    return {"items": [line]}


def registered_routes(services: Services) -> set[tuple[str, str]]:
    """Every route the resolver serves: its OpenAPI document's operations, plus the ones kept out of it."""
    resolver = create_resolver(services)
    document = resolver.get_openapi_schema().model_dump(by_alias=True, exclude_none=True)
    documented = {
        (method.upper(), re.sub(r"\{(\w+)\}", r"<\1>", path))
        for path, operations in document["paths"].items()
        for method in operations
    }
    routes = (*resolver._static_routes, *resolver._dynamic_routes)
    hidden = {(r.method, r.path) for r in routes if not r.include_in_schema}
    return documented | hidden


@pytest.fixture(scope="module")
def every_route(tmp_path_factory: pytest.TempPathFactory) -> set[tuple[str, str]]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("routes"), embedder="hashing")
    services = build(settings)
    try:
        return registered_routes(services)
    finally:
        services.close()


def test_every_route_is_guarded_and_in_this_matrix(every_route: set[tuple[str, str]]) -> None:
    assert every_route == set(ROUTE_PERMISSIONS), "the permission table and the resolver disagree"
    assert every_route == set(REQUESTS), "a route has no request in this matrix: add one"
    assert {r for r, p in ROUTE_PERMISSIONS.items() if p is None} == {
        ("GET", "/v1/health"),
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
        ("GET", "/ui"),
        ("GET", "/ui/<asset>"),
    }


# --- three doors ----------------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any


class Door(Protocol):
    def send(self, request: Request, token: str | None) -> Reply: ...


class HttpDoor:
    """Real HTTP to the LocalServer."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def send(self, request: Request, token: str | None) -> Reply:
        data = None if request.body is None else json.dumps(request.body).encode()
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        url = self.base_url + request.path + (f"?{urlencode(request.query)}" if request.query else "")
        req = urllib.request.Request(url, data=data, method=request.method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return Reply(resp.status, dict(resp.headers.items()), _parse(resp.read()))
        except urllib.error.HTTPError as err:
            with err:
                return Reply(err.code, dict(err.headers.items()), _parse(err.read()))


def _parse(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _event(request: Request, headers: dict[str, str]) -> dict[str, Any]:
    base = "memory_write" if request.body is not None else "stats"
    event = load_event(
        base, path=request.path, method=request.method, body=request.body, headers=headers, query=request.query
    )
    event["requestContext"].pop("authorizer", None)
    return event


class ResolverDoor:
    """API Gateway v2 events straight into the resolver, the Authorization header as the only credential."""

    def __init__(self, services: Services) -> None:
        self.resolver = create_resolver(services)

    def resolve(self, event: dict[str, Any]) -> Reply:
        response = self.resolver.resolve(event, local_context(event["requestContext"]["requestId"]))
        return Reply(response["statusCode"], dict(response.get("headers") or {}), _parse(response.get("body") or ""))

    def send(self, request: Request, token: str | None) -> Reply:
        headers = {"authorization": f"Bearer {token}"} if token is not None else {}
        return self.resolve(_event(request, headers))


class AuthorizerDoor(ResolverDoor):
    """API Gateway with the Lambda authorizer: the authorizer function decides, then the function re-checks.

    A denial is answered by API Gateway itself: 401 when the identity source (the header) is missing, and, for
    a key the authorizer refuses, 403 (HTTP APIs answer `isAuthorized: false` with 403; the matrix maps that
    door's refusals onto 401 below since both mean "not authenticated" and never reach a function).
    """

    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.access = services.access
        self.function_calls = 0

    def send(self, request: Request, token: str | None) -> Reply:
        if token is None:
            return Reply(401, {}, {"message": "Unauthorized"})
        auth_event = load_event("request", kind="authorizer")
        auth_event["identitySource"] = [f"Bearer {token}"]
        auth_event["headers"]["authorization"] = f"Bearer {token}"
        decision = AUTHORIZER.authorize(auth_event, self.access)
        if not decision["isAuthorized"]:
            return Reply(401, {}, {"message": "Forbidden", "denied_by": "authorizer"})
        event = _event(request, {"authorization": f"Bearer {token}"})
        event["requestContext"]["authorizer"] = {"lambda": decision["context"]}
        self.function_calls += 1
        return self.resolve(event)


DOORS = ("http", "resolver", "authorizer")


@pytest.fixture
def world(tmp_path: Path, clock: ManualClock) -> Iterator[World]:
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), clock=clock)
    yield World(services, clock)
    services.close()


@pytest.fixture(params=DOORS)
def door(request: pytest.FixtureRequest, world: World) -> Iterator[Door]:
    if request.param == "http":
        server = LocalServer(world.services.settings, world.services, host="127.0.0.1", port=0).start()
        yield HttpDoor(server.url)
        server.shutdown()
    elif request.param == "resolver":
        yield ResolverDoor(world.services)
    else:
        yield AuthorizerDoor(world.services)


PROTECTED = sorted((route, p) for route, p in ROUTE_PERMISSIONS.items() if p is not None)
PUBLIC = sorted(route for route, p in ROUTE_PERMISSIONS.items() if p is None)


def _assert_error(reply: Reply, status: int, door: Door) -> None:
    assert reply.status == status, (reply.status, reply.body)
    if isinstance(door, AuthorizerDoor) and reply.body.get("denied_by") == "authorizer":
        return  # answered by API Gateway, not by our code
    if status == 401 and reply.body != {"message": "Unauthorized"}:
        assert reply.headers.get("WWW-Authenticate", "").startswith("Bearer"), reply.headers
    if reply.body == {"message": "Unauthorized"}:
        return
    assert set(reply.body) >= {"error", "message"}, reply.body
    assert reply.body["error"] == {401: "unauthorized", 403: "forbidden"}[status]


@pytest.mark.parametrize(("route", "permission"), PROTECTED, ids=[f"{m} {p}" for (m, p), _ in PROTECTED])
def test_route_matrix(route: tuple[str, str], permission: Permission, door: Door, world: World) -> None:
    build_request = REQUESTS[route]
    right = world.key(SCOPE, [permission])

    # no key, a malformed key, a well-formed unknown key
    _assert_error(door.send(build_request(world, NS), None), 401, door)
    _assert_error(door.send(build_request(world, NS), "rv_garbage"), 401, door)
    unknown = f"rv_{'0' * 16}_{split_key(right)[1]}"
    _assert_error(door.send(build_request(world, NS), unknown), 401, door)
    tampered = right[:-1] + ("A" if right[-1] != "A" else "B")
    _assert_error(door.send(build_request(world, NS), tampered), 401, door)

    # revoked
    revoked = world.key(SCOPE, ALL_PERMISSIONS)
    world.services.access.revoke(split_key(revoked)[0])
    _assert_error(door.send(build_request(world, NS), revoked), 401, door)

    # missing permission: every other permission, the right scope
    others = world.key(SCOPE, [p for p in Permission if p != permission])
    _assert_error(door.send(build_request(world, NS), others), 403, door)

    # another namespace: sibling, parent, unrelated
    parent_scoped = world.key(NS, ALL_PERMISSIONS)
    # A mem0 memory id carries its namespace: it is checked as a `{ns}` segment is.
    namespaced = "<ns>" in route[1] or route[1].startswith("/v1/memories/<id>")
    if namespaced:
        for key, target in ((right, "acme2"), (right, "globex:u-1"), (parent_scoped, "acme"), (right, "acme2:u-42")):
            _assert_error(door.send(build_request(world, target), key), 403, door)
    elif route == ("POST", "/v1/keys"):
        for key, target in ((right, "acme2"), (parent_scoped, "acme")):
            _assert_error(door.send(build_request(world, target), key), 403, door)
    elif route in (("DELETE", "/v1/keys/<key_id>"), ("PATCH", "/v1/keys/<key_id>")):
        # A key outside the caller's scope reads like an unknown one (404): no hint that it exists.
        outside = door.send(build_request(world, "acme2"), right)
        assert outside.status == 404 and outside.body["error"] == "not_found"
    elif route == ("GET", "/v1/namespaces"):
        # Only the namespaces within the caller's scope are listed: never a sibling that shares a prefix.
        for other in ("acme2", "globex:u-1", NS):
            world.memory(other)
        listed = door.send(build_request(world, NS), right)
        assert listed.status == 200
        assert [n["namespace"] for n in listed.body["namespaces"]] == [NS]
        narrow = door.send(build_request(world, NS), parent_scoped)
        assert [n["namespace"] for n in narrow.body["namespaces"]] == [NS]
    elif route == ("GET", "/v1/keys"):
        listed = door.send(build_request(world, NS), parent_scoped)
        assert listed.status == 200
        assert listed.body["keys"] and all(k["namespace"].startswith(NS) for k in listed.body["keys"])
        assert all("secret" not in json.dumps(k) and "sha256" not in json.dumps(k) for k in listed.body["keys"])

    # expiry (the injected clock moves; nothing sleeps)
    expiring = world.key(SCOPE, [permission], expires_at=world.clock.now() + timedelta(hours=1))
    assert door.send(build_request(world, NS), expiring).status < 300
    world.clock.advance(hours=1)
    _assert_error(door.send(build_request(world, NS), expiring), 401, door)

    # the right key, and a key scoped exactly to the namespace
    ok = door.send(build_request(world, NS), right)
    assert 200 <= ok.status < 300, (ok.status, ok.body)
    exact = door.send(build_request(world, NS), world.key(NS, [permission]))
    assert 200 <= exact.status < 300, (exact.status, exact.body)


@pytest.mark.parametrize("route", PUBLIC, ids=[f"{m} {p}" for m, p in PUBLIC])
def test_public_routes_stay_open(route: tuple[str, str], door: Door, world: World) -> None:
    world.key(SCOPE, ALL_PERMISSIONS)  # keys exist: everything else is enforced
    if isinstance(door, AuthorizerDoor):
        reply = ResolverDoor.send(door, REQUESTS[route](world, NS), None)
    else:
        reply = door.send(REQUESTS[route](world, NS), None)
    assert reply.status == 200


def test_a_refused_request_changes_nothing(world: World) -> None:
    door = ResolverDoor(world.services)
    reader = world.key(SCOPE, ["read"])
    assert door.send(REQUESTS[("POST", "/v1/namespaces/<ns>/memories")](world, NS), reader).status == 403
    assert door.send(REQUESTS[("POST", "/v1/namespaces/<ns>/memories")](world, "acme2"), reader).status == 403
    assert door.send(REQUESTS[("POST", "/v1/namespaces/<ns>/memories")](world, NS), None).status == 401
    for namespace in (NS, "acme2"):
        assert world.services.stats.of(namespace).counts["episodic"] == 0


def test_forbidden_message_is_the_same_for_a_full_and_an_empty_namespace(world: World) -> None:
    door = ResolverDoor(world.services)
    world.memory("acme2")
    key = world.key(SCOPE, ALL_PERMISSIONS)
    full = door.send(Request("GET", ns_path("acme2", "/stats")), key)
    empty = door.send(Request("GET", ns_path("acme3", "/stats")), key)
    assert full.status == empty.status == 403
    assert full.body["message"].replace("acme2", "X") == empty.body["message"].replace("acme3", "X")


def test_authorizer_context_that_is_malformed_fails_closed(world: World) -> None:
    door = ResolverDoor(world.services)
    event = _event(Request("GET", ns_path(NS, "/stats")), {})
    event["requestContext"]["authorizer"] = {"lambda": {"key_id": "x", "scope": "acme"}}  # no permissions
    assert door.resolve(event).status == 401


def test_authorizer_context_is_rechecked_by_the_function(world: World) -> None:
    door = ResolverDoor(world.services)
    event = _event(Request("GET", ns_path("globex", "/stats")), {})
    event["requestContext"]["authorizer"] = {
        "lambda": {"key_id": "0123456789abcdef", "scope": "acme", "permissions": "read"}
    }
    assert door.resolve(event).status == 403
    event = _event(Request("POST", ns_path(NS, "/forget"), {"ids": ["m-1"]}), {})
    event["requestContext"]["authorizer"] = {
        "lambda": {"key_id": "0123456789abcdef", "scope": "acme", "permissions": "read,write"}
    }
    assert door.resolve(event).status == 403
