"""What the ledger contract cannot see of the DynamoDB ledger (on moto): its items share the table with the memories
and nothing that reads the table trips on them (the store's reads, the stream decoding), the TTLs they carry, and
the unconsolidated count's one COUNT query per page of the sparse index, never a scan."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from rearview.adapters.dynamodb import DynamoDBHindsightLedger, DynamoDBMemoryStore, change_from_record, create_table
from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.clock import ManualClock
from rearview.domain.changes import ChangeSet
from rearview.domain.hindsight_runs import RUN_RETENTION, SPEND_RETENTION, ConsolidationRun
from rearview.domain.memory import Episode, Fact
from rearview.domain.search import MemoryFilter
from rearview.domain.working import WorkingEntry
from support.dynamodb_stream import StreamReader, moto_streams_client
from support.recording_client import RecordingClient

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
NS = "acme:u-42"
TABLE = "rearview-ledger"
EMBEDDER = HashingEmbedder(dim=16)


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb, TABLE)
        yield dynamodb


@pytest.fixture
def store(client: Any) -> DynamoDBMemoryStore:
    return DynamoDBMemoryStore(
        TABLE, client=client, clock=ManualClock(T0), embedder_name=EMBEDDER.name, dim=EMBEDDER.dim
    )


@pytest.fixture
def ledger(client: Any) -> DynamoDBHindsightLedger:
    return DynamoDBHindsightLedger(TABLE, client=client)


def _run(run_id: str, started_at: datetime = T0, namespace: str = NS, **fields: Any) -> ConsolidationRun:
    return ConsolidationRun(
        run_id=run_id, namespace=namespace, reason="count", started_at=started_at, finished_at=started_at, **fields
    )


def _fill_ledger(ledger: DynamoDBHindsightLedger, namespace: str) -> None:
    """One item of every kind the ledger writes."""
    assert ledger.acquire_lease(namespace, "worker-a", T0, 600)
    ledger.record_run(_run("run-1", namespace=namespace, induced={"fact": 1}, clusters=2, tokens=10))
    ledger.record_run(_run("run-2", T0 + timedelta(days=1), namespace=namespace, error="boom"))
    ledger.record_feedback(namespace, "fact", "useful", True)


def _write_memories(store: DynamoDBMemoryStore) -> None:
    episodes = [
        Episode(id=f"e{i}", namespace=NS, content=f"note {i}", occurred_at=T0, created_at=T0, consolidated=i == 0)
        for i in range(3)
    ]
    fact = Fact(id="f1", namespace=NS, content="likes tea", dimension="drink", provenance=["e0"],
                last_confirmed_at=T0, created_at=T0)  # fmt: skip
    vectors = EMBEDDER.embed([m.content for m in [*episodes, fact]])
    store.apply(NS, ChangeSet(upserts=list(zip([*episodes, fact], vectors, strict=True))))
    store.put_working(
        WorkingEntry(
            namespace=NS, session_id="s1", key="plan", value={"step": 2}, updated_at=T0,
            expires_at=T0 + timedelta(hours=2),
        )
    )  # fmt: skip


def test_the_stores_reads_pass_the_ledger_items_by(store: DynamoDBMemoryStore, ledger: DynamoDBHindsightLedger) -> None:
    _write_memories(store)
    _fill_ledger(ledger, NS)
    # A namespace that only ever had ledger items (a run over nothing) is not a written namespace.
    _fill_ledger(ledger, "ghost")

    assert store.list_namespaces() == [NS]
    assert store.namespaces_with_unconsolidated() == [NS]
    assert store.unconsolidated_count(NS) == 2 and store.unconsolidated_count("ghost") == 0
    assert [m.id for m in store.list_memories(NS, MemoryFilter(include_superseded=True))] == ["e0", "e1", "e2", "f1"]
    assert [e.id for e in store.recent_episodes(NS, T0 - timedelta(days=1))] == ["e2", "e1", "e0"]
    assert [f.id for f in store.facts_citing(NS, ["e0"])] == ["f1"]
    fact = store.active_fact_for_dimension(NS, "drink")
    assert fact is not None and fact.id == "f1"
    assert [e.key for e in store.get_working(NS, "s1", T0)] == ["plan"]
    usage = store.usage(NS, T0)
    assert (usage.working, usage.episodic, usage.semantic_active, usage.semantic_superseded) == (1, 3, 1, 0)
    assert store.usage("ghost", T0).episodic == 0

    assert store.clear_working(NS) == 1
    # Clearing working memory leaves the ledger alone.
    assert [r.run_id for r in ledger.runs(NS)] == ["run-2", "run-1"]
    assert not ledger.acquire_lease(NS, "worker-b", T0 + timedelta(seconds=1), 600)


def test_the_stream_decoding_ignores_every_ledger_item(
    client: Any, store: DynamoDBMemoryStore, ledger: DynamoDBHindsightLedger
) -> None:
    reader = StreamReader(client, moto_streams_client("us-east-1"), TABLE)
    _write_memories(store)
    memory_records = reader.read()
    _fill_ledger(ledger, NS)
    ledger.release_lease(NS, "worker-a")  # a REMOVE too
    ledger_records = reader.read()

    sort_keys = {record["dynamodb"]["Keys"]["sk"]["S"].split("#", 1)[0] for record in ledger_records}
    assert sort_keys == {"LEASE", "RUN", "SPEND", "HINDSIGHT"}
    assert {record["eventName"] for record in ledger_records} == {"INSERT", "MODIFY", "REMOVE"}
    assert [change_from_record(record) for record in ledger_records] == [None] * len(ledger_records)
    decoded = [change_from_record(record) for record in memory_records]
    assert sorted(c.memory_id for c in decoded if c is not None) == ["e0", "e1", "e2", "f1"]


def _item(client: Any, sk: str) -> dict[str, Any]:
    item: dict[str, Any] = client.get_item(TableName=TABLE, Key={"pk": {"S": f"NS#{NS}"}, "sk": {"S": sk}})["Item"]
    return item


def test_runs_and_spend_expire_by_ttl_and_the_lease_a_day_after_it_ends(
    client: Any, ledger: DynamoDBHindsightLedger
) -> None:
    started = datetime(2026, 3, 1, 23, 0, tzinfo=UTC)
    ledger.record_run(_run("run-1", started))
    assert ledger.acquire_lease(NS, "worker-a", T0, 600)

    run = _item(client, "RUN#2026-03-01T23:00:00.000000Z#run-1")
    spend = _item(client, "SPEND#2026-03-01")
    lease = _item(client, "LEASE")

    assert int(run["ttl"]["N"]) == math.ceil((started + RUN_RETENTION).timestamp())
    day_end = datetime(2026, 3, 2, tzinfo=UTC)
    assert int(spend["ttl"]["N"]) == math.ceil((day_end + SPEND_RETENTION).timestamp())
    assert lease["owner"]["S"] == "worker-a"
    assert lease["lease_until"]["S"] == "2026-03-01T09:40:00.000000Z"
    assert int(lease["ttl"]["N"]) == math.ceil((T0 + timedelta(seconds=600) + timedelta(days=1)).timestamp())


def test_a_lease_that_ttl_removed_is_free(client: Any, ledger: DynamoDBHindsightLedger) -> None:
    assert ledger.acquire_lease(NS, "worker-a", T0, 600)
    client.delete_item(TableName=TABLE, Key={"pk": {"S": f"NS#{NS}"}, "sk": {"S": "LEASE"}})

    assert ledger.acquire_lease(NS, "worker-b", T0 + timedelta(seconds=1), 600)


def test_totals_read_back_kinds_whose_names_hold_separators(ledger: DynamoDBHindsightLedger) -> None:
    ledger.record_feedback(NS, "tool#build", "wrong", True)
    ledger.record_run(_run("run-1", induced={"a#b": 2}))

    totals = ledger.totals(NS)

    assert totals.induced == {"a#b": 2}
    assert totals.feedback["tool#build"].wrong == 1 and totals.feedback["tool#build"].adopted == 1


def test_the_unconsolidated_count_is_a_paged_count_query_of_the_sparse_index(client: Any) -> None:
    writer = DynamoDBMemoryStore(TABLE, client=client, embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    episodes = [
        Episode(id=f"e{i:02d}", namespace=NS, content="note", occurred_at=T0 + timedelta(minutes=i), created_at=T0)
        for i in range(7)
    ]
    writer.apply(NS, ChangeSet(upserts=[(e, None) for e in episodes]))
    # "acme" is a string prefix of "acme:u-42" and "acme2"; neither's episodes are its.
    writer.apply("acme2", ChangeSet(upserts=[(episodes[0].model_copy(update={"namespace": "acme2"}), None)]))
    recording = RecordingClient(client, page=3)
    store = DynamoDBMemoryStore(TABLE, client=recording)
    recording.calls.clear()

    assert store.unconsolidated_count(NS) == 7
    assert store.unconsolidated_count("acme") == 0

    assert recording.names() == {"query"}
    first = recording.calls[0][1]
    assert first["IndexName"] == "unconsolidated" and first["Select"] == "COUNT"
    assert first["ExpressionAttributeValues"][":prefix"] == {"S": f"{NS}#"}
    assert len([c for c in recording.calls if c[1]["ExpressionAttributeValues"][":prefix"]["S"] == f"{NS}#"]) >= 3
