"""Brief: the preferences and lessons that apply to a task, offered before it starts, best first, each with why.

A memory applies, from the strongest reason to the weakest:
1. a lesson about the tool about to be used (its dimension is the tool's), or a preference to use another tool
   instead of it;
2. a lesson about an entity the caller names, or whose subject the task names;
3. a preference about the task's topic (a travel preference for a task that books a flight), or a diet or allergy
   fact for a task about food;
4. a preference or lesson recall finds for the task's words and meaning (its relevance, against the best found);
5. a preference that shapes every reply (language, format, length, style).
The strength of the reason times the memory's confidence now (decayed since last confirmed) orders the offers;
memories under `MIN_CONFIDENCE` are left out. The offers are cut to `top_k` and the token budget; the
session's working memory comes with them when a session is given.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from rearview.domain.brief import BriefItem, BriefRequest, BriefResponse
from rearview.domain.hindsight import lesson_dimension
from rearview.domain.limits import MAX_QUERY_CHARS
from rearview.domain.memory import Fact
from rearview.domain.namespaces import validate_namespace
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.errors import StorageFull
from rearview.ports import Clock
from rearview.service.hindsight.phrases import content_terms
from rearview.service.hindsight.topics import EVERY_REPLY, topic_word
from rearview.service.recall import RecallService
from rearview.service.recall.results import cut_to_budget, hit_of
from rearview.service.recall.state import RecallStore
from rearview.settings import RecallTuning
from rearview.text_analysis import names_subject

DEFAULT_TOKEN_BUDGET = 800
# Semantic memories a brief reads at most to match tools, entities and topics (beyond them, recall's search).
MAX_HELD = 2000
# How many candidates recall is asked for (the brief keeps `top_k`).
RECALLED = 20

# The strength of each reason a memory applies (see the module docstring).
TOOL = 1.0
SUBJECT = 0.9
TOPIC = 0.75
RECALL_BEST = 0.7
RECALL_FLOOR = 0.3
EVERY = 0.55
# Memories whose decayed confidence is under this are left out: a brief carries what is still believed.
MIN_CONFIDENCE = 0.2

logger = logging.getLogger(__name__)


@dataclass
class _Offer:
    fact: Fact
    strength: float
    why: str
    score: float = 0.0


class BriefService:
    def __init__(
        self,
        store: RecallStore,
        recaller: RecallService,
        clock: Clock,
        recall_tuning: RecallTuning,
    ) -> None:
        self._store = store
        self._recaller = recaller
        self._clock = clock
        self._recall_tuning = recall_tuning

    def brief(self, namespace: str, req: BriefRequest) -> BriefResponse:
        validate_namespace(namespace)
        now = req.as_of or self._clock.now()
        offers: dict[str, _Offer] = {}
        held = [
            m
            for m in self._store.list_memories(
                namespace,
                MemoryFilter(layers=("semantic",), kinds=("preference", "lesson", "fact"), alive_at=self._clock.now()),
                limit=MAX_HELD,
            )
            if isinstance(m, Fact)
        ]
        for offer in [*self._by_subject(held, req), *self._by_topic(held, req.task), *self._every_reply(held)]:
            _keep(offers, offer)
        for offer in self._recalled(namespace, req, now):
            _keep(offers, offer)
        ranked = self._ranked(offers.values(), now)
        return self._respond(namespace, req, ranked, now)

    # --- reasons ------------------------------------------------------------------------------------------------

    @staticmethod
    def _by_subject(held: list[Fact], req: BriefRequest) -> list[_Offer]:
        tool = (req.tool or "").strip()
        given = [e.strip() for e in req.entities if e.strip()]
        offers = []
        for fact in held:
            if fact.kind == "lesson" and fact.dimension and fact.dimension.startswith("tool:"):
                subject = fact.dimension.removeprefix("tool:")
                if tool and lesson_dimension(tool) == fact.dimension:
                    offers.append(_Offer(fact, TOOL, f"a lesson about {tool}, the tool about to be used"))
                elif any(lesson_dimension(e) == fact.dimension for e in given):
                    offers.append(_Offer(fact, SUBJECT, f"a lesson about {subject}, which the task involves"))
                elif names_subject(subject, req.task):
                    offers.append(_Offer(fact, SUBJECT, f"a lesson about {subject}, named in the task"))
            elif fact.kind == "preference" and fact.dimension == "tools":
                replaced = [k for k in fact.facets if (tool and k == tool.lower()) or names_subject(k, req.task)]
                if replaced:
                    instead = fact.facets[replaced[0]]
                    offers.append(_Offer(fact, TOOL, f"prefers {instead} over {replaced[0]}, which the task uses"))
        return offers

    @staticmethod
    def _by_topic(held: list[Fact], task: str) -> list[_Offer]:
        offers = []
        for fact in held:
            if fact.kind == "lesson":
                continue
            word = topic_word(fact.dimension, task)
            if word:
                offers.append(_Offer(fact, TOPIC, f"about {fact.dimension}: the task mentions '{word}'"))
        return offers

    @staticmethod
    def _every_reply(held: list[Fact]) -> list[_Offer]:
        return [
            _Offer(f, EVERY, f"applies to every reply ({f.dimension})")
            for f in held
            if f.kind == "preference" and f.dimension in EVERY_REPLY
        ]

    def _recalled(self, namespace: str, req: BriefRequest, now: datetime) -> list[_Offer]:
        text = " ".join([req.task, *([req.tool] if req.tool else []), *req.entities])[:MAX_QUERY_CHARS]
        response = self._recaller.recall(
            namespace,
            RecallQuery(
                query=text,
                top_k=RECALLED,
                layers=["semantic"],
                kinds=["preference", "lesson"],
                as_of=now,
                parse_time=False,
                rerank=False,
            ),
            record=False,
        )
        if response.no_relevant_memory or not response.results:
            return []
        best = max(h.score for h in response.results) or 1.0
        found = self._store.get_many(namespace, [h.id for h in response.results])
        task_terms = set(content_terms(text))
        offers = []
        for hit in response.results:
            fact = found.get(hit.id)
            if not isinstance(fact, Fact):
                continue
            shared = [t for t in content_terms(fact.content) if t in task_terms]
            why = f"shares {', '.join(dict.fromkeys(shared[:4]))} with the task" if shared else "close in meaning"
            strength = RECALL_FLOOR + (RECALL_BEST - RECALL_FLOOR) * max(0.0, hit.score / best)
            offers.append(_Offer(fact, strength, why))
        return offers

    # --- ranking and response -------------------------------------------------------------------------------

    def _ranked(self, offers: Iterable[_Offer], now: datetime) -> list[tuple[_Offer, float]]:
        half_life = self._recall_tuning.confidence_half_life_days
        kept = []
        for offer in offers:
            confidence = offer.fact.confidence_at(now, half_life)
            if confidence < MIN_CONFIDENCE:
                continue
            offer.score = offer.strength * (0.5 + 0.5 * confidence)
            kept.append((offer, confidence))
        kept.sort(key=lambda pair: (-pair[0].score, -pair[1], pair[0].fact.id))
        return kept

    def _respond(
        self, namespace: str, req: BriefRequest, ranked: list[tuple[_Offer, float]], now: datetime
    ) -> BriefResponse:
        top = ranked[: req.top_k]
        by_id = {offer.fact.id: (offer, confidence) for offer, confidence in top}
        ids, truncated, _ = cut_to_budget(
            [offer.fact.id for offer, _ in top],
            lambda i: by_id[i][0].fact.content,
            req.token_budget or DEFAULT_TOKEN_BUDGET,
        )
        items = []
        for memory_id in ids:
            offer, confidence = by_id[memory_id]
            hit = hit_of(offer.fact, offer.score, [], now, self._recaller.tuning)
            items.append(BriefItem(memory=hit, why=offer.why, confidence=confidence))
        if items:
            try:
                self._store.record_access(namespace, [i.memory.id for i in items], self._clock.now())
            except StorageFull as exc:  # a counter: a store that cannot write still briefs
                logger.warning("brief: the accesses of %s were not recorded: %s", namespace, exc.message)
        working = None
        if req.session_id:
            entries = self._store.get_working(namespace, req.session_id, self._clock.now())
            working = {e.key: e.value for e in entries}
        return BriefResponse(
            items=items,
            working=working,
            no_relevant_memory=not items,
            truncated=truncated,
        )


def _keep(offers: dict[str, _Offer], offer: _Offer) -> None:
    """The strongest reason per memory."""
    held = offers.get(offer.fact.id)
    if held is None or offer.strength > held.strength:
        offers[offer.fact.id] = offer
