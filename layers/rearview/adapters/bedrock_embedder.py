"""BedrockEmbedder: the Embedder port on Amazon Bedrock's Titan Text Embeddings v2.

One `InvokeModel` call per text: Titan v2 embeds one `inputText` per request (it has no batch form; Bedrock's
batch inference is an asynchronous S3 job, not a call). The model returns the vector already L2-normalised
(`"normalize": true`); it is normalised again here so the port's promise holds whatever the model does.
Timeouts and retries come from the botocore Config built by `aws_clients.boto3_client`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from rearview.domain.embedding import REFERENCE_ANCHORS, CosineScale
from rearview.errors import ConfigurationError, InvalidInput
from rearview.settings import AwsSettings

# Titan Text Embeddings v2 accepts these output sizes.
TITAN_V2_DIMENSIONS = frozenset({256, 512, 1024})
# Titan v2 takes at most 50,000 characters (and 8,192 tokens) per text; memories and queries stay far below.
MAX_INPUT_CHARS = 50_000


def titan_request_body(text: str, dim: int) -> str:
    """The InvokeModel body for one text: the JSON Titan v2 expects."""
    return json.dumps({"inputText": text, "dimensions": dim, "normalize": True})


class BedrockEmbedder:
    """Titan Text Embeddings v2 through bedrock-runtime; `name` records model and dimension with the data."""

    # NOT MEASURED (Bedrock cannot be reached here): the reference scale and MiniLM's margin until
    # bench/calibrate.py runs with Titan; RecallTuning.min_relevance overrides the margin.
    scale = CosineScale(*REFERENCE_ANCHORS, relevance_margin=0.127, topic_floor=0.3)

    def __init__(
        self,
        model_id: str = "amazon.titan-embed-text-v2:0",
        dim: int = 512,
        *,
        client: Any = None,
        settings: AwsSettings | None = None,
    ) -> None:
        if model_id.startswith("amazon.titan-embed-text-v2") and dim not in TITAN_V2_DIMENSIONS:
            raise ConfigurationError(
                f"bedrock embedding dimension must be one of {sorted(TITAN_V2_DIMENSIONS)} for {model_id}, got {dim}",
                field="bedrock_embedding_dim",
            )
        self.model_id = model_id
        self.dim = int(dim)
        self.name = f"bedrock:{model_id}:{dim}"
        self._settings = settings
        self._client = client

    @property
    def client(self) -> Any:
        """The bedrock-runtime client, built on first use with the settings' region, timeouts and retries."""
        if self._client is None:
            from rearview.adapters.aws_clients import boto3_client

            self._client = boto3_client("bedrock-runtime", self._settings)
        return self._client

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape (len(texts), dim), float32, each row L2-normalised; one Bedrock call per text."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single string")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._embed_one(text)
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Titan v2 embeds a query as it embeds a memory."""
        return self.embed(texts)

    def _embed_one(self, text: str) -> np.ndarray:
        if not text.strip():
            raise InvalidInput("text to embed: must not be empty", field="content")
        response = self.client.invoke_model(
            modelId=self.model_id,
            body=titan_request_body(text[:MAX_INPUT_CHARS], self.dim),
            contentType="application/json",
            accept="application/json",
        )
        payload = json.loads(response["body"].read())
        vector = np.asarray(payload["embedding"], dtype=np.float64)
        if vector.shape != (self.dim,):
            raise ConfigurationError(
                f"bedrock model {self.model_id} returned {vector.shape[0]} dimensions, expected {self.dim}"
            )
        norm = float(np.linalg.norm(vector))
        return (vector / norm if norm > 0 else vector).astype(np.float32)
