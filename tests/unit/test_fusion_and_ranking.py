from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from rearview.domain.memory import Episode, Fact, Memory
from rearview.domain.search import Candidate
from rearview.service.recall.fusion import FusionWeights, adaptive_weights, rrf, weighted_sum
from rearview.service.recall.parameters import RecallParameters
from rearview.service.recall.results import collapse_near_duplicates, cut_to_budget
from rearview.service.recall.scoring import (
    Scorer,
    boost_factor,
    final_score,
    length_factor,
    recency_factor,
    score_factors,
)

pytestmark = pytest.mark.unit

EQUAL = FusionWeights(keyword=0.5, vector=0.5, reason="test")


def cands(*ids: str) -> list[Candidate]:
    return [Candidate(id=i, layer="episodic", score=float(10 - n)) for n, i in enumerate(ids)]


def test_rrf_rewards_agreement_between_lists() -> None:
    fused = rrf(cands("a", "b", "c"), cands("b", "d", "a"), EQUAL, k=60)
    assert max(fused, key=fused.__getitem__) == "b"
    assert fused["a"] > fused["c"] and fused["a"] > fused["d"]


def test_rrf_rank_one_in_both_lists_scores_one() -> None:
    fused = rrf(cands("a"), cands("a"), EQUAL, k=60)
    assert fused["a"] == pytest.approx(1.0)


def test_rrf_weights_shift_the_winner() -> None:
    kw, vec = cands("k1", "k2"), cands("v1", "v2")
    lean_vec = rrf(kw, vec, FusionWeights(keyword=0.2, vector=0.8, reason=""), k=60)
    lean_kw = rrf(kw, vec, FusionWeights(keyword=0.8, vector=0.2, reason=""), k=60)
    assert max(lean_vec, key=lean_vec.__getitem__) == "v1"
    assert max(lean_kw, key=lean_kw.__getitem__) == "k1"


def test_weighted_sum_normalises_each_list() -> None:
    kw = [Candidate("a", "episodic", 30.0), Candidate("b", "episodic", 10.0)]
    vec = [Candidate("b", "episodic", 0.9), Candidate("a", "episodic", 0.1)]
    fused = weighted_sum(kw, vec, EQUAL)
    assert fused["a"] == pytest.approx(0.5) and fused["b"] == pytest.approx(0.5)
    assert weighted_sum([], [], EQUAL) == {}


def test_a_keyword_list_that_holds_every_match_is_normalised_from_zero() -> None:
    # Two memories hold the query's name; the second's BM25 is close to the first's. Cut at the pool, the list's
    # lowest is the weakest of many matches (0); holding every match, its lowest still matched.
    kw = [Candidate("birthday", "episodic", 4.15), Candidate("answer", "episodic", 3.70)]
    vec = [
        Candidate("answer", "episodic", 0.30),
        Candidate("other", "episodic", 0.25),
        Candidate("birthday", "episodic", 0.10),
    ]
    cut = weighted_sum(kw, vec, EQUAL)
    every = weighted_sum(kw, vec, EQUAL, keyword_all=True)
    assert cut["answer"] == pytest.approx(0.5)
    assert every["answer"] == pytest.approx(0.5 + 0.5 * 3.70 / 4.15)
    assert every["birthday"] == cut["birthday"] == pytest.approx(0.5)
    assert every["other"] == cut["other"]
    assert max(every, key=every.__getitem__) == "answer"


@pytest.mark.parametrize(("terms", "expect_more_vector"), [(1, True), (2, True), (5, None), (9, False)])
def test_adaptive_weights_follow_query_length(terms: int, expect_more_vector: bool | None) -> None:
    w = adaptive_weights(terms, 0.5, has_time_expression=False)
    assert w.keyword + w.vector == pytest.approx(1.0)
    if expect_more_vector is None:
        assert w.vector == pytest.approx(0.5)
    elif expect_more_vector:
        assert w.vector > 0.5
    else:
        assert w.vector < 0.5


def test_adaptive_weights_mention_time_filter() -> None:
    assert "time filter" in adaptive_weights(4, 0.5, has_time_expression=True).reason


def test_recency_factor_halves_the_decaying_part_each_half_life() -> None:
    assert recency_factor(0, 30, 0.5) == pytest.approx(1.0)
    assert recency_factor(30, 30, 0.5) == pytest.approx(0.75)
    assert recency_factor(60, 30, 0.5) == pytest.approx(0.625)
    assert recency_factor(10_000, 30, 0.5) == pytest.approx(0.5, abs=1e-6)
    assert recency_factor(-5, 30, 0.5) == pytest.approx(1.0)


def test_facts_decay_slower_than_episodes() -> None:
    tuning = RecallParameters(episodic_half_life_days=30, semantic_half_life_days=365)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    old = now - timedelta(days=120)
    ep = Episode(id="e", namespace="n", content="x", occurred_at=old, created_at=old, importance=0.5)
    from rearview.domain.memory import Fact

    fact = Fact(id="f", namespace="n", content="x", created_at=old, last_confirmed_at=old, importance=0.5)
    assert final_score(fact, 1.0, now, tuning)[0] > final_score(ep, 1.0, now, tuning)[0]


