"""What a memory's relevance by meaning is measured against: the query's background.

A cosine alone says little: e5 puts a greeting and an unrelated Chinese memory at 0.85, MiniLM a question and its
answer at 0.2, and the same model's cosines sit higher in Chinese than in English. What does not depend on the
scale is how far a memory stands out above what the query meets in text about nothing in particular. So recall
embeds a small background of everyday statements and chat turns, in English and Chinese
(`rearview/assets/relevance_background.json`), once per embedder, and judges a memory by its **margin**:

    margin = (cosine(query, memory) - background) / (1 - background)

where `background` is the mean of the query's `BACKGROUND_NEAREST` best cosines with the background texts of the
memory's script (CJK or not): a Chinese question about an English memory is measured against English text, since
a cross-lingual pair sits lower on every multilingual scale. A memory is relevant by meaning when its margin reaches
the embedder's `CosineScale.relevance_margin` (bench/calibrate.py measures it).
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from importlib import resources

import numpy as np

from rearview.ports import Embedder
from rearview.text_analysis import cjk_characters

# The query's background is the mean of its best this many cosines with the background texts of a script: one
# text that happens to be on the query's subject moves it by a fifth of its excess at most.
BACKGROUND_NEAREST = 5


@lru_cache(maxsize=1)
def background_texts() -> tuple[str, ...]:
    """The background texts shipped with the library."""
    raw = resources.files("rearview").joinpath("assets/relevance_background.json").read_text("utf-8")
    return tuple(json.loads(raw)["texts"])


def is_cjk_text(text: str) -> bool:
    """Whether a text is written mostly in CJK characters (more than a quarter of its characters)."""
    return cjk_characters(text) * 4 > len(text)


class Background:
    """The background texts' vectors for one embedder, by script, embedded on first use."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._lock = threading.Lock()
        self._vectors: dict[bool, np.ndarray] | None = None

    def by_script(self) -> dict[bool, np.ndarray]:
        """{is CJK: the background vectors of that script}."""
        if self._vectors is None:
            with self._lock:
                if self._vectors is None:
                    texts = background_texts()
                    vectors = self._embedder.embed(list(texts))
                    cjk = np.array([is_cjk_text(t) for t in texts])
                    self._vectors = {True: vectors[cjk], False: vectors[~cjk]}
        return self._vectors

    def levels(self, query_vector: np.ndarray) -> dict[bool, float]:
        """The query's background level against each script's texts."""
        return {script: query_level(query_vector, vectors) for script, vectors in self.by_script().items()}


def query_level(query_vector: np.ndarray, background: np.ndarray) -> float:
    """The mean of the query's `BACKGROUND_NEAREST` best cosines with `background`."""
    if not background.size or not query_vector.size:
        return 0.0
    cosines = background @ query_vector
    nearest = np.sort(cosines)[-BACKGROUND_NEAREST:]
    return float(nearest.mean())


def margin(cosine: float, level: float) -> float:
    """How far `cosine` stands above the background `level`, as a share of the distance from it to 1."""
    return (cosine - level) / max(1.0 - level, 1e-6)
