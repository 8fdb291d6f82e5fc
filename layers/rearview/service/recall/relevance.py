"""The relevance stage: whether recall remembers anything relevant (`no_relevant_memory`), judged on the head of the
ranking (what fusion and the stages after it put first) from several kinds of evidence, none of them an absolute
cosine (whose scale differs from model to model and, in one model, from language to language).

A memory is relevant when any of these speaks for it:

- **meaning**: its margin, how far its cosine with the query stands above the query's background (everyday text
  of the memory's script, see background), reaches the relevance floor (the embedder's calibrated
  `scale.relevance_margin`, or `RecallTuning.min_relevance`); where the model does not read the script the query
  and the memory are in (MiniLM, Chinese), it cannot tell, and counts as relevant;
- **words**: it holds `keyword_relevance` of the query's terms, each matched as keyword search matches it (stemmed:
  "book" holds "Booked") and weighted by how rare it is in the namespace (BM25's IDF: a word a fifth of a chat
  holds, such as its greeting, says little of what a memory is about);
- **a name**: the query names one of its entities (its speaker, a place);
- **a time**: the query names a time range and the memory lies in it ("what did we talk about on May 2nd?"); a query
  that asks for the range alone ("what happened yesterday?") finds only what lies in it, all of it relevant.

Each is expressed as a strength, 1 at its floor, so that one number orders the memories (the "last time" form
compares them so too). A query that is only small talk ("hi!", "thanks", "你好", by the write path's rule) asks for
no memory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from rearview.domain.memory import Memory
from rearview.service.content_rules import is_small_talk
from rearview.service.recall.background import is_cjk_text
from rearview.service.recall.scoring import names_an_entity
from rearview.service.recall.state import Collaborators, RecallState
from rearview.service.recall.text_features import stem_set, term_stems
from rearview.text_analysis import is_vague_term

# The strength at which a memory is relevant: each kind of evidence is scaled so that 1 is its own floor.
RELEVANT_STRENGTH = 1.0


@dataclass(frozen=True)
class Evidence:
    """What speaks for one memory's relevance to the query."""

    cosine: float
    # How far the cosine stands above the query's background (see background), and that as a share of the margin
    # the pair needs (its script's: `CosineScale.margin_for`).
    margin: float
    meaning: float
    # The query's terms the memory holds, weighted by their rarity in the namespace, as a share of its terms; and
    # whether the query names one of its entities.
    terms: float
    named: bool
    # Whether the memory lies in the time range the query names.
    in_range: bool = False

    def strength(self, keyword_relevance: float) -> float:
        """The strongest evidence, `RELEVANT_STRENGTH` where it reaches its floor: at or above it, relevant."""
        words = self.terms / keyword_relevance if keyword_relevance > 0 else math.inf
        return max(self.meaning, words, RELEVANT_STRENGTH if self.named or self.in_range else 0.0)

    def shown(self, keyword_relevance: float) -> dict[str, float | bool]:
        return {
            "strength": round(self.strength(keyword_relevance), 4),
            "cosine": round(self.cosine, 4),
            "margin": round(self.margin, 4),
            "terms": round(self.terms, 4),
            "named": self.named,
            "in_range": self.in_range,
        }


def relevance(ctx: Collaborators, run: RecallState) -> None:
    """The no-relevant-memory verdict: no result when the query is small talk or when no result's evidence reaches
    its floor."""
    with run.stage("relevance") as st:
        small_talk = is_small_talk(run.query.query)
        # "What happened yesterday?" asks for the time range itself: whatever lies in it is relevant.
        time_only = (run.since is not None or run.until is not None) and all(is_vague_term(t) for t in run.terms)
        share = ctx.tuning.keyword_relevance
        evidence = best_evidence(ctx, run, run.top, run.vectors)
        scores = {cid: RELEVANT_STRENGTH if time_only else e.strength(share) for cid, e in evidence.items()}
        best = max(scores.values(), default=0.0)
        run.no_relevant_memory = small_talk or best < RELEVANT_STRENGTH
        st.detail = {
            # The best candidate's strength against the one that counts as relevant (each candidate's below).
            "best": round(best, 4),
            "floor": RELEVANT_STRENGTH,
            "margin_floor": ctx.relevance_floor,
            "keyword_relevance": share,
            "time_only_query": time_only,
            "small_talk": small_talk,
            "no_relevant_memory": run.no_relevant_memory,
        }
        st.candidates = [{"id": cid, **e.shown(share)} for cid, e in evidence.items()]
        if run.no_relevant_memory:
            run.top = []


