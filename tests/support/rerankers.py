"""Rerankers for tests: an in-process fake, and a TEST DOUBLE of Bedrock's Rerank endpoint (real HTTP on 127.0.0.1)
for the real BedrockReranker to talk to. Both score a document by the share of the query's words it contains, so
the contract suite (tests/contract/test_reranker_contract.py) holds both to the same promises. Neither is a rerank
model: they only let the recall stage and the adapter be tested where no model runs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rearview.text_analysis import query_terms


def word_overlap(query: str, document: str) -> float:
    """The share of the query's terms (stop words out, stemmed) that the document contains."""
    wanted = set(query_terms(query))
    if not wanted:
        return 0.0
    return len(wanted & set(query_terms(document))) / len(wanted)


class WordOverlapReranker:
    """A FAKE Reranker: word overlap, and a record of every call (to check what recall sends)."""

    def __init__(self, *, fail_with: Exception | None = None) -> None:
        self.name = "fake:word-overlap"
        self.calls: list[tuple[str, list[str]]] = []
        self.fail_with = fail_with

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        self.calls.append((query, list(documents)))
        if self.fail_with is not None:
            raise self.fail_with
        return [word_overlap(query, doc) for doc in documents]


class BedrockRerankDouble:
    """A TEST DOUBLE of bedrock-agent-runtime's `POST /rerank`, checking what the real API checks that the adapter
    could get wrong: one TEXT query, 1..1,000 INLINE TEXT sources of 1..32,000 characters, a model ARN, and
    numberOfResults within 1..len(sources). Answers the best `numberOfResults` by word overlap, `page_size` per
    page with a `nextToken`. `set_down(True)` answers 503. `bodies` keeps every request body."""

    def __init__(self, page_size: int = 1000) -> None:
        self.page_size = page_size
        self.bodies: list[dict[str, Any]] = []
        self._down = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def set_down(self, down: bool) -> None:
        self._down = down

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        queries = body.get("queries") or []
        sources = body.get("sources") or []
        config = (body.get("rerankingConfiguration") or {}).get("bedrockRerankingConfiguration") or {}
        arn = (config.get("modelConfiguration") or {}).get("modelArn", "")
        wanted = config.get("numberOfResults", len(sources))
        if len(queries) != 1 or queries[0].get("type") != "TEXT":
            return 400, {"message": "exactly one TEXT query"}
        if not 1 <= len(sources) <= 1000:
            return 400, {"message": f"sources: 1..1000, got {len(sources)}"}
        if not arn.startswith("arn:") or not 1 <= wanted <= len(sources):
            return 400, {"message": "a model ARN and numberOfResults within 1..len(sources)"}
        texts = []
        for source in sources:
            doc = source.get("inlineDocumentSource") or {}
            text = (doc.get("textDocument") or {}).get("text", "")
            if source.get("type") != "INLINE" or doc.get("type") != "TEXT" or not 1 <= len(text) <= 32_000:
                return 400, {"message": "sources: INLINE TEXT documents of 1..32000 characters"}
            texts.append(text)
        query = queries[0]["textQuery"]["text"]
        ranked = sorted(range(len(texts)), key=lambda i: (-word_overlap(query, texts[i]), i))[:wanted]
        start = int(body.get("nextToken") or 0)
        page = ranked[start : start + self.page_size]
        answer: dict[str, Any] = {
            "results": [{"index": i, "relevanceScore": word_overlap(query, texts[i])} for i in page]
        }
        if start + self.page_size < len(ranked):
            answer["nextToken"] = str(start + self.page_size)
        return 200, answer

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                double.bodies.append(body)
                if double._down:
                    status, answer = 503, {"message": "service unavailable"}
                elif self.path != "/rerank":
                    status, answer = 404, {"message": f"no route {self.path}"}
                else:
                    status, answer = double.answer(body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if status >= 400:
                    self.send_header(
                        "x-amzn-ErrorType", "ValidationException" if status == 400 else "ServiceUnavailable"
                    )
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the http.server API
                pass

        return Handler


@contextmanager
def running_rerank_double(page_size: int = 1000) -> Iterator[BedrockRerankDouble]:
    double = BedrockRerankDouble(page_size)
    double.start()
    try:
        yield double
    finally:
        double.stop()
