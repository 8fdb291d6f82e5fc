"""The mem0-compatible API driven by mem0's own client (`mem0ai`'s `MemoryClient(host=...)`) against a live local
server: what a mem0 user gets by changing the base URL, the mapping of entities onto namespaces, its isolation, and
its refusals (4xx naming the field)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services
from rearview.domain.access import Principal
from rearview.domain.listing import ListQuery
from rearview.domain.memory import Episode

pytestmark = pytest.mark.integration

ALL = ["read", "write", "forget"]


@pytest.fixture(scope="module", autouse=True)
def _mem0_offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """mem0's client sends telemetry unless told not to, and keeps a config directory: neither leaves the test."""
    saved = {name: os.environ.get(name) for name in ("MEM0_TELEMETRY", "MEM0_DIR")}
    os.environ["MEM0_TELEMETRY"] = "false"
    os.environ["MEM0_DIR"] = str(tmp_path_factory.mktemp("mem0"))
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def client(server: LocalServer, key: str) -> Any:
    from mem0 import MemoryClient

    return MemoryClient(api_key=key, host=server.url)


def test_a_mem0_user_changes_the_base_url_and_everything_works(live: tuple[LocalServer, Services]) -> None:
    server, services = live
    mem0 = client(server, services.access.create_key("acme", ALL)[1])
    conversation = [
        {"role": "system", "content": "You are a travel assistant."},
        {"role": "user", "content": "I'm flying to Lisbon on March 14 and I always want an aisle seat."},
        {"role": "assistant", "content": "I will look for morning departures from Berlin on that day."},
    ]
    added = mem0.add(conversation, user_id="alice", run_id="trip-1")["results"]
    assert [r["event"] for r in added] == ["ADD", "ADD"]  # the system prompt is not something that happened
    first = added[0]["id"]
    assert first.startswith("acme:user.alice~")
    stored = services.listing.memory("acme:user.alice", first.split("~")[1])
    assert isinstance(stored, Episode) and stored.session_id == "trip-1"
    assert stored.content.startswith("I'm flying to Lisbon")

    found = mem0.search("Which seat does the user want on the Lisbon flight?", filters={"user_id": "alice"})["results"]
    assert found and {"id", "memory", "score", "user_id", "run_id", "created_at"} <= set(found[0])
    assert all(hit["user_id"] == "alice" and hit["run_id"] == "trip-1" for hit in found)
    assert first in {hit["id"] for hit in found}

    page = mem0.get_all(filters={"AND": [{"user_id": "alice"}]}, page=1, page_size=1)
    assert page["count"] == 2 and len(page["results"]) == 1 and page["next"] == "page=2&page_size=1"
    assert mem0.get_all(filters={"user_id": "alice"}, page=2, page_size=1)["previous"] == "page=1&page_size=1"

    assert mem0.get(first)["memory"].startswith("I'm flying to Lisbon")
    updated = mem0.update(first, text="Flying to Lisbon on March 14; window seat this time")
    assert updated["memory"] == "Flying to Lisbon on March 14; window seat this time"
    history = mem0.history(first)
    assert [(h["event"], h["new_memory"][:10]) for h in history] == [("ADD", "I'm flying"), ("UPDATE", "Flying to ")]
    assert history[1]["old_memory"].startswith("I'm flying")

    assert mem0.delete(first) == {"message": "Memory deleted successfully!"}
    assert mem0.get_all(filters={"user_id": "alice"})["count"] == 1
    mem0.delete_all(user_id="alice")
    assert mem0.get_all(filters={"user_id": "alice"})["count"] == 0