def test_boosts_grow_with_importance_and_access_and_saturate() -> None:
    tuning = RecallParameters(importance_boost=0.1, access_boost=0.05)
    assert boost_factor(1.0, 0, tuning) > boost_factor(0.1, 0, tuning)
    assert boost_factor(0.5, 5, tuning) > boost_factor(0.5, 0, tuning)
    assert boost_factor(0.5, 10_000, tuning) == pytest.approx(boost_factor(0.5, 20, tuning))


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def test_collapse_keeps_best_of_each_near_duplicate_group() -> None:
    vectors = {
        "a": unit([1, 0, 0]),
        "a2": unit([1, 0.01, 0]),
        "b": unit([0, 1, 0]),
        "a3": unit([0.999, 0, 0.02]),
    }
    out = collapse_near_duplicates(["a", "b", "a2", "a3", "nov"], vectors, 0.95)
    assert out.kept == ["a", "b", "nov"]
    assert out.folded == {"a": ["a2", "a3"]}


def test_cut_to_budget_keeps_a_prefix_and_flags_truncation() -> None:
    texts = {"a": "word " * 40, "b": "word " * 40, "c": "word " * 40}
    kept, truncated, short = cut_to_budget(["a", "b", "c"], texts.__getitem__, budget=120)
    assert kept == ["a", "b"] and truncated and short is None
    kept, truncated, _ = cut_to_budget(["a"], texts.__getitem__, budget=10_000)
    assert kept == ["a"] and not truncated


def test_cut_to_budget_shortens_a_first_result_that_alone_is_too_long() -> None:
    text = "lorem ipsum dolor " * 200
    kept, truncated, short = cut_to_budget(["x"], lambda _: text, budget=20)
    assert kept == ["x"] and truncated
    assert short is not None and len(short) < len(text) and short.endswith("…")


def test_length_prior_favours_longer_memories_within_bounds() -> None:
    tuning = RecallParameters(length_prior=0.3, length_reference_words=25)
    assert length_factor(25, tuning) == pytest.approx(1.0)
    assert length_factor(50, tuning) == pytest.approx(2**0.3)
    assert length_factor(500, tuning) == length_factor(50, tuning), "capped at twice the reference"
    assert length_factor(1, tuning) == length_factor(5, tuning) == pytest.approx(0.2**0.3), "floored at 5 words"
    assert length_factor(500, RecallParameters(length_prior=0.0)) == 1.0


def test_final_score_reports_the_length_factor() -> None:
    tuning = RecallParameters(length_prior=0.3, length_reference_words=4, recency_floor=1.0)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    short = Episode(id="s", namespace="n", content="one two", occurred_at=now, created_at=now, importance=0.5)
    long = short.model_copy(update={"id": "l", "content": "one two three four five six seven eight"})
    (s_score, s_factors), (l_score, l_factors) = (
        final_score(short, 1.0, now, tuning),
        final_score(long, 1.0, now, tuning),
    )
    assert l_score > s_score
    assert l_factors["length"] == pytest.approx(2**0.3, abs=1e-4) and s_factors["length"] == pytest.approx(
        1.25**0.3, abs=1e-4
    )


@pytest.mark.parametrize(
    "tuning",
    [
        RecallParameters(),
        RecallParameters(length_prior=0.0, recency_floor=0.2, access_boost=0.3),
        RecallParameters(stale_below=0.9),
    ],
)
def test_the_rank_stages_scorer_gives_the_same_floats_as_the_factors(tuning: RecallParameters) -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    memories: list[Memory] = []
    for i in range(40):
        when = now - timedelta(days=i * 37.3, seconds=i)  # the last ones far back; one in the future below
        memories.append(
            Episode(
                id=f"e{i}",
                namespace="n",
                content=" ".join(["word"] * (i % 13 + 1)),
                occurred_at=when,
                created_at=when,
                importance=(i % 4) / 4,
                access_count=i % 7,
            )
        )
        memories.append(
            Fact(
                id=f"f{i}",
                namespace="n",
                content=f"fact {i} " * (i % 5 + 1),
                created_at=when,
                last_confirmed_at=when,
                confidence=0.5 + (i % 5) / 10,
                access_count=i % 3,
            )
        )
    memories.append(memories[0].model_copy(update={"id": "future", "occurred_at": now + timedelta(days=3)}))
    scorer = Scorer(now, tuning)
    for n, memory in enumerate(memories * 2):  # the second pass from the scorer's remembered factors
        fused = 0.01 + n / 97
        assert scorer.score(memory, fused) == score_factors(memory, fused, now, tuning).score  # exactly
    assert any(score_factors(m, 1.0, now, tuning).stale is not None for m in memories)
