"""Bedrock adapters through botocore's Stubber: the exact requests they send and how they read the answers."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from rearview.adapters.bedrock_embedder import BedrockEmbedder
from rearview.errors import ConfigurationError

pytestmark = pytest.mark.unit

MODEL = "amazon.titan-embed-text-v2:0"


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
    assert 0.0 < embedder.scale.relevance_margin < 1.0


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