def test_entities_runs_and_categories_select_what_they_name(live: tuple[LocalServer, Services]) -> None:
    server, services = live
    mem0 = client(server, services.access.create_key("acme", ALL)[1])
    mem0.add("Alice is allergic to peanuts", user_id="alice", run_id="r-1")
    mem0.add("Alice booked a table at the peanut-free bistro", user_id="alice", run_id="r-2")
    mem0.add("Bob is allergic to peanuts too", user_id="bob")
    mem0.add("The planner agent retries the booking API twice on timeouts", user_id="alice", agent_id="planner")

    def memories(**filters: Any) -> list[str]:
        return sorted(m["memory"] for m in mem0.get_all(filters=filters)["results"])

    assert memories(user_id="alice") == [
        "Alice booked a table at the peanut-free bistro",
        "Alice is allergic to peanuts",
    ]
    assert memories(user_id="alice", run_id="r-2") == ["Alice booked a table at the peanut-free bistro"]
    assert memories(AND=[{"user_id": "alice"}, {"agent_id": "planner"}]) == [
        "The planner agent retries the booking API twice on timeouts"
    ]
    assert memories(user_id="bob") == ["Bob is allergic to peanuts too"]
    assert memories(user_id="alice", categories={"in": ["assistant"]}) == []
    searched = mem0.search("peanut allergy", filters={"user_id": "bob"})["results"]
    assert [m["memory"] for m in searched] == ["Bob is allergic to peanuts too"]
    # A namespace per entity combination: Rearview's own routes see them as any other.
    listed = services.listing.namespaces_of(Principal.bootstrap_admin(), "acme").namespaces
    assert {n.namespace for n in listed} == {"acme:user.alice", "acme:user.alice:agent.planner", "acme:user.bob"}


def test_keys_scopes_and_namespaces_isolate_mem0_callers(live: tuple[LocalServer, Services]) -> None:
    server, services = live
    acme = client(server, services.access.create_key("acme", ALL)[1])
    globex = client(server, services.access.create_key("globex", ALL)[1])
    alice_only = client(server, services.access.create_key("acme:user.alice", ["read"])[1])
    secret = acme.add("Alice's door code is kept in the blue notebook", user_id="alice")["results"][0]["id"]

    # The same entity under another tenant is another namespace: nothing of acme's is found or reachable.
    assert globex.get_all(filters={"user_id": "alice"})["count"] == 0
    assert globex.search("door code", filters={"user_id": "alice"})["results"] == []
    for call in (lambda: globex.get(secret), lambda: globex.history(secret), lambda: globex.delete(secret)):
        with pytest.raises(Exception) as refused:
            call()
        assert "403" in str(refused.value) or "scope" in str(refused.value)
    assert acme.get(secret)["memory"].startswith("Alice's door code")

    # A key scoped to the user acts in that user's namespace (not one below it), and only reads.
    assert [m["id"] for m in alice_only.get_all(filters={"user_id": "alice"})["results"]] == [secret]
    with pytest.raises(Exception, match="403|permission"):
        alice_only.add("Alice moved to Porto", user_id="alice")
    assert alice_only.get_all(filters={"user_id": "bob"})["count"] == 0  # acme:user.alice:user.bob: empty


