"""Recall's rerank stage: a reranker re-orders the best candidates, only within the namespace, and a failing one
leaves recall's own order. With the in-process fake (tests/support/rerankers.py), held to the Reranker contract."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.recall import RecallQuery
from rearview.domain.write import MemoryWrite
from rearview.errors import ConfigurationError
from rearview.service.recall import RecallService
from rearview.service.recall.fusion import fuse_rerank
from rearview.settings import RecallTuning, Settings
from support.rerankers import WordOverlapReranker

pytestmark = pytest.mark.unit
NS = "acme:u-42"
OTHER = "acme:u-43"
QUERY = "Which pottery class did Melanie take with her kids?"
CONTENTS = (
    "Melanie: the kids loved the pottery class we took together",
    "Melanie: I took a class on watercolour painting",
    "Melanie: pottery is so relaxing, I made a bowl",
    "Caroline: my kids and I went camping at the beach",
    "Melanie: the class was full of kids from the school",
    "Caroline: I love the pottery you made, Melanie",
)


def seed(services: Services, clock: ManualClock, namespace: str = NS) -> dict[str, str]:
    start = clock.now() - timedelta(days=30)
    out = {}
    for i, content in enumerate(CONTENTS):
        res = services.writer.write(namespace, MemoryWrite(content=content, occurred_at=start + timedelta(days=i)))
        assert res.status == "stored", res
        out[res.id] = content
    return out


def recaller(
    services: Services, clock: ManualClock, reranker: WordOverlapReranker | None, **tuning: object
) -> RecallService:
    settings = services.recaller.tuning.model_copy(update=tuning)
    return RecallService(services.store, services.index, services.embedder, clock, settings, 0.0, reranker=reranker)


class ShortestFirstReranker(WordOverlapReranker):
    """Prefers short memories: an order that has nothing to do with recall's own, so re-ordering shows."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "fake:shortest-first"

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        super().rerank(query, documents)  # recorded
        return [-float(len(doc)) for doc in documents]


def test_weight_one_puts_the_best_candidates_in_the_rerankers_order(services: Services, clock: ManualClock) -> None:
    contents = seed(services, clock)
    fake = ShortestFirstReranker()
    query = RecallQuery(query=QUERY, top_k=6, explain=True)
    ours = [h.id for h in recaller(services, clock, None, access_boost=0.0).recall(NS, query).results]

    resp = recaller(services, clock, fake, rerank_weight=1.0, access_boost=0.0).recall(NS, query)

    ranked = [h.id for h in resp.results]
    assert sorted(ranked) == sorted(ours) and ranked != ours
    assert ranked == sorted(ours, key=lambda cid: len(contents[cid]))
    scores = [h.score for h in resp.results]
    assert scores == sorted(scores, reverse=True)  # a result's score still orders it
    assert resp.trace is not None
    stage = {s.stage: s for s in resp.trace.stages}["rerank"]
    ((asked, documents),) = fake.calls
    assert stage.detail == {"reranker": "fake:shortest-first", "candidates": len(documents), "weight": 1.0, "rrf_k": 10}
    rows = {row["id"]: row for row in stage.candidates}
    assert [row["rank_after"] for row in stage.candidates] == list(range(1, len(stage.candidates) + 1))
    assert [rows[cid]["rank_before"] for cid in ours] == list(range(1, len(ours) + 1))
    assert [rows[cid]["rerank_score"] for cid in ranked] == [-float(len(contents[cid])) for cid in ranked]
    assert asked == QUERY and set(documents) <= set(contents.values())


def test_the_reranker_sees_only_the_namespaces_memories(services: Services, clock: ManualClock) -> None:
    mine = seed(services, clock, NS)
    theirs = seed(services, clock, OTHER)
    assert set(mine).isdisjoint(theirs)
    fake = WordOverlapReranker()

    resp = recaller(services, clock, fake).recall(NS, RecallQuery(query=QUERY, top_k=6))

    assert {h.id for h in resp.results} <= set(mine)
    # Same texts in both namespaces: what the reranker saw must be exactly the queried namespace's candidates.
    ((_, documents),) = fake.calls
    assert len(documents) == len(set(documents)) and set(documents) <= set(mine.values())


def test_a_failing_reranker_leaves_recalls_own_order(services: Services, clock: ManualClock) -> None:
    seed(services, clock)
    failing = WordOverlapReranker(fail_with=TimeoutError("read timeout"))

    resp = recaller(services, clock, failing, access_boost=0.0).recall(
        NS, RecallQuery(query=QUERY, top_k=6, explain=True)
    )
    again = recaller(services, clock, None, access_boost=0.0).recall(NS, RecallQuery(query=QUERY, top_k=6))

    assert resp.results and [h.id for h in resp.results] == [h.id for h in again.results]
    assert resp.trace is not None
    stage = {s.stage: s for s in resp.trace.stages}["rerank"]
    assert stage.detail["error"] == "TimeoutError: read timeout" and stage.candidates == []


def test_no_candidates_to_rerank_turns_the_stage_off(services: Services, clock: ManualClock) -> None:
    seed(services, clock)
    fake = WordOverlapReranker()

    resp = recaller(services, clock, fake, rerank_candidates=0).recall(NS, RecallQuery(query=QUERY, explain=True))

    assert fake.calls == [] and resp.results
    assert resp.trace is not None and "rerank" not in {s.stage for s in resp.trace.stages}


