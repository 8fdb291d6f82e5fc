"""Social talk repeated across a conversation (thanks, farewells, cheering), speaker labels and furniture are never
induced as preferences or facts; a real repeated request beside them still is."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.domain.memory import Episode
from rearview.service.hindsight.clusters import build_clusters
from rearview.service.hindsight.phrases import shared_phrase, substantive_terms
from rearview.service.hindsight.rule_inducer import induce_one
from rearview.service.voice import without_speaker
from rearview.settings import ConsolidateTuning

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


def _episodes(texts: list[str]) -> list[Episode]:
    episodes = []
    for i, text in enumerate(texts):
        at = T0 + timedelta(days=i)
        episodes.append(
            Episode(id=f"ep-{i}", namespace="acme:u", content=text, occurred_at=at, created_at=at, session_id=f"s-{i}")
        )
    return episodes


def _statements(texts: list[str]) -> list[str]:
    episodes = _episodes(texts)
    embedder = HashingEmbedder()
    clusters = build_clusters(episodes, {e.id for e in episodes}, ConsolidateTuning(), embedder.embed, embedder.scale)
    return [m.statement for m in (induce_one(c) for c in clusters) if m is not None]


def test_a_speaker_label_is_not_what_was_said() -> None:
    assert without_speaker("Deborah: take care and keep going") == "take care and keep going"
    assert without_speaker("SSL: CERTIFICATE_VERIFY_FAILED") == "SSL: CERTIFICATE_VERIFY_FAILED"
    assert substantive_terms("Thanks! Your support means a lot, take care") == []


def test_farewells_and_thanks_said_in_every_session_induce_nothing() -> None:
    texts = [
        "Melanie: Wow, Caroline. Take care and keep going!",
        "Melanie: Thanks! Your support means a lot to me. Take care!",
        "Melanie: Wow, Caroline, that's amazing. Keep up the good work!",
        "Melanie: Take care and have a good one, keep going.",
        "Melanie: Thanks, Caroline! Take care and keep up the good work.",
    ]
    assert _statements(texts) == []


def test_a_repeated_request_among_them_is_still_induced() -> None:
    texts = [
        "Sam: please always put the sources at the end of the answer",
        "Sam: thanks, take care!",
        "Sam: always put the sources at the end of the answer, please",
        "Sam: thanks, take care!",
        "Sam: put the sources at the end of the answer again please",
    ]
    statements = _statements(texts)
    assert len(statements) == 1 and "sources at the end of the answer" in statements[0]


def test_a_shared_phrase_of_social_words_only_is_none() -> None:
    assert shared_phrase(["Take care and keep going!", "take care, keep going"]) is None
    assert shared_phrase(["use tabs for indentation", "and use tabs for indentation pls"]) == "use tabs for indentation"


def test_a_table_in_a_photo_is_furniture_not_a_format() -> None:
    from rearview.service.hindsight.signals import format_signals

    assert format_signals("Keep it up! [shares a photo of a cake on a wooden table]") == []
    assert format_signals("we sat around the kitchen table, keep going") == []
    for wish in ("put it in a table please", "can you make a table of the prices", "use a table from now on"):
        [signal] = format_signals(wish)
        assert (signal.dimension, signal.value) == ("format", "a table"), wish


def test_a_stage_direction_is_not_what_was_said() -> None:
    """A chat export's trailing aside ("[shares a photo of ...]") and its speaker label are neither grouped on nor
    stated: what meaning reads is what the speaker said."""
    from rearview.service.voice import units_of

    [episode] = _episodes(["Sam: Keep it up! [shares a photo of a man holding a fish] (laughs)"])
    assert [u.text for u in units_of(episode)] == ["Keep it up!"]
