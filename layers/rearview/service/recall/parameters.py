"""The recall pipeline's parameters: the user's settings (`RecallTuning`) and the constants no user tunes.

Each constant is a field here, so a benchmark's ablation (bench/locomo.py) or a test passes another value to
`RecallService` instead of patching a module; users set only what `RecallTuning` declares. The measurements behind
each value, with the command that reproduces them, are in bench/RESULTS.md under the field's name.
"""

from __future__ import annotations

from typing import Literal

from rearview.settings import RecallTuning


class RecallParameters(RecallTuning):
    """Every value recall ranks with: the settings, then the constants below."""

    # `weighted` (min-max normalised scores) keeps how much better the best hits are; RRF keeps only their ranks.
    fusion: Literal["rrf", "weighted"] = "weighted"
    # RRF's k, as in Cormack et al. and OpenSearch's hybrid search; larger flattens the ranks.
    rrf_k: int = 60
    # The weight of an episode's context (the turn before it) in keyword search: a reply is found by its question.
    context_weight: float = 0.4
    # Candidates each primitive search returns before fusion: enough for the stages that re-rank them.
    candidates_per_list: int = 60
    # Lifts by a memory's importance and by how often recall returned it: tie-breakers, small on purpose.
    importance_boost: float = 0.1
    access_boost: float = 0.05
    # For a model that reads across scripts: a second vector search with the query moved into the other script
    # (see background.in_other_script) adds the memories in that script it finds (False: off).
    across_search: bool = True
    # Pseudo-relevance feedback: the query vector moves this far towards the first pass's best `feedback_docs`
    # results and searches again, finding what the question's wording misses (0: off).
    feedback_weight: float = 0.5
    feedback_docs: int = 3
    # Where the index scans exactly (SQLite below its graph threshold), feedback's search re-scores only the first
    # one's best this many; a graph or a remote index is searched again.
    feedback_pool: int = 1000
    # The turns around each of the best `neighbour_hits` episodes join at `neighbour_factor` of its score, the reply
    # to a hit that asks a question at `reply_factor`: the answer is often the turn next to the match (0 hits: off).
    neighbour_hits: int = 10
    neighbour_factor: float = 0.6
    reply_factor: float = 0.9
    # Keyword context and neighbours apply where adjacent turns are exchanges (this share of questions answered by
    # the next turn, in sessions of at most this many turns), feedback where the median turn has this many words;
    # measured on a namespace's oldest `structure_sample` episodes, all three kept below `structure_min_episodes`.
    structure_gates: bool = True
    structure_min_reply_share: float = 0.6
    structure_max_session_turns: int = 400
    structure_min_turn_words: int = 6
    structure_sample: int = 2000
    structure_min_episodes: int = 50
    # A memory that asks a question is multiplied by this once the neighbours joined: the reply ranks above it.
    question_factor: float = 0.7
    # A query that asks when multiplies the memories that say when by 1 + this: the dating turn answers it.
    time_answer_boost: float = 0.4
    # Pivoted length normalisation (Singhal et al. 1996): a memory of n words is multiplied by
    # (min(max(n, 5), 2 * length_reference_words) / length_reference_words) ** length_prior, against BM25's discount.
    length_prior: float = 0.3
    length_reference_words: int = 25
    # Entities named by this share of a namespace's episodes (its user, a chat's speakers) leave the vector query,
    # where they pull towards everything that person said, in namespaces of at least `common_entity_min_episodes`.
    common_entity_share: float = 0.2
    common_entity_min_episodes: int = 20
    # Vector weight added where a namespace's median turn is short: one shared word decides a short turn's BM25.
    short_turn_vector_weight: float = 0.2
    # A time expression next to a topic boosts memories in its range by 1 + this rather than filtering (0 filters).
    time_expression_boost: float = 2.0
    # A memory whose entities the query names is multiplied by 1 + this: what the person asked about said ranks first.
    entity_boost: float = 0.2
    # A lesson about a tool, task or entity the query names ranks at this place at least (0: off).
    lesson_place: int = 3
    # The k of the fusion of the reranker's order with ours: small, since it fuses only the best few dozen.
    rerank_rrf_k: int = 10
    # A semantic memory whose decayed confidence is under `stale_below` is stale, returned at `stale_factor` of its
    # score: an old habit ranks under a current one.
    stale_below: float = 0.3
    stale_factor: float = 0.5


def recall_parameters(tuning: RecallTuning) -> RecallParameters:
    """The parameters of a recall run with these settings (a `RecallParameters` passed in keeps its constants)."""
    return RecallParameters(**tuning.model_dump())
