"""The HTTP routes driven exactly as Lambda drives them: `resolver.resolve(event, context)` with the sample
API Gateway v2 events of events/http, against the real services on a temporary SQLite file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from rearview import __version__
from rearview.api.http import create_resolver
from rearview.api.http_errors import MAX_BODY_BYTES
from rearview.api.local_server import local_context
from rearview.api.routes import API_ROUTES
from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.brief import BriefResponse
from rearview.domain.memory import Episode, Fact
from rearview.domain.recall import RecallQuery, RecallResponse
from support.events import event_names, load_event

pytestmark = pytest.mark.unit

NS = "acme:u-42"
MEMORIES = f"/v1/namespaces/{NS}/memories"
SESSION = "s-2026-03-10"


@pytest.fixture
def resolver(services: Services) -> APIGatewayHttpResolver:
    return create_resolver(services)


def call(resolver: APIGatewayHttpResolver, name: str, **overrides: Any) -> tuple[int, Any, dict[str, Any]]:
    """Resolve one sample event; return (status, parsed JSON body or text, the raw response)."""
    event = load_event(name, **overrides)
    response = resolver.resolve(event, local_context(event["requestContext"]["requestId"]))
    headers = response.get("headers") or {}
    body = response.get("body") or ""
    if str(headers.get("Content-Type", "")).startswith("application/json"):
        return response["statusCode"], json.loads(body), response
    return response["statusCode"], body, response


# --- the tour: every sample event ---------------------------------------------------------------------------


def test_there_is_a_sample_event_for_every_route() -> None:
    requests = set()
    for name in event_names():
        event = load_event(name)
        requests.add((event["requestContext"]["http"]["method"], event["rawPath"]))
    for route in API_ROUTES:
        assert any(m == route.method and route.match(path) is not None for m, path in requests), route.route_key


def test_health_reports_version_and_embedder(resolver: APIGatewayHttpResolver, services: Services) -> None:
    status, body, _ = call(resolver, "health")
    assert status == 200
    assert body == {
        "status": "ok",
        "version": __version__,
        "embedder": services.embedder.name,
        "dim": services.embedder.dim,
    }


def test_working_memory_put_get_expire_and_clear(resolver: APIGatewayHttpResolver, clock: ManualClock) -> None:
    status, entry, _ = call(resolver, "working_put")
    assert status == 200
    assert entry["key"] == "current_task"
    assert entry["value"]["goal"] == "plan the Lisbon trip"
    assert entry["namespace"] == NS and entry["session_id"] == SESSION
    status, view, _ = call(resolver, "working_get")
    assert status == 200
    assert view["entries"] == {"current_task": entry["value"]}
    assert set(view["expires_at"]) == {"current_task"}

    clock.advance(seconds=3601)  # the sample sets ttl_seconds=3600
    status, view, _ = call(resolver, "working_get")
    assert status == 200 and view["entries"] == {}

    call(resolver, "working_put")
    status, cleared, _ = call(resolver, "working_clear")
    assert status == 200 and cleared == {"cleared": 1}
    assert call(resolver, "working_get")[1]["entries"] == {}


def test_write_is_201_then_200_for_the_same_id(resolver: APIGatewayHttpResolver, services: Services) -> None:
    status, result, _ = call(resolver, "memory_write")
    assert status == 201
    assert result["id"] == "ep-lisbon-flight" and result["status"] == "stored"
    status, again, _ = call(resolver, "memory_write")
    assert status == 200
    assert again["reason"] == "duplicate_id"
    stored = services.store.get(NS, "ep-lisbon-flight")
    assert isinstance(stored, Episode)
    assert stored.entities == ["Lisbon", "PyCon Portugal", "TAP"]


def test_get_returns_the_memory_and_404_when_absent(resolver: APIGatewayHttpResolver) -> None:
    status, body, _ = call(resolver, "memory_get")
    assert status == 404
    assert body["error"] == "not_found" and "ep-lisbon-flight" in body["message"]
    call(resolver, "memory_write")
    status, memory, _ = call(resolver, "memory_get")
    assert status == 200
    assert memory["id"] == "ep-lisbon-flight"
    assert memory["layer"] == "episodic"
    assert memory["namespace"] == NS
    assert memory["content"].startswith("Booked the TAP flight to Lisbon")


def test_fact_written_through_a_percent_encoded_namespace(resolver: APIGatewayHttpResolver, services: Services) -> None:
    assert "%3A" in load_event("memory_write_fact")["rawPath"]
    status, result, _ = call(resolver, "memory_write_fact")
    assert status == 201
    fact = services.store.get(NS, result["id"])
    assert isinstance(fact, Fact)
    assert fact.dimension == "seat_preference" and fact.confidence == 0.9
    status, memory, _ = call(resolver, "memory_get", path=f"{MEMORIES}/{result['id']}")
    assert status == 200 and memory["layer"] == "semantic"


def test_batch_writes_every_item(resolver: APIGatewayHttpResolver, services: Services) -> None:
    status, body, _ = call(resolver, "memory_batch")
    assert status == 200
    assert [r["status"] for r in body["results"]] == ["stored", "stored", "stored"]
    for result in body["results"]:
        assert services.store.get(NS, result["id"]) is not None


def test_recall_finds_what_was_written_and_matches_the_service(
    resolver: APIGatewayHttpResolver, services: Services
) -> None:
    call(resolver, "memory_write")
    call(resolver, "memory_batch")
    status, body, _ = call(resolver, "recall")
    assert status == 200
    assert body["results"][0]["id"] == "ep-lisbon-flight"
    assert body["no_relevant_memory"] is False
    assert "truncated" in body
    direct = services.recaller.recall(NS, RecallQuery(query="When is the Lisbon flight?", top_k=5))
    assert [h["id"] for h in body["results"]] == [h.id for h in direct.results]
    RecallResponse.model_validate(body)


def test_recall_with_explain_returns_the_stages(resolver: APIGatewayHttpResolver) -> None:
    call(resolver, "memory_write")
    status, body, _ = call(resolver, "recall", body={"query": "Lisbon flight", "explain": True})
    assert status == 200
    stages = [s["stage"] for s in body["trace"]["stages"]]
    assert {"keyword", "vector", "fuse", "rank"} <= set(stages)


def test_recall_reads_the_query_forms_and_takes_exclude_and_a_time_budget(resolver: APIGatewayHttpResolver) -> None:
    call(resolver, "memory_write")
    call(resolver, "memory_batch")
    body = {"query": "the last time I booked a flight to Lisbon", "exclude": ["hotel"], "timeout_ms": 30_000}
    status, response, _ = call(resolver, "recall", body=body)
    assert status == 200
    assert response["query_form"]["last_time"] == "the last time"
    assert response["query_form"]["exclusions"][0] == {
        "phrase": "hotel",
        "source": "request",
        "refers_back": False,
        "left_out": [],
    }
    assert response["timed_out"] is False
    RecallResponse.model_validate(response)


def test_delete_by_id_returns_a_receipt_and_the_memory_is_gone(resolver: APIGatewayHttpResolver) -> None:
    call(resolver, "memory_write")
    status, receipt, _ = call(resolver, "memory_delete")
    assert status == 200
    assert receipt["namespace"] == NS
    assert receipt["ids"] == ["ep-lisbon-flight"]
    assert receipt["deleted"] == {"working": 0, "episodic": 1, "semantic": 0}
    assert call(resolver, "memory_get")[0] == 404
    status, body, _ = call(resolver, "memory_delete")
    assert status == 404 and body["error"] == "not_found"


def test_forget_by_ids(resolver: APIGatewayHttpResolver) -> None:
    call(resolver, "memory_write")
    status, receipt, _ = call(resolver, "forget")
    assert status == 200
    assert receipt["ids"] == ["ep-lisbon-flight"] and receipt["deleted"]["episodic"] == 1
    assert call(resolver, "memory_get")[0] == 404


def test_consolidate_accepts_no_body_and_an_empty_object(resolver: APIGatewayHttpResolver) -> None:
    call(resolver, "memory_write")
    call(resolver, "memory_batch")  # two episodes and a fact
    assert "body" not in load_event("consolidate")
    status, result, _ = call(resolver, "consolidate")
    assert status == 200
    assert result["namespace"] == NS
    assert result["episodes_considered"] == 3
    status, again, _ = call(resolver, "consolidate", body={})
    assert status == 200
    assert again["episodes_considered"] == 3 - result["episodes_consolidated"]


def test_stats_counts_the_layers(resolver: APIGatewayHttpResolver) -> None:
    call(resolver, "memory_write")
    call(resolver, "memory_write_fact")
    status, stats, _ = call(resolver, "stats")
    assert status == 200
    assert stats["namespace"] == NS
    assert stats["counts"]["episodic"] == 1 and stats["counts"]["semantic"] == 1


def test_brief_returns_what_applies_with_why(resolver: APIGatewayHttpResolver) -> None:
    lesson = {"layer": "semantic", "kind": "lesson", "content": "The booking API times out on searches of 6 cities"}
    assert call(resolver, "memory_write_fact", body=lesson)[0] == 201
    status, body, _ = call(resolver, "brief")
    assert status == 200, body
    [item] = BriefResponse.model_validate(body).items
    assert item.why == "shares booking, api with the task" and item.memory.kind == "lesson"
    assert body["working"] == {} and body["no_relevant_memory"] is False


def test_feedback_confirms_a_memory_and_is_counted(resolver: APIGatewayHttpResolver, services: Services) -> None:
    call(resolver, "memory_write")
    status, result, _ = call(resolver, "feedback")
    assert status == 200, result
    assert (result["memory_id"], result["verdict"], result["adopted"]) == ("ep-lisbon-flight", "useful", False)
    assert result["confidence_after"] > result["confidence_before"]
    hindsight = call(resolver, "stats")[1]["hindsight"]
    assert hindsight["feedback"]["episode"]["useful"] == 1


def test_ending_a_session_clears_its_working_memory(resolver: APIGatewayHttpResolver) -> None:
    call(resolver, "working_put")
    status, ended, _ = call(resolver, "session_end")
    assert status == 200, ended
    # No worker or queue takes jobs in this resolver: the trigger sends none.
    assert ended == {"namespace": NS, "session_id": SESSION, "cleared": 1, "consolidation_job_sent": False}
    assert call(resolver, "working_get")[1]["entries"] == {}


def test_a_consolidation_run_in_progress_is_a_409(resolver: APIGatewayHttpResolver, services: Services) -> None:
    call(resolver, "memory_write")
    assert services.ledger.acquire_lease(NS, "another run", services.clock.now(), 600)
    status, body, _ = call(resolver, "consolidate")
    assert status == 409
    assert body["error"] == "consolidation_running" and "in progress" in body["message"]


def test_openapi_document_lists_every_route(resolver: APIGatewayHttpResolver) -> None:
    status, document, _ = call(resolver, "openapi_document")
    assert status == 200
    for route in API_ROUTES:
        if route.documented:
            assert route.method.lower() in document["paths"][route.path], route.route_key
    assert "ErrorBody" in document["components"]["schemas"]


def test_docs_is_the_swagger_page(resolver: APIGatewayHttpResolver) -> None:
    status, page, response = call(resolver, "docs")
    assert status == 200
    assert response["headers"]["Content-Type"] == "text/html"
    assert "swagger" in page.lower()


def test_base64_body_is_decoded(resolver: APIGatewayHttpResolver) -> None:
    payload = json.dumps({"content": "Renewed the passport at the consulate in Porto, valid until 2036"})
    status, result, _ = call(resolver, "memory_write", raw_body=payload.encode())
    assert status == 201 and result["status"] == "stored"


# --- rejected requests: a 4xx naming the field and the limit, and nothing written --------------------------

REJECTED: list[tuple[str, str, dict[str, Any], int, str | None, str]] = [
    ("empty content", "memory_write", {"body": {"content": ""}}, 422, "content", "must not be empty"),
    ("blank content", "memory_write", {"body": {"content": "   \n "}}, 422, "content", "must not be empty"),
    ("50001-char content", "memory_write", {"body": {"content": "a" * 50_001}}, 422, "content", "50000"),
    (
        "501-char fact",
        "memory_write",
        {"body": {"layer": "semantic", "content": "Prefers " + "x" * 493}},
        422,
        "content",
        "500",
    ),
    (
        "control character",
        "memory_write",
        {"body": {"content": "Booked the flight\x07 to Lisbon"}},
        422,
        "content",
        "control character",
    ),
    (
        "JSON dump",
        "memory_write",
        {"body": {"content": json.dumps({"user": {"id": 42, "prefs": {"seat": "aisle", "meal": "veg"}}})}},
        422,
        "content",
        "JSON",
    ),
    (
        "unknown field",
        "memory_write",
        {"body": {"content": "Flew to Porto", "colour": "red"}},
        422,
        "colour",
        "Extra inputs",
    ),
    (
        "dimension on an episode",
        "memory_write",
        {"body": {"content": "Flew to Porto on Monday", "dimension": "travel"}},
        422,
        "dimension",
        "semantic",
    ),
    (
        "importance above 1",
        "memory_write",
        {"body": {"content": "Flew to Porto", "importance": 2}},
        422,
        "importance",
        "less than or equal to 1",
    ),
    ("malformed JSON", "memory_write", {"body": '{"content": "Flew to'}, 400, "body", "malformed JSON"),
    ("JSON that is not an object", "memory_write", {"body": "[1, 2]"}, 422, "body", ""),
    ("no body", "memory_write", {"body": None}, 422, "body", "required"),
    (
        "top_k 0",
        "recall",
        {"body": {"query": "Lisbon", "top_k": 0}},
        422,
        "top_k",
        "greater than or equal to 1",
    ),
    ("top_k 101", "recall", {"body": {"query": "Lisbon", "top_k": 101}}, 422, "top_k", "100"),
    ("timeout_ms 0", "recall", {"body": {"query": "Lisbon", "timeout_ms": 0}}, 422, "timeout_ms", "1"),
    ("timeout_ms 60001", "recall", {"body": {"query": "Lisbon", "timeout_ms": 60_001}}, 422, "timeout_ms", "60000"),
    ("17 exclusions", "recall", {"body": {"query": "Lisbon", "exclude": ["x"] * 17}}, 422, "exclude", "16"),
    ("blank query", "recall", {"body": {"query": "  "}}, 422, "query", "blank"),
    ("query too long", "recall", {"body": {"query": "q" * 2001}}, 422, "query", "2000"),
    (
        "batch of 101",
        "memory_batch",
        {"body": {"items": [{"content": f"Visited the Lisbon office, trip {i}"} for i in range(101)]}},
        422,
        "items",
        "100",
    ),
    ("empty batch", "memory_batch", {"body": {"items": []}}, 422, "items", "1"),
    (
        "batch item 3 empty",
        "memory_batch",
        {"body": {"items": [{"content": "Visited the Lisbon office"}] * 3 + [{"content": ""}]}},
        422,
        "items.3.content",
        "must not be empty",
    ),
    (
        "batch item 1 with a control character",
        "memory_batch",
        {"body": {"items": [{"content": "Visited the Lisbon office"}, {"content": "Visited\x00 Porto"}]}},
        422,
        "items.1.content",
        "control character",
    ),
    (
        "namespace with five segments",
        "memory_write",
        {"path": "/v1/namespaces/a:b:c:d:e/memories"},
        422,
        "namespace",
        "at most 4 segments",
    ),
    (
        "namespace segment with a space",
        "memory_write",
        {"path": "/v1/namespaces/acme%20corp:u-42/memories"},
        422,
        "namespace",
        "64 characters",
    ),
    (
        "namespace segment of 65 characters",
        "stats",
        {"path": f"/v1/namespaces/{'a' * 65}/stats"},
        422,
        "namespace",
        "64",
    ),
    ("empty namespace segment", "stats", {"path": "/v1/namespaces/acme::u-42/stats"}, 422, "namespace", ""),
    (
        "working ttl over 30 days",
        "working_put",
        {"body": {"value": 1, "ttl_seconds": 30 * 24 * 3600 + 1}},
        422,
        "ttl_seconds",
        "2592000",
    ),
    (
        "working key of 257 characters",
        "working_put",
        {"path": f"/v1/namespaces/{NS}/sessions/{SESSION}/working/{'k' * 257}"},
        422,
        "key",
        "256",
    ),
    (
        "session id with a space",
        "working_get",
        {"path": f"/v1/namespaces/{NS}/sessions/s%201/working"},
        422,
        "session_id",
        "128",
    ),
    ("cascade not a boolean", "memory_delete", {"query": {"cascade": "maybe"}}, 422, "cascade", "boolean"),
    ("forget without ids or filter", "forget", {"body": {}}, 422, "ids", "filter"),
    (
        "forget since after until",
        "forget",
        {"body": {"layer": "episodic", "since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"}},
        422,
        "since",
        "before",
    ),
    ("consolidate max_clusters 0", "consolidate", {"body": {"max_clusters": 0}}, 422, "max_clusters", "1"),
    ("brief without a task", "brief", {"body": {"tool": "booking API"}}, 422, "task", "required"),
    ("brief with a blank task", "brief", {"body": {"task": "  "}}, 422, "task", "blank"),
    ("brief task too long", "brief", {"body": {"task": "t" * 2001}}, 422, "task", "2000"),
    ("brief top_k 21", "brief", {"body": {"task": "Book a hotel", "top_k": 21}}, 422, "top_k", "20"),
    (
        "brief tool with a control character",
        "brief",
        {"body": {"task": "Book a hotel", "tool": "booking\x07API"}},
        422,
        "tool",
        "pattern",
    ),
    (
        "feedback with an unknown verdict",
        "feedback",
        {"body": {"memory_id": "ep-lisbon-flight", "verdict": "great"}},
        422,
        "verdict",
        "'useful', 'not_useful' or 'wrong'",
    ),
    (
        "feedback correction too long",
        "feedback",
        {"body": {"memory_id": "ep-lisbon-flight", "verdict": "wrong", "correction": "c" * 501}},
        422,
        "correction",
        "500",
    ),
    (
        "feedback correction without wrong",
        "feedback",
        {"body": {"memory_id": "ep-lisbon-flight", "verdict": "useful", "correction": "It is the 10:15 flight"}},
        422,
        "correction",
        "only with verdict 'wrong'",
    ),
    (
        "feedback on a memory of no namespace",
        "feedback",
        {"body": {"memory_id": "ep-nowhere", "verdict": "useful"}},
        404,
        "memory_id",
        "no memory",
    ),
    (
        "session end of a session id with a space",
        "session_end",
        {"path": f"/v1/namespaces/{NS}/sessions/s%201/end"},
        422,
        "session_id",
        "128",
    ),
    ("unknown route", "stats", {"path": "/v1/namespaces/acme/nothing-here"}, 404, None, "no such route"),
    ("wrong method", "stats", {"method": "DELETE"}, 405, None, "allowed: GET"),
    ("body over 1 MiB", "memory_write", {"body": "x" * (MAX_BODY_BYTES + 1)}, 413, "body", "1048576 bytes"),
]


@pytest.fixture
def seeded(resolver: APIGatewayHttpResolver) -> Iterator[APIGatewayHttpResolver]:
    assert call(resolver, "memory_write")[0] == 201
    assert call(resolver, "memory_write_fact")[0] == 201
    assert call(resolver, "working_put")[0] == 200
    yield resolver


def snapshot(resolver: APIGatewayHttpResolver) -> tuple[Any, ...]:
    """What a rejected request must leave exactly as it was."""
    return (
        call(resolver, "stats")[1],
        call(resolver, "memory_get")[1],
        call(resolver, "working_get")[1],
    )


@pytest.mark.parametrize(
    ("event", "overrides", "status", "field", "fragment"),
    [case[1:] for case in REJECTED],
    ids=[case[0] for case in REJECTED],
)
def test_rejected_request_names_field_and_limit_and_writes_nothing(
    seeded: APIGatewayHttpResolver,
    event: str,
    overrides: dict[str, Any],
    status: int,
    field: str | None,
    fragment: str,
) -> None:
    before = snapshot(seeded)
    got, body, response = call(seeded, event, **overrides)
    assert got == status, body
    assert response["headers"]["Content-Type"].startswith("application/json")
    assert set(body) <= {"error", "message", "field"} and body["error"] and body["message"]
    assert body.get("field") == field
    assert fragment in body["message"]
    if field:
        assert field.split(".")[0] in body["message"]
    assert snapshot(seeded) == before


def test_wrong_method_says_which_are_allowed(resolver: APIGatewayHttpResolver) -> None:
    status, body, response = call(resolver, "memory_get", method="POST")
    assert status == 405
    assert response["headers"]["Allow"] == "DELETE, GET, PATCH"
    assert body["error"] == "method_not_allowed"


def test_unexpected_error_is_a_bare_500(services: Services, caplog: pytest.LogCaptureFixture) -> None:
    class BrokenRecall:
        def recall(self, namespace: str, q: RecallQuery) -> RecallResponse:
            raise RuntimeError("disk on fire at /var/lib/secret/path.db")

    services.recaller = BrokenRecall()  # type: ignore[assignment]
    status, body, _ = call(create_resolver(services), "recall")
    assert status == 500
    assert body == {"error": "internal", "message": "internal error"}
    assert "disk on fire" not in json.dumps(body)
    assert any(r.exc_info and "disk on fire" in str(r.exc_info[1]) for r in caplog.records)


def test_working_entry_expiry_follows_the_injected_clock(resolver: APIGatewayHttpResolver, clock: ManualClock) -> None:
    _, entry, _ = call(resolver, "working_put")
    assert entry["expires_at"] == (clock.now() + timedelta(seconds=3600)).isoformat().replace("+00:00", "Z")
