"""The SearchIndex contract against a real OpenSearch cluster. Opt-in: skipped unless OPENSEARCH_URL is set.

OPENSEARCH_URL=http://localhost:9200 (a local cluster, unsigned; user:password@ in the URL for basic auth), or an
https endpoint of a domain / Serverless collection with OPENSEARCH_SERVICE=es|aoss (SigV4 with the default AWS
credentials and AWS_REGION). Each run works in its own index, `rearview-contract-<random>`, deleted afterwards.
The store is SQLite on a temporary directory; writes reach the index through the contract suite's
IndexSyncedStore, followed by a refresh (on a domain; Serverless makes writes searchable on its own schedule,
so expect those runs to need the collection's refresh lag).
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The contract suite's tests and helpers, run here against the real cluster.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "contract"))

from test_search_index_contract import *  # noqa: E402,F403

from rearview.adapters.hashing_embedder import HashingEmbedder  # noqa: E402
from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex, build_opensearch_client  # noqa: E402
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore  # noqa: E402
from rearview.clock import ManualClock  # noqa: E402
from rearview.domain.memory import Episode, Fact
from support.contract_backends import T0, Backend, IndexSyncedStore, make_episode, make_fact  # noqa: E402

# After the star import, which brings the contract module's own pytestmark.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not os.environ.get("OPENSEARCH_URL"), reason="set OPENSEARCH_URL to run against a cluster"),
]


def _index(dim: int, name: str) -> OpenSearchIndex:
    url = os.environ["OPENSEARCH_URL"]
    service = os.environ.get("OPENSEARCH_SERVICE") or None
    client = build_opensearch_client(url, service=service, region=os.environ.get("AWS_REGION"))  # type: ignore[arg-type]
    connection = OpenSearchConnection(url, service=service or "es")  # type: ignore[arg-type]
    return OpenSearchIndex(connection, name, dim, client=client)


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    """The contract suite's `backend`, with the real cluster as the index."""
    embedder = HashingEmbedder(dim=512)
    clock = ManualClock(T0)
    name = f"rearview-contract-{uuid.uuid4().hex[:12]}"
    index = _index(embedder.dim, name)
    index.ensure_index()
    databases: list[SqliteDatabase] = []

    def open_backend(with_embedder: object | None) -> Backend:
        db = SqliteDatabase(tmp_path / "rearview.db", embedder_name=embedder.name, dim=embedder.dim)
        databases.append(db)

        def reopen(_: object | None) -> Backend:
            db.close()
            return open_backend(None)

        return Backend(
            name="opensearch-real",
            store=IndexSyncedStore(SqliteMemoryStore(db, clock=clock), index),
            index=index,
            embedder=embedder,
            clock=clock,
            reopen=reopen,
            close=db.close,
        )

    yield open_backend(None)
    for db in databases:
        db.close()
    index.delete_index()


@pytest.fixture
def episode() -> Callable[..., Episode]:
    return make_episode


@pytest.fixture
def fact() -> Callable[..., Fact]:
    return make_fact
