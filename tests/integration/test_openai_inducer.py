"""The real OpenAICompatibleInducer, through the real `openai` client, over HTTP to the local fake server
(tests/support/fake_openai_server.py): the request it sends, every way an answer can go wrong and what each yields,
recorded answers of real servers replayed, and consolidation stating with the rules what the model failed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rearview.adapters.induction_prompt import ONE_TURN_ASK, SYSTEM_PROMPT
from rearview.adapters.openai_inducer import OpenAICompatibleInducer
from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.hindsight import EvidenceCluster, Induction
from rearview.domain.memory import Fact
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.service.hindsight.consolidation import ConsolidationService
from rearview.service.hindsight.rule_inducer import RuleInducer
from rearview.settings import OpenAISettings
from support.fake_openai_server import FakeOpenAIServer
from support.induction_clusters import (
    GEOCODING_MEMORY,
    all_clusters,
    chinese_replies,
    geocoding_lesson,
    nurse_fact,
    one_off,
)
from support.scripted_model import (
    Faults,
    ScriptedModel,
    Step,
    answer,
    failing,
    fenced,
    filtered,
    invalid_json,
    not_json,
    recorded,
    refusal,
    slow,
    usage_of,
)

pytestmark = pytest.mark.integration

# The client's timeout in these tests; a `slow` step waits longer.
TIMEOUT = 0.5

LESSON = GEOCODING_MEMORY
OUTSIDE = {**LESSON, "provenance": ["geo-1", "geo-9"]}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def inducer_for(server: FakeOpenAIServer, *, max_retries: int = 0, model: str = "qwen2.5:7b-instruct") -> Any:
    settings = OpenAISettings(base_url=server.url, model=model, api_key="sk-test", timeout_seconds=TIMEOUT)
    return OpenAICompatibleInducer(settings, max_retries=max_retries)


# --- the fault matrix -------------------------------------------------------------------------------------------

# (steps the server takes, the statement induced or None, the failure recorded or None, requests made)
FAULTS: dict[str, tuple[list[Step], str | None, str | None, int]] = {
    "valid JSON": ([answer(LESSON)], LESSON["statement"], None, 1),
    "JSON in a code fence": ([fenced(LESSON)], LESSON["statement"], None, 1),
    "invalid JSON, then valid": ([invalid_json(), answer(LESSON)], LESSON["statement"], None, 2),
    "invalid JSON twice": ([invalid_json(), invalid_json()], None, "invalid answer", 2),
    "provenance outside the cluster, then valid": ([answer(OUTSIDE), answer(LESSON)], LESSON["statement"], None, 2),
    "provenance outside the cluster twice": ([answer(OUTSIDE), answer(OUTSIDE)], None, "invalid answer", 2),
    "refusal text": ([refusal()], None, "refused", 1),
    "finish_reason content_filter": ([filtered()], None, "refused", 1),
    "slower than the client's timeout": ([slow(TIMEOUT * 3)], None, "timeout", 1),
    "HTTP 500": ([failing(500)], None, "http 500", 1),
    "HTTP 503": ([failing(503)], None, "http 503", 1),
    "a body that is not JSON": ([not_json()], None, "bad response: not JSON", 1),
    "null memory": ([answer(None, "a one-off")], None, None, 1),
}


@pytest.mark.parametrize("case", list(FAULTS))
def test_each_fault_yields_a_memory_none_or_a_failed_cluster(server: FakeOpenAIServer, case: str) -> None:
    steps, statement, failure, requests = FAULTS[case]
    server.script(*steps)

    induction = inducer_for(server).induce([geocoding_lesson()])

    (memory,) = induction.memories
    assert (memory.statement if memory else None) == statement
    assert induction.failed == ({0: failure} if failure else {})
    assert len(server.requests) == requests


def test_an_http_error_fails_the_cluster_only_after_the_clients_own_retries(server: FakeOpenAIServer) -> None:
    server.script(failing(503), failing(503))

    induction = inducer_for(server, max_retries=1).induce([geocoding_lesson()])

    assert induction.failed == {0: "http 503"}
    assert len(server.requests) == 2


def test_a_server_that_is_not_there_fails_every_cluster_as_unavailable_without_raising() -> None:
    server = FakeOpenAIServer()
    server.start()
    inducer = inducer_for(server)
    server.stop()

    induction = inducer.induce([geocoding_lesson(), chinese_replies()])

    assert induction.memories == [None, None]
    assert induction.failed == {0: "unavailable", 1: "unavailable"}


def test_one_bad_cluster_costs_only_itself(server: FakeOpenAIServer) -> None:
    server.script(Step(), slow(TIMEOUT * 3), Step(), failing(500), Step())
    clusters = [geocoding_lesson(), chinese_replies(), nurse_fact(), geocoding_lesson(), one_off()]

    induction = inducer_for(server).induce(clusters)

    assert induction.failed == {1: "timeout", 3: "http 500"}
    rules = RuleInducer().induce(clusters).memories
    assert induction.memories == [rules[0], None, rules[2], None, None]


# --- what it sends ----------------------------------------------------------------------------------------------


def test_the_request_names_the_model_asks_for_json_and_carries_the_key(server: FakeOpenAIServer) -> None:
    inducer_for(server, model="llama3.1").induce([geocoding_lesson()])

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    body = request.body
    assert body["model"] == "llama3.1"
    assert body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0.0 and body["max_tokens"] == 400
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == SYSTEM_PROMPT


def test_the_prompt_gives_the_kind_outcomes_event_types_dates_and_ids(server: FakeOpenAIServer) -> None:
    inducer_for(server).induce([geocoding_lesson(), chinese_replies()])

    lesson, preference = server.prompts()
    for fragment in (
        '"grouped_as": "lesson"',
        '"subject": "geocoding API"',
        '"outcome_status": "failure"',
        '"outcome": "HTTP 413 Payload Too Large"',
        '"outcome_status": "success"',
        '"event_type": "tool_call"',
        '"occurred_at": "2026-03-02T09:30:00Z"',
        '"session": "s2"',
    ):
        assert fragment in lesson, fragment
    assert all(f'"id": "geo-{n}"' in lesson for n in range(1, 5))
    assert '"recognised": {"dimension": "language", "facet": "replies", "value": "Chinese"}' in preference
    assert '"language": "Chinese"' in preference and '"occurrences": 2' in preference


def test_the_retry_sends_the_bad_answer_back_with_what_was_wrong(server: FakeOpenAIServer) -> None:
    server.script(answer(OUTSIDE), answer(LESSON))

    inducer_for(server).induce([geocoding_lesson()])

    retry = server.requests[1].body["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert '"geo-9"' in retry[2]["content"]
    assert "geo-9, which are not ids of the group's episodes" in retry[3]["content"]


def test_a_server_that_rejects_json_mode_is_asked_again_without_it(server: FakeOpenAIServer) -> None:
    server.rejects_response_format = True
    inducer = inducer_for(server)

    induction = inducer.induce([geocoding_lesson(), nurse_fact()])

    assert induction.failed == {}
    assert all(m is not None for m in induction.memories)
    assert ["response_format" in r.body for r in server.requests] == [True, False, False]
    assert inducer.json_mode is False


def test_tokens_are_counted_from_the_usage_of_every_request(server: FakeOpenAIServer) -> None:
    server.script(recorded("openai_chinese_replies"), invalid_json(), recorded("openai_geocoding_fenced"))

    induction = inducer_for(server).induce([chinese_replies(), geocoding_lesson()])

    assert induction.failed == {}
    # The invalid answer is the fake's own, whose usage it estimates from the characters of the conversation.
    sent = [m["content"] for m in server.requests[1].body["messages"]]
    invalid = sum(usage_of(sent, invalid_json().text or ""))
    assert induction.tokens == 1258 + invalid + 1460


# --- recorded answers of real servers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cluster", "statement", "dimension", "tokens"),
    [
        ("openai_chinese_replies", chinese_replies, "用户希望所有回复都使用中文", "language", 1258),
        (
            "openai_geocoding_fenced",
            geocoding_lesson,
            "geocoding API: batches of 100 or more addresses fail with HTTP 413 Payload Too Large; "
            "batches of 50 addresses work",
            "tool:geocoding api",
            1460,
        ),
        (
            "openai_nurse_thinking",
            nurse_fact,
            "The user works as a nurse, on shifts that change every week",
            "job",
            1189,
        ),
        ("openai_one_off_null", one_off, None, None, 1126),
    ],
)
def test_recorded_answers_are_read_as_the_memory_they_state(
    server: FakeOpenAIServer, name: str, cluster: Any, statement: str | None, dimension: str | None, tokens: int
) -> None:
    server.script(recorded(name))

    induction = inducer_for(server).induce([cluster()])

    (memory,) = induction.memories
    assert induction.failed == {} and induction.tokens == tokens
    assert (memory.statement if memory else None) == statement
    assert (memory.dimension if memory else None) == dimension
    if memory is not None:
        assert set(memory.provenance) == set(cluster().ids)


def test_a_recorded_refusal_in_the_refusal_field_is_refused(server: FakeOpenAIServer) -> None:
    server.script(recorded("openai_refusal"))

    induction = inducer_for(server).induce([nurse_fact()])

    assert induction.memories == [None] and induction.failed == {0: "refused"} and induction.tokens == 1226


# --- as a model would: the rules' answers, with faults ----------------------------------------------------------


def test_with_no_script_the_server_answers_what_the_rules_state() -> None:
    clusters = all_clusters()
    with FakeOpenAIServer() as server:
        induction = inducer_for(server).induce(clusters)

    assert induction.failed == {}
    assert induction.memories == RuleInducer().induce(clusters).memories
    assert induction.tokens > 0


def _faulty_run(seed: int) -> Induction:
    faults = Faults(invalid_json=0.3, timeout=0.1, refusal=0.1, seed=seed, timeout_seconds=TIMEOUT * 3)
    with FakeOpenAIServer(ScriptedModel(faults=faults)) as server:
        return inducer_for(server).induce(all_clusters() * 3)


def test_faults_are_injected_at_their_rates_the_same_for_the_same_seed() -> None:
    first, again = _faulty_run(seed=7), _faulty_run(seed=7)

    assert first.failed == again.failed
    assert first.failed and len(first.failed) < 15
    assert set(first.failed.values()) <= {"invalid answer", "timeout", "refused"}
    rules = RuleInducer().induce(all_clusters() * 3).memories
    for i, memory in enumerate(first.memories):
        assert memory == (None if i in first.failed else rules[i])


# --- through consolidation --------------------------------------------------------------------------------------


def test_consolidation_states_with_the_rules_what_the_model_failed(
    server: FakeOpenAIServer, services: Services, clock: ManualClock
) -> None:
    settings = services.settings
    service = ConsolidationService(
        services.store, services.embedder, clock, settings.consolidate, settings.write, inducer=inducer_for(server)
    )
    clusters: list[EvidenceCluster] = [geocoding_lesson(), chinese_replies(), nurse_fact()]
    server.script(recorded("openai_geocoding_fenced"), refusal(), slow(TIMEOUT * 3))

    induction, fallback = service.induce(clusters)

    rules = RuleInducer().induce(clusters).memories
    assert induction.memories[0] is not None and induction.memories[0].statement.startswith("geocoding API: batches")
    assert induction.memories[1:] == rules[1:]
    assert fallback == "2 of 3 clusters: refused; timeout"
    assert service.inducer.name == "openai:qwen2.5:7b-instruct"


def test_a_statement_its_episodes_do_not_support_is_stated_offline_and_the_run_says_why(
    server: FakeOpenAIServer, services: Services, clock: ManualClock
) -> None:
    """A small model inverts negations ("stop using emoji" -> "prefers emoji"): the checker rejects its
    statement, the offline path states the cluster, and the fallback reason names the checker."""
    settings = services.settings
    service = ConsolidationService(
        services.store, services.embedder, clock, settings.consolidate, settings.write, inducer=inducer_for(server)
    )
    cluster = chinese_replies()
    inverted = {
        "kind": "preference",
        "statement": "The user prefers replies in English",
        "dimension": "language",
        "facets": {"replies": "English"},
        "provenance": cluster.ids,
    }
    server.script(answer(inverted))

    induction, fallback = service.induce([cluster])

    assert induction.memories == RuleInducer().induce([cluster]).memories
    assert fallback is not None and "rejected by the checker" in fallback


def test_extraction_at_write_asks_the_model_for_one_turn_and_keeps_what_it_states(
    server: FakeOpenAIServer, services: Services, clock: ManualClock
) -> None:
    settings = services.settings
    service = ConsolidationService(
        services.store, services.embedder, clock, settings.consolidate, settings.write, inducer=inducer_for(server)
    )
    turn = services.writer.write("acme:u-3", MemoryWrite(content="Our twins start kindergarten in September, so "
                                                         "mornings are chaos for me.")).id  # fmt: skip
    memory = {"kind": "fact", "statement": "The user has twins who start kindergarten in September",
              "dimension": "family", "facets": {"children": "twins"}, "provenance": [turn]}  # fmt: skip
    server.script(answer(memory))

    result = service.extract("acme:u-3", [turn])

    [prompt] = server.prompts()
    assert prompt.startswith(ONE_TURN_ASK) and '"one_turn": true' in prompt and turn in prompt
    [fact] = [m for m in services.store.list_memories("acme:u-3", MemoryFilter(layers=("semantic",)))
              if isinstance(m, Fact)]  # fmt: skip
    assert (fact.content, fact.provenance, fact.induced_by) == (memory["statement"], [turn], result.inducer)
    assert result.tokens > 0 and result.fallback is None
