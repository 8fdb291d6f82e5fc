"""The checker accepts a statement only if the episodes it cites support it: the user as its subject, its words
and numbers grounded in them, and their polarity kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rearview.domain.hindsight import InducedMemory
from rearview.domain.memory import Episode, Kind
from rearview.service.hindsight.checker import facets_grounded, problem

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


def _episodes(*texts: str) -> list[Episode]:
    return [
        Episode(id=f"e{i}", namespace="n", content=t, occurred_at=T0 + timedelta(days=i), created_at=T0)
        for i, t in enumerate(texts)
    ]


def _memory(statement: str, episodes: list[Episode], kind: Kind = "preference") -> InducedMemory:
    return InducedMemory(kind=kind, statement=statement, provenance=[e.id for e in episodes])


NO_EMOJI = _episodes(
    "The user asked the agent to stop using emoji in replies.",
    "User said: no emoji please, they look unprofessional.",
    "The user reminded the agent again not to add emoji.",
)


def test_a_faithful_statement_is_accepted() -> None:
    assert problem(_memory("The user does not want emoji in replies", NO_EMOJI), NO_EMOJI) is None


def test_a_reversed_polarity_is_rejected() -> None:
    found = problem(_memory("The user prefers emoji in replies", NO_EMOJI), NO_EMOJI)

    assert found is not None and "reverses" in found


def test_a_value_the_episodes_never_name_is_rejected() -> None:
    found = problem(_memory("The user prefers replies in Chinese", NO_EMOJI), NO_EMOJI)

    assert found is not None and "not in the episodes" in found


def test_a_number_the_episodes_never_give_is_rejected() -> None:
    episodes = _episodes("Keep the planning call to 30 minutes.", "The user wants 30-minute meetings.")

    assert problem(_memory("The user wants meetings of 45 minutes", episodes), episodes) is not None
    assert problem(_memory("The user wants meetings of 30 minutes", episodes), episodes) is None


def test_someone_elses_preference_is_not_the_users() -> None:
    episodes = _episodes("The user's colleague Priya prefers meetings after 3pm.", "Priya asked for late meetings.")

    found = problem(_memory("The user's colleague prefers meetings after 3pm", episodes), episodes)

    assert found is not None and "someone other than the user" in found


def test_chinese_statements_are_grounded_by_their_characters() -> None:
    episodes = _episodes("用户要求通知一律走微信，不要发邮件。", "用户再次提醒：通知用微信。")

    assert problem(_memory("用户希望通知用微信", episodes), episodes) is None
    assert problem(_memory("用户希望通知用钉钉", episodes), episodes) is not None


def test_a_statement_citing_none_of_the_episodes_is_rejected() -> None:
    memory = InducedMemory(kind="fact", statement="The user lives in Rotterdam", provenance=["elsewhere"])

    assert problem(memory, NO_EMOJI) == "it cites none of the group's episodes"


def test_a_facet_named_only_in_a_statements_own_words_is_not_grounded() -> None:
    # "user" and "prefers" are in every statement: a facet made of them says nothing the turn says.
    turn = _episodes("Booked the 7:40 train to Leeds for Thursday.")

    assert not facets_grounded({"user": "prefers"}, turn)
    assert not facets_grounded({"preference": "用户"}, turn)
    assert facets_grounded({"user": "Leeds"}, turn)
    assert facets_grounded({"train": "7:40"}, turn)
    # A Chinese place name ending in a character of grammar (都) is still a name.
    assert facets_grounded({"home": "成都"}, _episodes("我上个月搬到成都了。"))
