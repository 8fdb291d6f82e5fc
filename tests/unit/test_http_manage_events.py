"""The management routes driven as Lambda drives them, with the sample events of events/http (list, edit, history,
export and import, the namespaces and their erasure, the inspector's files), against the real services on a
temporary SQLite file."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from rearview.api.http import create_resolver
from rearview.api.local_server import local_context
from rearview.bootstrap import Services
from rearview.domain.recall import RecallQuery
from rearview.domain.retention import RetentionPolicy
from rearview.domain.write import MemoryWrite
from rearview.service.manage.listing import narrowed_prefix
from support.events import load_event

pytestmark = pytest.mark.unit

NS = "acme:u-42"
MEMORIES = f"/v1/namespaces/{NS}/memories"
JSON = {"content-type": "application/json"}


@pytest.fixture
def resolver(services: Services) -> APIGatewayHttpResolver:
    return create_resolver(services)


def call(resolver: APIGatewayHttpResolver, name: str, **overrides: Any) -> tuple[int, Any, dict[str, Any]]:
    event = load_event(name, **overrides)
    response = resolver.resolve(event, local_context(event["requestContext"]["requestId"]))
    headers = response.get("headers") or {}
    body = response.get("body") or ""
    if str(headers.get("Content-Type", "")).startswith("application/json"):
        return response["statusCode"], json.loads(body), response
    return response["statusCode"], body, response


def _recalled(services: Services, query: str) -> list[str]:
    return [hit.content for hit in services.recaller.recall(NS, RecallQuery(query=query)).results]


def test_list_pages_newest_first_with_a_cursor(resolver: APIGatewayHttpResolver) -> None:
    assert call(resolver, "memory_batch")[0] == 200
    call(resolver, "memory_write")
    status, first, _ = call(resolver, "memories_list", query={"limit": "2"})
    assert status == 200 and len(first["items"]) == 2 and first["next_cursor"]
    status, rest, _ = call(resolver, "memories_list", query={"limit": "2", "cursor": first["next_cursor"]})
    items = first["items"] + rest["items"]
    assert rest["next_cursor"] is None and len(items) == 4
    times = [item.get("occurred_at") or item["last_confirmed_at"] for item in items]
    assert times == sorted(times, reverse=True)
    assert call(resolver, "memories_list", query={"limit": "501"})[1]["field"] == "limit"
    assert call(resolver, "memories_list", query={"cursor": "not-a-cursor"})[1]["field"] == "cursor"


def test_edit_changes_what_recall_finds_and_a_stale_version_is_refused(
    resolver: APIGatewayHttpResolver, services: Services
) -> None:
    call(resolver, "memory_write")
    assert any("aisle seat" in text for text in _recalled(services, "which seat did I book to Lisbon?"))

    status, edited, _ = call(resolver, "memory_edit")
    assert status == 200
    assert edited["version"] == 2 and "window seat" in edited["content"]
    assert edited["tags"] == ["travel", "conference"]
    texts = _recalled(services, "which seat did I book to Lisbon?")
    assert any("window seat" in text for text in texts) and not any("aisle seat" in text for text in texts)

    status, error, _ = call(resolver, "memory_edit")  # If-Match: 1 again, now stale
    assert status == 412 and error["error"] == "precondition_failed"
    status, error, _ = call(resolver, "memory_edit", body={"confidence": 0.5}, headers={"if-match": "2"})
    assert status == 422 and error["field"] == "confidence"
    assert services.store.get(NS, "ep-lisbon-flight").version == 2  # type: ignore[union-attr]


def test_a_refused_edit_changes_nothing(resolver: APIGatewayHttpResolver, services: Services) -> None:
    from rearview.domain.limits import MAX_EPISODE_CHARS, MAX_TAG_CHARS

    call(resolver, "memory_write")
    before = services.store.get(NS, "ep-lisbon-flight")
    too_long = {"content": "seat " * (MAX_EPISODE_CHARS // 5 + 1)}
    assert call(resolver, "memory_edit", body=too_long)[1]["field"] == "content"
    assert call(resolver, "memory_edit", body={})[1]["field"] == "body"
    assert call(resolver, "memory_edit", body={"tags": ["t" * (MAX_TAG_CHARS + 1)]})[1]["field"].startswith("tags")
    assert call(resolver, "memory_edit", body={"content": "fine", "layer": "semantic"})[1]["field"] == "layer"
    assert call(resolver, "memory_edit", headers={"if-match": "one"})[1]["field"] == "if-match"
    # The same id in a sibling namespace is not this memory.
    status, error, _ = call(resolver, "memory_edit", path="/v1/namespaces/acme:u-43/memories/ep-lisbon-flight")
    assert status == 404, error

    assert services.store.get(NS, "ep-lisbon-flight") == before
    assert services.history.history(NS, "ep-lisbon-flight").versions[-1].version == 1


def test_edit_redacts_a_secret_as_a_write_does(resolver: APIGatewayHttpResolver, services: Services) -> None:
    call(resolver, "memory_write")
    secret = "Deployed with key AKIAIOSFODNN7EXAMPLE to the Lisbon stack"
    status, edited, _ = call(resolver, "memory_edit", body={"content": secret}, headers={"if-match": "1"})
    assert status == 200 and edited["redacted"] is True
    assert "AKIAIOSFODNN7EXAMPLE" not in edited["content"]


def test_history_shows_the_earlier_version_and_who_changed_it(resolver: APIGatewayHttpResolver) -> None:
    call(resolver, "memory_write")
    call(resolver, "memory_edit")
    status, history, _ = call(resolver, "memory_history")
    assert status == 200
    versions = history["versions"]
    assert [(v["version"], v["changed_by"]) for v in versions] == [(1, "write"), (2, "edit")]
    assert "aisle seat" in versions[0]["memory"]["content"] and "window seat" in versions[1]["memory"]["content"]
    assert versions[1]["actor"] == "3f9a0c4e5b6d7e8f"


def test_export_then_import_restores_memories_elsewhere_idempotently(
    resolver: APIGatewayHttpResolver, services: Services
) -> None:
    call(resolver, "memory_write")
    call(resolver, "memory_edit")
    status, body, response = call(resolver, "export")
    assert status == 200 and response["headers"]["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in body.splitlines()]
    assert [line["id"] for line in lines] == ["ep-lisbon-flight"]
    assert lines[0]["version"] == 2 and lines[0]["history"][0]["memory"]["version"] == 1

    other = "/v1/namespaces/acme:u-43/import"
    status, result, _ = call(resolver, "import", path=other)
    assert status == 200 and (result["restored"], result["skipped"]) == (2, 0)
    status, result, _ = call(resolver, "import", path=other, body={"items": lines}, headers=JSON)
    assert status == 200 and (result["restored"], result["skipped"]) == (1, 0)
    restored = services.store.get("acme:u-43", "ep-lisbon-flight")
    assert restored is not None and restored.version == 2 and restored.namespace == "acme:u-43"
    assert len(services.store.history("acme:u-43", "ep-lisbon-flight")) == 1
    status, result, _ = call(resolver, "import", path=other)
    assert (result["restored"], result["skipped"]) == (0, 2)
    status, error, _ = call(resolver, "import", path=other, body='{"id": "x", "layer": "episodic"}\nnot json\n')
    assert status == 422 and error["field"] == "items.0.namespace"
    status, error, _ = call(resolver, "import", path=other, body="not json\n")
    assert status == 422 and error["field"] == "items.0"


def test_lambda_answers_an_export_a_page_at_a_time(
    resolver: APIGatewayHttpResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rearview.service.manage import transfer

    monkeypatch.setattr(transfer, "EXPORT_PAGE_ITEMS", 2)
    assert call(resolver, "memory_batch")[0] == 200
    call(resolver, "memory_write")
    ids: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        status, body, response = call(resolver, "export", query={"cursor": cursor} if cursor else {})
        assert status == 200
        page = [json.loads(line)["id"] for line in body.splitlines()]
        assert 1 <= len(page) <= 2
        ids += page
        pages += 1
        cursor = (response.get("headers") or {}).get("X-Next-Cursor")
        if cursor is None:
            break
    listed = call(resolver, "memories_list", query={"limit": "50"})[1]["items"]
    assert ids == [m["id"] for m in listed] and pages == (len(ids) + 1) // 2 >= 2


def test_a_refused_import_changes_nothing(resolver: APIGatewayHttpResolver, services: Services) -> None:
    at = "2026-01-01T00:00:00Z"
    good = {"id": "ok-1", "namespace": NS, "layer": "episodic", "content": "fine", "occurred_at": at, "created_at": at}
    bad = {**good, "id": "bad-1", "content": "x" * 2001}
    status, error, _ = call(resolver, "import", body={"items": [good, bad]}, headers=JSON)
    assert status == 422 and error["field"].startswith("items.1")
    assert services.store.get(NS, "ok-1") is None


def test_namespaces_are_listed_within_the_callers_scope(resolver: APIGatewayHttpResolver, services: Services) -> None:
    call(resolver, "memory_write")
    call(resolver, "memory_write", path="/v1/namespaces/zeta/memories")  # the bootstrap admin reaches it
    status, listed, _ = call(resolver, "namespaces_list", query={})
    assert status == 200
    assert [(n["namespace"], n["episodic"]) for n in listed["namespaces"]] == [(NS, 1)]
    # `acme2` starts with the key's scope `acme` as text, and is not within it.
    services.writer.write("acme2", MemoryWrite(content="Booked the Porto venue for the acme2 offsite"))
    names = [n["namespace"] for n in call(resolver, "namespaces_list", query={})[1]["namespaces"]]
    assert names == [NS]
    assert [n["namespace"] for n in call(resolver, "namespaces_list", query={"prefix": "acme:u"})[1]["namespaces"]] == [
        NS
    ]
    assert call(resolver, "namespaces_list", query={"prefix": "zeta"})[1]["namespaces"] == []
    assert call(resolver, "namespaces_list", query={"prefix": "acme2"})[1]["namespaces"] == []


@pytest.mark.parametrize(
    ("prefix", "scope", "asked"),
    [
        ("", None, ""),
        ("acme:u", None, "acme:u"),
        ("", "acme", "acme"),
        ("ac", "acme", "acme"),
        ("acme:u-42", "acme", "acme:u-42"),
        ("zeta", "acme", None),
        ("acme2", "acme:u-42", None),
    ],
)
def test_a_namespace_listing_asks_the_store_only_within_the_keys_scope(
    prefix: str, scope: str | None, asked: str | None
) -> None:
    assert narrowed_prefix(prefix, scope) == asked


def test_erase_removes_the_subtree_and_returns_a_receipt(resolver: APIGatewayHttpResolver, services: Services) -> None:
    call(resolver, "memory_write")
    call(resolver, "memory_write", path=f"/v1/namespaces/{NS}:p-1/memories")
    call(resolver, "memory_write", path="/v1/namespaces/acme:u-420/memories")
    status, receipt, _ = call(resolver, "namespace_erase")
    assert status == 200
    assert sorted(receipt["namespaces"]) == [NS, f"{NS}:p-1"]
    assert receipt["namespaces"][NS]["episodic"] == 1
    assert services.store.get(NS, "ep-lisbon-flight") is None
    assert services.store.get(f"{NS}:p-1", "ep-lisbon-flight") is None
    assert services.store.get("acme:u-420", "ep-lisbon-flight") is not None
    status, error, _ = call(resolver, "namespace_erase", query={"subtree": "maybe"})
    assert status == 422 and error["field"] == "subtree"


def test_erase_removes_the_retention_policies_of_what_it_erases(services: Services) -> None:
    for ns in (NS, f"{NS}:p-1", "acme:u-420"):
        services.writer.write(ns, MemoryWrite(content="Booked the Lisbon flight"))
        services.retention.set_policy(ns, RetentionPolicy(episode_max_age_days=30))
    receipt = services.eraser.erase(NS, subtree=True)
    assert receipt.namespaces[NS].retention_policy and receipt.namespaces[f"{NS}:p-1"].retention_policy
    assert services.retention.policy(NS).set_on is None and services.retention.policy(f"{NS}:p-1").set_on is None
    assert services.retention.policy("acme:u-420").set_on == "acme:u-420"


def test_the_inspector_is_served_without_a_key(resolver: APIGatewayHttpResolver) -> None:
    status, page, response = call(resolver, "ui_page")
    assert status == 200 and "<!doctype html>" in page.lower()
    assert "script-src 'self'" in response["headers"]["Content-Security-Policy"]
    status, script, response = call(resolver, "ui_asset")
    assert status == 200 and response["headers"]["Content-Type"].startswith("text/javascript")
    status, _, _ = call(resolver, "ui_asset", path="/ui/nothing.js")
    assert status == 404
