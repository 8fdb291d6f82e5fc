"""Consolidation on every backend: what the write path, consolidation and forgetting do with episodes holds
whether the store is SQLite, DynamoDB or the in-memory fake and the index SQLite's, OpenSearch's or the fake's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.forget import ForgetRequest
from rearview.domain.memory import Episode, Fact
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.service.forget import ForgetService
from rearview.service.hindsight.consolidation import ConsolidationService
from rearview.service.recall import RecallService
from rearview.service.write import WriteService
from rearview.settings import ConsolidateTuning, RecallTuning, WriteTuning
from support.contract_backends import T0, Backend

pytestmark = pytest.mark.contract
NS = "acme:u-1"


class Hindsight:
    """The services consolidation needs, over one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.writer = WriteService(backend.store, backend.index, backend.embedder, backend.clock, WriteTuning())
        self.consolidator = ConsolidationService(
            backend.store, backend.embedder, backend.clock, ConsolidateTuning(), WriteTuning()
        )
        self.forgetter = ForgetService(backend.store, self.consolidator)
        self.recaller = RecallService(
            backend.store, backend.index, backend.embedder, backend.clock, RecallTuning(), 0.25
        )

    def say(self, text: str, day: float, session: str, **fields: object) -> str:
        self.backend.clock.set(T0 + timedelta(days=day))
        result = self.writer.write(NS, MemoryWrite(content=text, session_id=session, **fields))
        return result.merged_into or result.id

    def consolidate(self, day: float) -> None:
        self.backend.clock.set(T0 + timedelta(days=day))
        self.consolidator.consolidate(NS, ConsolidateRequest())

    def facts(self, *, superseded: bool = False) -> list[Fact]:
        flt = MemoryFilter(layers=("semantic",), include_superseded=superseded)
        return [m for m in self.backend.store.list_memories(NS, flt) if isinstance(m, Fact)]


@pytest.fixture
def hindsight(backend: Backend) -> Hindsight:
    return Hindsight(backend)


def test_repeated_requests_become_a_preference_and_a_changed_one_supersedes_it(hindsight: Hindsight) -> None:
    for day, text in enumerate(["Please reply in English.", "Answer in English, please.", "English please."]):
        hindsight.say(text, day * 2, f"a{day}")
    hindsight.consolidate(7)
    [english] = hindsight.facts()
    assert (english.kind, english.dimension, english.facets) == ("preference", "language", {"replies": "English"})
    for day, text in enumerate(["From now on reply in Spanish.", "Spanish please.", "Answer in Spanish please."]):
        hindsight.say(text, 30 + day * 2, f"b{day}")
    hindsight.consolidate(40)
    [spanish] = hindsight.facts()
    assert spanish.facets == {"replies": "Spanish"} and spanish.evidence is not None
    history = [f for f in hindsight.facts(superseded=True) if f.status == "superseded"]
    assert [(f.id, f.superseded_by) for f in history] == [(english.id, spanish.id)]


def test_a_lesson_from_outcomes_is_found_by_recall_and_filtered_by_kind(hindsight: Hindsight) -> None:
    for i, size in enumerate((200, 100, 50)):
        hindsight.say(f"Called the geocoding API with a batch of {size} addresses", i * 0.01, "s1",
                      entities=["geocoding API"], outcome="200 OK" if size == 50 else "HTTP 413")  # fmt: skip
    hindsight.consolidate(1)
    [lesson] = hindsight.facts()
    assert lesson.kind == "lesson" and "50 addresses" in lesson.content
    lessons = hindsight.recaller.recall(NS, RecallQuery(query="geocoding API batch size", kinds=["lesson"]))
    assert [h.id for h in lessons.results] == [lesson.id] and lessons.results[0].kind == "lesson"
    failures = hindsight.recaller.recall(NS, RecallQuery(query="geocoding API batch", outcomes=["failure"]))
    assert {h.outcome_status for h in failures.results} == {"failure"}
    assert len({i for h in failures.results for i in (h.id, *h.collapsed)}) == 2  # near-duplicates may fold


def test_forgetting_a_source_restates_or_deletes_what_was_induced_from_it(hindsight: Hindsight) -> None:
    texts = ["I live in Porto, close to the Douro.", "Since I moved to Porto I cycle.", "Here in Porto it rains."]
    ids = [hindsight.say(text, day * 5, f"s{day}") for day, text in enumerate(texts)]
    hindsight.consolidate(20)
    [held] = hindsight.facts()
    hindsight.forgetter.forget(NS, ForgetRequest(ids=[ids[0]]))
    [restated] = hindsight.facts()
    assert restated.id == held.id and ids[0] not in restated.provenance and "Douro" not in restated.model_dump_json()
    hindsight.forgetter.forget(NS, ForgetRequest(ids=[ids[1]]))
    assert hindsight.facts(superseded=True) == []


def test_merged_repeats_keep_their_occurrences(hindsight: Hindsight) -> None:
    first = hindsight.say("Reply in Chinese.", 0, "a")
    assert hindsight.say("Reply in Chinese.", 2, "b") == first
    episode = hindsight.backend.store.get(NS, first)
    assert isinstance(episode, Episode) and episode.confirmations == 2 and episode.sessions == ["a", "b"]
    assert episode.last_seen_at == T0 + timedelta(days=2)