def test_refusals_name_the_field(live: tuple[LocalServer, Services]) -> None:
    server, services = live
    key = services.access.create_key("acme", ALL)[1]
    http = httpx.Client(base_url=server.url, headers={"Authorization": f"Token {key}"})

    def refused(method: str, path: str, **kw: Any) -> tuple[int, str | None]:
        response = http.request(method, path, **kw)
        return response.status_code, response.json().get("field")

    message = [{"role": "user", "content": "I prefer trains to planes"}]
    assert refused("POST", "/v3/memories/add/", json={"messages": message}) == (422, "user_id")
    assert refused("POST", "/v3/memories/add/", json={"messages": message, "user_id": "alice smith"}) == (
        422,
        "user_id",
    )
    assert refused("POST", "/v1/memories/", json={"messages": message, "user_id": "a", "metadata": {"": 1}})[0] == 422
    assert refused("POST", "/v1/memories/", json={"messages": message, "user_id": "a", "colour": "red"})[0] == 422
    # A time past the calendar (year 10000, found by the OpenAPI fuzzer) is refused, not a 500.
    for seconds in (253402300800.0, -1e15):
        body = {"messages": message, "user_id": "a", "timestamp": seconds}
        assert refused("POST", "/v3/memories/add/", json=body) == (422, "timestamp")
    assert refused("POST", "/v3/memories/search/", json={"query": "trains", "filters": {"OR": [{"user_id": "a"}]}}) == (
        422,
        "filters.OR",
    )
    assert refused(
        "POST", "/v3/memories/search/", json={"query": "trains", "user_id": "a", "filters": {"user_id": "b"}}
    ) == (422, "filters.user_id")
    assert refused(
        "POST", "/v1/memories/", json={"messages": [{"role": "user", "content": "x" * 50_001}], "user_id": "a"}
    ) == (422, "messages.0.content")
    # A run names a session: what cannot be one is refused on every route that takes it (a 500 before).
    assert refused("DELETE", "/v1/memories/", params={"user_id": "a", "run_id": "run one!"}) == (422, "run_id")
    assert refused("POST", "/v1/memories/", json={"messages": message, "user_id": "a", "run_id": "é"}) == (
        422,
        "run_id",
    )
    too_many = [{"role": "user", "content": f"Trip note number {n}"} for n in range(101)]
    assert refused("POST", "/v1/memories/", json={"messages": too_many, "user_id": "a"})[0] == 422
    assert services.listing.namespaces_of(Principal.bootstrap_admin(), "acme").namespaces == []
    assert refused("GET", "/v1/memories/not-an-id/")[0] == 422
    assert http.get("/v1/ping/").json() == {
        "status": "ok",
        "org_id": "rearview",
        "project_id": "acme",
        "user_email": None,
    }
    assert httpx.get(f"{server.url}/v1/ping/", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert httpx.get(f"{server.url}/v1/ping/", headers={"Authorization": "Token rv_nope"}).status_code == 401


def test_the_readme_mem0_example_runs_against_a_live_server(
    live: tuple[LocalServer, Services], capsys: pytest.CaptureFixture[str]
) -> None:
    server, services = live
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from your framework", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    key = services.access.create_key("acme", ALL)[1]
    runnable = example.replace("rv_<key id>_<secret>", key).replace("http://127.0.0.1:8765", server.url)
    assert runnable != example

    exec(compile(runnable, "README.md", "exec"), {})

    assert "I'm vegetarian and never eat fish" in capsys.readouterr().out
    stored = services.listing.page("acme:user.alice", ListQuery()).items
    assert [m.content for m in stored] == ["I'm vegetarian and never eat fish"]


def test_metadata_and_expiry_are_stored_filtered_and_edited(live: tuple[LocalServer, Services]) -> None:
    server, services = live
    mem0 = client(server, services.access.create_key("acme", ALL)[1])
    kept = mem0.add("Alice's passport expires in May", user_id="alice", metadata={"source": "form", "priority": 2})
    mem0.add("Alice prefers the night train to Vienna", user_id="alice", metadata={"source": "chat"})
    mem0.add("Alice's hotel voucher for Lisbon", user_id="alice", expiration_date="2099-05-01")
    memory_id = kept["results"][0]["id"]
    assert mem0.get(memory_id)["metadata"] == {"source": "form", "priority": 2}

    by_source = mem0.get_all(filters={"AND": [{"user_id": "alice"}, {"metadata": {"source": "chat"}}]})["results"]
    assert [m["memory"] for m in by_source] == ["Alice prefers the night train to Vienna"]
    found = mem0.search("Alice passport", filters={"user_id": "alice", "metadata": {"priority": {"in": [1, 2]}}})
    assert [m["id"] for m in found["results"]] == [memory_id]

    voucher = mem0.get_all(filters={"user_id": "alice"})["results"][0]
    stored = services.listing.memory("acme:user.alice", voucher["id"].split("~")[1])
    assert stored.expires_at is not None and stored.expires_at.isoformat() == "2099-05-01T00:00:00+00:00"

    mem0.update(memory_id, metadata={"source": "form", "priority": 1, "checked": True})
    assert mem0.get(memory_id)["metadata"] == {"source": "form", "priority": 1, "checked": True}


def test_a_long_message_is_kept_in_chunks(live: tuple[LocalServer, Services]) -> None:
    server, services = live
    mem0 = client(server, services.access.create_key("acme", ALL)[1])
    long_text = " ".join(f"Day {n}: walked the old town of Lisbon and took notes on the tiles." for n in range(60))
    added = mem0.add(long_text, user_id="alice")["results"]
    assert [r["event"] for r in added] == ["ADD"]
    assert mem0.get_all(filters={"user_id": "alice"})["count"] > 1
