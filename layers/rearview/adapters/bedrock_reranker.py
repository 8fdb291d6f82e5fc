"""BedrockReranker: the Reranker port on Amazon Bedrock's Rerank API (bedrock-agent-runtime `Rerank`).

A rerank model (Amazon Rerank 1.0, Cohere Rerank 3.5) reads the query and each document together, which the
embedder and BM25 cannot. One call takes up to 1,000 inline text documents; longer lists are sent in batches and
the answers mapped back by their `index`. The API may page its results (`nextToken`); every page is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rearview.errors import ConfigurationError

# The Rerank API's limits: documents per call, characters per document and per query.
MAX_DOCUMENTS_PER_CALL = 1000
MAX_TEXT_CHARS = 32_000


def rerank_model_arn(model: str, region: str, partition: str = "aws") -> str:
    """The ARN Rerank needs: a foundation model id (`amazon.rerank-v1:0`) becomes its ARN; an ARN stays."""
    if model.startswith("arn:"):
        return model
    if not region:
        raise ConfigurationError("aws.region: needed to name the rerank model's ARN", field="aws.region")
    return f"arn:{partition}:bedrock:{region}::foundation-model/{model}"


def rerank_request(query: str, documents: Sequence[str], model_arn: str) -> dict[str, Any]:
    """The Rerank parameters for one batch: every document scored (numberOfResults = the batch's size)."""
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query[:MAX_TEXT_CHARS]}}],
        "sources": [
            {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": doc[:MAX_TEXT_CHARS]}}}
            for doc in documents
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": len(documents),
                "modelConfiguration": {"modelArn": model_arn},
            },
        },
    }


class BedrockReranker:
    """A Bedrock rerank model through a bedrock-agent-runtime client (`aws_clients.boto3_client` gives it the
    settings' region, timeouts and retries); `name` says which model, for recall's explain trace."""

    def __init__(self, model: str, *, client: Any) -> None:
        self.model = model
        self.name = f"bedrock:{model}"
        self.client = client
        meta = client.meta
        # Named once, at start-up: a model id without a region to place it in fails here, not in a recall.
        self.model_arn = rerank_model_arn(model, meta.region_name, getattr(meta, "partition", "aws"))

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in order. An empty document (which the API refuses) scores 0."""
        scores = [0.0] * len(documents)
        if not query.strip():
            return scores
        sendable = [i for i, doc in enumerate(documents) if doc.strip()]
        for start in range(0, len(sendable), MAX_DOCUMENTS_PER_CALL):
            batch = sendable[start : start + MAX_DOCUMENTS_PER_CALL]
            request = rerank_request(query, [documents[i] for i in batch], self.model_arn)
            token: str | None = None
            while True:
                response = self.client.rerank(**request, **({"nextToken": token} if token else {}))
                for result in response.get("results", []):
                    scores[batch[int(result["index"])]] = float(result["relevanceScore"])
                token = response.get("nextToken")
                if not token:
                    break
        return scores
