"""The bulk door (`BulkLoadService`), on the embedded backend (SQLite on disk): a loaded episode is stored as the
write path stores it, vectors brought are kept, a load repeats safely, and a bad line refuses the whole load
naming its field, with nothing stored."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.bulk_load import EpisodeLoad, LoadRequest
from rearview.domain.limits import MAX_EPISODE_CHARS
from rearview.domain.memory import Episode
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.errors import IdConflict, InvalidInput, MemoryTooLarge
from rearview.service.bulk_load import BulkLoadService
from rearview.service.write import WriteService
from rearview.settings import Settings, WriteTuning

pytestmark = pytest.mark.unit
NS, OTHER = "acme:u-1", "acme:u-2"
EVERY = MemoryFilter(include_superseded=True)


def _history(clock: ManualClock) -> list[dict[str, Any]]:
    """A chat and a tool log as an import would carry them: sessions, speakers, outcomes, metadata, an expiry."""
    t = clock.now() - timedelta(days=30)
    return [
        {"id": "h1", "content": "Ana: Where should we stay in Lisbon in May?", "session_id": "chat-1",
         "entities": ["Ana", "Lisbon"], "occurred_at": t},
        {"id": "h2", "content": "Ben: The flat near Alfama with the terrace, twice last year!", "session_id": "chat-1",
         "entities": ["Ben", "Alfama"], "occurred_at": t + timedelta(minutes=2)},
        {"id": "h3", "content": "Called the geocoding API for the Porto venue", "event_type": "tool_call",
         "outcome": "HTTP 429 Too Many Requests", "occurred_at": t + timedelta(hours=1), "session_id": "task-7",
         "metadata": {"tool": "geocode", "attempt": 1}, "source": "agent log"},
        {"id": "h4", "content": "Retried the geocoding call after a pause; the venue resolved",
         "event_type": "tool_call", "outcome": "ok", "occurred_at": t + timedelta(hours=1, minutes=1),
         "session_id": "task-7", "tags": ["geocoding"], "ttl_seconds": 86_400 * 400},
    ]  # fmt: skip


def _stored(services: Services, namespace: str, ids: list[str]) -> list[Episode]:
    got = services.store.get_many(namespace, ids)
    return [m for m in (got[i] for i in ids) if isinstance(m, Episode)]


def test_a_loaded_episode_is_stored_as_the_write_path_stores_it(services: Services, clock: ManualClock) -> None:
    lines = _history(clock)

    result = services.bulk_load.load(NS, LoadRequest(items=[EpisodeLoad(**line) for line in lines]))
    services.writer.write_batch(OTHER, [MemoryWrite(**line) for line in lines])

    ids = [line["id"] for line in lines]
    assert (result.loaded, result.skipped, result.embedded, result.ids) == (4, 0, 4, ids)
    loaded, written = _stored(services, NS, ids), _stored(services, OTHER, ids)
    assert [m.model_copy(update={"namespace": OTHER}) for m in loaded] == written
    # What the write path derives is there: the turn before as context, an outcome recognised, the expiry.
    assert loaded[1].context == lines[0]["content"] and loaded[0].context == ""
    assert [m.outcome_status for m in loaded[2:]] == ["failure", "success"]
    assert loaded[3].expires_at == clock.now() + timedelta(days=400)
    vectors_loaded = services.store.get_vectors(NS, ids)
    vectors_written = services.store.get_vectors(OTHER, ids)
    np.testing.assert_allclose(
        np.stack([vectors_loaded[i] for i in ids]), np.stack([vectors_written[i] for i in ids]), atol=1e-6
    )


def test_vectors_brought_are_kept_at_unit_length_and_nothing_is_embedded(services: Services) -> None:
    dim = services.embedder.dim
    rng = np.random.default_rng(7)
    brought = rng.normal(size=(3, dim)) * 5
    items = [
        EpisodeLoad(id=f"v{i}", content=f"Vector row {i}: the kayak rental in Sagres", vector=brought[i].tolist())
        for i in range(3)
    ]

    result = services.bulk_load.load(NS, LoadRequest(items=items))

    assert (result.loaded, result.embedded) == (3, 0)
    stored = services.store.get_vectors(NS, ["v0", "v1", "v2"])
    expected = brought / np.linalg.norm(brought, axis=1, keepdims=True)
    np.testing.assert_allclose(np.stack([stored[f"v{i}"] for i in range(3)]), expected, atol=1e-5)
    hits = services.index.vector_search(NS, expected[1].astype(np.float32), EVERY, 1)
    assert [hit.id for hit in hits] == ["v1"]


def test_a_load_repeats_safely_and_skips_what_a_write_would_skip(services: Services, clock: ManualClock) -> None:
    items = [EpisodeLoad(**line) for line in _history(clock)]
    first = services.bulk_load.load(NS, LoadRequest(items=[*items, EpisodeLoad(content="ok thanks!")]))

    again = services.bulk_load.load(NS, LoadRequest(items=items))

    assert (first.loaded, first.low_importance) == (4, 1)
    assert (again.loaded, again.skipped, again.ids) == (0, 4, [])
    assert services.stats.of(NS).counts["episodic"] == 4
    with pytest.raises(IdConflict) as conflict:
        services.bulk_load.load(NS, LoadRequest(items=[EpisodeLoad(id="h2", content="Another text under h2")]))
    assert conflict.value.field == "items.0.id"


def test_secrets_are_redacted_before_anything_is_embedded_or_stored(services: Services) -> None:
    secret = "AKIAIOSFODNN7EXAMPLE"
    result = services.bulk_load.load(
        NS, LoadRequest(items=[EpisodeLoad(id="s1", content=f"Deployed to staging with key {secret} on Friday")])
    )

    assert result.redacted == 1
    (stored,) = _stored(services, NS, ["s1"])
    assert secret not in stored.content and stored.redacted
    with pytest.raises(InvalidInput) as refused:
        services.bulk_load.load(NS, LoadRequest(items=[EpisodeLoad(id=f"id-{secret}", content="A plain line")]))
    assert refused.value.field == "items.0.id"


def _bad(dim: int) -> list[tuple[str, dict[str, Any], str]]:
    """(case, the second line's fields, the field the refusal names)."""
    return [
        ("a vector of another dimension", {"vector": [0.1] * (dim + 1)}, "items.1.vector"),
        ("a vector that is not finite", {"vector": [float("nan")] * dim}, "items.1.vector"),
        ("a zero vector", {"vector": [0.0] * dim}, "items.1.vector"),
        ("a semantic line", {"layer": "semantic"}, "items.1.layer"),
        ("an episode with a fact's field", {"dimension": "diet"}, "items.1.dimension"),
        ("an id given twice", {"id": "first"}, "items.1.id"),
        ("a text longer than one episode", {"content": "word " * MAX_EPISODE_CHARS}, "items.1.content"),
        ("a control character", {"content": "The printer \x07 jams"}, "items.1.content"),
        ("an expiry in the past", {"expires_at": "2020-01-01T00:00:00Z"}, "items.1.expires_at"),
    ]


@pytest.mark.parametrize("case", range(9))
def test_a_bad_line_refuses_the_whole_load_naming_its_field(services: Services, case: int) -> None:
    services.bulk_load.load(NS, LoadRequest(items=[EpisodeLoad(id="kept", content="Stored before the bad load")]))
    name, fields, field = _bad(services.embedder.dim)[case]
    second = {"id": "second", "content": "The second line of the load", **fields}

    with pytest.raises(InvalidInput) as refused:
        services.bulk_load.load(
            NS, LoadRequest(items=[EpisodeLoad(id="first", content="The first line"), EpisodeLoad(**second)])
        )

    assert refused.value.field == field, name
    assert field in str(refused.value)
    if "longer" in name:
        assert isinstance(refused.value, MemoryTooLarge) and f"at most {MAX_EPISODE_CHARS}" in str(refused.value)
    assert [m.id for m in services.store.list_memories(NS, EVERY)] == ["kept"], "nothing of a refused load is stored"


def test_where_writes_are_queued_each_line_brings_its_vector(tmp_path: Any, clock: ManualClock) -> None:
    services = build(Settings(data_dir=tmp_path, embedder="hashing"), clock=clock)

    class Queue:
        def send(self, namespace: str, items: object) -> None:
            raise AssertionError("a load is not queued")

        send_restore = send

    writer = WriteService(services.store, services.index, services.embedder, clock, WriteTuning(), queue=Queue())
    loader = BulkLoadService(services.store, writer, services.embedder, clock, WriteTuning())
    unit = [1.0] + [0.0] * (services.embedder.dim - 1)

    with pytest.raises(InvalidInput) as refused:
        loader.load(NS, LoadRequest(items=[EpisodeLoad(content="Brought", vector=unit), EpisodeLoad(content="Not")]))
    assert refused.value.field == "items.1.vector" and "queued" in str(refused.value)
    assert loader.load(NS, LoadRequest(items=[EpisodeLoad(content="Brought its vector", vector=unit)])).loaded == 1
    services.close()


def test_a_load_stays_in_its_namespace(services: Services, clock: ManualClock) -> None:
    services.bulk_load.load(NS, LoadRequest(items=[EpisodeLoad(**line) for line in _history(clock)]))

    assert len(services.store.list_memories(NS, EVERY)) == 4
    assert services.recaller.recall(NS, RecallQuery(query="Where should we stay in Lisbon?")).results
    assert services.store.list_memories(OTHER, EVERY) == []
    assert services.recaller.recall(OTHER, RecallQuery(query="Where should we stay in Lisbon?")).results == []
