"""Keyword search ranks its hits before reading the memories' rows when the filter asks for nothing but layers
(SQLite backend): the same ids, scores and order as the full query (the join to the rows, then the ranking), ties
at the cut included, in a shared table and in a namespace's own, and the full query whenever a filtered row was
among the best."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex
from rearview.adapters.sqlite.namespace_fts import promote
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.search import Candidate, MemoryFilter

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=32)
NS, OTHER = "ranked", "other"
QUERIES = ("violin lesson", "garden tomatoes violin", "lesson", "flight Lisbon tax", "chess", "nothing matches")
# Whatever the filter lets through, an extra condition that every memory passes sends the search down the full query.
EVERYTHING_SINCE = T0 - timedelta(days=3650)


def _episodes(namespace: str) -> list[Episode]:
    """Varied texts, and runs of identical ones (equal scores, so ties at any cut)."""
    texts = [f"violin lesson number {i}" for i in range(12)] + ["violin lesson"] * 40
    texts += [f"garden tomatoes and a violin {'lesson ' * (i % 3)}" for i in range(30)] + ["lesson"] * 25
    texts += ["flight to Lisbon", "tax refund for the flight", "chess club"] * 10
    return [
        Episode(
            id=f"{namespace}-e{i}", namespace=namespace, content=text, context="asked about a lesson" if i % 4 else "",
            occurred_at=T0 + timedelta(minutes=i), created_at=T0,
        )
        for i, text in enumerate(texts)
    ]  # fmt: skip


def _facts(namespace: str) -> list[Fact]:
    """Facts with identical texts, every other one superseded: a filtered row among the best."""
    return [
        Fact(
            id=f"{namespace}-f{i}", namespace=namespace, content="violin lesson on Tuesdays" if i < 20 else "chess",
            last_confirmed_at=T0, created_at=T0, status="superseded" if i % 2 else "active",
            superseded_by=f"{namespace}-f{i - 1}" if i % 2 else None,
        )
        for i in range(30)
    ]  # fmt: skip


@pytest.fixture
def index(tmp_path: Path) -> SqliteSearchIndex:
    db = SqliteDatabase(tmp_path / "ranked.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store = SqliteMemoryStore(db)
    for namespace in (NS, OTHER):
        memories: list[Memory] = [*_episodes(namespace), *_facts(namespace)]
        store.apply(namespace, ChangeSet(upserts=[(m, EMBEDDER.embed([m.content])[0]) for m in memories]))
    return SqliteSearchIndex(db)


def _statements(index: SqliteSearchIndex) -> list[str]:
    traced: list[str] = []
    index.db.connection().set_trace_callback(traced.append)
    return traced


def _pairs(found: list[Candidate]) -> list[tuple[str, str, float]]:
    return [(c.id, c.layer, c.score) for c in found]


def _both(index: SqliteSearchIndex, flt: MemoryFilter, text: str, limit: int, weight: float) -> tuple[list, list]:
    fast = index.keyword_search(NS, text, flt, limit, weight)
    full = index.keyword_search(NS, text, replace(flt, since=EVERYTHING_SINCE), limit, weight)
    return _pairs(fast), _pairs(full)


@pytest.mark.parametrize("own_table", [False, True])
@pytest.mark.parametrize("limit", [1, 5, 13, 20, 60, 500])
@pytest.mark.parametrize("weight", [0.0, 0.4])
def test_ranked_first_equals_the_full_query(
    index: SqliteSearchIndex, own_table: bool, limit: int, weight: float
) -> None:
    if own_table:
        with index.db.transaction() as conn:
            promote(conn, NS)
    for layers in (("episodic",), ("semantic",), ("episodic", "semantic")):
        for text in QUERIES:
            fast, full = _both(index, MemoryFilter(layers=layers), text, limit, weight)
            assert fast == full, (layers, text)
            assert all(memory_id.startswith(f"{NS}-") for memory_id, _, _ in fast)


def test_ties_at_the_cut_are_kept_in_the_full_querys_order(index: SqliteSearchIndex) -> None:
    """40 identical episodes score alike: a cut inside them keeps the same ones, in the same order."""
    fast, full = _both(index, MemoryFilter(layers=("episodic",)), "violin lesson", 20, 0.0)
    scores = [score for _, _, score in full]
    assert len(set(scores[5:])) < len(scores[5:])  # the test does cut through equal scores
    assert fast == full


def test_the_best_hits_alone_are_read_when_the_filter_keeps_them(index: SqliteSearchIndex) -> None:
    traced = _statements(index)
    index.keyword_search(NS, "violin lesson", MemoryFilter(layers=("episodic",)), 10)
    ranked = [s for s in traced if "bm25(" in s]
    assert len(ranked) == 1 and "LEFT JOIN" in ranked[0], ranked


def test_a_filtered_row_among_the_best_falls_back_to_the_full_query(index: SqliteSearchIndex) -> None:
    """Half the facts that say "violin lesson" are superseded: the ranked cut holds some, so the full query runs,
    and the answer holds active facts only, as many as asked for."""
    traced = _statements(index)
    found = index.keyword_search(NS, "violin lesson", MemoryFilter(layers=("semantic",)), 8)
    ranked = [s for s in traced if "bm25(" in s]
    assert len(ranked) == 2 and "LEFT JOIN" in ranked[0] and "LEFT JOIN" not in ranked[1]
    assert len(found) == 8
    assert all(int(c.id.rsplit("f", 1)[1]) % 2 == 0 for c in found)
    full = index.keyword_search(NS, "violin lesson", MemoryFilter(layers=("semantic",), since=EVERYTHING_SINCE), 8)
    assert _pairs(found) == _pairs(full)


def test_other_filters_take_the_full_query(index: SqliteSearchIndex) -> None:
    traced = _statements(index)
    index.keyword_search(NS, "violin lesson", MemoryFilter(layers=("episodic",), since=EVERYTHING_SINCE), 10)
    ranked = [s for s in traced if "bm25(" in s]
    assert len(ranked) == 1 and "LEFT JOIN" not in ranked[0]


def test_only_the_most_recent_matches_when_every_term_is_common(tmp_path: Path) -> None:
    """Thresholds low enough that every term is common: the search scores the most recent matches only, on both
    paths alike."""
    db = SqliteDatabase(tmp_path / "recent.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store = SqliteMemoryStore(db)
    episodes = _episodes(NS)
    store.apply(NS, ChangeSet(upserts=[(e, EMBEDDER.embed([e.content])[0]) for e in episodes]))
    index = SqliteSearchIndex(db, common_term_matches=5, scored_matches_budget=10, recent_matches=30)
    traced = _statements(index)
    for limit in (3, 10, 50):
        fast, full = _both(index, MemoryFilter(layers=("episodic",)), "violin lesson", limit, 0.4)
        assert fast == full and fast
    assert any("ORDER BY rowid DESC" in s and "LEFT JOIN" in s for s in traced)


def _store_of(tmp_path: Path, *namespaces: str) -> SqliteSearchIndex:
    db = SqliteDatabase(tmp_path / "alone.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store = SqliteMemoryStore(db)
    for namespace in namespaces:
        memories: list[Memory] = [*_episodes(namespace), *_facts(namespace)]
        store.apply(namespace, ChangeSet(upserts=[(m, EMBEDDER.embed([m.content])[0]) for m in memories]))
    return SqliteSearchIndex(db)


def _matches_without_token(traced: list[str]) -> list[str]:
    return [s for s in traced if "bm25(" in s and "ns_token" not in s]


@pytest.mark.parametrize("limit", [1, 13, 60, 500])
def test_a_namespace_alone_in_the_shared_table_is_matched_without_its_token(tmp_path: Path, limit: int) -> None:
    """A store of one namespace: the token restricts nothing, so the match leaves it out; same ids, scores, order."""
    index = _store_of(tmp_path, NS)
    traced = _statements(index)
    for layers in (("episodic",), ("semantic",), ("episodic", "semantic")):
        for text in QUERIES:
            for weight in (0.0, 0.4):
                fast, full = _both(index, MemoryFilter(layers=layers), text, limit, weight)
                assert fast == full, (layers, text, weight)
    assert _matches_without_token(traced)


def test_another_namespace_in_the_shared_table_keeps_the_token(tmp_path: Path) -> None:
    index = _store_of(tmp_path, NS, OTHER)
    traced = _statements(index)
    found = index.keyword_search(NS, "violin lesson", MemoryFilter(), 500, 0.4)
    assert found and all(c.id.startswith(f"{NS}-") for c in found)
    assert not _matches_without_token(traced)


def test_a_namespace_with_its_own_table_leaves_the_other_alone_in_the_shared_one(tmp_path: Path) -> None:
    """The other namespace moved to an own table: this one has the shared episodes table to itself (not the shared
    facts table), and finds its own memories only, as the full query does."""
    index = _store_of(tmp_path, NS, OTHER)
    with index.db.transaction() as conn:
        promote(conn, OTHER)
    traced = _statements(index)
    for layers in (("episodic",), ("semantic",)):
        fast, full = _both(index, MemoryFilter(layers=layers), "violin lesson", 500, 0.4)
        assert fast == full and fast
        assert all(memory_id.startswith(f"{NS}-") for memory_id, _, _ in fast)
    unrestricted = _matches_without_token(traced)
    assert unrestricted and all("fts_episodes" in s for s in unrestricted)


def test_a_namespace_alone_falls_back_after_one_ranked_attempt(tmp_path: Path) -> None:
    """Matched without the token, the hits are those matched with it: a filtered row among the best sends the
    search straight to the full query, not to a second ranked attempt."""
    index = _store_of(tmp_path, NS)
    traced = _statements(index)
    found = index.keyword_search(NS, "violin lesson", MemoryFilter(layers=("semantic",)), 8)
    ranked = [s for s in traced if "bm25(" in s]
    assert len(ranked) == 2 and "LEFT JOIN" in ranked[0] and "LEFT JOIN" not in ranked[1], ranked
    assert "ns_token" not in ranked[0]
    assert len(found) == 8 and all(int(c.id.rsplit("f", 1)[1]) % 2 == 0 for c in found)


def test_a_namespace_alone_is_found_so_without_reading_the_own_tables(tmp_path: Path) -> None:
    """No neighbouring namespace, no own table to skip: the registry of own tables is not read."""
    index = _store_of(tmp_path, NS)
    traced = _statements(index)
    index.keyword_search(NS, "violin lesson", MemoryFilter(), 10, 0.4)
    assert _matches_without_token(traced)
    assert not [s for s in traced if s.startswith("SELECT namespace FROM fts_namespaces")]
