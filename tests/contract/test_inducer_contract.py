"""The Inducer contract: what consolidation relies on, held against every inducer: the RuleInducer, the real
OpenAICompatibleInducer (over HTTP to the fake server, answering well-formed memories) and the real BedrockInducer
(over HTTP to the Converse double). The doubles answer as the rules do (tests/support/scripted_model.py), so this
holds the adapters' plumbing to the promises, not a model's judgement."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.config import Config

from rearview.adapters.bedrock_inducer import BedrockInducer
from rearview.domain.hindsight import EvidenceCluster, Induction
from rearview.domain.limits import MAX_FACT_CHARS
from rearview.domain.memory import KINDS
from rearview.ports import Inducer
from rearview.service.hindsight.rule_inducer import RuleInducer
from rearview.settings import OpenAISettings
from support.bedrock_converse_double import BedrockConverseDouble
from support.fake_openai_server import FakeOpenAIServer
from support.induction_clusters import all_clusters, chinese_replies, geocoding_lesson, one_off

pytestmark = pytest.mark.contract


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


@pytest.fixture(scope="module")
def converse_double() -> Iterator[BedrockConverseDouble]:
    with BedrockConverseDouble() as running:
        yield running


@pytest.fixture(params=["rules", "openai", "bedrock"])
def inducer(
    request: pytest.FixtureRequest, openai_server: FakeOpenAIServer, converse_double: BedrockConverseDouble
) -> Inducer:
    if request.param == "openai":
        # Imported here: the openai SDK takes a second to import, which every test process would pay at collection.
        from rearview.adapters.openai_inducer import OpenAICompatibleInducer

        return OpenAICompatibleInducer(OpenAISettings(base_url=openai_server.url, model="fake"), max_retries=0)
    if request.param == "bedrock":
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=converse_double.url,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
        )
        return BedrockInducer("anthropic.claude-3-5-haiku-20241022-v1:0", client=client)
    return RuleInducer()


def test_one_result_per_cluster_in_order_within_the_cluster(inducer: Inducer) -> None:
    clusters = all_clusters()

    induction = inducer.induce(clusters)

    assert len(induction.memories) == len(clusters)
    assert induction.failed == {}
    for memory, cluster in zip(induction.memories, clusters, strict=True):
        if memory is None:
            continue
        assert memory.provenance and set(memory.provenance) <= set(cluster.ids)
        assert memory.kind in KINDS
        assert 0 < len(memory.statement) <= MAX_FACT_CHARS


def test_the_order_follows_the_clusters_given(inducer: Inducer) -> None:
    clusters: list[EvidenceCluster] = [chinese_replies(), geocoding_lesson(), chinese_replies()]

    memories = inducer.induce(clusters).memories

    assert [m.provenance[0] if m else None for m in memories] == ["zh-1", "geo-1", "zh-1"]


def test_a_cluster_that_supports_nothing_is_none_not_a_failure(inducer: Inducer) -> None:
    induction = inducer.induce([one_off()])

    assert induction.memories == [None] and induction.failed == {}


def test_an_empty_batch_is_an_empty_induction_and_asks_no_model(
    inducer: Inducer, openai_server: FakeOpenAIServer, converse_double: BedrockConverseDouble
) -> None:
    before = len(openai_server.requests) + len(converse_double.requests)

    assert inducer.induce([]) == Induction(memories=[])
    assert len(openai_server.requests) + len(converse_double.requests) == before


def test_the_name_says_which_inducer(inducer: Inducer) -> None:
    assert inducer.name in ("rules", "openai:fake", "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0")
