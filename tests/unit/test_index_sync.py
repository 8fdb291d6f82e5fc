"""Index sync: stream records -> IndexChanges -> the index, and the index_sync function's partial batch responses."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rearview.adapters.dynamodb import change_from_record, is_ttl_expiry
from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.opensearch import OpenSearchConnection, OpenSearchIndex, build_opensearch_client
from rearview.api.lambda_runtime import FunctionRuntime
from rearview.api.stream_sync import index_sync_handler
from rearview.bootstrap import build
from rearview.domain.changes import IndexChange
from rearview.domain.memory import Episode, Fact, Memory, StoredLayer
from rearview.domain.search import MemoryFilter
from rearview.service.index_sync import IndexSyncService
from rearview.settings import Settings
from support.aws_stack import FakeLambdaContext
from support.events import load_event
from support.opensearch_double import OpenSearchDouble

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
EPISODE_ID = "01JNQ3Z6V8S0K7D2M4XH5T9C1A"
FACT_ID = "01JNQ40000FACT00000000000A"
NAMESPACE = "acme:u-42"
DIM = 8  # the sample events' vectors


class RecordingIndex:
    """An IndexMaintenance that records what it is asked to do."""

    def __init__(self) -> None:
        self.upserts: list[list[tuple[str, int, bool]]] = []
        self.deletes: list[tuple[str, list[str], StoredLayer | None]] = []
        self.calls: list[str] = []

    def ensure_index(self) -> bool:
        self.calls.append("ensure_index")
        return False

    def upsert(self, docs: Sequence[tuple[Memory, np.ndarray | None]]) -> int:
        self.calls.append("upsert")
        self.upserts.append([(m.id, m.version, v is not None) for m, v in docs])
        return len(docs)

    def delete(self, namespace: str, ids: Sequence[str], layer: StoredLayer | None = None) -> None:
        self.calls.append("delete")
        self.deletes.append((namespace, list(ids), layer))

    def delete_namespace(self, namespace: str) -> int:
        self.calls.append("delete_namespace")
        return 0


def _episode(memory_id: str = "e1", **fields: Any) -> Episode:
    return Episode(id=memory_id, namespace="acme", content="hiked", occurred_at=T0, created_at=T0, **fields)


def _records(name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = load_event(name, kind="dynamodb")["Records"]
    return records


# --- the service ------------------------------------------------------------------------------------------------


def test_the_last_change_of_each_memory_wins_and_the_batch_is_one_upsert_and_grouped_deletes() -> None:
    index = RecordingIndex()
    v = np.ones(4)
    changes = [
        IndexChange("acme", "episodic", "e1", _episode(), v),
        IndexChange("acme", "episodic", "e2", _episode("e2"), v),
        IndexChange("acme", "episodic", "e1", _episode(version=2), v),
        IndexChange("acme", "episodic", "e2"),
        IndexChange("acme", "semantic", "f9"),
        IndexChange("acme", "episodic", "e3", expired=True),
    ]

    report = IndexSyncService(index).apply(changes)

    assert index.upserts == [[("e1", 2, True)]]
    assert index.deletes == [("acme", ["e2", "e3"], "episodic"), ("acme", ["f9"], "semantic")]
    assert (report.upserted, report.deleted, report.expired, report.superseded) == (1, 3, 1, 2)


def test_an_update_of_access_counters_only_is_not_sent() -> None:
    index = RecordingIndex()
    before = _episode()
    after = before.model_copy(update={"access_count": 3, "last_accessed_at": T0})
    edited = before.model_copy(update={"tags": ["x"], "version": 2})
    v = np.ones(4)

    report = IndexSyncService(index).apply(
        [
            IndexChange("acme", "episodic", "e1", after, v, previous=before, previous_vector=v.copy()),
            IndexChange("acme", "episodic", "e2", edited, v, previous=before, previous_vector=v),
            IndexChange("acme", "episodic", "e3", after, v, previous=before, previous_vector=np.zeros(4)),
        ]
    )

    assert index.upserts == [[("e1", 2, True), ("e1", 1, True)]]
    assert report.unchanged == 1


def test_an_insert_then_an_access_update_in_one_batch_is_still_indexed() -> None:
    index = RecordingIndex()
    inserted = _episode()
    accessed = inserted.model_copy(update={"access_count": 1, "last_accessed_at": T0})
    v = np.ones(4)

    IndexSyncService(index).apply(
        [
            IndexChange("acme", "episodic", "e1", inserted, v),
            IndexChange("acme", "episodic", "e1", accessed, v, previous=inserted, previous_vector=v),
        ]
    )

    assert index.upserts == [[("e1", 1, True)]]


def test_an_empty_batch_touches_nothing() -> None:
    index = RecordingIndex()

    report = IndexSyncService(index).apply([])

    assert (index.upserts, index.deletes, report.upserted, index.calls) == ([], [], 0, [])


def test_the_index_is_ensured_once_before_the_first_write() -> None:
    index = RecordingIndex()
    sync = IndexSyncService(index)
    v = np.ones(4)

    sync.apply([IndexChange("acme", "episodic", "e1", _episode(), v)])
    sync.apply([IndexChange("acme", "episodic", "e1")])

    assert index.calls == ["ensure_index", "upsert", "delete"]


# --- decoding stream records (the sample events) ----------------------------------------------------------------


def test_an_insert_decodes_to_the_memory_and_its_vector() -> None:
    change = change_from_record(_records("insert_episode")[0])

    assert change is not None
    assert (change.namespace, change.layer, change.memory_id) == (NAMESPACE, "episodic", EPISODE_ID)
    assert isinstance(change.memory, Episode)
    assert change.memory.entities == ["Dana", "Lisbon"]
    assert change.memory.occurred_at == T0
    assert change.vector is not None and change.vector.shape == (DIM,)
    assert change.previous is None


def test_a_modify_carries_the_old_image_too() -> None:
    change = change_from_record(_records("modify_fact")[0])

    assert change is not None and isinstance(change.memory, Fact) and isinstance(change.previous, Fact)
    assert (change.memory.version, change.previous.version) == (2, 1)
    assert change.is_search_visible()
    access = change_from_record(_records("modify_access_only")[0])
    assert access is not None and not access.is_search_visible()


def test_a_remove_decodes_to_a_delete_from_the_keys() -> None:
    (record,) = _records("remove_episode")

    change = change_from_record(record)

    assert change == IndexChange(NAMESPACE, "episodic", EPISODE_ID)
    assert not is_ttl_expiry(record)


@pytest.mark.parametrize("name", ["ttl_expiry_working", "state_update"])
def test_working_memory_and_namespace_state_are_ignored(name: str) -> None:
    assert change_from_record(_records(name)[0]) is None


def test_a_ttl_expiry_is_recognised_by_its_user_identity() -> None:
    (record,) = _records("ttl_expiry_working")

    assert is_ttl_expiry(record)
    assert record["userIdentity"] == {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


@pytest.mark.parametrize("prefix", ["APIKEY#k1", "META"])
def test_other_items_are_ignored(prefix: str) -> None:
    record = _records("insert_episode")[0]
    record["dynamodb"]["Keys"] = {"pk": {"S": prefix}, "sk": {"S": prefix.split("#")[0]}}

    assert change_from_record(record) is None


@pytest.mark.parametrize("sk", ["LEASE", "RUN#2026-03-01T09:30:00.000000Z#run-1", "SPEND#2026-03-01", "HINDSIGHT"])
@pytest.mark.parametrize("event_name", ["INSERT", "MODIFY", "REMOVE"])
def test_consolidation_ledger_items_are_ignored(sk: str, event_name: str) -> None:
    record = _records("insert_episode")[0]
    record["eventName"] = event_name
    record["dynamodb"]["Keys"] = {"pk": {"S": f"NS#{NAMESPACE}"}, "sk": {"S": sk}}
    record["dynamodb"]["NewImage"] = {**record["dynamodb"]["Keys"], "runs": {"N": "1"}}

    assert change_from_record(record) is None


# --- the function -----------------------------------------------------------------------------------------------


@pytest.fixture
def double() -> Iterator[OpenSearchDouble]:
    with OpenSearchDouble() as server:
        yield server


@pytest.fixture
def sync(double: OpenSearchDouble, tmp_path: Path) -> Iterator[tuple[Any, OpenSearchIndex]]:
    index = OpenSearchIndex(
        OpenSearchConnection(double.url), "mem", DIM, client=build_opensearch_client(double.url, service=None)
    )
    index.ensure_index()
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing")
    services = build(settings, embedder=HashingEmbedder(dim=DIM), index=index)
    runtime = FunctionRuntime("index_sync", settings=settings, build=lambda _: services)
    yield index_sync_handler(runtime), index
    services.close()


def _ids(index: OpenSearchIndex, text: str) -> list[str]:
    return [c.id for c in index.keyword_search(NAMESPACE, text, MemoryFilter(include_superseded=True), 10)]


def test_the_function_applies_a_mixed_batch(sync: tuple[Any, OpenSearchIndex], double: OpenSearchDouble) -> None:
    handler, index = sync

    result = handler(load_event("mixed_batch", kind="dynamodb"), FakeLambdaContext(function_name="index_sync"))

    assert result == {"batchItemFailures": []}
    assert _ids(index, "Lisbon") == [EPISODE_ID]
    assert _ids(index, "aisle seats") == [FACT_ID]
    assert _ids(index, "window") == []
    bulks = [path for method, path in double.requests if path.endswith("_bulk")]
    assert len(bulks) == 1  # the whole batch in one round trip

    assert handler(load_event("remove_episode", kind="dynamodb"), FakeLambdaContext()) == {"batchItemFailures": []}
    assert _ids(index, "Lisbon") == []


def test_the_function_is_idempotent(sync: tuple[Any, OpenSearchIndex], double: OpenSearchDouble) -> None:
    handler, _ = sync
    event = load_event("mixed_batch", kind="dynamodb")

    handler(event, FakeLambdaContext())
    handler(event, FakeLambdaContext())

    assert sorted(d["memory_id"] for d in double.documents("mem")) == sorted([EPISODE_ID, FACT_ID])


def test_an_index_that_is_down_fails_every_memory_record(
    sync: tuple[Any, OpenSearchIndex], double: OpenSearchDouble
) -> None:
    handler, index = sync
    event = load_event("mixed_batch", kind="dynamodb")
    double.set_down(True)

    result = handler(event, FakeLambdaContext())

    memory_records = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]
                      if r["dynamodb"]["Keys"]["sk"]["S"].startswith(("EP#", "FACT#"))]  # fmt: skip
    assert [f["itemIdentifier"] for f in result["batchItemFailures"]] == memory_records
    double.set_down(False)
    assert handler(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert _ids(index, "Lisbon") == [EPISODE_ID]


def test_an_undecodable_record_fails_alone(sync: tuple[Any, OpenSearchIndex]) -> None:
    handler, index = sync
    event = load_event("mixed_batch", kind="dynamodb")
    broken = event["Records"][1]
    del broken["dynamodb"]["NewImage"]["layer"]

    result = handler(event, FakeLambdaContext())

    assert result == {"batchItemFailures": [{"itemIdentifier": broken["dynamodb"]["SequenceNumber"]}]}
    assert _ids(index, "Lisbon") == [EPISODE_ID]
