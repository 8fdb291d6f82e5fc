"""SearchIndex contract: keyword (BM25) and vector (cosine) candidates, scoped and filtered like the store."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode, Fact
from rearview.domain.search import Candidate, EntityShares, MemoryFilter
from support.contract_backends import (
    FILTERS,
    T0,
    Backend,
    expected_ids,
    filter_dataset,
    make_episode,
    make_fact,
)

pytestmark = pytest.mark.contract

EVERYTHING = MemoryFilter(include_superseded=True)


def _ids(candidates: list[Candidate]) -> list[str]:
    return [c.id for c in candidates]


def _assert_best_first(candidates: list[Candidate]) -> None:
    scores = [c.score for c in candidates]
    assert scores == sorted(scores, reverse=True)


# --- keyword search -----------------------------------------------------------------------------------------

CORPUS = {
    "both": "I bought new hiking boots for the mountain trip",
    "hiking": "We talked about hiking trails near Porto",
    "boots": "The boots in the shop window were too expensive",
    "stocks": "The stock market fell sharply today",
    "cat": "My cat sleeps on the sofa all afternoon",
    "tea": "Green tea tastes better without sugar",
}


def _write_corpus(backend: Backend, namespace: str = "acme") -> None:
    backend.write(namespace, *(make_episode(namespace, key, text) for key, text in CORPUS.items()))


def test_keyword_search_ranks_the_memory_with_every_query_term_first(backend: Backend) -> None:
    _write_corpus(backend)

    found = backend.index.keyword_search("acme", "hiking boots", MemoryFilter(), 10)

    assert _ids(found)[0] == "both"
    assert set(_ids(found)) == {"both", "hiking", "boots"}
    assert all(c.score > 0 and c.layer == "episodic" for c in found)
    _assert_best_first(found)


@pytest.mark.parametrize("query", ["what did I do?", "the of and", "   ", "?!"])
def test_keyword_search_without_content_words_finds_nothing(backend: Backend, query: str) -> None:
    _write_corpus(backend)
    backend.write("acme", make_episode("acme", "stop", "what did I do? the of and"))

    assert backend.index.keyword_search("acme", query, MemoryFilter(), 10) == []


def test_keyword_search_matches_word_stems(backend: Backend) -> None:
    backend.write(
        "acme",
        make_episode("acme", "hike", "Went for a long hike on Sunday"),
        make_episode("acme", "other", "Cooked pasta for dinner"),
    )

    assert _ids(backend.index.keyword_search("acme", "hiking", MemoryFilter(), 10)) == ["hike"]
    assert _ids(backend.index.keyword_search("acme", "dinners", MemoryFilter(), 10)) == ["other"]


def test_keyword_search_in_chinese(backend: Backend) -> None:
    backend.write(
        "acme",
        make_episode("acme", "budget", "我们讨论了项目预算"),
        make_episode("acme", "apples", "我喜欢吃苹果"),
        make_episode("acme", "trip", "明天去北京出差"),
    )

    found = backend.index.keyword_search("acme", "上周我们讨论了什么项目", MemoryFilter(), 10)

    assert _ids(found)[0] == "budget"
    assert "apples" not in _ids(found)


def test_keyword_search_covers_entities_and_tags(backend: Backend) -> None:
    backend.write(
        "acme",
        make_episode("acme", "ent", "Had lunch together", entities=["Marguerite"]),
        make_fact("acme", "tag", "Runs every morning", tags=["marathon"]),
        make_episode("acme", "none", "Had lunch alone"),
    )

    assert _ids(backend.index.keyword_search("acme", "Marguerite", MemoryFilter(), 10)) == ["ent"]
    assert _ids(backend.index.keyword_search("acme", "marathon", MemoryFilter(), 10)) == ["tag"]


def test_keyword_search_matches_an_episodes_context_below_its_own_text(backend: Backend) -> None:
    reply = make_episode("acme", "reply", "I've had them for three years now", context="How long have you had turtles?")
    backend.write(
        "acme",
        reply,
        make_episode("acme", "own", "My turtles love the new tank"),
        make_episode("acme", "other", "Cooked pasta for dinner", context="What did you eat?"),
    )

    found = backend.index.keyword_search("acme", "turtles", MemoryFilter(), 10, context_weight=0.4)

    assert _ids(found) == ["own", "reply"]  # the context counts, at less than the memory's own words
    assert backend.store.get("acme", "reply") == reply
    assert _ids(backend.index.keyword_search("acme", "turtles", MemoryFilter(), 10)) == ["own"]  # weight 0

    backend.write("acme", reply.model_copy(update={"context": "", "version": 2}))
    assert _ids(backend.index.keyword_search("acme", "turtles", MemoryFilter(), 10, context_weight=0.4)) == ["own"]


def test_keyword_search_searches_both_layers(backend: Backend) -> None:
    backend.write(
        "acme",
        make_episode("acme", "e", "Adopted a greyhound named Pixel"),
        make_fact("acme", "f", "Owns a greyhound"),
    )

    found = backend.index.keyword_search("acme", "greyhound", MemoryFilter(), 10)

    assert {(c.id, c.layer) for c in found} == {("e", "episodic"), ("f", "semantic")}
    assert _ids(backend.index.keyword_search("acme", "greyhound", MemoryFilter(layers=("semantic",)), 10)) == ["f"]


def test_keyword_search_honours_the_limit(backend: Backend) -> None:
    backend.write("acme", *(make_episode("acme", f"e{i}", f"coffee note number {i}") for i in range(12)))

    everything = backend.index.keyword_search("acme", "coffee", MemoryFilter(), 100)
    top = backend.index.keyword_search("acme", "coffee", MemoryFilter(), 5)

    assert len(everything) == 12
    assert len(top) == 5
    assert [c.score for c in top] == pytest.approx([c.score for c in everything[:5]])


def test_keyword_search_sees_updates_and_never_returns_deleted_memories(backend: Backend) -> None:
    original = make_episode("acme", "e1", "Planning a trip to Kyoto")
    backend.write("acme", original, make_episode("acme", "e2", "Kyoto temples at dawn"))
    assert set(_ids(backend.index.keyword_search("acme", "Kyoto", MemoryFilter(), 10))) == {"e1", "e2"}

    backend.write("acme", original.model_copy(update={"content": "Planning a trip to Osaka", "version": 2}))
    assert _ids(backend.index.keyword_search("acme", "Kyoto", MemoryFilter(), 10)) == ["e2"]
    assert _ids(backend.index.keyword_search("acme", "Osaka", MemoryFilter(), 10)) == ["e1"]

    backend.delete("acme", "e2")
    assert backend.index.keyword_search("acme", "Kyoto", MemoryFilter(), 10) == []
    assert backend.index.keyword_search("acme", "temples dawn", MemoryFilter(), 10) == []


# --- filters on both searches -------------------------------------------------------------------------------

# One distinctive word of every memory of filter_dataset(), so that without filters every memory matches.
EVERY_MEMORY_QUERY = "Berlin hotel rent novel Paris vegetarian cache"


@pytest.mark.parametrize("name", list(FILTERS))
def test_keyword_search_applies_every_filter(filter_backend: Backend, name: str) -> None:
    data = filter_dataset()
    index = filter_backend.index
    assert len(index.keyword_search("acme", EVERY_MEMORY_QUERY, EVERYTHING, 100)) == len(data)

    found = index.keyword_search("acme", EVERY_MEMORY_QUERY, FILTERS[name], 100)

    assert set(_ids(found)) == expected_ids(data, FILTERS[name])
    assert len(found) == len(set(_ids(found)))
    layers = {m.id: m.layer for m in data}
    assert all(c.layer == layers[c.id] for c in found)


@pytest.mark.parametrize("name", list(FILTERS))
def test_vector_search_applies_every_filter(filter_backend: Backend, name: str) -> None:
    data = filter_dataset()
    query = filter_backend.query_vector("a trip to Berlin")

    found = filter_backend.index.vector_search("acme", query, FILTERS[name], 100)

    assert set(_ids(found)) == expected_ids(data, FILTERS[name])
    assert len(found) == len(set(_ids(found)))
    _assert_best_first(found)


@pytest.mark.parametrize("name", list(FILTERS))
def test_searches_all_says_whether_a_search_of_the_limit_returns_every_memory_it_chooses_from(
    filter_backend: Backend, name: str
) -> None:
    data = filter_dataset()
    index = filter_backend.index
    flt = FILTERS[name]
    query = filter_backend.query_vector("a trip to Berlin")
    passing = len(index.vector_search("acme", query, flt, 100))
    assert passing == len(expected_ids(data, flt))

    # None where the index cannot tell; otherwise exactly whether `limit` reaches the number that pass (the other
    # namespace's memories, one more of them, count for nothing).
    # An index that scans in this process can tell once the search above has loaded what it uses (a filter that
    # passes nothing may load nothing).
    counts = index.traits.local_scan and not index.traits.round_trip and passing > 0
    for limit in {0, max(passing - 1, 0), passing, passing + 1, 100}:
        told = index.searches_all("acme", flt, limit)
        assert (told is None and not counts) or told == (passing <= limit), limit


def test_searches_all_sees_inserts_and_deletes(backend: Backend) -> None:
    data = filter_dataset()
    backend.write("acme", *data)
    backend.index.vector_search("acme", backend.query_vector("Berlin"), MemoryFilter(), 10)  # loads what it uses
    n = len(expected_ids(data, MemoryFilter()))
    before = backend.index.searches_all("acme", MemoryFilter(), n)
    if before is None:
        assert not (backend.index.traits.local_scan and not backend.index.traits.round_trip)
        return  # an index that cannot tell
    assert before is True
    backend.write("acme", make_episode("acme", "e5", "walked the dog"))
    assert backend.index.searches_all("acme", MemoryFilter(), n) is False
    backend.delete("acme", "e5")
    assert backend.index.searches_all("acme", MemoryFilter(), n) is True


# --- vector search ------------------------------------------------------------------------------------------

SUBJECTS = ["my sister", "the landlord", "our team", "a neighbour", "the doctor", "my old friend", "the bank"]
VERBS = ["called about", "emailed me about", "asked about", "complained about", "joked about"]
OBJECTS = ["the rent", "a birthday party", "the quarterly report", "a hiking trip", "the broken heater"]


def _varied_memories(namespace: str = "acme") -> list[Episode | Fact]:
    memories: list[Episode | Fact] = []
    for i, (s, v, o) in enumerate((s, v, o) for s in SUBJECTS for v in VERBS for o in OBJECTS):
        if i % 4 == 0:
            memories.append(make_fact(namespace, f"f{i}", f"{s} {v} {o}", last_confirmed_at=T0 + timedelta(hours=i)))
        else:
            memories.append(make_episode(namespace, f"e{i}", f"{s} {v} {o}", occurred_at=T0 + timedelta(hours=i)))
    return memories


def _brute_force(backend: Backend, ids: list[str], query: np.ndarray) -> list[tuple[str, float]]:
    vectors = backend.store.get_vectors("acme", ids)
    matrix = np.stack([vectors[i] for i in ids]).astype(np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    scores = matrix @ (query / np.linalg.norm(query))
    return sorted(zip(ids, scores.tolist(), strict=True), key=lambda pair: -pair[1])


@pytest.mark.parametrize(
    ("query_text", "flt"),
    [
        ("my sister called about the rent", MemoryFilter()),
        ("a birthday party for the team", MemoryFilter(layers=("episodic",))),
        (
            "the heater is broken",
            MemoryFilter(since=T0 + timedelta(hours=40), until=T0 + timedelta(hours=120)),
        ),
    ],
)
def test_vector_search_order_equals_brute_force_cosine(backend: Backend, query_text: str, flt: MemoryFilter) -> None:
    memories = _varied_memories()
    backend.write("acme", *memories)
    query = backend.query_vector(query_text)
    allowed = sorted(expected_ids(memories, flt))
    expected = _brute_force(backend, allowed, query)

    found = backend.index.vector_search("acme", query, flt, 20)

    # An index keeping its vectors at half precision states how far from the exact cosine it may score.
    error = max(backend.index.traits.cosine_error, 1e-6)
    assert len(found) == 20
    assert [c.score for c in found] == pytest.approx([score for _, score in expected[:20]], abs=error)
    # Ids must agree wherever the brute-force scores are not tied (within twice that error).
    for position, candidate in enumerate(found):
        tied = {i for i, s in expected if abs(s - expected[position][1]) <= 2 * error}
        assert candidate.id in tied
    layers = {m.id: m.layer for m in memories}
    assert all(c.layer == layers[c.id] for c in found)


@pytest.mark.parametrize("flt", [MemoryFilter(), MemoryFilter(layers=("semantic",)), MemoryFilter(tags=("none",))])
def test_batched_vector_search_equals_one_search_per_vector(backend: Backend, flt: MemoryFilter) -> None:
    backend.write("acme", *_varied_memories())
    queries = np.stack([backend.query_vector(t) for t in ("the rent", "a hiking trip", "the doctor joked")])

    batched = backend.index.vector_search_many("acme", queries, flt, 7)

    for query, found in zip(queries, batched, strict=True):
        single = backend.index.vector_search("acme", query, flt, 7)
        assert [c.id for c in found] == [c.id for c in single]
        assert [c.score for c in found] == pytest.approx([c.score for c in single], abs=1e-6)


def test_vector_search_scores_are_cosines_whatever_the_query_norm(backend: Backend) -> None:
    backend.write("acme", *_varied_memories()[:30])
    query = backend.query_vector("the doctor asked about a hiking trip")

    unit = backend.index.vector_search("acme", query, MemoryFilter(), 10)
    scaled = backend.index.vector_search("acme", query * 7.5, MemoryFilter(), 10)

    assert _ids(unit) == _ids(scaled)
    assert [c.score for c in unit] == pytest.approx([c.score for c in scaled], abs=1e-6)
    assert all(-1.0 - 1e-6 <= c.score <= 1.0 + 1e-6 for c in unit)


def test_vector_search_finds_the_exact_memory_first(backend: Backend) -> None:
    memories = _varied_memories()
    backend.write("acme", *memories)
    target = memories[17]

    found = backend.index.vector_search("acme", backend.query_vector(target.content), MemoryFilter(), 3)

    assert found[0].id == target.id
    assert found[0].score == pytest.approx(1.0, abs=max(backend.index.traits.cosine_error, 1e-5))


def test_vector_search_of_an_empty_namespace_is_empty(backend: Backend) -> None:
    assert backend.index.vector_search("nobody", backend.query_vector("anything"), EVERYTHING, 10) == []


def test_vector_search_sees_inserts_updates_and_deletes(backend: Backend) -> None:
    memories = _varied_memories()[:40]
    backend.write("acme", *memories)
    query = backend.query_vector("learning to play the cello")
    before = backend.index.vector_search("acme", query, MemoryFilter(), 5)  # warms any cache
    assert "cello" not in _ids(before)

    backend.write("acme", make_episode("acme", "cello", "learning to play the cello"))
    assert _ids(backend.index.vector_search("acme", query, MemoryFilter(), 5))[0] == "cello"

    # A new vector for an existing memory moves it.
    moved = memories[3]
    backend.write("acme", moved.model_copy(update={"content": "cello lessons on Tuesdays", "version": 2}))
    after_update = backend.index.vector_search("acme", query, MemoryFilter(), 2)
    assert _ids(after_update) == ["cello", moved.id]

    backend.delete("acme", "cello")
    for flt in (MemoryFilter(), EVERYTHING, MemoryFilter(ids=("cello",))):
        assert "cello" not in _ids(backend.index.vector_search("acme", query, flt, 100))
    assert _ids(backend.index.vector_search("acme", query, MemoryFilter(), 1)) == [moved.id]


def test_vector_search_sees_changes_of_filtered_attributes(backend: Backend) -> None:
    fact = make_fact("acme", "f", "drinks oat milk")
    episode = make_episode("acme", "e", "bought oat milk", session_id="s1")
    backend.write("acme", fact, episode)
    query = backend.query_vector("oat milk")
    assert set(_ids(backend.index.vector_search("acme", query, MemoryFilter(), 10))) == {"f", "e"}

    superseded = fact.model_copy(update={"status": "superseded", "superseded_by": "x", "version": 2})
    consolidated = episode.model_copy(
        update={"consolidated": True, "session_id": "s2", "occurred_at": T0 + timedelta(days=9), "version": 2}
    )
    backend.store.apply("acme", ChangeSet(upserts=[(superseded, None), (consolidated, None)]))

    assert _ids(backend.index.vector_search("acme", query, MemoryFilter(), 10)) == ["e"]
    assert set(_ids(backend.index.vector_search("acme", query, EVERYTHING, 10))) == {"f", "e"}
    assert backend.index.vector_search("acme", query, MemoryFilter(consolidated=False), 10) == []
    assert backend.index.vector_search("acme", query, MemoryFilter(session_id="s1"), 10) == []
    assert _ids(backend.index.vector_search("acme", query, MemoryFilter(session_id="s2"), 10)) == ["e"]
    early = MemoryFilter(until=T0 + timedelta(days=1), include_superseded=True)
    assert _ids(backend.index.vector_search("acme", query, early, 10)) == ["f"]
    assert _ids(backend.index.vector_search("acme", query, MemoryFilter(since=T0 + timedelta(days=5)), 10)) == ["e"]


def test_a_session_no_memory_holds_matches_nothing_not_the_memories_without_one(backend: Backend) -> None:
    backend.write("acme", make_episode("acme", "e", "bought oat milk"))
    query = backend.query_vector("oat milk")

    assert backend.index.vector_search("acme", query, MemoryFilter(session_id="nowhere"), 10) == []
    assert backend.index.keyword_search("acme", "oat milk", MemoryFilter(session_id="nowhere"), 10) == []


def test_vector_search_sees_tag_changes(backend: Backend) -> None:
    episode = make_episode("acme", "e", "repaired the bike", tags=["chores"])
    backend.write("acme", episode, make_episode("acme", "other", "rode the bike", tags=["fun"]))
    query = backend.query_vector("bike")
    assert _ids(backend.index.vector_search("acme", query, MemoryFilter(tags=("chores",)), 10)) == ["e"]

    backend.store.apply("acme", ChangeSet(upserts=[(episode.model_copy(update={"tags": ["fun"], "version": 2}), None)]))

    assert backend.index.vector_search("acme", query, MemoryFilter(tags=("chores",)), 10) == []
    assert set(_ids(backend.index.vector_search("acme", query, MemoryFilter(tags=("fun",)), 10))) == {
        "e",
        "other",
    }


def test_vector_search_honours_the_limit_and_merges_layers(backend: Backend) -> None:
    memories = _varied_memories()
    backend.write("acme", *memories)
    query = backend.query_vector("the bank emailed me about the quarterly report")

    everything = backend.index.vector_search("acme", query, MemoryFilter(), 1000)
    top = backend.index.vector_search("acme", query, MemoryFilter(), 7)

    assert len(everything) == len(memories)
    assert {c.layer for c in everything} == {"episodic", "semantic"}
    assert [c.score for c in top] == pytest.approx([c.score for c in everything[:7]])
    _assert_best_first(everything)


def test_searches_survive_close_and_reopen(backend: Backend) -> None:
    memories = _varied_memories()
    backend.write("acme", *memories)
    query = backend.query_vector("our team joked about the broken heater")
    keyword_before = backend.index.keyword_search("acme", "heater landlord", MemoryFilter(), 10)
    vector_before = backend.index.vector_search("acme", query, MemoryFilter(), 10)

    again = backend.reopen(None)

    assert _ids(again.index.keyword_search("acme", "heater landlord", MemoryFilter(), 10)) == _ids(keyword_before)
    vector_after = again.index.vector_search("acme", query, MemoryFilter(), 10)
    assert [c.score for c in vector_after] == pytest.approx([c.score for c in vector_before], abs=1e-6)


# --- entity statistics ------------------------------------------------------------------------------------------


def test_entity_shares_count_the_namespace_episodes_naming_each_entity(backend: Backend) -> None:
    backend.write(
        "acme",
        *(make_episode("acme", f"e{i}", f"turn {i}", entities=["Dana", *(["Lisbon"] if i < 2 else [])])
          for i in range(8)),
        make_episode("acme", "quiet", "nobody named"),
        make_fact("acme", "f1", "Dana likes tea"),
    )  # fmt: skip
    backend.write("acme:other", make_episode("acme:other", "o1", "elsewhere", entities=["Noor"]))

    counted = backend.index.entity_shares("acme")

    assert counted.episodes == 9
    assert counted.shares == pytest.approx({"Dana": 8 / 9, "Lisbon": 2 / 9})
    assert backend.index.entity_shares("acme:other").shares == {"Noor": 1.0}
    assert backend.index.entity_shares("nobody") == EntityShares(episodes=0, shares={})
