"""`MemoryStore.load_episodes` contract: a bulk load of columns stores what `apply` of the same episodes stores,
on every backend, as an insert (all or nothing), in its namespace alone."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from rearview.adapters.sqlite.bulk_insert import PIPELINED_FROM
from rearview.domain.changes import ChangeSet
from rearview.domain.episode_columns import EpisodeColumns
from rearview.domain.memory import OUTCOME_STATUSES, Episode
from rearview.domain.search import MemoryFilter
from rearview.errors import ConcurrentUpdate, InvalidInput
from support.contract_backends import T0, Backend

pytestmark = pytest.mark.contract

EVERY = MemoryFilter(include_superseded=True)


def _columns(count: int, prefix: str = "ld", *, every_field: bool = True) -> EpisodeColumns:
    """`count` episodes whose every column varies from row to row (with `every_field`), NULLs and empty lists
    among them."""
    start = T0.timestamp() - 86_400 * 30
    columns: dict[str, list[object] | None] = {
        "id": [f"{prefix}-{i}" for i in range(count)],
        "content": [
            f"{prefix} row {i}: the {['kayak', 'budget', 'visa'][i % 3]} plan number {i}" for i in range(count)
        ],
        "occurred_at": [start + 3600.5 * i for i in range(count)],
    }
    if every_field:
        columns |= {
            "created_at": [start + 3600.5 * i + 7.25 for i in range(count)],
            "entities": [[f"Person{i % 5}", "Lisbon"] if i % 4 else [] for i in range(count)],
            "tags": [["trip", f"t{i % 3}"] if i % 2 else [] for i in range(count)],
            "importance": [round((i % 10) / 10, 1) for i in range(count)],
            "event_type": [None if i % 3 == 0 else f"type{i % 3}" for i in range(count)],
            "outcome": [None if i % 2 else f"outcome {i}" for i in range(count)],
            "outcome_status": [None if i % 5 == 4 else OUTCOME_STATUSES[i % 4] for i in range(count)],
            "session_id": [None if i % 7 == 0 else f"s-{i % 4}" for i in range(count)],
            "context": ["" if i % 3 else f"the turn before row {i}" for i in range(count)],
            "redacted": [i % 4 == 1 for i in range(count)],
            "metadata": [
                {} if i % 2 else {"project": f"p{i % 3}", "rank": i, "flags": {"a": i % 2 == 1}} for i in range(count)
            ],
            "source": [None if i % 3 else f"chat export {i}" for i in range(count)],
            "expires_at": [None if i % 5 else T0.timestamp() + 86_400 * 365 + i for i in range(count)],
        }
    return EpisodeColumns.of(**columns)


def _many(backend: Backend) -> int:
    """Rows enough for SQLite's chunked insert; fewer elsewhere (moto's DynamoDB takes ~50 ms a row)."""
    return PIPELINED_FROM + 17 if backend.name.startswith("sqlite") else 40


def _vectors(backend: Backend, rows: EpisodeColumns) -> np.ndarray:
    return np.asarray(backend.embedder.embed(list(rows.content)), dtype=np.float32)


@pytest.mark.parametrize("many", [False, True])
def test_a_load_stores_what_apply_stores(backend: Backend, many: bool) -> None:
    rows = _columns(_many(backend) if many else 3)
    vectors = _vectors(backend, rows)

    backend.store.load_episodes("acme", rows, vectors)

    expected = rows.episodes("acme")
    got = backend.store.get_many("acme", rows.id)
    assert [got[e.id] for e in expected] == expected
    stored = backend.store.get_vectors("acme", rows.id)
    np.testing.assert_allclose(np.stack([stored[i] for i in rows.id]), vectors, atol=1e-6)
    # The same episodes applied one by one elsewhere read back the same.
    backend.write("beta", *rows.episodes("beta")[:3])
    applied = backend.store.get_many("beta", rows.id[:3])
    assert [m.model_copy(update={"namespace": "acme"}) for m in applied.values()] == expected[:3]


def test_loaded_episodes_are_searched_listed_and_counted(backend: Backend) -> None:
    rows = _columns(_many(backend))
    backend.store.load_episodes("acme", rows, _vectors(backend, rows))

    keyword = backend.index.keyword_search("acme", rows.content[4], EVERY, 5)
    assert keyword and keyword[0].id == "ld-4"
    vector = backend.index.vector_search("acme", backend.query_vector(rows.content[7]), EVERY, 3)
    assert vector[0].id == "ld-7"
    in_session = backend.store.list_memories("acme", MemoryFilter(session_id="s-1"))
    assert sorted(m.id for m in in_session) == sorted(
        i for i, s in zip(rows.id, rows.session_id or [], strict=True) if s == "s-1"
    )
    assert backend.store.usage("acme", T0).episodic == len(rows)
    # The tags the rows carry are filtered on as an applied episode's are.
    tagged = backend.store.list_memories("acme", MemoryFilter(tags=("t1",)))
    assert sorted(m.id for m in tagged) == sorted(i for i, t in zip(rows.id, rows.tags or [], strict=True) if "t1" in t)


def test_a_load_without_vectors_stores_the_episodes_without_them(backend: Backend) -> None:
    rows = _columns(4, every_field=False)

    backend.store.load_episodes("acme", rows, None)

    assert sorted(backend.store.get_many("acme", rows.id)) == sorted(rows.id)
    assert backend.store.get_vectors("acme", rows.id) == {}
    episode = backend.store.get("acme", "ld-2")
    assert isinstance(episode, Episode)
    # The defaults of an Episode, and created_at as occurred_at.
    assert (episode.importance, episode.entities, episode.tags, episode.session_id) == (0.5, [], [], None)
    assert episode.created_at == episode.occurred_at


@pytest.mark.parametrize("stored_as", ["episode", "fact"])
def test_an_id_stored_already_refuses_the_whole_load(backend: Backend, stored_as: str) -> None:
    rows = _columns(_many(backend))
    before = Episode(namespace="acme", id="ld-30", content="already here", occurred_at=T0, created_at=T0)
    if stored_as == "fact":
        from support.contract_backends import make_fact

        backend.write("acme", make_fact("acme", "ld-30", "already a fact"))
    else:
        backend.write("acme", before)

    with pytest.raises(ConcurrentUpdate):
        backend.store.load_episodes("acme", rows, _vectors(backend, rows))

    assert sorted(backend.store.get_many("acme", rows.id)) == ["ld-30"]
    assert backend.index.keyword_search("acme", "kayak plan", EVERY, 10) == []
    if stored_as == "episode":
        assert backend.store.get("acme", "ld-30") == before


@pytest.mark.parametrize(
    "vectors",
    [np.zeros((5, 512), dtype=np.float32), np.zeros((6, 511), dtype=np.float32), np.zeros(512, dtype=np.float32)],
    ids=["too few", "another dimension", "one vector"],
)
def test_vectors_not_one_per_episode_of_the_dimension_are_refused(backend: Backend, vectors: np.ndarray) -> None:
    rows = _columns(6)

    with pytest.raises(InvalidInput) as refused:
        backend.store.load_episodes("acme", rows, vectors)

    assert refused.value.field == "vectors"
    assert backend.store.get_many("acme", rows.id) == {}


def test_a_load_is_seen_in_its_namespace_alone(backend: Backend) -> None:
    rows = _columns(_many(backend))
    backend.store.load_episodes("acme", rows, _vectors(backend, rows))
    # The same ids load into another namespace: ids are unique within a namespace.
    backend.store.load_episodes("acme2", rows, _vectors(backend, rows))
    backend.delete("acme2", "ld-0")

    for reader in ("acm", "acme:u-1", "other"):
        assert backend.store.get_many(reader, rows.id) == {}
        assert backend.store.list_memories(reader, EVERY) == []
        assert backend.store.recent_episodes(reader, T0 - timedelta(days=400)) == []
        assert backend.index.keyword_search(reader, "kayak plan number", EVERY, 10) == []
        assert backend.index.vector_search(reader, backend.query_vector(rows.content[0]), EVERY, 10) == []
    assert len(backend.store.get_many("acme", rows.id)) == len(rows)
    assert backend.store.get("acme", "ld-0") is not None
    assert backend.store.get("acme2", "ld-0") is None
    assert all(m.namespace == "acme" for m in backend.store.list_memories("acme", EVERY))


def test_loads_and_change_sets_follow_each_other(backend: Backend) -> None:
    rows = _columns(5)
    backend.store.load_episodes("acme", rows, _vectors(backend, rows))
    loaded = backend.store.get("acme", "ld-1")
    assert isinstance(loaded, Episode)

    edited = loaded.model_copy(update={"content": "the kayak plan was cancelled", "version": 2})
    backend.store.apply("acme", ChangeSet(upserts=[(edited, None)], cause="edit"))
    more = _columns(3, prefix="next")
    backend.store.load_episodes("acme", more, _vectors(backend, more))

    assert backend.store.get("acme", "ld-1") == edited
    assert len(backend.store.list_memories("acme", EVERY)) == 8
    hits = backend.index.keyword_search("acme", "cancelled", EVERY, 5)
    assert [c.id for c in hits] == ["ld-1"]
