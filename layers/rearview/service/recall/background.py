"""What a memory's relevance by meaning is measured against: the query's background.

A cosine alone says little: e5 puts a greeting and an unrelated Chinese memory at 0.85, MiniLM a question and its
answer at 0.2, and the same model's cosines sit higher in Chinese than in English. What does not depend on the
scale is how far a memory stands out above what the query meets in text about nothing in particular. So recall
embeds a small background of everyday statements and chat turns, in English and Chinese
(`rearview/assets/relevance_background.json`), once per embedder, and judges a memory by its **margin**:

    margin = (cosine(query, memory) - background) / (1 - background)

where `background` is the mean of the query's `BACKGROUND_NEAREST` best cosines with the background texts of the
memory's script (CJK or not). A memory is relevant by meaning when its margin reaches the embedder's
`CosineScale.relevance_margin` (bench/calibrate.py measures it).

Across scripts (a Chinese question, an English memory), for a model that reads both, the cosine is taken between the
two vectors **centred on their script**: each less the mean vector of the background texts of its script (embedded
as queries for the query, as passages for the memory), renormalised. A multilingual model's vectors carry their
language as much as their meaning (e5 puts a Chinese question nearer every Chinese sentence than its English
answer); the means hold that language part, and what is left compares meaning (Libovický et al., "On the Language
Neutrality of Pre-trained Multilingual Representations", 2020). The margin across scripts is then measured against
the query's centred background of the memory's script, and judged by `CosineScale.across_margin`. Within one
script nothing changes: the margin is the plain cosine's, so a namespace in one language ranks exactly by cosine.
bench/crosslingual.py: top-1 0.596 -> 0.808, top-2 0.779 -> 0.865 (bench/RESULTS.md, round 3). The same means
move a query into the other script (`in_other_script`) for recall's search there (`candidates.across`).
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
    """The background texts' vectors for one embedder, by script, embedded on first use; and, on first use across
    scripts, each script's mean vectors (as passages and as queries) and its texts centred on them."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._lock = threading.Lock()
        self._vectors: dict[bool, np.ndarray] | None = None
        self._centring: _Centring | None = None

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

    def for_query(self, query_vector: np.ndarray, query_cjk: bool, *, across: bool) -> QueryBackground:
        """The margins of memories for one query in script `query_cjk`; `across`: the model reads across scripts
        (its scale states a margin across them), so a pair across scripts is measured centred."""
        return QueryBackground(self, query_vector, query_cjk, across=across)

    def centring(self) -> _Centring:
        """Each script's mean vectors and centred texts, made on first use (the background embedded as queries too)."""
        if self._centring is None:
            by_script = self.by_script()
            with self._lock:
                if self._centring is None:
                    texts = background_texts()
                    cjk = np.array([is_cjk_text(t) for t in texts])
                    as_queries = self._embedder.embed_queries(list(texts))
                    passages = {script: vectors.mean(axis=0) for script, vectors in by_script.items()}
                    queries = {script: as_queries[cjk == script].mean(axis=0) for script in by_script}
                    centred = {script: _centre(vectors, passages[script]) for script, vectors in by_script.items()}
                    self._centring = _Centring(passages, queries, centred)
        return self._centring


def in_other_script(background: Background, query_vector: np.ndarray, query_cjk: bool) -> np.ndarray:
    """The query as if asked in the other script: less its own script's mean query vector, plus the other's,
    renormalised. A plain search with it finds the memories in the other script that the query means, which the
    query's own vector leaves below every memory in its script."""
    centring = background.centring()
    moved = query_vector - centring.queries[query_cjk] + centring.queries[not query_cjk]
    return np.asarray(moved / (np.linalg.norm(moved) or 1.0), dtype=np.float32)


class _Centring:
    """Each script's mean passage and query vectors, and its background texts centred on the passage mean."""

    def __init__(
        self, passages: dict[bool, np.ndarray], queries: dict[bool, np.ndarray], centred: dict[bool, np.ndarray]
    ) -> None:
        self.passages = passages
        self.queries = queries
        self.centred = centred


class QueryBackground:
    """One query's backgrounds: its level against each script's texts, plain and (on first use) centred."""

    def __init__(self, background: Background, query_vector: np.ndarray, query_cjk: bool, *, across: bool) -> None:
        self._background = background
        self.query = query_vector
        self.query_cjk = query_cjk
        self._across = across and query_vector.size > 0
        self.levels = background.levels(query_vector) if query_vector.size else {}
        self._centred: tuple[np.ndarray, dict[bool, float]] | None = None

    def margin(self, cosine: float, cjk: bool, vector: np.ndarray | None = None) -> float:
        """The margin of a memory in script `cjk` with plain cosine `cosine` to the query (and its `vector`, for a
        memory across scripts: without it, the plain margin)."""
        if not self.levels:
            return 0.0
        if vector is None or not self._across or cjk == self.query_cjk:
            return margin(cosine, self.levels[cjk])
        centring = self._background.centring()
        if self._centred is None:
            query = _centre(self.query[None, :], centring.queries[self.query_cjk])[0]
            self._centred = query, {s: query_level(query, vectors) for s, vectors in centring.centred.items()}
        query, levels = self._centred
        centred = _centre(vector[None, :], centring.passages[cjk])[0]
        return margin(float(centred @ query), levels[cjk])


def _centre(vectors: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """`vectors` less `mean`, each renormalised."""
    moved = vectors - mean
    norms = np.linalg.norm(moved, axis=1, keepdims=True)
    return np.asarray(moved / np.where(norms > 0, norms, 1.0), dtype=np.float32)


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
