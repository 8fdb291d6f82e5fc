"""Chat text: emoji and elongations out of the embedded text."""

from __future__ import annotations

from pathlib import Path

import pytest

from rearview.bootstrap import build
from rearview.chat_text import plain_chat_text, unelongated, without_emoji
from rearview.clock import ManualClock
from rearview.domain.recall import RecallQuery
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings

pytestmark = pytest.mark.unit


def test_emoji_and_what_builds_them_leave_the_text() -> None:
    assert without_emoji("booked flights to Lisbon!! 🎉🎉") == "booked flights to Lisbon!!"
    assert without_emoji("love u ❤️ see u 👨‍👩‍👧 at 5 🇬🇧") == "love u see u at 5"
    assert without_emoji("ankle is huge 😭 bc i slipped") == "ankle is huge bc i slipped"
    # Letters of any script, digits and ordinary punctuation stay.
    assert without_emoji("café à 5€, 100% — ok? 我喜欢猫") == "café à 5€, 100% — ok? 我喜欢猫"


def test_elongations_are_said_twice_and_repeated_marks_once() -> None:
    assert unelongated("sooooo goood!!!! yesss???") == "soo good! yess?"
    # Doubled letters and digits are words as they are.
    assert unelongated("all good, 1000 coffees") == "all good, 1000 coffees"


def test_a_message_of_emoji_alone_is_embedded_as_it_is() -> None:
    assert plain_chat_text("😂😂") == "😂😂"
    assert plain_chat_text("lmaooo 😂") == "lmaoo"


def test_the_query_is_embedded_as_plain_chat_text(tmp_path: Path, clock: ManualClock) -> None:
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), clock=clock)
    try:
        services.writer.write("chat:mine", MemoryWrite(content="Ana: doc says im alergic to peanuts", entities=["Ana"]))
        resp = services.recaller.recall(
            "chat:mine", RecallQuery(query="sooo what is she alergic to 😭😭", explain=True)
        )
    finally:
        services.close()
    assert resp.trace is not None
    embed = next(s.detail for s in resp.trace.stages if s.stage == "embed")
    assert embed["text"] == "soo what is she alergic to"
