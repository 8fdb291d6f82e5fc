"""The local server over real HTTP: LocalServer on 127.0.0.1, an ephemeral port, urllib as the client,
the real services on a temporary SQLite file with an injected clock."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from rearview import __version__
from rearview.api.http_errors import MAX_BODY_BYTES
from rearview.api.local_server import LocalServer, build_event, check_bind, is_loopback
from rearview.api.routes import API_ROUTES, route_permission
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.errors import ConfigurationError
from rearview.settings import Settings

pytestmark = pytest.mark.integration

NS = "acme:u-42"
TOKEN = "s3cret-token-for-tests"

# One wish said four times in four sessions: what consolidation learns a preference from.
COFFEE = [
    "Always get my coffee with oat milk please",
    "Oat milk in my coffee please, like always",
    "Remember oat milk for my coffee, always",
    "Coffee with oat milk again please",
]


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


class Client:
    """A tiny HTTP client over urllib that never raises for 4xx/5xx."""

    def __init__(self, base_url: str, token: str | None = None) -> None:
        self.base_url = base_url
        self.token = token

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        sent = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        if self.token:
            sent.setdefault("Authorization", f"Bearer {self.token}")
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return Reply(resp.status, dict(resp.headers.items()), resp.read())
        except urllib.error.HTTPError as err:
            with err:
                return Reply(err.code, dict(err.headers.items()), err.read())

    def get(self, path: str, **kw: Any) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return self.request("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return self.request("PUT", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> Reply:
        return self.request("DELETE", path, **kw)


def ns_path(namespace: str, rest: str = "") -> str:
    return f"/v1/namespaces/{quote(namespace, safe=':')}{rest}"


@pytest.fixture
def server(settings: Settings, services: Services) -> Iterator[LocalServer]:
    srv = LocalServer(settings, services, host="127.0.0.1", port=0).start()
    yield srv
    srv.shutdown()


@pytest.fixture
def client(server: LocalServer) -> Client:
    return Client(server.url)


# --- the tour -----------------------------------------------------------------------------------------------


def test_port_zero_binds_an_ephemeral_port(server: LocalServer) -> None:
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}"


def test_a_client_that_connects_before_the_server_runs_waits_rather_than_is_refused(
    settings: Settings, services: Services
) -> None:
    # `rearview serve` prints "listening on" once the server is built, before uvicorn runs: a client that connects
    # then (a script waiting for the banner) must queue in the backlog, not get "connection refused".
    server = LocalServer(settings, services, host="127.0.0.1", port=0)
    with ThreadPoolExecutor(1) as pool:
        early = pool.submit(Client(server.url).get, "/v1/health")
        server.start()
        try:
            assert early.result(timeout=30).status == 200
        finally:
            server.shutdown()


def test_health(client: Client, services: Services) -> None:
    reply = client.get("/v1/health")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.json == {
        "status": "ok",
        "version": __version__,
        "embedder": services.embedder.name,
        "dim": services.embedder.dim,
    }


def test_working_memory_set_get_expire_clear(client: Client, clock: ManualClock) -> None:
    path = ns_path(NS, "/sessions/s-1/working")
    reply = client.put(path + "/draft", {"value": {"step": 1, "todo": ["book hotel"]}, "ttl_seconds": 60})
    assert reply.status == 200 and reply.json["value"] == {"step": 1, "todo": ["book hotel"]}
    assert client.get(path).json["entries"] == {"draft": {"step": 1, "todo": ["book hotel"]}}

    clock.advance(seconds=59)
    assert "draft" in client.get(path).json["entries"]
    clock.advance(seconds=2)
    assert client.get(path).json["entries"] == {}

    client.put(path + "/a", {"value": 1})
    client.put(path + "/b", {"value": "two"})
    reply = client.delete(path)
    assert reply.status == 200 and reply.json == {"cleared": 2}
    assert client.get(path).json["entries"] == {}


def test_write_batch_get_recall_forget_consolidate_stats(client: Client) -> None:
    memories = ns_path(NS, "/memories")
    written = client.post(
        memories,
        {
            "content": "Booked the TAP flight to Lisbon for PyCon Portugal on May 3, aisle seat",
            "event_type": "booking",
            "entities": ["Lisbon", "TAP"],
        },
    )
    assert written.status == 201, written.json
    flight_id = written.json["id"]

    items = [{"content": c, "session_id": f"cafe-{i}"} for i, c in enumerate(COFFEE)]
    batch = client.post(memories + "/batch", {"items": items})
    assert batch.status == 200
    coffee_ids = [r["id"] for r in batch.json["results"]]
    assert [r["status"] for r in batch.json["results"]] == ["stored"] * 4

    got = client.get(f"{memories}/{flight_id}")
    assert got.status == 200
    assert got.json["content"].startswith("Booked the TAP flight to Lisbon")
    assert got.json["entities"] == ["Lisbon", "TAP"]

    recall = client.post(ns_path(NS, "/recall"), {"query": "flight to Lisbon", "top_k": 3})
    assert recall.status == 200
    assert recall.json["results"][0]["id"] == flight_id
    assert recall.json["no_relevant_memory"] is False
    assert recall.json["truncated"] is False

    explained = client.post(ns_path(NS, "/recall"), {"query": "flight to Lisbon", "explain": True})
    stages = [s["stage"] for s in explained.json["trace"]["stages"]]
    assert "fuse" in stages and "rank" in stages and "budget" in stages

    unrelated = client.post(ns_path(NS, "/recall"), {"query": "quantum chromodynamics lattice gauge theory"})
    assert unrelated.status == 200
    assert unrelated.json["no_relevant_memory"] is True
    assert unrelated.json["results"] == []

    consolidated = client.post(ns_path(NS, "/consolidate"))
    assert consolidated.status == 200
    assert consolidated.json["facts_created"] == 1
    fact_id = consolidated.json["fact_ids"][0]
    fact = client.get(f"{memories}/{fact_id}").json
    assert (
        fact["layer"] == "semantic"
        and fact["kind"] == "preference"
        and sorted(fact["provenance"]) == sorted(coffee_ids)
    )
    assert "oat milk" in fact["content"].lower() and fact["content"] not in COFFEE

    receipt = client.delete(f"{memories}/{coffee_ids[0]}?cascade=true")
    assert receipt.status == 200
    assert receipt.json["ids"] == [coffee_ids[0]]
    assert receipt.json["deleted"] == {"working": 0, "episodic": 1, "semantic": 0}
    assert receipt.json["facts_updated"] == [fact_id]
    assert coffee_ids[0] not in client.get(f"{memories}/{fact_id}").json["provenance"]

    kept = client.delete(f"{memories}/{coffee_ids[1]}?cascade=false")
    assert kept.status == 200 and kept.json["facts_updated"] == []
    assert coffee_ids[1] in client.get(f"{memories}/{fact_id}").json["provenance"]

    forgot = client.post(ns_path(NS, "/forget"), {"ids": [flight_id]})
    assert forgot.status == 200 and forgot.json["ids"] == [flight_id]
    assert client.get(f"{memories}/{flight_id}").status == 404

    stats = client.get(ns_path(NS, "/stats"))
    assert stats.status == 200
    assert stats.json["counts"]["episodic"] == 2
    assert stats.json["counts"]["semantic"] == 1
    assert stats.json["recall_count"] == 3


def test_openapi_json_lists_every_route(client: Client) -> None:
    reply = client.get("/openapi.json")
    assert reply.status == 200
    document = reply.json
    assert document["openapi"].startswith("3.")
    for route in API_ROUTES:
        if route.documented:
            assert route.method.lower() in document["paths"][route.path]


def test_docs_is_html(client: Client) -> None:
    reply = client.request("GET", "/docs", headers={"Accept": "text/html"})
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/html")
    assert b"<html" in reply.raw.lower() and b"swagger" in reply.raw.lower()


def test_concurrent_requests_each_get_their_own_answer(client: Client) -> None:
    # Powertools keeps the current event on the router class, so the server serialises resolution; whatever
    # the threading, every reply must belong to its own request.
    namespaces = [f"team-{i}" for i in range(8)]

    def tour(namespace: str) -> list[str]:
        seen = []
        for n in range(3):
            client.post(ns_path(namespace, "/memories"), {"content": f"Shipped release {n} of {namespace}"})
            seen.append(client.get(ns_path(namespace, "/stats")).json["namespace"])
        return seen

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = dict(zip(namespaces, pool.map(tour, namespaces), strict=True))
    for namespace, seen in answers.items():
        assert seen == [namespace] * 3
        assert client.get(ns_path(namespace, "/stats")).json["counts"]["episodic"] >= 1


# --- errors -------------------------------------------------------------------------------------------------


def test_unknown_route_is_404_json(client: Client) -> None:
    reply = client.get("/v2/whatever")
    assert reply.status == 404
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.json["error"] == "not_found"


def test_wrong_method_is_405_json(client: Client) -> None:
    reply = client.request("PATCH", ns_path(NS, "/stats"))
    assert reply.status == 405
    assert reply.json["error"] == "method_not_allowed"
    assert reply.headers["Allow"] == "GET"


def test_body_over_one_mib_is_413_and_names_the_limit(client: Client) -> None:
    before = client.get(ns_path(NS, "/stats")).json
    big = json.dumps({"content": "x" * (MAX_BODY_BYTES + 10)}).encode()
    reply = client.post(ns_path(NS, "/memories"), raw=big)
    assert reply.status == 413
    assert reply.json["error"] == "too_large" and str(MAX_BODY_BYTES) in reply.json["message"]
    assert client.get(ns_path(NS, "/stats")).json == before


def test_malformed_json_is_400(client: Client) -> None:
    reply = client.post(ns_path(NS, "/memories"), raw=b'{"content": "unterminated')
    assert reply.status == 400
    assert reply.json["error"] == "invalid_json" and reply.json["field"] == "body"


def test_validation_error_names_field_and_limit(client: Client) -> None:
    reply = client.post(ns_path(NS, "/memories/batch"), {"items": [{"content": "x"}] * 101})
    assert reply.status == 422
    assert reply.json["field"] == "items" and "100" in reply.json["message"]
    reply = client.post(ns_path("a:b:c:d:e", "/recall"), {"query": "anything"})
    assert reply.status == 422 and reply.json["field"] == "namespace"


def test_percent_encoded_namespace_is_the_same_namespace(client: Client) -> None:
    written = client.post("/v1/namespaces/acme%3Au-42/memories", {"content": "Renewed the passport in Porto"})
    assert written.status == 201
    assert client.get(f"/v1/namespaces/acme:u-42/memories/{written.json['id']}").status == 200


# --- binding and auth ---------------------------------------------------------------------------------------


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("127.0.0.2") and is_loopback("localhost")
    assert is_loopback("::1") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20") and not is_loopback("example.com")


def test_non_loopback_bind_is_refused_without_a_token(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", host="0.0.0.0")
    with pytest.raises(ConfigurationError, match="REARVIEW_API_TOKEN"):
        LocalServer(settings, port=0)
    assert not (tmp_path / "data").exists(), "nothing is opened before the bind check"
    check_bind("0.0.0.0", TOKEN)  # a token makes it acceptable


def test_non_loopback_bind_with_a_token_serves(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", host="0.0.0.0", api_token=TOKEN)
    with LocalServer(settings, port=0) as srv:
        reply = Client(f"http://127.0.0.1:{srv.port}").get("/v1/health")
        assert reply.status == 200


@pytest.fixture
def guarded(tmp_path: Path, clock: ManualClock) -> Iterator[LocalServer]:
    settings = Settings(data_dir=tmp_path / "guarded", embedder="hashing", api_token=TOKEN)
    services = build(settings, clock=clock)
    srv = LocalServer(settings, services, port=0).start()
    yield srv
    srv.shutdown()
    services.close()


def test_token_is_required_except_for_health_and_docs(guarded: LocalServer) -> None:
    anonymous = Client(guarded.url)
    assert anonymous.get("/v1/health").status == 200
    assert anonymous.get("/openapi.json").status == 200
    assert anonymous.get("/docs").status == 200

    for method, path in [
        ("GET", ns_path(NS, "/stats")),
        ("POST", ns_path(NS, "/memories")),
        ("GET", ns_path(NS, "/sessions/s-1/working")),
        ("POST", ns_path(NS, "/recall")),
    ]:
        reply = anonymous.request(method, path, {"content": "Flew to Porto", "query": "Porto"})
        assert reply.status == 401, (method, path)
        assert reply.headers["WWW-Authenticate"].startswith("Bearer")
        assert reply.json["error"] == "unauthorized"

    wrong = Client(guarded.url, token="not-the-token")
    assert wrong.get(ns_path(NS, "/stats")).status == 401
    basic = anonymous.get(ns_path(NS, "/stats"), headers={"Authorization": f"Basic {TOKEN}"})
    assert basic.status == 401

    right = Client(guarded.url, token=TOKEN)
    assert right.get(ns_path(NS, "/stats")).json["counts"]["episodic"] == 0
    assert right.post(ns_path(NS, "/memories"), {"content": "Flew to Porto for the kickoff"}).status == 201
    assert right.get(ns_path(NS, "/stats")).json["counts"]["episodic"] == 1


def test_rejected_unauthenticated_write_stores_nothing(guarded: LocalServer) -> None:
    Client(guarded.url).post(ns_path(NS, "/memories"), {"content": "Flew to Porto for the kickoff"})
    big = json.dumps({"content": "y" * (MAX_BODY_BYTES + 1)}).encode()
    assert Client(guarded.url).post(ns_path(NS, "/memories"), raw=big).status == 401
    assert Client(guarded.url, token=TOKEN).get(ns_path(NS, "/stats")).json["counts"]["episodic"] == 0


def test_auth_check_alone(guarded: LocalServer) -> None:
    def event(method: str, path: str, token: str | None = None) -> dict[str, Any]:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return build_event(method, path, headers, b"", "127.0.0.1")

    assert route_permission("GET", "/v1/health") == (None, None)
    assert route_permission("DELETE", "/v1/health") is None  # no such route: 405 follows, not a check
    assert guarded.check_access(event("GET", "/v1/health")) is None
    assert guarded.check_access(event("POST", "/v1/namespaces/a/memories", TOKEN)) is None
    for token in (None, "nope"):
        denied = guarded.check_access(event("POST", "/v1/namespaces/a/memories", token))
        assert denied is not None and denied["statusCode"] == 401


def test_event_built_from_a_request_is_an_api_gateway_v2_event() -> None:
    event = build_event(
        "post",
        "/v1/namespaces/acme%3Au-42/recall?explain=true&tag=a&tag=b",
        {"Host": "127.0.0.1:8765", "Content-Type": "application/json", "Cookie": "a=1; b=2"},
        b'{"query": "x"}',
        "127.0.0.1",
    )
    assert event["version"] == "2.0" and event["routeKey"] == "$default"
    assert event["rawPath"] == "/v1/namespaces/acme%3Au-42/recall"
    assert event["rawQueryString"] == "explain=true&tag=a&tag=b"
    assert event["queryStringParameters"] == {"explain": "true", "tag": "a,b"}
    assert event["headers"]["content-type"] == "application/json"
    assert event["cookies"] == ["a=1", "b=2"]
    assert event["requestContext"]["http"] == {
        "method": "POST",
        "path": "/v1/namespaces/acme%3Au-42/recall",
        "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1",
        "userAgent": "",
    }
    assert event["body"] == '{"query": "x"}' and event["isBase64Encoded"] is False
    binary = build_event("POST", "/x", {}, b"\xff\xfe\x00", "127.0.0.1")
    assert binary["isBase64Encoded"] is True and binary["body"] == "//4A"


# --- namespace isolation over HTTP, for every read path ---------------------------------------------------


@pytest.fixture
def three_namespaces(client: Client) -> dict[str, dict[str, Any]]:
    """The same kinds of data in a parent (`acme`), its child (`acme:u-42`) and a sibling (`acme:u-43`)."""
    seeded: dict[str, dict[str, Any]] = {}
    for namespace, city in (("acme", "Lisbon"), ("acme:u-42", "Porto"), ("acme:u-43", "Faro")):
        written = client.post(
            ns_path(namespace, "/memories"),
            {"content": f"Booked the train to {city} for the offsite, seat 42", "id": f"trip-{city.lower()}"},
        )
        assert written.status == 201
        preference = {"layer": "semantic", "content": f"Prefers window seats on trains to {city}"}
        fact = client.post(ns_path(namespace, "/memories"), {**preference, "dimension": "seat"})
        assert fact.status == 201
        assert client.put(ns_path(namespace, "/sessions/s-1/working/city"), {"value": city}).status == 200
        seeded[namespace] = {"city": city, "episode": written.json["id"], "fact": fact.json["id"]}
    return seeded


PAIRS = [("acme", "acme:u-42"), ("acme:u-42", "acme"), ("acme:u-42", "acme:u-43")]


@pytest.mark.parametrize(("reader", "owner"), PAIRS)
def test_get_by_id_from_another_namespace_is_404(
    client: Client, three_namespaces: dict[str, dict[str, Any]], reader: str, owner: str
) -> None:
    for kind in ("episode", "fact"):
        memory_id = three_namespaces[owner][kind]
        assert client.get(ns_path(owner, f"/memories/{memory_id}")).status == 200
        reply = client.get(ns_path(reader, f"/memories/{memory_id}"))
        assert reply.status == 404 and reply.json["error"] == "not_found"


@pytest.mark.parametrize(("reader", "owner"), PAIRS)
def test_recall_never_returns_another_namespaces_memories(
    client: Client, three_namespaces: dict[str, dict[str, Any]], reader: str, owner: str
) -> None:
    city = three_namespaces[owner]["city"]
    own = client.post(ns_path(owner, "/recall"), {"query": f"train to {city}", "top_k": 10})
    assert three_namespaces[owner]["episode"] in {h["id"] for h in own.json["results"]}
    reply = client.post(ns_path(reader, "/recall"), {"query": f"train to {city}", "top_k": 10})
    assert reply.status == 200
    found = {h["id"] for h in reply.json["results"]}
    assert not found & {three_namespaces[owner]["episode"], three_namespaces[owner]["fact"]}
    assert all(city not in h["content"] for h in reply.json["results"])


def test_stats_count_only_their_namespace(client: Client, three_namespaces: dict[str, dict[str, Any]]) -> None:
    client.post(ns_path("acme:u-42", "/memories"), {"content": "Signed the Porto office lease for two years"})
    counts = {ns: client.get(ns_path(ns, "/stats")).json["counts"] for ns in three_namespaces}
    assert counts["acme"]["episodic"] == 1 and counts["acme"]["semantic"] == 1
    assert counts["acme:u-42"]["episodic"] == 2 and counts["acme:u-42"]["semantic"] == 1
    assert counts["acme:u-43"]["episodic"] == 1
    assert counts["acme"]["working"] == 1 and counts["acme:u-42"]["working"] == 1


@pytest.mark.parametrize(("reader", "owner"), PAIRS)
def test_working_memory_is_per_namespace(
    client: Client, three_namespaces: dict[str, dict[str, Any]], reader: str, owner: str
) -> None:
    view = client.get(ns_path(reader, "/sessions/s-1/working")).json
    assert view["namespace"] == reader
    assert view["entries"] == {"city": three_namespaces[reader]["city"]}
    assert client.delete(ns_path(reader, "/sessions/s-1/working")).json == {"cleared": 1}
    assert client.get(ns_path(owner, "/sessions/s-1/working")).json["entries"] == {
        "city": three_namespaces[owner]["city"]
    }


@pytest.mark.parametrize(("reader", "owner"), PAIRS)
def test_forget_never_touches_another_namespace(
    client: Client, three_namespaces: dict[str, dict[str, Any]], reader: str, owner: str
) -> None:
    theirs = three_namespaces[owner]
    by_ids = client.post(ns_path(reader, "/forget"), {"ids": [theirs["episode"], theirs["fact"]]})
    assert by_ids.status == 200
    assert by_ids.json["namespace"] == reader
    assert by_ids.json["ids"] == [] and sum(by_ids.json["deleted"].values()) == 0

    one = client.delete(ns_path(reader, f"/memories/{theirs['fact']}"))
    assert one.status == 404

    by_filter = client.post(ns_path(reader, "/forget"), {"layer": "episodic"})
    assert by_filter.status == 200
    assert by_filter.json["ids"] == [three_namespaces[reader]["episode"]]

    by_session = client.post(ns_path(reader, "/forget"), {"session_id": "s-1"})
    assert by_session.json["deleted"]["working"] == 1

    for kind in ("episode", "fact"):
        assert client.get(ns_path(owner, f"/memories/{theirs[kind]}")).status == 200
    assert client.get(ns_path(owner, "/sessions/s-1/working")).json["entries"] == {"city": theirs["city"]}
    assert client.get(ns_path(owner, "/stats")).json["counts"]["episodic"] == 1


def test_consolidate_only_considers_its_namespace(client: Client) -> None:
    items = [{"content": c, "session_id": f"cafe-{i}"} for i, c in enumerate(COFFEE)]
    for namespace in ("acme", "acme:u-42"):
        client.post(ns_path(namespace, "/memories/batch"), {"items": items})
    result = client.post(ns_path("acme", "/consolidate"), {}).json
    assert result["episodes_considered"] == 4 and result["facts_created"] == 1
    assert client.get(ns_path("acme:u-42", "/stats")).json["counts"]["semantic"] == 0
