"""A model-free embedder: signed feature hashing of words, word bigrams and character 3-grams (numpy only).

For tests, for machines without the `onnx` extra, and as a baseline in benchmarks. It knows no synonyms:
texts are close when they share words or word stems ("hiking" and "hike" share the 3-grams "<hi", "hik").
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import lru_cache

import numpy as np

from rearview.domain.embedding import REFERENCE_ANCHORS, CosineScale
from rearview.errors import ConfigurationError
from rearview.text_analysis import CJK_FUNCTION_CHARS, STOP_WORDS, is_cjk, tokens

# Character 3-grams outnumber words several times over; at half weight a shared whole word still counts
# for more than a shared stem, while "hiking"/"hike" still meet.
_CHAR_WEIGHT = 0.5
# Without an IDF table, function words dominate short texts ("the" alone put "I love hiking in the
# mountains" and "The stock market fell today" at cosine 0.21). They keep a small weight, so that a text
# made only of them still has a direction, and get no 3-grams.
_STOPWORD_WEIGHT = 0.2


class HashingEmbedder:
    """Deterministic feature hashing: the same text gives the same vector in every process and machine."""

    # Its cosine is shared words and 3-grams, which the reference pairs of other models do not measure (two
    # wordings of one statement sit at 0.5 here): the thresholds keep their reference values, a near-duplicate at
    # 0.92 of shared text. The relevance margin is bench/calibrate.py's.
    scale = CosineScale(*REFERENCE_ANCHORS, relevance_margin=0.257)

    def __init__(self, dim: int = 512) -> None:
        if dim < 2:
            raise ConfigurationError(f"hashing dim must be at least 2, got {dim}", field="hashing_dim")
        self.dim = dim
        self.name = f"hashing-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape (len(texts), dim), float32, each row L2-normalised."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single string")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._embed_one(text)
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Hashing reads a query as it reads a memory."""
        return self.embed(texts)

    def _embed_one(self, text: str) -> np.ndarray:
        # Summed in a list of Python floats (IEEE doubles, the same additions in the same order as into a float64
        # array, without numpy's per-item cost): the vectors are bit for bit those of summing into the array.
        sums = [0.0] * self.dim
        for feature, weight in _weighted_features(text).items():
            index, sign = _bucket(feature, self.dim)
            sums[index] += sign * weight
        vector = np.array(sums, dtype=np.float64)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            # No words at all (empty or punctuation only), or features that cancelled out: a fixed
            # direction keeps the row unit-length; all such texts are equally uninformative.
            index, sign = _bucket("\x00empty", self.dim)
            vector[index] = sign
            norm = 1.0
        return (vector / norm).astype(np.float32)


def _is_stop(token: str) -> bool:
    if is_cjk(token[0]):
        return all(ch in CJK_FUNCTION_CHARS for ch in token)
    return token in STOP_WORDS


def _weighted_features(text: str) -> dict[str, float]:
    """Feature -> weight: sublinear tf (1 + log count) times the weight of the feature's kind, in the order each
    feature first appears (words with their 3-grams, then bigrams: `_embed_one` sums in that order)."""
    # The same tokens as keyword search: lowercased words, and CJK runs as overlapping character bigrams.
    words = tokens(text)
    # An ASCII text holds no CJK token: a stop word is then one of STOP_WORDS.
    stop = [w in STOP_WORDS for w in words] if text.isascii() else [_is_stop(w) for w in words]
    features: list[str] = []
    for w, is_stop in zip(words, stop, strict=True):
        features.append("w:" + w)
        if not is_stop:
            features.extend(_char_grams(w))
    # "is the" says nothing; "my sister" and "dark mode" do.
    features.extend(f"b:{a} {b}" for a, b, both in _pairs(words, stop) if not both)
    stopped = {"w:" + w for w, is_stop in zip(words, stop, strict=True) if is_stop}
    # Counter keeps the order in which each feature first appears.
    return {
        f: (_STOPWORD_WEIGHT if f in stopped else _KIND_WEIGHT[f[0]]) * _tf(n) for f, n in Counter(features).items()
    }


def _pairs(words: list[str], stop: list[bool]) -> Iterator[tuple[str, str, bool]]:
    """Each word and the next, and whether both are stop words."""
    for i in range(len(words) - 1):
        yield words[i], words[i + 1], stop[i] and stop[i + 1]


# A feature's weight by its kind (its first letter), a stop word's aside.
_KIND_WEIGHT = {"w": 1.0, "c": _CHAR_WEIGHT, "b": 1.0}


def _tf(count: int) -> float:
    return 1.0 + math.log(count) if count > 1 else 1.0


# ~0.5 KB a word at most: 16,384 words of the 3-grams cached are a few MB, and hold the words a store repeats.
@lru_cache(maxsize=16384)
def _char_grams(word: str) -> tuple[str, ...]:
    """The 3-gram features of a word that is not a stop word; none for a CJK token (a CJK bigram is already a
    character n-gram: its 3-grams would only repeat it)."""
    if is_cjk(word[0]):
        return ()
    padded = f"<{word}>"
    return tuple("c:" + padded[i : i + 3] for i in range(len(padded) - 2))


@lru_cache(maxsize=65536)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """The bucket and sign of a feature, from blake2b: Python's hash() is salted per process."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return digest % dim, (1.0 if (digest >> 63) & 1 else -1.0)
