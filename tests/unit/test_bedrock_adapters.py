"""Bedrock adapters through botocore's Stubber: the exact requests they send and how they read the answers."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from rearview.adapters.bedrock_embedder import BedrockEmbedder
from rearview.adapters.bedrock_summarizer import SYSTEM_PROMPT, BedrockSummarizer
from rearview.domain.limits import MAX_FACT_CHARS
from rearview.errors import ConfigurationError

pytestmark = pytest.mark.unit

MODEL = "amazon.titan-embed-text-v2:0"
CHAT_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.fixture
def runtime() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _titan_answer(vector: list[float]) -> dict[str, Any]:
    data = json.dumps({"embedding": vector, "inputTextTokenCount": 3}).encode()
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def _titan_request(text: str, dim: int) -> dict[str, Any]:
    return {
        "modelId": MODEL,
        "body": json.dumps({"inputText": text, "dimensions": dim, "normalize": True}),
        "contentType": "application/json",
        "accept": "application/json",
    }


# --- embedder -------------------------------------------------------------------------------------------------


def test_embedder_sends_one_titan_request_per_text_and_returns_unit_rows(runtime: tuple[Any, Stubber]) -> None:
    client, stubber = runtime
    first = [3.0, 4.0] + [0.0] * 254
    second = [0.0] * 255 + [2.0]
    stubber.add_response("invoke_model", _titan_answer(first), _titan_request("went hiking", 256))
    stubber.add_response("invoke_model", _titan_answer(second), _titan_request("我喜欢猫", 256))
    embedder = BedrockEmbedder(MODEL, 256, client=client)

    vectors = embedder.embed(["went hiking", "我喜欢猫"])

    assert vectors.shape == (2, 256)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[0, :2], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), [1.0, 1.0], rtol=1e-6)
    assert vectors[1, 255] == pytest.approx(1.0)


def test_embedder_name_records_model_and_dimension() -> None:
    embedder = BedrockEmbedder(MODEL, 1024, client=object())

    assert (embedder.name, embedder.dim) == (f"bedrock:{MODEL}:1024", 1024)
    assert 0.0 < embedder.relevance_floor < 1.0


def test_embedder_refuses_a_dimension_titan_v2_does_not_make() -> None:
    with pytest.raises(ConfigurationError, match="256, 512, 1024"):
        BedrockEmbedder(MODEL, 300, client=object())


def test_embedder_refuses_an_answer_of_the_wrong_dimension(runtime: tuple[Any, Stubber]) -> None:
    client, stubber = runtime
    stubber.add_response("invoke_model", _titan_answer([1.0] * 512), _titan_request("x", 256))

    with pytest.raises(ConfigurationError, match="returned 512 dimensions, expected 256"):
        BedrockEmbedder(MODEL, 256, client=client).embed(["x"])


def test_embedder_lets_a_bedrock_error_through(runtime: tuple[Any, Stubber]) -> None:
    client, stubber = runtime
    stubber.add_client_error("invoke_model", "ThrottlingException", http_status_code=429)

    with pytest.raises(client.exceptions.ThrottlingException):
        BedrockEmbedder(MODEL, 256, client=client).embed(["x"])


def test_embedder_of_no_texts_makes_no_call(runtime: tuple[Any, Stubber]) -> None:
    client, _ = runtime

    assert BedrockEmbedder(MODEL, 256, client=client).embed([]).shape == (0, 256)


# --- summariser -----------------------------------------------------------------------------------------------


def _converse_answer(text: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 50, "outputTokens": 12, "totalTokens": 62},
        "metrics": {"latencyMs": 300},
    }


def _converse_request(statements: str) -> dict[str, Any]:
    return {
        "modelId": CHAT_MODEL,
        "system": [{"text": SYSTEM_PROMPT}],
        "messages": [{"role": "user", "content": [{"text": statements}]}],
        "inferenceConfig": {"maxTokens": 300, "temperature": 0.0},
    }


def test_summarizer_sends_the_fenced_statements_through_converse(runtime: tuple[Any, Stubber]) -> None:
    client, stubber = runtime
    stubber.add_response(
        "converse",
        _converse_answer("  The user hikes in the Alps most weekends.\n"),
        _converse_request(
            "<statements>\n1. Hiked the Eiger trail\n2. Another weekend hike near Zermatt\n</statements>"
        ),
    )

    fact = BedrockSummarizer(CHAT_MODEL, client=client).summarize(
        ["Hiked the Eiger trail ", "Another weekend hike near Zermatt"]
    )

    assert fact == "The user hikes in the Alps most weekends."


def test_summarizer_trims_a_long_answer_to_a_fact(runtime: tuple[Any, Stubber]) -> None:
    client, stubber = runtime
    stubber.add_response("converse", _converse_answer("word " * 200))

    fact = BedrockSummarizer(CHAT_MODEL, client=client).summarize(["a", "b"])

    assert len(fact) <= MAX_FACT_CHARS
    assert fact.endswith("…")
    assert fact.startswith("word word")


@pytest.mark.parametrize("failure", ["client_error", "empty_answer"])
def test_summarizer_falls_back_to_the_extractive_summary_and_logs_it(
    runtime: tuple[Any, Stubber], caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    client, stubber = runtime
    if failure == "client_error":
        stubber.add_client_error("converse", "AccessDeniedException", http_status_code=403)
    else:
        stubber.add_response("converse", _converse_answer("   "))

    with caplog.at_level(logging.WARNING, logger="rearview.adapters.bedrock_summarizer"):
        fact = BedrockSummarizer(CHAT_MODEL, client=client).summarize(["Likes green tea", "Drinks green tea daily"])

    assert fact == "Likes green tea"
    assert [r.getMessage() for r in caplog.records] == ["bedrock summariser failed, using the extractive summary"]
    expected = "AccessDeniedException" if failure == "client_error" else "empty answer"
    assert expected in caplog.records[0].error  # type: ignore[attr-defined]


def test_summarizer_caps_the_statements_sent(runtime: tuple[Any, Stubber]) -> None:
    client, stubber = runtime
    statements = [f"statement {n} " + "x" * 600 for n in range(30)]
    expected = "<statements>\n" + "\n".join(f"{n + 1}. {statements[n][:500]}" for n in range(20)) + "\n</statements>"
    stubber.add_response("converse", _converse_answer("A fact."), _converse_request(expected))

    assert BedrockSummarizer(CHAT_MODEL, client=client).summarize(statements) == "A fact."
