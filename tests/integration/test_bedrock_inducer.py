"""The real BedrockInducer, through a real botocore bedrock-runtime client, over HTTP to the Converse double
(tests/support/bedrock_converse_double.py, which checks the request as the API would): the request it sends,
recorded Converse answers replayed, guardrails, errors and timeouts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from rearview.adapters.bedrock_inducer import BedrockInducer
from rearview.adapters.induction_prompt import SYSTEM_PROMPT
from rearview.service.hindsight.rule_inducer import RuleInducer
from support.bedrock_converse_double import BedrockConverseDouble
from support.induction_clusters import all_clusters, chinese_replies, geocoding_lesson, nurse_fact
from support.scripted_model import Step, answer, failing, filtered, invalid_json, not_json, recorded, slow

pytestmark = pytest.mark.integration

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
TIMEOUT = 0.5


@pytest.fixture
def double() -> Iterator[BedrockConverseDouble]:
    with BedrockConverseDouble() as running:
        yield running


def runtime_client(url: str, attempts: int = 1) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(
            connect_timeout=TIMEOUT,
            read_timeout=TIMEOUT,
            retries={"total_max_attempts": attempts, "mode": "standard"},
        ),
    )


def inducer_for(double: BedrockConverseDouble) -> BedrockInducer:
    return BedrockInducer(MODEL, client=runtime_client(double.url))


def test_the_converse_request_carries_the_model_prompt_and_inference_config(double: BedrockConverseDouble) -> None:
    inducer_for(double).induce([geocoding_lesson()])

    assert double.models() == [MODEL]
    (request,) = double.requests
    assert request.body["system"] == [{"text": SYSTEM_PROMPT}]
    (message,) = request.body["messages"]
    assert message["role"] == "user"
    text = message["content"][0]["text"]
    assert '"grouped_as": "lesson"' in text and '"outcome": "HTTP 413 Payload Too Large"' in text
    assert request.body["inferenceConfig"] == {"maxTokens": 400, "temperature": 0.0}
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256")


@pytest.mark.parametrize(
    ("name", "cluster", "statement", "tokens"),
    [
        (
            "bedrock_geocoding",
            geocoding_lesson,
            "geocoding API: requests of 100 or more addresses failed 3 times with HTTP 413 Payload Too Large; "
            "batches of 50 addresses worked",
            1507,
        ),
        ("bedrock_chinese_replies", chinese_replies, "用户希望回复使用中文", 1328),
    ],
)
def test_recorded_converse_answers_are_read_as_the_memory_they_state(
    double: BedrockConverseDouble, name: str, cluster: Any, statement: str, tokens: int
) -> None:
    double.script(recorded(name))

    induction = inducer_for(double).induce([cluster()])

    (memory,) = induction.memories
    assert induction.failed == {} and induction.tokens == tokens
    assert memory is not None and memory.statement == statement
    assert set(memory.provenance) == set(cluster().ids)


@pytest.mark.parametrize(
    ("steps", "failure", "requests"),
    [
        ([recorded("bedrock_guardrail")], "refused", 1),
        ([filtered()], "refused", 1),
        ([invalid_json(), invalid_json()], "invalid answer", 2),
        ([failing(429)], "throttled", 1),
        ([failing(503)], "unavailable", 1),
        ([failing(403)], "AccessDeniedException", 1),
        ([slow(TIMEOUT * 3)], "timeout", 1),
        # botocore reads a body that is not JSON as an empty answer, which is sent back once like any invalid one.
        ([not_json(), not_json()], "invalid answer", 2),
    ],
    ids=[
        "guardrail",
        "content filtered",
        "invalid twice",
        "throttled",
        "unavailable",
        "access denied",
        "timeout",
        "not JSON",
    ],
)
def test_what_bedrock_cannot_answer_fails_the_cluster_without_raising(
    double: BedrockConverseDouble, steps: list[Step], failure: str, requests: int
) -> None:
    double.script(*steps)

    induction = inducer_for(double).induce([nurse_fact()])

    assert induction.memories == [None] and induction.failed == {0: failure}
    assert len(double.requests) == requests


def test_a_throttled_request_fails_the_cluster_after_botocores_own_retries(double: BedrockConverseDouble) -> None:
    double.script(failing(429), failing(429))

    induction = BedrockInducer(MODEL, client=runtime_client(double.url, attempts=2)).induce([nurse_fact()])

    assert induction.failed == {0: "throttled"} and len(double.requests) == 2


def test_the_retry_is_a_conversation_the_api_accepts(double: BedrockConverseDouble) -> None:
    # An empty answer, then the rules' answer: the retry's assistant turn must not be blank, or Converse refuses it.
    double.script(Step(text=""), Step())

    induction = inducer_for(double).induce([nurse_fact()])

    assert induction.failed == {}
    assert induction.memories == RuleInducer().induce([nurse_fact()]).memories
    retry = double.requests[1].body["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert retry[1]["content"] == [{"text": "(no answer)"}]
    assert "the answer was empty" in retry[2]["content"][0]["text"]


def test_a_memory_outside_the_cluster_is_corrected_once(double: BedrockConverseDouble) -> None:
    outside = {"kind": "fact", "statement": "The user is a nurse", "provenance": ["job-1", "zh-1"]}
    double.script(answer(outside), answer({**outside, "provenance": ["job-1", "job-2"]}))

    induction = inducer_for(double).induce([nurse_fact()])

    assert induction.failed == {}
    memory = induction.memories[0]
    assert memory is not None and memory.provenance == ["job-1", "job-2"] and memory.dimension == "job"


def test_with_no_script_the_double_answers_what_the_rules_state(double: BedrockConverseDouble) -> None:
    clusters = all_clusters()

    induction = inducer_for(double).induce(clusters)

    assert induction.failed == {}
    assert induction.memories == RuleInducer().induce(clusters).memories