def test_a_query_can_skip_the_reranker(services: Services, clock: ManualClock) -> None:
    seed(services, clock)
    fake = WordOverlapReranker()
    resp = recaller(services, clock, fake).recall(NS, RecallQuery(query=QUERY, rerank=False, explain=True))
    assert fake.calls == [] and resp.results
    assert resp.trace is not None and "rerank" not in {s.stage for s in resp.trace.stages}


def test_weight_zero_keeps_recalls_order(services: Services, clock: ManualClock) -> None:
    seed(services, clock)
    query = RecallQuery(query=QUERY, top_k=6)
    without = recaller(services, clock, None, access_boost=0.0).recall(NS, query)
    with_zero = recaller(services, clock, WordOverlapReranker(), rerank_weight=0.0, access_boost=0.0).recall(NS, query)
    assert [h.id for h in with_zero.results] == [h.id for h in without.results]


def test_only_the_best_rerank_candidates_are_reordered(services: Services, clock: ManualClock) -> None:
    contents = seed(services, clock)
    fake = ShortestFirstReranker()
    resp = recaller(services, clock, fake, rerank_candidates=2, rerank_weight=1.0, access_boost=0.0).recall(
        NS, RecallQuery(query=QUERY, top_k=6)
    )
    without = recaller(services, clock, None, access_boost=0.0).recall(NS, RecallQuery(query=QUERY, top_k=6))
    ours, ranked = [h.id for h in without.results], [h.id for h in resp.results]
    assert len(fake.calls[0][1]) == 2
    assert ranked[2:] == ours[2:]
    assert ranked[:2] == sorted(ours[:2], key=lambda cid: len(contents[cid]))


def test_the_composition_root_wires_the_configured_reranker(tmp_path: Path, clock: ManualClock) -> None:
    from rearview.adapters.bedrock_reranker import BedrockReranker

    plain = build(Settings(data_dir=tmp_path / "a", embedder="hashing"), clock=clock)
    assert plain.recaller.reranker is None
    plain.close()
    settings = Settings(data_dir=tmp_path / "b", embedder="hashing", reranker="bedrock")
    settings.aws.region = "us-west-2"
    wired = build(settings, clock=clock)
    assert isinstance(wired.recaller.reranker, BedrockReranker)
    assert wired.recaller.reranker.model_arn == "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
    wired.close()
    fake = WordOverlapReranker()
    overridden = build(Settings(data_dir=tmp_path / "c", embedder="hashing"), clock=clock, reranker=fake)
    assert overridden.recaller.reranker is fake
    overridden.close()


def test_the_onnx_reranker_needs_its_model_path_at_start_up(tmp_path: Path, clock: ManualClock) -> None:
    from rearview.adapters.onnx_cross_encoder_reranker import OnnxCrossEncoderReranker
    from support.cross_encoder_model import write_word_count_cross_encoder

    model = tmp_path / "ce.onnx"
    for missing in (None, model):
        with pytest.raises(ConfigurationError) as raised:
            settings = Settings(data_dir=tmp_path / "a", embedder="hashing", reranker="onnx", rerank_model_path=missing)
            build(settings, clock=clock)
        assert raised.value.field == "rerank_model_path"
    write_word_count_cross_encoder(model, ["pottery"])
    wired = build(
        Settings(data_dir=tmp_path / "b", embedder="hashing", reranker="onnx", rerank_model_path=model), clock=clock
    )
    assert isinstance(wired.recaller.reranker, OnnxCrossEncoderReranker)
    assert wired.recaller.reranker.name == "onnx:ce.onnx"  # loaded on first use, not at start-up
    wired.close()


# --- the fusion of the two orders ---------------------------------------------------------------------------------


def test_fuse_rerank_weight_zero_is_ours_weight_one_is_the_rerankers() -> None:
    head = ["a", "b", "c", "d"]
    scores = [0.1, 0.9, 0.5, 0.9]
    assert fuse_rerank(head, scores, 0.0, 10) == head
    assert fuse_rerank(head, scores, 1.0, 10) == ["b", "d", "c", "a"]  # ties keep our order


def test_fuse_rerank_blends_the_two_ranks() -> None:
    # Ours a>b>c, the reranker's c>b>a. Halfway, a and c (1st once, 3rd once) tie and keep our order; b's two
    # second places count less (1/x is convex); more weight on the reranker puts its first first.
    head = ["a", "b", "c"]
    assert fuse_rerank(head, [0.0, 0.5, 1.0], 0.5, 1) == ["a", "c", "b"]
    assert fuse_rerank(head, [0.0, 0.5, 1.0], 0.7, 10) == ["c", "b", "a"]


def test_fuse_rerank_wants_a_score_per_candidate() -> None:
    with pytest.raises(ValueError, match="2 scores for 3 candidates"):
        fuse_rerank(["a", "b", "c"], [1.0, 2.0], 0.5, 10)


def test_rerank_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="rerank_weight"):
        RecallTuning(rerank_weight=1.5)
