"""The Reranker contract: what recall relies on, held against every reranker: the real BedrockReranker (over real
HTTP to the Bedrock Rerank double), the real OnnxCrossEncoderReranker (on a stand-in model file, since no real
cross-encoder can be downloaded here) and the in-process fake that recall's unit tests use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from rearview.adapters.bedrock_reranker import BedrockReranker, rerank_model_arn
from rearview.adapters.onnx_cross_encoder_reranker import OnnxCrossEncoderReranker
from rearview.errors import ConfigurationError
from rearview.ports import Reranker
from support.cross_encoder_model import write_word_count_cross_encoder
from support.rerankers import BedrockRerankDouble, WordOverlapReranker, running_rerank_double

# The words the stand-in cross-encoder counts: those of the contract's queries.
QUERY_WORDS = ("adoption", "agency", "caroline", "contact", "contacted", "pottery", "class", "hiking", "hike", "long")

pytestmark = pytest.mark.contract


def bedrock_client(url: str) -> Any:
    return boto3.client(
        "bedrock-agent-runtime",
        region_name="us-west-2",
        endpoint_url=url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


@pytest.fixture(scope="module")
def double() -> Iterator[BedrockRerankDouble]:
    with running_rerank_double(page_size=300) as running:
        yield running


@pytest.fixture(scope="module")
def cross_encoder_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_word_count_cross_encoder(tmp_path_factory.mktemp("model") / "cross-encoder.onnx", QUERY_WORDS)


@pytest.fixture(params=["fake", "bedrock", "onnx"])
def reranker(request: pytest.FixtureRequest, double: BedrockRerankDouble, cross_encoder_file: Path) -> Reranker:
    if request.param == "fake":
        return WordOverlapReranker()
    if request.param == "onnx":
        return OnnxCrossEncoderReranker(cross_encoder_file)
    return BedrockReranker("amazon.rerank-v1:0", client=bedrock_client(double.url))


def test_one_score_per_document_in_order_and_the_answer_scores_highest(reranker: Reranker) -> None:
    docs = ["we watched a film", "Caroline contacted an adoption agency", "", "the agency called back"]

    scores = reranker.rerank("Which adoption agency did Caroline contact?", docs)

    assert len(scores) == len(docs) and all(isinstance(s, float) for s in scores)
    assert scores[1] == max(scores) and scores[1] > scores[3] > scores[0]
    assert scores[2] <= scores[3]  # a blank document is scored, never above one that shares a word


def test_no_documents_no_scores(reranker: Reranker) -> None:
    assert reranker.rerank("anything", []) == []


def test_more_documents_than_one_call_takes_are_all_scored_in_order(reranker: Reranker) -> None:
    docs = [f"note {i} about the weather" for i in range(1001)] + ["the pottery class was fun"]

    scores = reranker.rerank("pottery class", docs)

    assert len(scores) == 1002 and scores[-1] == max(scores) and scores[0] < scores[-1]


def test_the_same_call_gives_the_same_scores(reranker: Reranker) -> None:
    docs = ["hiking in the mountains", "a hike by the lake", "tax return"]
    assert reranker.rerank("where did we go hiking?", docs) == reranker.rerank("where did we go hiking?", docs)


def test_the_name_says_which_model(reranker: Reranker) -> None:
    assert reranker.name in ("fake:word-overlap", "bedrock:amazon.rerank-v1:0", "onnx:cross-encoder.onnx")


# --- what only the Bedrock adapter does -------------------------------------------------------------------------


@pytest.mark.slow  # some 200 round trips to the double
def test_bedrock_sends_each_batch_with_the_model_arn_and_reads_every_page(double: BedrockRerankDouble) -> None:
    reranker = BedrockReranker("amazon.rerank-v1:0", client=bedrock_client(double.url))
    double.bodies.clear()
    docs = [f"memory {i}" for i in range(1500)]

    reranker.rerank("memory 42", docs)

    first = [b for b in double.bodies if "nextToken" not in b]
    assert [len(b["sources"]) for b in first] == [1000, 500]
    assert first[0]["rerankingConfiguration"] == {
        "type": "BEDROCK_RERANKING_MODEL",
        "bedrockRerankingConfiguration": {
            "numberOfResults": 1000,
            "modelConfiguration": {"modelArn": "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"},
        },
    }
    assert first[0]["queries"] == [{"type": "TEXT", "textQuery": {"text": "memory 42"}}]
    assert first[0]["sources"][3] == {
        "type": "INLINE",
        "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": "memory 3"}},
    }
    # Pages of 300, the last of each batch short: every result of both batches was read.
    assert len(double.bodies) == -(-1000 // 300) + -(-500 // 300) == 6


def test_bedrock_leaves_blank_documents_out_and_cuts_long_ones(double: BedrockRerankDouble) -> None:
    reranker = BedrockReranker("amazon.rerank-v1:0", client=bedrock_client(double.url))
    double.bodies.clear()

    scores = reranker.rerank("long", ["  ", "long " * 10_000])

    assert scores[0] == 0.0 and scores[1] > 0.0
    (body,) = double.bodies
    assert (
        len(body["sources"]) == 1 and len(body["sources"][0]["inlineDocumentSource"]["textDocument"]["text"]) == 32_000
    )


def test_bedrock_failure_raises_for_recall_to_fall_back(double: BedrockRerankDouble) -> None:
    reranker = BedrockReranker("amazon.rerank-v1:0", client=bedrock_client(double.url))
    double.set_down(True)
    try:
        with pytest.raises(Exception, match="ServiceUnavailable|503"):
            reranker.rerank("anything", ["a memory"])
    finally:
        double.set_down(False)


def test_model_arn_from_a_model_id_or_as_given() -> None:
    assert rerank_model_arn("cohere.rerank-v3-5:0", "eu-central-1") == (
        "arn:aws:bedrock:eu-central-1::foundation-model/cohere.rerank-v3-5:0"
    )
    arn = "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
    assert rerank_model_arn(arn, "") == arn
    with pytest.raises(ConfigurationError, match="aws.region"):
        rerank_model_arn("amazon.rerank-v1:0", "")


# --- what only the ONNX cross-encoder does ----------------------------------------------------------------------


def test_onnx_scores_the_document_segment_of_each_pair(cross_encoder_file: Path) -> None:
    # The stand-in counts listed words in the second segment only (token_type_ids 1): the query's own words,
    # in the first segment, add nothing, so each document's logit is its own count.
    reranker = OnnxCrossEncoderReranker(cross_encoder_file, batch_size=2)
    docs = ["pottery class", "a pottery class about pottery", "nothing", "class"]
    assert reranker.rerank("pottery class", docs) == [2.0, 3.0, 0.0, 1.0]


@pytest.mark.parametrize(("token_types", "two_class"), [(False, False), (True, True)])
def test_onnx_takes_models_without_token_types_or_with_a_two_class_head(
    tmp_path: Path, token_types: bool, two_class: bool
) -> None:
    path = write_word_count_cross_encoder(
        tmp_path / "m.onnx", ["pottery"], token_types=token_types, two_class=two_class
    )
    scores = OnnxCrossEncoderReranker(path).rerank("pottery", ["pottery pottery", "tea"])
    # Without token types the query's own word counts for every pair.
    assert scores == ([3.0, 1.0] if not token_types else [2.0, 0.0])


def test_onnx_cuts_the_document_not_the_query(cross_encoder_file: Path) -> None:
    reranker = OnnxCrossEncoderReranker(cross_encoder_file, max_tokens=8)
    (score,) = reranker.rerank("adoption agency", ["pottery " * 50])
    assert score == 3.0  # [CLS] adoption agency [SEP] + 3 document tokens + [SEP] = 8


def test_onnx_names_the_setting_when_the_model_file_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="rerank_model_path: no model file") as raised:
        OnnxCrossEncoderReranker(tmp_path / "absent.onnx").rerank("q", ["d"])
    assert raised.value.field == "rerank_model_path"
