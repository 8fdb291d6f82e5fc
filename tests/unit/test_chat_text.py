"""Chat spelling: emoji and elongations out of the embedded text, and keyword search matching the namespace's own
misspellings of a query word (from its own vocabulary, never another namespace's)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from rearview.bootstrap import Services, build
from rearview.chat_text import Vocabulary, known_word, plain_chat_text, unelongated, without_emoji
from rearview.clock import ManualClock
from rearview.domain.embedding import REFERENCE_ANCHORS, CosineScale
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.settings import RecallTuning, Settings, WriteTuning

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


def test_variants_are_one_edit_away_and_rarer_than_the_word() -> None:
    vocabulary = Vocabulary(
        {"allergic": 6, "alergic": 1, "allegric": 1, "allergics": 2, "class": 20, "clas": 1, "glass": 15,
         "reading": 4, "reeading": 1, "readinggg": 1, "dave": 30, "have": 1}
    )  # fmt: skip
    # A dropped letter, two swapped letters and an added one; commonest first.
    assert vocabulary.variants("allergic", 5, 0.5) == ["allergics", "alergic", "allegric"]
    # "glass" is said about as often as "class": a word of its own, not a slip.
    assert vocabulary.variants("class", 5, 0.5) == ["clas"]
    # An elongation, however long, is a variant of its word.
    assert vocabulary.variants("reading", 5, 0.5) == ["readinggg", "reeading"]
    # A short word has too many real words one edit away; so does a share of 1 let common words in.
    assert vocabulary.variants("dave", 5, 0.5) == []
    assert vocabulary.variants("class", 5, 1.0) == ["glass", "clas"]


def test_a_word_the_namespace_never_says_takes_only_variants_said_once() -> None:
    vocabulary = Vocabulary({"resturant": 1, "restaurants": 3})
    assert vocabulary.variants("restaurant", 5, 0.5) == ["resturant"]
    assert vocabulary.variants("restaurant", 5, 0.5, same=["resturant"]) == []


class _Recording:
    """An embedder that remembers what it was asked to embed."""

    name, dim, scale = "recording", 4, CosineScale(*REFERENCE_ANCHORS, relevance_margin=0.0)

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


def test_the_write_path_embeds_plain_chat_text_unless_told_not_to(tmp_path: Path, clock: ManualClock) -> None:
    for on in (True, False):  # off by default; on, as asked
        embedder = _Recording()
        settings = Settings(
            data_dir=tmp_path / str(on), embedder="hashing", write=WriteTuning(embed_plain_chat=on, context_turns=0)
        )
        services = build(settings, clock=clock, embedder=embedder)
        try:
            services.writer.write_batch("chat:x", [MemoryWrite(content="Ana: got the job!!! 🎉🎉", entities=["Ana"])])
            stored = services.store.list_memories("chat:x", MemoryFilter())
        finally:
            services.close()
        assert embedder.texts[-1] == ("got the job!" if on else "got the job!!! 🎉🎉")
        assert stored[0].content == "Ana: got the job!!! 🎉🎉"  # what is stored is what was said


MINE, THEIRS = "chat:mine", "chat:theirs"


def _spelling_on(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, embedder="hashing", recall=RecallTuning(typo_min_length=5))


def _chat(services: Services, clock: ManualClock, namespace: str, lines: Sequence[str]) -> None:
    start = clock.now() - timedelta(days=1)
    services.writer.write_batch(
        namespace,
        [
            MemoryWrite(content=f"Ana: {text}", entities=["Ana"], session_id="s", importance=1.0,
                        occurred_at=start + timedelta(minutes=i))
            for i, text in enumerate(lines)
        ],
    )  # fmt: skip


@pytest.fixture
def namespaces(tmp_path: Path, clock: ManualClock) -> Iterator[Services]:
    services = build(_spelling_on(tmp_path / "data"), clock=clock)
    small_talk = [f"{w} day {i}" for i, w in enumerate(["long", "good", "slow", "busy", "lazy", "rainy"] * 4)]
    # Mine says "allergic" in full twice and misspells it once, where the fact is.
    _chat(services, clock, MINE, [*small_talk, "my cousin is allergic to cats", "doc says im alergic to peanuts",
                                  "the dog is allergic to wheat"])  # fmt: skip
    # Theirs misspells it another way; that spelling must never reach a query in mine.
    _chat(services, clock, THEIRS, [*small_talk, "allergic to kiwi", "allergic to dust", "so allegric to sesame"])
    yield services
    services.close()


def _spelling(services: Services, namespace: str, query: str) -> tuple[dict[str, object] | None, list[str]]:
    resp = services.recaller.recall(namespace, RecallQuery(query=query, explain=True, top_k=10))
    assert resp.trace is not None
    detail = next((s.detail for s in resp.trace.stages if s.stage == "spelling"), None)
    return detail, [h.content for h in resp.results]


def test_keyword_search_matches_the_namespaces_own_misspelling(namespaces: Services) -> None:
    detail, found = _spelling(namespaces, MINE, "what is Ana allergic to?")
    assert detail is not None and detail["variants"] == {"allergic": ["alergic"]}
    assert "Ana: doc says im alergic to peanuts" in found


def test_no_variants_are_looked_up_with_the_stage_off(tmp_path: Path, clock: ManualClock) -> None:
    assert RecallTuning().typo_min_length == 0  # off by default (bench/RESULTS.md)
    settings = Settings(data_dir=tmp_path / "off", embedder="hashing")
    services = build(settings, clock=clock)
    try:
        _chat(services, clock, MINE, ["allergic to cats", "allergic to dust", "alergic to peanuts"])
        detail, _ = _spelling(services, MINE, "what is Ana allergic to?")
    finally:
        services.close()
    assert detail is None


def test_another_namespaces_vocabulary_is_never_used(namespaces: Services) -> None:
    mine, _ = _spelling(namespaces, MINE, "what is Ana allergic to?")
    theirs, found = _spelling(namespaces, THEIRS, "what is Ana allergic to?")
    assert mine is not None and theirs is not None
    assert "allegric" not in str(mine["variants"]) and "alergic" not in str(theirs["variants"])
    assert theirs["variants"] == {"allergic": ["allegric"]}
    assert all("alergic" not in text for text in found)


def test_a_variant_that_is_an_english_word_is_a_word_of_its_own() -> None:
    assert known_word("games") and known_word("jams") and known_word("shaped")
    assert not known_word("alergic") and not known_word("shcool") and not known_word("reeading")


def test_the_stage_leaves_out_variants_that_are_words(tmp_path: Path, clock: ManualClock) -> None:
    services = build(_spelling_on(tmp_path / "words"), clock=clock)
    try:
        _chat(services, clock, MINE, ["james is here", "james again", "james left", "names are hard", "alergic"])
        detail, _ = _spelling(services, MINE, "what did james say?")
    finally:
        services.close()
    assert detail is not None and detail["variants"] == {}  # "names" is one edit from "james", and a word


def test_words_common_in_the_namespace_leave_its_keyword_search(tmp_path: Path, clock: ManualClock) -> None:
    settings = Settings(data_dir=tmp_path / "common", embedder="hashing", recall=RecallTuning(keyword_common_share=0.2))
    services = build(settings, clock=clock)
    try:
        days = [f"{w} day {i}" for i, w in enumerate(["long", "good", "slow", "busy", "lazy", "rainy"] * 4)]
        _chat(services, clock, MINE, [*days, "peanuts again", "pottery class"])
        # In theirs "peanuts" is said everywhere; that must not take it out of a query in mine.
        _chat(services, clock, THEIRS, [f"peanuts {d}" for d in days])
        mine, _ = _spelling(services, MINE, "did Ana eat peanuts on a rainy day?")
        theirs, _ = _spelling(services, THEIRS, "did Ana eat peanuts on a rainy day?")
    finally:
        services.close()
    assert mine is not None and theirs is not None
    # "ana" (every turn's speaker) and "day" are common in mine; "peanuts" only in theirs.
    assert mine["common_terms"] == ["ana", "day"]
    assert theirs["common_terms"] == ["ana", "peanuts", "day"]


def test_the_query_is_embedded_as_plain_chat_text_too(namespaces: Services) -> None:
    resp = namespaces.recaller.recall(MINE, RecallQuery(query="sooo what is she alergic to 😭😭", explain=True))
    assert resp.trace is not None
    embed = next(s.detail for s in resp.trace.stages if s.stage == "embed")
    assert embed["text"] == "soo what is she alergic to"
