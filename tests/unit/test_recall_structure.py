"""The structure stage: a namespace's own turns decide whether keyword context, session neighbours and feedback
apply; and the write path's embedded text leaves a turn's speaker label out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.embedding import REFERENCE_ANCHORS, CosineScale
from rearview.domain.memory import Episode
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.service.recall.fusion import FusionWeights
from rearview.service.recall.parameters import RecallParameters
from rearview.service.recall.profile import NamespaceProfile, profile_of, refinements, short_turn_weights
from rearview.settings import Settings, WriteTuning
from rearview.text_analysis import without_speaker_label

pytestmark = pytest.mark.unit
NS = "chat:a-b"


def _turns(clock: ManualClock, said: Sequence[tuple[str, str]], session: str = "s1") -> list[Episode]:
    start = clock.now()
    return [
        Episode(
            id=f"t{i}",
            namespace=NS,
            content=f"{who}: {text}",
            occurred_at=start + timedelta(seconds=i),
            entities=[who],
            session_id=session,
            created_at=start,
        )
        for i, (who, text) in enumerate(said)
    ]


def test_a_profile_counts_the_questions_the_next_turn_answers(clock: ManualClock) -> None:
    turns = _turns(
        clock,
        [("Ana", "how was the trip?"), ("Ben", "great, we saw the fjords"), ("Ana", "did you swim?"),
         ("Ana", "it must have been cold"), ("Ben", "too cold")],
    )  # fmt: skip
    profile = profile_of(turns)
    assert (profile.sampled, profile.sessions, profile.questions) == (5, 1, 2)
    assert profile.reply_share == 0.5  # "did you swim?" is followed by its asker's next message
    assert profile.session_turns == 5.0
    assert profile.turn_words == 4.0  # words of 4, 5, 3, 5, 2 (the labels not counted)


def test_a_profile_without_sessions_is_empty(clock: ManualClock) -> None:
    episode = _turns(clock, [("Ana", "hello there")])[0].model_copy(update={"session_id": None})
    assert profile_of([episode]).sampled == 0


def _profile(reply_share: float, session_turns: float, turn_words: float, sampled: int = 500) -> NamespaceProfile:
    return NamespaceProfile(sampled, 10, session_turns, turn_words, 100, reply_share)


def test_exchanges_in_short_sessions_keep_every_refinement() -> None:
    chosen = refinements(_profile(1.0, 24, 22), RecallParameters())
    assert (chosen.context, chosen.neighbours, chosen.feedback) == (True, True, True)


def test_long_logs_of_short_bursty_turns_turn_the_refinements_off() -> None:
    chosen = refinements(_profile(0.5, 900, 3), RecallParameters())
    assert (chosen.context, chosen.neighbours, chosen.feedback) == (False, False, False)
    assert "not exchanges" in chosen.reason and "too short" in chosen.reason


def test_each_measure_gates_on_its_own() -> None:
    tuning = RecallParameters()
    long_sessions = refinements(_profile(1.0, tuning.structure_max_session_turns + 1, 20), tuning)
    assert (long_sessions.context, long_sessions.neighbours, long_sessions.feedback) == (False, False, True)
    short_turns = refinements(_profile(1.0, 20, tuning.structure_min_turn_words - 1), tuning)
    assert (short_turns.context, short_turns.neighbours, short_turns.feedback) == (True, True, False)


def test_a_small_sample_or_gates_off_keep_the_defaults() -> None:
    assert refinements(_profile(0.0, 5000, 1, sampled=10), RecallParameters()).feedback
    assert refinements(_profile(0.0, 5000, 1), RecallParameters(structure_gates=False)).neighbours


@pytest.fixture
def chat(tmp_path: Path, clock: ManualClock) -> Iterator[Services]:
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), clock=clock)
    start = clock.now() - timedelta(days=3)
    burst = ["lol", "ok wait", "the dog ate my sock", "omg", "brb", "running late", "ugh mondays", "same"]
    items = [
        MemoryWrite(
            id=f"m{i}",
            content=f"{'Ana' if (i // 3) % 2 else 'Ben'}: {burst[i % len(burst)]} {i}",
            occurred_at=start + timedelta(seconds=30 * i),
            entities=["Ana" if (i // 3) % 2 else "Ben"],
            session_id="log",
            importance=1.0,
        )
        for i in range(120)
    ]
    services.writer.write_batch(NS, items)
    yield services
    services.close()


def _stage(services: Services, name: str) -> dict[str, object] | None:
    resp = services.recaller.recall(NS, RecallQuery(query="what did the dog eat?", explain=True))
    assert resp.trace is not None
    return next((s.detail for s in resp.trace.stages if s.stage == name), None)


def test_recall_skips_the_refinements_a_bursty_log_does_not_support(chat: Services) -> None:
    detail = _stage(chat, "structure")
    assert detail is not None
    assert (detail["context"], detail["neighbours"], detail["feedback"]) == (False, False, False)
    assert _stage(chat, "neighbours") is None and _stage(chat, "feedback") is None
    keyword = _stage(chat, "keyword")
    assert keyword is not None and keyword["context_weight"] == 0.0


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


def _embedded(tmp_path: Path, clock: ManualClock, said: Sequence[tuple[str, str]], **tuning: object) -> list[str]:
    """What the write path embeds for turns of one session, written as one batch."""
    embedder = _Recording()
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", write=WriteTuning(**tuning))
    services = build(settings, clock=clock, embedder=embedder)
    try:
        services.writer.write_batch(
            NS,
            [
                MemoryWrite(content=f"{who}: {text}", entities=[who], session_id="s", importance=1.0,
                            occurred_at=clock.now() + timedelta(seconds=i))
                for i, (who, text) in enumerate(said)
            ],
        )  # fmt: skip
        stored = services.store.list_memories(NS, MemoryFilter())
        assert [m.content for m in stored] == [f"{who}: {text}" for who, text in said]  # the content keeps its label
        return embedder.texts[-len(said) :]
    finally:
        services.close()


_PUPPY = [("Ana", "did you name the puppy?"), ("Ben", "yes, Mochi"), ("Ben", "Note: cute"), ("Ben", "lol")]


def test_replies_embed_a_reply_with_the_question_and_other_turns_alone(tmp_path: Path, clock: ManualClock) -> None:
    assert _embedded(tmp_path, clock, _PUPPY, embed_context="replies") == [
        "did you name the puppy?", "did you name the puppy?\nyes, Mochi", "Note: cute", "lol",
    ]  # fmt: skip


def test_every_turn_or_none_embeds_its_context(tmp_path: Path, clock: ManualClock) -> None:
    assert _embedded(tmp_path / "all", clock, _PUPPY) == [
        "did you name the puppy?", "did you name the puppy?\nyes, Mochi", "yes, Mochi\nNote: cute", "Note: cute\nlol",
    ]  # fmt: skip
    assert _embedded(tmp_path / "none", clock, _PUPPY, embed_context="none")[1] == "yes, Mochi"


def test_a_label_goes_only_when_it_names_an_entity() -> None:
    assert without_speaker_label("Ana: see you at 5", ["ana"]) == "see you at 5"
    assert without_speaker_label("Note: see you at 5", ["Ana"]) == "Note: see you at 5"
    assert without_speaker_label("Ana:", ["Ana"]) == "Ana:"


def test_each_namespace_is_profiled_from_its_own_turns_only(chat: Services, clock: ManualClock) -> None:
    other = "chat:c-d"
    start = clock.now() - timedelta(days=2)
    exchange = [("Cy", "how did the interview at the bakery go yesterday?"),
                ("Di", "really well, they offered me the early shift and I start on Monday morning")]  # fmt: skip
    chat.writer.write_batch(
        other,
        [
            MemoryWrite(content=f"{who}: {text} ({i})", entities=[who], session_id=f"s{i // 20}", importance=1.0,
                        occurred_at=start + timedelta(minutes=i))
            for i in range(60)
            for who, text in [exchange[i % 2]]
        ],
    )  # fmt: skip
    resp = chat.recaller.recall(other, RecallQuery(query="when does Di start at the bakery?", explain=True))
    assert resp.trace is not None
    detail = next(s.detail for s in resp.trace.stages if s.stage == "structure")
    assert (detail["context"], detail["neighbours"], detail["feedback"]) == (True, True, True)
    theirs = len(chat.store.list_memories(other, MemoryFilter(layers=("episodic",))))
    profile = detail["profile"]
    assert isinstance(profile, dict) and profile["sampled"] == theirs and profile["sessions"] == 3
    assert resp.results and all(h.content.startswith(("Cy:", "Di:")) for h in resp.results)
    # The bursty log's namespace keeps its own profile, asked after the other was measured.
    ours = len(chat.store.list_memories(NS, MemoryFilter(layers=("episodic",))))
    mine = _stage(chat, "structure")
    assert mine is not None and mine["profile"]["sampled"] == ours != theirs  # type: ignore[index]
    assert (mine["context"], mine["neighbours"], mine["feedback"]) == (False, False, False)


def test_short_turns_move_weight_to_vectors_only_when_asked() -> None:
    base = FusionWeights(keyword=0.5, vector=0.5, reason="3 terms: base weights")
    on = RecallParameters()
    moved = short_turn_weights(base, _profile(0.4, 900, 4), on)
    assert (moved.keyword, moved.vector) == (0.3, 0.7) and "median turn 4 words" in moved.reason
    assert short_turn_weights(base, _profile(1.0, 24, 22), on) == base  # long turns
    assert short_turn_weights(base, _profile(0.4, 900, 4, sampled=10), on) == base  # too few to tell
    assert short_turn_weights(base, _profile(0.4, 900, 4), RecallParameters(short_turn_vector_weight=0)) == base
