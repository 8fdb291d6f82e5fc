"""`RearviewStore` (LangGraph's `BaseStore`) and the LangChain tools against a live local server, through the
real `langgraph` and `langchain-core` packages: the behaviour LangGraph's store interface defines (its docs and its
in-memory store: get after put, overwrite, delete, filters and their operators, prefix search, namespaces listed by
prefix, suffix, wildcard and depth, limit and offset, batch and abatch, TTL), inside a compiled graph, the mapping of
tuples and keys onto namespaces and ids, and isolation by API key."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services
from rearview.client import RearviewClient
from rearview.domain.access import Principal
from rearview.errors import NamespaceForbidden
from rearview.integrations.langchain_tools import rearview_tools
from rearview.integrations.langgraph_names import key_of, labels_of, memory_id_of, namespace_of
from rearview.integrations.langgraph_store import RearviewStore

pytestmark = pytest.mark.integration

BASE = "acme"


@pytest.fixture
def client(live: tuple[LocalServer, Services]) -> Iterator[RearviewClient]:
    server, services = live
    with RearviewClient(server.url, token=services.access.create_key(BASE, ["read", "write", "forget"])[1]) as rv:
        yield rv


@pytest.fixture
def store(client: RearviewClient) -> RearviewStore:
    return RearviewStore(client, namespace=BASE)


# --- the names --------------------------------------------------------------------------------------------------


def test_tuples_and_keys_map_onto_namespaces_and_ids_and_back() -> None:
    assert namespace_of("acme", ("users", "u-42")) == "acme:users:u-42"
    assert namespace_of(None, ("acme", "users")) == "acme:users"
    assert namespace_of("acme", ("Zoë Smith",)) == "acme:Zo.C3.AB.20Smith"
    assert labels_of("acme", "acme:Zo.C3.AB.20Smith") == ("Zoë Smith",)
    assert labels_of("acme", "acme") is None and labels_of("acme", "acme2:x") is None
    for key in ("seat", "0b9c7a52-8f7e-4a47-9b8e-0d1c2b3a4f5e", "notes/2026.03", "日本 trip", "a.2Eb"):
        memory_id = memory_id_of(key)
        assert memory_id.startswith("lg.") and key_of(memory_id) == key
    assert key_of("01J9ZQ0000000000000000000") is None


def test_namespaces_rearview_cannot_hold_are_refused(store: RearviewStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("a", "b", "c", "d"), "k", {"text": "four labels under a base make five segments"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("x" * 65,), "k", {"text": "a label longer than a segment"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("the", "thing.about"), "k", {"text": "LangGraph's own rule: no periods"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"text": "LangGraph's own rule: a reserved root"})
    with pytest.raises(ValueError, match="key"):
        store.put(("users",), "k" * 200, {"text": "a key too long for a memory id"})


# --- get, put, delete -------------------------------------------------------------------------------------------


def test_get_after_put_overwrite_and_delete(store: RearviewStore, services_of: Services) -> None:
    ns = ("users", "u-42", "prefs")
    value = {"text": "Prefers aisle seats on long flights", "rank": 2, "tags": ["travel", "seat"], "on": True,
             "nested": {"airline": "TAP", "miles": 1200.5}}  # fmt: skip
    assert store.get(ns, "seat") is None
    store.put(ns, "seat", value)
    item = store.get(ns, "seat")
    assert item is not None and item.value == value and item.key == "seat" and item.namespace == ns
    assert item.created_at.tzinfo is not None and item.created_at <= item.updated_at

    # What it is in Rearview: an episode of that namespace, tagged, its text the value's strings.
    memory = services_of.listing.memory("acme:users:u-42:prefs", memory_id_of("seat"))
    assert memory.tags == ["langgraph"] and "Prefers aisle seats" in memory.content and "TAP" in memory.content

    store.put(ns, "seat", {"text": "Prefers window seats now"})
    assert store.get(ns, "seat").value == {"text": "Prefers window seats now"}  # type: ignore[union-attr]
    versions = services_of.history.history("acme:users:u-42:prefs", memory_id_of("seat")).versions
    assert [v.version for v in versions] == [1, 2] and versions[-1].changed_by == "edit"
    store.delete(ns, "seat")
    assert store.get(ns, "seat") is None
    store.delete(ns, "seat")  # deleting what is gone is no error
    store.put(ns, "meal", {"text": "Vegetarian meals"})
    store.put(ns, "meal", None)  # type: ignore[arg-type]
    assert store.get(ns, "meal") is None


def test_near_duplicates_under_two_keys_stay_two_items(store: RearviewStore) -> None:
    store.put(("notes",), "a", {"text": "The user prefers aisle seats"})
    store.put(("notes",), "b", {"text": "The user prefers aisle seats"})
    assert store.get(("notes",), "a") is not None and store.get(("notes",), "b") is not None


def test_index_fields_choose_the_text_searched(client: RearviewClient, services_of: Services) -> None:
    store = RearviewStore(client, namespace=BASE, index={"dims": 384, "embed": "unused", "fields": ["title"]})
    store.put(("docs",), "d1", {"title": "Lisbon trip checklist", "body": "passport, adapter"})
    store.put(("docs",), "d2", {"title": "Porto dinner", "body": "book the table"}, index=["body"])
    store.put(("docs",), "d3", {"title": "Unindexed"}, index=False)
    contents = {m.id: m.content for m in services_of.listing.page("acme:docs", _all()).items}
    assert contents == {memory_id_of("d1"): "Lisbon trip checklist", memory_id_of("d2"): "book the table",
                        memory_id_of("d3"): "d3"}  # fmt: skip


# --- search -----------------------------------------------------------------------------------------------------


def test_search_filters_orders_and_pages(store: RearviewStore) -> None:
    for i, (kind, score) in enumerate([("food", 1), ("travel", 5), ("food", 7), ("travel", 9)]):
        store.put(("users", "u-1"), f"k{i}", {"text": f"note {i} about {kind}", "kind": kind, "score": score,
                                               "meta": {"source": "chat" if i % 2 else "form"}})  # fmt: skip
    store.put(("users", "u-2"), "other", {"text": "another user's note about food", "kind": "food", "score": 3})

    newest_first = store.search(("users", "u-1"))
    assert [i.key for i in newest_first] == ["k3", "k2", "k1", "k0"]
    assert [i.key for i in store.search(("users", "u-1"), filter={"kind": "food"})] == ["k2", "k0"]
    assert [i.key for i in store.search(("users", "u-1"), filter={"kind": {"$ne": "food"}})] == ["k3", "k1"]
    assert [i.key for i in store.search(("users", "u-1"), filter={"score": {"$gt": 4, "$lte": 7}})] == ["k2", "k1"]
    assert [i.key for i in store.search(("users", "u-1"), filter={"meta.source": "chat"})] == ["k3", "k1"]
    assert [i.key for i in store.search(("users", "u-1"), filter={"meta": {"source": "form"}})] == ["k2", "k0"]
    assert [i.key for i in store.search(("users", "u-1"), limit=2, offset=1)] == ["k2", "k1"]
    # A prefix reaches every namespace under it.
    assert {(i.namespace, i.key) for i in store.search(("users",), filter={"kind": "food"})} == {
        (("users", "u-1"), "k0"), (("users", "u-1"), "k2"), (("users", "u-2"), "other")
    }  # fmt: skip
    assert store.search(("nobody",)) == []


def test_search_with_a_query_is_recall(store: RearviewStore) -> None:
    store.put(("users", "u-1"), "seat", {"text": "Prefers aisle seats on long flights"})
    store.put(("users", "u-1"), "diet", {"text": "Vegetarian, no fish"})
    store.put(("users", "u-2"), "seat", {"text": "Prefers window seats on long flights"})
    found = store.search(("users", "u-1"), query="aisle seats on long flights")
    assert found[0].key == "seat" and found[0].score is not None and found[0].namespace == ("users", "u-1")
    assert all(item.namespace == ("users", "u-1") for item in found)
    across = store.search(("users",), query="seats on long flights", limit=5)
    assert {(i.namespace[1], i.key) for i in across} >= {("u-1", "seat"), ("u-2", "seat")}
    assert store.search(("users", "u-1"), query="favourite opera singer") == []


# --- namespaces -------------------------------------------------------------------------------------------------


def test_list_namespaces_by_prefix_suffix_wildcard_and_depth(store: RearviewStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "4")]:
        store.put(ns, "k", {"text": f"an item of {'/'.join(ns)}"})
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",), ("users",)]
    assert store.list_namespaces(prefix=("users",), limit=1, offset=1) == [("users", "4")]
    assert store.list_namespaces(prefix=("nobody",)) == []


# --- batch, abatch, TTL, a graph ---------------------------------------------------------------------------------


def test_batch_and_abatch_run_every_kind_of_operation(store: RearviewStore) -> None:
    ns = ("batch",)
    results = store.batch(
        [
            PutOp(ns, "k1", {"text": "first note"}),
            PutOp(ns, "k2", {"text": "second note"}),
            GetOp(ns, "k1"),
            SearchOp(ns, limit=5),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),)),
        ]  # fmt: skip
    )
    assert results[:2] == [None, None]
    assert results[2].value == {"text": "first note"}  # type: ignore[union-attr]
    assert {i.key for i in results[3]} == {"k1", "k2"}  # type: ignore[union-attr]
    assert results[4] == [ns]

    async def concurrently() -> tuple[Item | None, list[SearchItem]]:
        return await asyncio.gather(store.aget(ns, "k2"), store.asearch(ns, query="second note"))

    got, found = asyncio.run(concurrently())
    assert got is not None and got.value == {"text": "second note"} and found[0].key == "k2"


def test_ttl_sets_when_rearview_forgets_the_item(store: RearviewStore, services_of: Services) -> None:
    before = datetime.now(UTC)
    store.put(("ttl",), "short", {"text": "A reminder for the next hour"}, ttl=60)
    expires = _expiry(services_of, "acme:ttl", "short")
    assert before + timedelta(minutes=59) < expires < datetime.now(UTC) + timedelta(minutes=61)
    store.put(("ttl",), "short", {"text": "A reminder for the next two hours"}, ttl=120)
    assert _expiry(services_of, "acme:ttl", "short") > before + timedelta(minutes=119)


class _State(TypedDict):
    user: str
    question: str
    answer: str


def _remember_and_recall(state: _State) -> dict[str, str]:
    store = get_store()
    ns = ("users", state["user"], "memories")
    store.put(ns, "seat", {"text": "Prefers aisle seats on long flights"})
    found = store.search(ns, query=state["question"], limit=1)
    return {"answer": found[0].value["text"] if found else "nothing remembered"}


def test_a_compiled_graph_uses_the_store(store: RearviewStore) -> None:
    builder = StateGraph(_State)
    builder.add_node("memory", _remember_and_recall)
    builder.add_edge(START, "memory")
    builder.add_edge("memory", END)
    graph = builder.compile(store=store)
    out = graph.invoke({"user": "u-42", "question": "aisle seats on long flights", "answer": ""})
    assert out["answer"] == "Prefers aisle seats on long flights"
    assert store.list_namespaces(prefix=("users",)) == [("users", "u-42", "memories")]


def test_the_example_graph_runs_as_a_user_runs_it(live: tuple[LocalServer, Services]) -> None:
    server, services = live
    token = services.access.create_key("acme", ["read", "write"])[1]
    env = {**os.environ, "REARVIEW_URL": server.url, "REARVIEW_TOKEN": token, "REARVIEW_NAMESPACE": "acme"}
    example = Path(__file__).resolve().parents[2] / "examples" / "langgraph_memory.py"
    said, question = "I always want an aisle seat on long flights", "aisle seat on long flights?"
    run = subprocess.run(
        [sys.executable, str(example), "u-42", said, question], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == said
    assert [n.namespace for n in services.listing.namespaces_of(Principal.bootstrap_admin()).namespaces] == [
        "acme:users:u-42:memories"
    ]


# --- isolation --------------------------------------------------------------------------------------------------


def test_a_store_reaches_only_its_keys_scope(live: tuple[LocalServer, Services], store: RearviewStore) -> None:
    server, services = live
    store.put(("users", "u-1"), "secret", {"text": "Alice's door code is in the blue notebook"})
    with RearviewClient(server.url, token=services.access.create_key("globex", ["read", "write"])[1]) as other:
        theirs = RearviewStore(other, namespace="globex")
        assert theirs.list_namespaces() == [] and theirs.search(("users",)) == []
        assert theirs.get(("users", "u-1"), "secret") is None
        trespassing = RearviewStore(other, namespace="acme")
        with pytest.raises(NamespaceForbidden):
            trespassing.get(("users", "u-1"), "secret")
        assert trespassing.list_namespaces() == []  # the listing holds only what the key may see


# --- the LangChain tools ----------------------------------------------------------------------------------------


def test_langchain_tools_remember_recall_and_brief(client: RearviewClient) -> None:
    tools = {tool.name: tool for tool in rearview_tools(client, "acme:u-42")}
    assert tools["recall"].invoke({"query": "which seat?"}) == "Nothing relevant is remembered."
    stored = tools["remember"].invoke({"content": "The user prefers aisle seats on long flights", "kind": "preference"})
    assert stored.startswith("stored as ")
    assert "The user prefers aisle seats on long flights" in tools["recall"].invoke({"query": "aisle seats flights"})
    assert tools["brief"].invoke({"task": "choose aisle seats on long flights"}).startswith("- The user prefers aisle")
    assert set(tools["recall"].args) == {"query", "top_k"}


@pytest.fixture
def services_of(live: tuple[LocalServer, Services]) -> Services:
    return live[1]


def _expiry(services: Services, namespace: str, key: str) -> datetime:
    expires = services.listing.memory(namespace, memory_id_of(key)).expires_at
    assert expires is not None
    return expires


def _all() -> Any:
    from rearview.domain.listing import ListQuery

    return ListQuery(limit=100)
