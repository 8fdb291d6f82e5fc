"""A namespace's conversational structure, measured from its own episodes (see the structure stage): the profile,
the refinements it supports, and a per-namespace cache."""

from __future__ import annotations

import statistics
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from rearview.chat_text import Vocabulary
from rearview.domain.memory import Episode, Memory
from rearview.domain.search import MemoryFilter
from rearview.ports import MemoryReader, SearchIndex
from rearview.service.recall.fusion import FusionWeights
from rearview.service.recall.parameters import RecallParameters
from rearview.text_analysis import asks_question, tokens

# How many namespaces' profiles a service keeps.
_CACHED = 256
# A profile is measured again once the namespace holds this share more episodes than when it was measured.
_REMEASURE_GROWTH = 0.2


@dataclass(frozen=True)
class NamespaceProfile:
    """What a sample of a namespace's episodes says about its conversations."""

    sampled: int
    sessions: int
    session_turns: float
    turn_words: float
    questions: int
    reply_share: float
    # The words of the sampled episodes and how many hold each: the terms' weights of the relevance stage.
    vocabulary: Vocabulary = field(default_factory=lambda: Vocabulary({}), repr=False, compare=False)

    def figures(self) -> dict[str, float | int]:
        """The profile's measurements, for a trace (the vocabulary as its size)."""
        shown: dict[str, float | int] = {k: v for k, v in self.__dict__.items() if k != "vocabulary"}
        return {**shown, "vocabulary": len(self.vocabulary)}


@dataclass(frozen=True)
class Refinements:
    """Which structure-dependent refinements a recall applies, and why."""

    context: bool = True
    neighbours: bool = True
    feedback: bool = True
    reason: str = "defaults"


def profile_of(episodes: Sequence[Memory]) -> NamespaceProfile:
    """The profile of episodes given oldest first (a session's turns in the order they were said)."""
    vocabulary = Vocabulary(Counter(w for m in episodes for w in set(tokens(m.content))), len(episodes))
    by_session: dict[str, list[Episode]] = {}
    for memory in episodes:
        if isinstance(memory, Episode) and memory.session_id:
            by_session.setdefault(memory.session_id, []).append(memory)
    turns = [t for session in by_session.values() for t in session]
    if not turns:
        return NamespaceProfile(0, 0, 0.0, 0.0, 0, 0.0, vocabulary)
    sizes = [len(session) for session in by_session.values()]
    questions = answered = 0
    for session in by_session.values():
        for turn, following in zip(session, session[1:], strict=False):
            if asks_question(turn.content):
                questions += 1
                answered += int(set(following.entities) != set(turn.entities))
    return NamespaceProfile(
        sampled=len(turns),
        sessions=len(by_session),
        # The size of the session an average turn is in: a few long logs are not hidden by many short ones.
        session_turns=sum(n * n for n in sizes) / len(turns),
        turn_words=float(statistics.median(len(tokens(_without_label(t))) for t in turns)),
        questions=questions,
        reply_share=answered / questions if questions else 0.0,
        vocabulary=vocabulary,
    )


def _without_label(episode: Episode) -> str:
    """The turn's text without a leading "<speaker>: " label naming one of its entities."""
    head, sep, rest = episode.content.partition(":")
    if sep and any(head.strip().lower() == e.lower() for e in episode.entities):
        return rest
    return episode.content


def refinements(profile: NamespaceProfile, tuning: RecallParameters) -> Refinements:
    """The refinements the namespace's structure supports (every one while the sample is too small to tell)."""
    if not tuning.structure_gates or profile.sampled < tuning.structure_min_episodes:
        return Refinements(reason=f"{profile.sampled} sessioned episodes sampled: too few to tell")
    adjacent = profile.reply_share >= tuning.structure_min_reply_share and (
        profile.session_turns <= tuning.structure_max_session_turns
    )
    wordy = profile.turn_words >= tuning.structure_min_turn_words
    reasons = [
        f"reply share {profile.reply_share:.2f} (>= {tuning.structure_min_reply_share}), session turns "
        f"{profile.session_turns:.0f} (<= {tuning.structure_max_session_turns}): "
        + ("adjacent turns are exchanges" if adjacent else "adjacent turns are not exchanges"),
        f"median turn {profile.turn_words:.0f} words (>= {tuning.structure_min_turn_words}): "
        + ("feedback on" if wordy else "too short for feedback"),
    ]
    return Refinements(context=adjacent, neighbours=adjacent, feedback=wordy, reason="; ".join(reasons))


def short_turn_weights(weights: FusionWeights, profile: NamespaceProfile, tuning: RecallParameters) -> FusionWeights:
    """The fusion weights with `short_turn_vector_weight` moved to vectors where the namespace's median turn is under
    `structure_min_turn_words` (one shared word decides a short turn's BM25); as they are elsewhere."""
    shift = tuning.short_turn_vector_weight
    if shift <= 0 or profile.sampled < tuning.structure_min_episodes:
        return weights
    if profile.turn_words >= tuning.structure_min_turn_words:
        return weights
    vector = min(1.0, weights.vector + shift)
    reason = f"{weights.reason}; median turn {profile.turn_words:.0f} words: vectors weigh more"
    return FusionWeights(keyword=round(1.0 - vector, 4), vector=round(vector, 4), reason=reason)


class ProfileCache:
    """Each namespace's profile, measured on its oldest `structure_sample` episodes and measured again as it
    grows (a namespace's shape changes slowly; a profile costs one store read)."""

    def __init__(self) -> None:
        self._profiles: OrderedDict[str, tuple[int, NamespaceProfile]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store: MemoryReader, index: SearchIndex, namespace: str, sample: int) -> NamespaceProfile:
        """The namespace's profile, measured again when it grew past the size it was measured at."""
        episodes = index.entity_shares(namespace).episodes
        with self._lock:
            cached = self._profiles.get(namespace)
            if cached is not None and episodes <= cached[0] * (1 + _REMEASURE_GROWTH):
                self._profiles.move_to_end(namespace)
                return cached[1]
        profile = profile_of(store.list_memories(namespace, MemoryFilter(layers=("episodic",)), sample))
        with self._lock:
            self._profiles[namespace] = (max(episodes, 1), profile)
            self._profiles.move_to_end(namespace)
            while len(self._profiles) > _CACHED:
                self._profiles.popitem(last=False)
        return profile
