"""A memory as a DynamoDB item and back: the attributes consolidation by induction adds (a fact's facets and
evidence, an episode's merged repeats) survive the round trip."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rearview.adapters.dynamodb.items import memory_attributes, memory_from_item
from rearview.domain.memory import Evidence, Fact
from support.induction_clusters import episode

pytestmark = pytest.mark.unit

T = datetime(2026, 3, 1, 8, 30, 0, 250000, tzinfo=UTC)


def test_a_fact_keeps_its_facets_evidence_and_inducer() -> None:
    fact = Fact(
        id="fa-1",
        namespace="acme:u-1",
        content="The user prefers replies in Chinese",
        created_at=T,
        last_confirmed_at=T,
        kind="preference",
        dimension="language",
        facets={"replies": "Chinese", "code comments": "English"},
        evidence=Evidence(episodes=3, occurrences=4, sessions=3, days=3, first_at=T, last_at=T, successes=0),
        induced_by="openai:qwen2.5:7b-instruct",
        first_seen_at=T,
    )

    item = memory_attributes(fact)

    assert item["facets"] == {"M": {"replies": {"S": "Chinese"}, "code comments": {"S": "English"}}}
    assert "failures" in item["evidence"]["M"] and "first_at" in item["evidence"]["M"]
    assert memory_from_item(item) == fact


def test_a_fact_without_evidence_or_facets_comes_back_the_same() -> None:
    fact = Fact(id="fa-2", namespace="acme", content="Lives in Lisbon", created_at=T, last_confirmed_at=T)

    assert memory_from_item(memory_attributes(fact)) == fact


def test_an_episode_keeps_its_outcome_status_and_merged_repeats() -> None:
    repeated = episode(
        "ep-1",
        "Geocoded 50 addresses",
        0,
        outcome="200 OK",
        outcome_status="success",
        session_id="s1",
        last_occurred_at=datetime(2026, 3, 4, tzinfo=UTC),
        session_ids=["s2", "s3"],
        confirmations=3,
    )

    assert memory_from_item(memory_attributes(repeated)) == repeated
