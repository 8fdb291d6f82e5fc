"""A model-free embedder: signed feature hashing of words, word bigrams and character 3-grams (numpy only).

For tests, for machines without the `onnx` extra, and as a baseline in benchmarks. It knows no synonyms:
texts are close when they share words or word stems ("hiking" and "hike" share the 3-grams "<hi", "hik").
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
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
        """An array of shape (len(texts), dim), float32, each row L2-normalised.

        Each text's features, with their weights, are listed in Python (a word's are cached: `_word_features`), and
        the rest runs once for the whole batch in numpy: each text's distinct features with their counts, their
        weights summed into buckets in the order the features first appear (float64, as each text's own sum of
        Python floats did: the vectors are bit for bit those of earlier releases), then each row normalised. A
        feature is known by its 64-bit digest: two features of one text with the same digest (odds 2^-64 a pair)
        would count as one."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single string")
        digests: list[int] = []
        weights: list[float] = []
        counts = [_append_features(text, digests, weights) for text in texts]
        sums = _bucket_sums(
            np.array(digests, dtype=np.uint64),
            np.array(weights, dtype=np.float64),
            np.array(counts, dtype=np.int64),
            self.dim,
        )
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, vector in enumerate(sums):
            # One row at a time: `norm` of a row sums its squares as it did for each text alone.
            norm = float(np.linalg.norm(vector))
            if norm == 0.0:
                # No words at all (empty or punctuation only), or features that cancelled out: a fixed
                # direction keeps the row unit-length; all such texts are equally uninformative.
                vector[int(_EMPTY % self.dim)] = _sign(_EMPTY)
                norm = 1.0
            out[row] = (vector / norm).astype(np.float32)
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Hashing reads a query as it reads a memory."""
        return self.embed(texts)


def _append_features(text: str, digests: list[int], weights: list[float]) -> int:
    """Append a text's features (digests) and their weights, in the order they appear: each word with its 3-grams,
    then the word bigrams; return how many. Every occurrence is listed: `_bucket_sums` counts them."""
    before = len(digests)
    # The same tokens as keyword search: lowercased words, and CJK runs as overlapping character bigrams.
    words = tokens(text)
    stops: list[bool] = []
    for word in words:
        word_digests, word_weights, stop = _word_features(word)
        digests.extend(word_digests)
        weights.extend(word_weights)
        stops.append(stop)
    # "is the" says nothing; "my sister" and "dark mode" do.
    for i in range(len(words) - 1):
        if not (stops[i] and stops[i + 1]):
            digests.append(_bigram_digest(words[i], words[i + 1]))
            weights.append(_BIGRAM_WEIGHT)
    return len(digests) - before


def _bucket_sums(digests: np.ndarray, weights: np.ndarray, counts: np.ndarray, dim: int) -> np.ndarray:
    """Rows of bucket sums (float64), one a text: each distinct feature of a text adds sign x weight x its sublinear
    tf (1 + log count) to its bucket, in the order the features first appear in the text."""
    rows = np.repeat(np.arange(counts.size), counts)
    # Grouped by text, then digest; stable, so a group's first member is the feature's first occurrence.
    order = np.lexsort((digests, rows))
    grouped_digests, grouped_rows = digests[order], rows[order]
    starts = np.ones(order.size, dtype=bool)
    starts[1:] = (grouped_digests[1:] != grouped_digests[:-1]) | (grouped_rows[1:] != grouped_rows[:-1])
    heads = np.flatnonzero(starts)
    repeats = np.diff(np.append(heads, order.size))
    first = order[heads]
    appearance = np.argsort(first, kind="stable")
    first, repeats = first[appearance], repeats[appearance]
    distinct = digests[first]
    # The same float64 products as `sign * (weight * tf)` in Python; tf from math.log, as before.
    tf = np.array([_tf(int(n)) for n in repeats]) if repeats.size and repeats.max() >= _TF.size else _TF[repeats]
    values = np.where((distinct >> np.uint64(63)) & np.uint64(1), 1.0, -1.0) * (weights[first] * tf)
    buckets = rows[first] * dim + (distinct % np.uint64(dim)).astype(np.int64)
    # bincount adds in input order: each bucket's additions in the order of the features' first appearance.
    return np.bincount(buckets, weights=values, minlength=counts.size * dim).reshape(counts.size, dim)


def _is_stop(token: str) -> bool:
    if is_cjk(token[0]):
        return all(ch in CJK_FUNCTION_CHARS for ch in token)
    return token in STOP_WORDS


# The weight of a word bigram feature (a whole word's is 1.0 too).
_BIGRAM_WEIGHT = 1.0


def _tf(count: int) -> float:
    return 1.0 + math.log(count) if count > 1 else 1.0


# The sublinear tf of counts up to 255 (a text that repeats a feature more often computes its own).
_TF = np.array([0.0, *(_tf(count) for count in range(1, 256))])


# A word's features are a few hundred bytes: 16,384 words cached are a few MB, and hold the words a store repeats.
@lru_cache(maxsize=16384)
def _word_features(word: str) -> tuple[tuple[int, ...], tuple[float, ...], bool]:
    """A word's feature digests (the word, then its 3-grams), their weights, and whether it is a stop word (which
    keeps a small weight and gets no 3-grams)."""
    stop = _is_stop(word)
    grams = () if stop else _char_grams(word)
    digests = (_digest("w:" + word), *(_digest(gram) for gram in grams))
    return digests, (_STOPWORD_WEIGHT if stop else 1.0, *(_CHAR_WEIGHT for _ in grams)), stop


def _char_grams(word: str) -> tuple[str, ...]:
    """The 3-gram features of a word that is not a stop word; none for a CJK token (a CJK bigram is already a
    character n-gram: its 3-grams would only repeat it)."""
    if is_cjk(word[0]):
        return ()
    padded = f"<{word}>"
    return tuple("c:" + padded[i : i + 3] for i in range(len(padded) - 2))


@lru_cache(maxsize=65536)
def _bigram_digest(first: str, second: str) -> int:
    return _digest(f"b:{first} {second}")


def _digest(feature: str) -> int:
    """A feature's 64-bit digest, from blake2b (Python's hash() is salted per process): its bucket is the digest
    modulo the dimension, its sign the top bit."""
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")


def _sign(digest: int) -> float:
    return 1.0 if (digest >> 63) & 1 else -1.0


# The fixed direction of a text without features.
_EMPTY = _digest("\x00empty")
