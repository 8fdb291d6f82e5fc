"""What an embedder's cosines mean (`CosineScale`): where unrelated, related and same-statement pairs of texts sit on
its scale, and how far above a query's background a memory must stand to be relevant.

Every cosine threshold of the write path and recall (a near-duplicate, a contradiction, a near-duplicate result) is
stated once, on the reference scale: all-MiniLM-L6-v2's cosines on English text, with which those thresholds were
tuned. An embedder maps a reference threshold onto its own cosines through its scale (`CosineScale.raw`): a
multilingual model trained at a low temperature (e5) puts unrelated texts at 0.8 where MiniLM puts them at 0.07, so
its 0.92 is not MiniLM's 0.92. The scales are measured by `bench/calibrate.py` on a calibration set of its own (no
test set), which prints the figures each adapter holds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CosineScale:
    """An embedder's cosines at three anchors (each the median over a calibration set's pairs of that kind, in the
    languages the model reads), and the relevance margin recall judges by."""

    # Two statements on different subjects.
    unrelated: float
    # Two statements on one subject that say different things ("vegan" / "vegetarian", another city).
    related: float
    # One statement said twice in other words.
    same: float
    # How far (as a share of the distance to 1) a memory's cosine with a query must stand above the query's
    # cosine with everyday text of the memory's script for the memory to count as relevant by its meaning ...
    relevance_margin: float
    # ... and where the query and the memory are in different scripts (a Chinese question, an English memory): a
    # multilingual model puts such pairs lower. None: the same margin (a model that reads one language).
    across_margin: float | None = None
    # The scripts the model reads: a model trained on English alone meets Chinese text on characters it barely
    # knows, where its cosines say nothing of meaning (MiniLM puts any two Chinese sentences near 0.65).
    reads_latin: bool = True
    reads_cjk: bool = True
    # Below this cosine two of its texts share no subject: where consolidation starts to group an agent's log by
    # meaning and the write path looks for a statement on the same attribute. Not a linear image of MiniLM's 0.25:
    # e5 puts two log lines on one subject ("the user's home in Rotterdam" / "the user's Rotterdam address") at
    # 0.83-0.89, under its unrelated anchor, so `raw(0.25)` (0.90) grouped nothing (blind hindsight recall 0.36);
    # 0.8, its relevance floor before the margins, gives MiniLM's figures (0.46; bench/RESULTS.md, round 2).
    topic_floor: float = 0.25

    def reads(self, cjk: bool) -> bool:
        """Whether the model reads text of that script (CJK or not)."""
        return self.reads_cjk if cjk else self.reads_latin

    def margin_for(self, same_script: bool) -> float:
        """The relevance margin of a query and a memory in the same script or not."""
        if same_script or self.across_margin is None:
            return self.relevance_margin
        return self.across_margin

    def raw(self, reference: float) -> float:
        """The cosine on this scale that stands where `reference` stands on the reference scale: linear between
        the anchors (and -1 and 1), so an anchor maps onto the same anchor."""
        knots = ((-1.0, -1.0), *zip(REFERENCE_ANCHORS, self._anchors(), strict=True), (1.0, 1.0))
        for (x0, y0), (x1, y1) in zip(knots, knots[1:], strict=False):
            if reference <= x1:
                share = (reference - x0) / (x1 - x0) if x1 > x0 else 1.0
                return y0 + max(0.0, share) * (y1 - y0)
        return 1.0

    def _anchors(self) -> tuple[float, float, float]:
        return self.unrelated, self.related, self.same


# all-MiniLM-L6-v2 on the calibration set's English pairs (bench/calibrate.py): the scale the settings' cosine
# thresholds are stated on.
REFERENCE_ANCHORS: tuple[float, float, float] = (0.069, 0.544, 0.914)
