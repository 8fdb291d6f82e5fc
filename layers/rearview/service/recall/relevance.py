"""The relevance stage: whether recall remembers anything relevant (`no_relevant_memory`), judged on the head of the
ranking (what fusion and the stages after it put first) from several kinds of evidence, never the cosine alone.

A memory's relevance is the strongest of:

- **meaning**: its cosine with the query, which the embedder's floor (`Embedder.relevance_floor`, or
  `RecallTuning.min_relevance`) is calibrated against;
- **words**: `keyword_relevance` times the share of the query's terms the memory holds, matched as keyword search
  matches them (stemmed: "book" holds "Booked"), in its text and tags;
- **a name**: `keyword_relevance` when the query names one of the memory's entities (its speaker, a place);
- **a time**: 1 when the query asks for a time range alone ("what happened yesterday?"): whatever lies in it is
  what was asked for.

A query that is only small talk ("hi!", "thanks", "你好") asks for no memory: the write path would not have stored
it, and recall answers it with none. The verdict: no relevant memory when the best relevance of the head is under the
floor.
"""

from __future__ import annotations

from dataclasses import dataclass

from rearview.domain.memory import Memory
from rearview.service.content_rules import is_small_talk
from rearview.service.recall.scoring import names_an_entity
from rearview.service.recall.state import Collaborators, RecallState
from rearview.service.recall.text_features import stem_set
from rearview.stemming import index_terms
from rearview.text_analysis import is_vague_term


@dataclass(frozen=True)
class Evidence:
    """What speaks for one memory's relevance to the query."""

    cosine: float
    # The share of the query's terms the memory holds (stemmed), and whether the query names one of its entities.
    terms: float
    named: bool

    def relevance(self, keyword_relevance: float) -> float:
        words = keyword_relevance * max(self.terms, 1.0 if self.named else 0.0)
        return max(self.cosine, words)

    def shown(self, keyword_relevance: float) -> dict[str, float | bool]:
        return {
            "relevance": round(self.relevance(keyword_relevance), 4),
            "cosine": round(self.cosine, 4),
            "terms": round(self.terms, 4),
            "named": self.named,
        }


def relevance(ctx: Collaborators, run: RecallState) -> None:
    """The no-relevant-memory verdict: no result when the query is small talk or when the best relevance among the
    results falls below the relevance floor."""
    with run.stage("relevance") as st:
        small_talk = is_small_talk(run.query.query)
        # "What happened yesterday?" asks for the time range itself: whatever lies in it is relevant.
        time_only = (run.since is not None or run.until is not None) and all(is_vague_term(t) for t in run.terms)
        keyword_relevance = ctx.tuning.keyword_relevance
        evidence = {cid: _best_evidence(run, cid, keyword_relevance) for cid in run.top}
        scores = {cid: 1.0 if time_only else e.relevance(keyword_relevance) for cid, e in evidence.items()}
        best = max(scores.values(), default=0.0)
        run.no_relevant_memory = small_talk or best < ctx.relevance_floor
        st.detail = {
            "best": round(best, 4),
            "floor": ctx.relevance_floor,
            "time_only_query": time_only,
            "small_talk": small_talk,
            "no_relevant_memory": run.no_relevant_memory,
        }
        st.candidates = [{"id": cid, **e.shown(keyword_relevance)} for cid, e in evidence.items()]
        if run.no_relevant_memory:
            run.top = []


def _best_evidence(run: RecallState, cid: str, keyword_relevance: float) -> Evidence:
    """A result's evidence, or that of a memory folded under it if stronger (a source it was learned from, a
    near-duplicate): a lesson worded in its own terms is as relevant as the episodes it was learned from that the
    query matched ("what went wrong with the staging deploy?" and the lesson about staging, learned from the failed
    deploys)."""
    found = [evidence_of(run, run.memories[cid], cid)]
    under = [*run.learned_from.get(cid, ()), *run.folded.get(cid, ())]
    found += [evidence_of(run, run.memories[s], s) for s in under if s in run.memories]
    return max(found, key=lambda e: e.relevance(keyword_relevance))


def evidence_of(run: RecallState, memory: Memory, cid: str) -> Evidence:
    """The evidence for `memory` (id `cid`) against the recall's query."""
    vector = run.vectors.get(cid)
    cosine = float(vector @ run.query_vector) if vector is not None and run.query_vector.size else 0.0
    return Evidence(cosine=cosine, terms=term_share(run.terms, memory), named=names_an_entity(memory, set(run.terms)))


def term_share(terms: list[str], memory: Memory) -> float:
    """The share of `terms` the memory's text and tags hold, each term matched by its stems as keyword search
    matches it ("book" in "Booked")."""
    return text_term_share(terms, memory.content + " " + " ".join(memory.tags))


def text_term_share(terms: list[str], text: str) -> float:
    """The share of `terms` that `text` holds, each term matched by its stems as keyword search matches it."""
    stemmed = [stems for t in terms if (stems := set(index_terms(t)))]
    if not stemmed:
        return 0.0
    held = stem_set(text)
    return sum(1 for stems in stemmed if stems <= held) / len(stemmed)
