"""What a memory's score is made of after fusion: recency decay, importance, access and length boosts, and the
named-entity factor."""

from __future__ import annotations

import math
from datetime import datetime
from typing import NamedTuple

from rearview.domain.memory import Fact, Memory
from rearview.service.recall.parameters import RecallParameters
from rearview.service.recall.text_features import entity_words, word_count

# Access counts stop adding to the boost past this many recalls.
_ACCESS_SATURATION = 20


def recency_factor(age_days: float, half_life_days: float, floor: float) -> float:
    """`floor` of the score never decays; the rest halves every half-life. Future-dated memories count as age 0."""
    age = max(0.0, age_days)
    return floor + (1.0 - floor) * math.pow(0.5, age / half_life_days)


def boost_factor(importance: float, access_count: int, tuning: RecallParameters) -> float:
    access = min(1.0, math.log1p(access_count) / math.log1p(_ACCESS_SATURATION))
    return 1.0 + tuning.importance_boost * importance + tuning.access_boost * access


def length_factor(n_words: int, tuning: RecallParameters) -> float:
    """Longer memories are likelier to hold an answer than BM25's length normalisation grants (pivoted length
    normalisation): (n / reference) ** length_prior, with n clamped to [5, 2 * reference]."""
    if tuning.length_prior <= 0:
        return 1.0
    reference = tuning.length_reference_words
    clamped = min(max(n_words, 5), 2 * reference)
    return float((clamped / reference) ** tuning.length_prior)


class Factors(NamedTuple):
    """What a result's score is made of: its fused score times decay, boost and length (and the stale factor of a
    stale fact)."""

    fused: float
    decay: float
    boost: float
    length: float
    stale: float | None

    @property
    def score(self) -> float:
        score = self.fused * self.decay * self.boost * self.length
        return score if self.stale is None else score * self.stale

    def explained(self) -> dict[str, float]:
        """The factors as an explain trace shows them."""
        shown = {
            "fused": round(self.fused, 6),
            "decay": round(self.decay, 4),
            "boost": round(self.boost, 4),
            "length": round(self.length, 4),
        }
        if self.stale is not None:
            shown["stale"] = self.stale
        return shown


def score_factors(memory: Memory, fused: float, as_of: datetime, tuning: RecallParameters) -> Factors:
    """The factors of the score a result is ranked by (`Factors.score`)."""
    half_life = tuning.episodic_half_life_days if memory.layer == "episodic" else tuning.semantic_half_life_days
    age_days = (as_of - memory.occurred_at).total_seconds() / 86400.0
    decay = recency_factor(age_days, half_life, tuning.recency_floor)
    boost = boost_factor(memory.importance, memory.access_count, tuning)
    length = length_factor(word_count(memory.content), tuning)
    stale = tuning.stale_factor if isinstance(memory, Fact) and is_stale(memory, as_of, tuning) else None
    return Factors(fused, decay, boost, length, stale)


class Scorer:
    """`score_factors(...).score` for many memories of one recall, the same arithmetic in the same order (so the
    same floats), with the tuning read once and each access count's and word count's factor remembered: the rank
    stage scores every fused candidate (80-100 a query), and building each one's `Factors` took most of its time."""

    def __init__(self, as_of: datetime, tuning: RecallParameters) -> None:
        self.as_of, self.tuning = as_of, tuning
        self._half_life = {"episodic": tuning.episodic_half_life_days, "semantic": tuning.semantic_half_life_days}
        self._floor = tuning.recency_floor
        self._boosts: dict[tuple[float, int], float] = {}
        self._lengths: dict[int, float] = {}

    def score(self, memory: Memory, fused: float) -> float:
        """`score_factors(memory, fused, as_of, tuning).score`."""
        age_days = (self.as_of - memory.occurred_at).total_seconds() / 86400.0
        decay = recency_factor(age_days, self._half_life[memory.layer], self._floor)
        key = (memory.importance, memory.access_count)
        boost = self._boosts.get(key)
        if boost is None:
            boost = self._boosts[key] = boost_factor(*key, self.tuning)
        n_words = word_count(memory.content)
        length = self._lengths.get(n_words)
        if length is None:
            length = self._lengths[n_words] = length_factor(n_words, self.tuning)
        score = fused * decay * boost * length
        if isinstance(memory, Fact) and is_stale(memory, self.as_of, self.tuning):
            return score * self.tuning.stale_factor
        return score


def final_score(
    memory: Memory, fused: float, as_of: datetime, tuning: RecallParameters
) -> tuple[float, dict[str, float]]:
    """The score a result is ranked by, and the factors that made it (for explain)."""
    factors = score_factors(memory, fused, as_of, tuning)
    return factors.score, factors.explained()


def is_stale(fact: Fact, as_of: datetime, tuning: RecallParameters) -> bool:
    """True when the fact's confidence, decayed since it was last confirmed, fell below the stale floor."""
    return fact.confidence_at(as_of, tuning.confidence_half_life_days) < tuning.stale_below


def names_an_entity(memory: Memory, query_words: set[str]) -> bool:
    """Whether the query names one of the memory's entities (e.g. its speaker): a word of the entity's name is one
    of the query's words."""
    entities = getattr(memory, "entities", None) or []
    return any(not query_words.isdisjoint(entity_words(entity)) for entity in entities)
