"""OpenSearchIndex on a real OpenSearch cluster: what only a real engine can tell, beyond the contract suite (whose
`opensearch` backend runs every store, index and hindsight contract test on the same cluster).

The cluster is the session's `opensearch_cluster`: the one OPENSEARCH_URL names (OPENSEARCH_SERVICE=es|aoss signs
with SigV4 and the default AWS credentials, AWS_REGION; OPENSEARCH_ENGINE=faiss|lucene, faiss by default), else a
node assembled from Maven Central and started once for the session (`support.opensearch_node`, Lucene engine).
Without either these tests skip, saying why. Each test works in its own index, deleted afterwards.
"""

from __future__ import annotations

import math
import threading
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.error import HTTPError

import numpy as np
import pytest

from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex, build_opensearch_client
from rearview.adapters.opensearch.documents import index_mapping
from rearview.domain.memory import Episode
from rearview.domain.search import MemoryFilter
from support.opensearch_node import OpenSearchCluster

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def new_index(opensearch_cluster: OpenSearchCluster) -> Iterator[Callable[..., OpenSearchIndex]]:
    """Makes an OpenSearchIndex of a new name on the cluster (`endpoint`: reached there instead); each index made
    is deleted after the test."""
    cluster = opensearch_cluster
    names: list[str] = []

    def make(dim: int, endpoint: str | None = None) -> OpenSearchIndex:
        url = endpoint or cluster.url
        names.append(f"rearview-real-{uuid.uuid4().hex[:12]}")
        return OpenSearchIndex(
            OpenSearchConnection(url, service="es"),
            names[-1],
            dim,
            client=build_opensearch_client(url, service=cluster.signed_as, region=cluster.region),
            engine=cluster.engine,
        )

    yield make
    client = build_opensearch_client(cluster.url, service=cluster.signed_as, region=cluster.region)
    for name in names:
        client.indices.delete(index=name, ignore_unavailable=True)


def _episode(memory_id: str, content: str = "a walk") -> Episode:
    return Episode(id=memory_id, namespace="acme", content=content, occurred_at=T0, created_at=T0)


def test_the_engine_scores_are_the_cosines_the_adapter_reads(new_index: Callable[..., OpenSearchIndex]) -> None:
    # Unit vectors at 0, 60, 90, 120 and 180 degrees from the query: the engine scores an inner product ip as
    # ip + 1 or 1 / (1 - ip); `cosine_from_knn_score` must undo that on either side of 0.
    index = new_index(dim=2)
    index.ensure_index()
    angles = {"e0": 0, "e60": 60, "e90": 90, "e120": 120, "e180": 180}
    index.upsert(
        [
            (_episode(name), np.array([math.cos(math.radians(a)), math.sin(math.radians(a))]))
            for name, a in angles.items()
        ]
    )
    index.refresh()

    found = index.vector_search("acme", np.array([3.0, 0.0]), MemoryFilter(), 5)

    assert [(c.id, round(c.score, 5)) for c in found] == [
        ("e0", 1.0),
        ("e60", 0.5),
        ("e90", 0.0),
        ("e120", -0.5),
        ("e180", -1.0),
    ]


def test_ensure_index_adds_the_fields_an_older_index_lacks(
    opensearch_cluster: OpenSearchCluster, new_index: Callable[..., OpenSearchIndex]
) -> None:
    index = new_index(dim=4)
    older = index_mapping(4, opensearch_cluster.engine)
    for field in ("entities", "kind", "outcome_status"):
        del older["mappings"]["properties"][field]
    index.client.indices.create(index=index.index_name, body=older)

    assert index.ensure_index() is False

    (mapping,) = index.client.indices.get_mapping(index=index.index_name).values()
    assert set(mapping["mappings"]["properties"]) == set(index_mapping(4)["mappings"]["properties"])


class _PathProxy:
    """A proxy that serves a cluster under a URL path, as LocalStack's `path` endpoint strategy does (404
    elsewhere): the request goes on to the cluster with the prefix taken off."""

    def __init__(self, upstream: str, prefix: str) -> None:
        self.prefix = prefix
        self.paths: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                proxy.paths.append(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, headers, answer = 404, {"Content-Type": "application/json"}, b'{"error":"no such path"}'
                if self.path.startswith(proxy.prefix + "/"):
                    status, headers, answer = _send(upstream + self.path[len(proxy.prefix) :], self.command, body)
                self.send_response(status)
                for name in ("Content-Type",):
                    if name in headers:
                        self.send_header(name, headers[name])
                self.send_header("Content-Length", "0" if self.command == "HEAD" else str(len(answer)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(answer)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.prefix}"

    def __enter__(self) -> _PathProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _send(url: str, method: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body or None, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_an_endpoint_under_a_path_reaches_the_cluster_there(
    opensearch_cluster: OpenSearchCluster, new_index: Callable[..., OpenSearchIndex]
) -> None:
    if opensearch_cluster.signed_as is not None:
        pytest.skip("a signed request cannot go through this proxy (the signature names the cluster's host)")
    with _PathProxy(opensearch_cluster.url, "/opensearch/us-east-1/rearview") as proxy:
        index = new_index(dim=2, endpoint=proxy.url)

        assert index.ensure_index() is True
        index.upsert([(_episode("e1", "a long hike in the Alps"), np.array([1.0, 0.0])), (_episode("e2"), None)])
        index.refresh()
        keyword, vector = index.hybrid_search("acme", "hiking", np.array([1.0, 0.0]), MemoryFilter(), 5)
        deleted = index.delete_namespace("acme")

        assert ([c.id for c in keyword], [c.id for c in vector], deleted) == (["e1"], ["e1"], 2)
        assert proxy.paths and all(path.startswith(proxy.prefix + "/") for path in proxy.paths), proxy.paths
