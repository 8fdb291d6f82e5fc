"""Cosines on each embedder's own scale: the thresholds mapped from the reference scale, relevance by margin above
the query's background, words weighted by their rarity, and ranking across scripts for a multilingual model."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pytest

from rearview.adapters.onnx_embedders.e5 import OnnxE5Embedder
from rearview.bootstrap import Services, build, on_scale
from rearview.clock import ManualClock
from rearview.domain.embedding import REFERENCE_ANCHORS, CosineScale
from rearview.domain.recall import RecallQuery
from rearview.domain.write import MemoryWrite
from rearview.service.contradiction import related_similarity
from rearview.service.recall.background import is_cjk_text
from rearview.service.recall.parameters import RecallParameters
from rearview.service.recall.relevance import idf_weights
from rearview.settings import Settings, WriteTuning

pytestmark = pytest.mark.unit

NS = "acme:scale"
E5_LIKE = CosineScale(unrelated=0.879, related=0.925, same=0.981, relevance_margin=0.186, across_margin=0.203)


def test_the_reference_scale_maps_every_threshold_onto_itself() -> None:
    scale = CosineScale(*REFERENCE_ANCHORS, relevance_margin=0.1)

    for reference in (-0.5, 0.0, 0.25, 0.8, 0.92, 1.0):
        assert scale.raw(reference) == pytest.approx(reference)


def test_a_compressed_scale_maps_anchors_onto_its_anchors_and_keeps_the_order() -> None:
    assert [E5_LIKE.raw(a) for a in REFERENCE_ANCHORS] == pytest.approx([0.879, 0.925, 0.981])
    mapped = [E5_LIKE.raw(x) for x in np.linspace(-1.0, 1.0, 41)]
    assert mapped == sorted(mapped)
    # MiniLM's near-duplicate (0.92) lies between e5's "same" anchor and 1.
    assert 0.981 < E5_LIKE.raw(0.92) < 0.99


def test_the_write_path_and_hindsight_get_their_thresholds_on_the_embedder_scale() -> None:
    write = on_scale(WriteTuning(), E5_LIKE)

    assert write.dedup_threshold == pytest.approx(E5_LIKE.raw(0.92))
    # The same-attribute cosine starts from the embedder's own topic floor: MiniLM's 0.25 gives 0.55, e5's 0.8
    # gives 0.88 (the linear image of MiniLM's, 0.925, left e5's statements on one attribute unjudged).
    assert related_similarity(CosineScale(*REFERENCE_ANCHORS, relevance_margin=0.1)) == pytest.approx(0.55)
    assert related_similarity(OnnxE5Embedder.scale) == pytest.approx(0.88)
    assert on_scale(WriteTuning(), CosineScale(*REFERENCE_ANCHORS, relevance_margin=0.1)) == WriteTuning()


def test_a_term_half_the_namespace_holds_weighs_nothing_and_a_rare_one_fully() -> None:
    weights = idf_weights(["hello", "lisbon", "unseen"], {"hello": 50, "lisbon": 1}, texts=100)

    assert weights["lisbon"] == 1.0 and weights["unseen"] == 1.0
    assert weights["hello"] == 0.0
    middling = idf_weights(["often"], {"often": 20}, texts=100)["often"]
    assert 0.0 < middling < 0.5


def test_a_namespace_too_small_to_tell_weighs_every_term_fully() -> None:
    assert idf_weights(["book"], {"book": 2}, texts=2) == {"book": 1.0}
    assert idf_weights(["book"], {}, texts=0) == {"book": 1.0}
    assert idf_weights(["geocoding"], {"geocoding": 3}, texts=3) == {"geocoding": 1.0}


# --- across scripts -------------------------------------------------------------------------------------------


QUERY = "我对什么过敏？"
UNRELATED_ZH = "今天的会议改到了下午三点。"
ANSWER_EN = "I am allergic to peanuts."
# The fake model's axes: its language part (Chinese, English), two subjects, then the rest of what texts are about.
LANGUAGE_AXIS = {True: 0, False: 1}
ALLERGY, MEETING = 2, 3
OTHER_SUBJECTS = slice(4, 64)


class _Multilingual:
    """A model whose vectors carry their language as much as their meaning, as a multilingual model's do: each is
    its script's language axis plus half as much of what it is about. The Chinese question meets the unrelated
    Chinese memory at 0.8 and its English answer at 0.2; any other text is about a direction of its own (drawn from
    a hash of it), so a script's mean vector holds its language and little else."""

    name, dim = "multilingual-fake", 64

    def __init__(self, scale: CosineScale) -> None:
        self.scale = scale
        self.subjects = {QUERY: ALLERGY, UNRELATED_ZH: MEETING, ANSWER_EN: ALLERGY}

    def _one(self, text: str) -> np.ndarray:
        subject = np.zeros(self.dim, dtype=np.float32)
        if text in self.subjects:
            subject[self.subjects[text]] = 1.0
        else:
            drawn = np.random.default_rng(zlib.crc32(text.encode())).normal(size=self.dim)[OTHER_SUBJECTS]
            subject[OTHER_SUBJECTS] = drawn / np.linalg.norm(drawn)
        vector = subject * 0.5
        vector[LANGUAGE_AXIS[is_cjk_text(text)]] = 1.0
        return vector / np.linalg.norm(vector)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


def _services(
    scale: CosineScale, clock: ManualClock, *, chinese_chatter: int = 0, across_search: bool = True
) -> Services:
    """The two memories, after `chinese_chatter` Chinese memories on other subjects."""
    recall = RecallParameters(across_search=across_search)
    services = build(Settings(backend="memory", recall=recall), embedder=_Multilingual(scale), clock=clock)
    chatter = [MemoryWrite(content=f"第{n}天的日记：天气不错，出门散步了。") for n in range(chinese_chatter)]
    assert all(r.status == "stored" for r in services.writer.write_batch(NS, chatter))
    for text in (UNRELATED_ZH, ANSWER_EN):
        assert services.writer.write(NS, MemoryWrite(content=text)).status == "stored"
    return services


def test_a_multilingual_model_ranks_the_answer_in_another_script_first(clock: ManualClock) -> None:
    services = _services(E5_LIKE, clock)

    response = services.recaller.recall(NS, RecallQuery(query=QUERY, explain=True))

    assert [h.content for h in response.results][0] == ANSWER_EN
    assert not response.no_relevant_memory


def test_a_model_of_one_language_ranks_by_cosine(clock: ManualClock) -> None:
    services = _services(CosineScale(*REFERENCE_ANCHORS, relevance_margin=0.05), clock)

    response = services.recaller.recall(NS, RecallQuery(query=QUERY))

    assert [h.content for h in response.results][0] == UNRELATED_ZH


def test_a_search_in_the_other_script_finds_the_answer_the_query_scripts_memories_hide(clock: ManualClock) -> None:
    """More Chinese memories than a search returns candidates: the question's own vector search holds none of the
    English ones, the search with the question moved into English finds its answer."""
    chatter = RecallParameters().candidates_per_list + 10

    response = _services(E5_LIKE, clock, chinese_chatter=chatter).recaller.recall(
        NS, RecallQuery(query=QUERY, explain=True)
    )
    without = _services(E5_LIKE, clock, chinese_chatter=chatter, across_search=False).recaller.recall(
        NS, RecallQuery(query=QUERY)
    )

    assert [h.content for h in response.results][0] == ANSWER_EN
    assert response.trace is not None
    (across,) = [s for s in response.trace.stages if s.stage == "across"]
    assert across.detail["added"] >= 1
    assert ANSWER_EN not in [h.content for h in without.results]
