"""What was learned comes first: a semantic memory ranks above the episodes it was learned from when both match, and
those episodes fold under it (ids and a count), outside the token budget. On the embedded backend (SQLite, hashing
embedder), with the rule inducer learning the preference as the README's Python example does."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.write import MemoryWrite

pytestmark = pytest.mark.unit
NS = "me"
README_QUESTION = "Which language to reply in?"
ASKED = ["Please answer in Chinese from now on.", "Can you reply in Chinese?", "Chinese, please."]


@pytest.fixture
def learned(services: Services, clock: ManualClock) -> tuple[str, list[str]]:
    """The README's example: three requests on three days, consolidated into a preference; (its id, the episodes)."""
    episodes = []
    for day, text in enumerate(ASKED):
        clock.set(clock.now() + timedelta(days=1))
        episodes.append(services.writer.write(NS, MemoryWrite(content=text, session_id=f"chat-{day}")).id)
    services.consolidator.consolidate(NS, ConsolidateRequest())
    (preference,) = [h for h in _recall(services, "Chinese", layers=["semantic"]).results if h.kind == "preference"]
    assert set(preference.provenance) == set(episodes)
    return preference.id, episodes


def _recall(services: Services, query: str, **kw: Any) -> RecallResponse:
    return services.recaller.recall(NS, RecallQuery(query=query, **kw))


def test_the_preference_comes_first_with_its_sources_folded_under_it(
    services: Services, learned: tuple[str, list[str]]
) -> None:
    preference, episodes = learned

    response = _recall(services, README_QUESTION, explain=True)

    first = response.results[0]
    assert first.id == preference
    assert set(first.folded_sources) == set(episodes)
    assert first.folded_sources_count == len(episodes)
    assert not {h.id for h in response.results} & set(episodes)
    assert response.trace is not None
    assert "learned_first" in [s.stage for s in response.trace.stages]


def test_without_the_semantic_layer_the_episodes_come_back_as_they_are(
    services: Services, learned: tuple[str, list[str]]
) -> None:
    _, episodes = learned

    response = _recall(services, README_QUESTION, layers=["episodic"])

    assert set(episodes) <= {h.id for h in response.results}
    assert all(h.folded_sources == [] and h.folded_sources_count == 0 for h in response.results)


def test_a_last_time_query_folds_nothing(services: Services, learned: tuple[str, list[str]]) -> None:
    _, episodes = learned

    response = _recall(services, "what did I ask last time about Chinese replies?")

    assert episodes[-1] in {h.id for h in response.results}


def test_folded_sources_cost_no_tokens_of_the_budget(services: Services, learned: tuple[str, list[str]]) -> None:
    preference, _ = learned

    response = _recall(services, README_QUESTION, token_budget=12)

    assert [h.id for h in response.results] == [preference]
    assert response.results[0].folded_sources_count == 3