def best_evidence(
    ctx: Collaborators, run: RecallState, ids: list[str], vectors: Mapping[str, np.ndarray]
) -> dict[str, Evidence]:
    """Each result's evidence, or that of a memory folded under it if stronger (a source it was learned from, a
    near-duplicate): a lesson worded in its own terms is as relevant as the episodes it was learned from that the
    query matched ("what went wrong with the staging deploy?" and the lesson about staging, learned from the failed
    deploys)."""
    under = {
        cid: [s for s in (*run.learned_from.get(cid, ()), *run.folded.get(cid, ())) if s in run.memories] for cid in ids
    }
    every = evidence_of(ctx, run, list(dict.fromkeys([*ids, *(s for found in under.values() for s in found)])), vectors)
    share = ctx.tuning.keyword_relevance
    return {cid: max([every[cid], *(every[s] for s in under[cid])], key=lambda e: e.strength(share)) for cid in ids}


def evidence_of(
    ctx: Collaborators, run: RecallState, ids: list[str], vectors: Mapping[str, np.ndarray]
) -> dict[str, Evidence]:
    """The evidence for each of `ids` (memories of the ranking, with their `vectors`)."""
    backdrop = ctx.query_background(run)
    weights = term_weights(ctx, run)
    query_words, query_script = set(run.terms), backdrop.query_cjk
    out: dict[str, Evidence] = {}
    for cid in ids:
        memory = run.memories[cid]
        vector, script = vectors.get(cid), is_cjk_text(memory.content)
        cosine = float(vector @ run.query_vector) if vector is not None and run.query_vector.size else 0.0
        above = backdrop.margin(cosine, script, vector) if vector is not None else 0.0
        floor = ctx.margin_floor(script == query_script)
        out[cid] = Evidence(
            cosine=cosine,
            margin=above,
            meaning=above / floor if floor > 0 and readable(ctx, script, query_script) else math.inf,
            terms=term_share(run.terms, memory, weights),
            named=names_an_entity(memory, query_words),
            in_range=run.boost_range is not None and run.boost_range[0] <= memory.occurred_at < run.boost_range[1],
        )
    return out


def readable(ctx: Collaborators, script: bool, query_script: bool) -> bool:
    """Whether the embedder's cosine says anything of a memory's meaning for the query: not where both are in a
    script it does not read (MiniLM and Chinese). There it cannot tell, and recall does not refuse on its word (a
    query in another script than the memory's is measured as usual: it meets nothing)."""
    return script != query_script or ctx.embedder.scale.reads(script)


def term_weights(ctx: Collaborators, run: RecallState) -> dict[str, float]:
    """Each query term's weight: its BM25 IDF in the namespace's sampled episodes, over the IDF of a term one
    episode holds (1 for a rare term, 0 for one half the namespace holds)."""
    if not run.terms:
        return {}
    vocabulary = ctx.profiles.get(ctx.store, ctx.index, run.namespace, ctx.tuning.structure_sample).vocabulary
    return idf_weights(run.terms, vocabulary.counts, vocabulary.texts)


# Below this many sampled episodes a namespace is too small to tell a common word from its subject: in a new
# user's three notes on the geocoding API, "geocoding" is held by all three, which makes it the subject, not filler.
IDF_MIN_TEXTS = 10


def idf_weights(terms: list[str], counts: Mapping[str, int], texts: int) -> dict[str, float]:
    """BM25's IDF of each term over `texts` texts of which `counts[term]` hold it, as a share of the IDF of a term
    one text holds (a namespace too small to tell, under `IDF_MIN_TEXTS`, weighs every term fully)."""
    single = _idf(1, texts)
    if texts < IDF_MIN_TEXTS or single <= 0:
        return dict.fromkeys(terms, 1.0)
    return {t: min(1.0, max(0.0, _idf(counts.get(t, 0), texts) / single)) for t in terms}


def _idf(held: int, texts: int) -> float:
    return math.log((texts - held + 0.5) / (held + 0.5)) if texts else 0.0


def term_share(terms: list[str], memory: Memory, weights: Mapping[str, float] | None = None) -> float:
    """The share of `terms` the memory's text and tags hold, each term matched by its stems as keyword search
    matches it ("book" in "Booked") and counted at its weight (1 without weights)."""
    return text_term_share(terms, memory.content + " " + " ".join(memory.tags), weights)


def text_term_share(terms: list[str], text: str, weights: Mapping[str, float] | None = None) -> float:
    """The share of `terms` that `text` holds, each term matched by its stems as keyword search matches it and
    counted at its weight (1 without weights)."""
    stemmed = [(t, stems) for t in terms if (stems := term_stems(t))]
    if not stemmed:
        return 0.0
    held = stem_set(text)
    weight = weights or {}
    return sum(weight.get(t, 1.0) for t, stems in stemmed if stems <= held) / len(stemmed)
