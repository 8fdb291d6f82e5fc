"""What every offline sentence embedder here shares: an ONNX encoder run by onnxruntime over a `tokenizers`
tokenizer, loaded on first use, fed in runs of texts of similar length, pooled and L2-normalised, with the queries
recall asks again and again remembered.

A model differs in where its files come from (`_load`), the text it reads (an instruction or a "query: " /
"passage: " prefix), how it pools (the mean over the tokens or the first token) and, for a graph that takes the
token embeddings rather than the ids, how a run is fed (`_feeds`).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rearview.domain.embedding import CosineScale
from rearview.errors import ConfigurationError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

INSTALL_HINT = "install the optional extra: pip install 'rearview-memory[onnx]'"


@dataclass(frozen=True)
class Loaded:
    """A model ready to run: its onnxruntime session and its tokenizer (truncating, not padding)."""

    session: Any
    tokenizer: Tokenizer


class OnnxTextEncoder:
    """The Embedder port over an ONNX sentence encoder. Subclasses say where the model comes from (`_load`) and
    set `name`, `dim`, `scale`, `pooling` and the query and passage prefixes."""

    name: str
    dim: int
    scale: CosineScale
    # "mean": the mean of the token states under the attention mask (MiniLM, e5); "cls": the first token's (BGE).
    pooling: Literal["mean", "cls"] = "mean"
    # What a query and a memory are read with, for models trained on such pairs (e5's "query: " / "passage: ",
    # BGE's retrieval instruction).
    query_prefix = ""
    passage_prefix = ""

    def __init__(
        self,
        *,
        intra_op_threads: int = 1,
        batch_size: int = 16,
        max_tokens: int = 256,
        query_cache_size: int = 1024,
    ) -> None:
        """Nothing is loaded here; the model is read and checked on the first `embed`.

        `intra_op_threads` defaults to 1: one Lambda vCPU, and no contention with the server's own threads.
        `batch_size` 16: on a 2-core x86 box, 64 short texts took 650 ms in runs of 8 or 16, 780 ms in runs of
        32 and 1060 ms in one run of 64 (larger runs are slower here, likely cache effects)."""
        if intra_op_threads < 1 or batch_size < 1 or max_tokens < 8 or query_cache_size < 0:
            raise ConfigurationError(
                f"invalid {type(self).__name__} tuning: threads, batch size, tokens and cache size out of range"
            )
        self.intra_op_threads = intra_op_threads
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.query_cache_size = query_cache_size
        self._load_lock = threading.Lock()
        self._loaded: Loaded | None = None
        # Recall embeds the same few queries again and again; single texts only, batches are writes.
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    # --- the port ---------------------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Memories: an array of shape (len(texts), dim), float32, rows L2-normalised; long texts are truncated."""
        self._check(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed_batch([self.passage_prefix + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries, read as the model reads what is searched for; a single query is remembered."""
        self._check(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefixed = [self.query_prefix + t for t in texts]
        if len(prefixed) == 1 and self.query_cache_size:
            return self._embed_cached(prefixed[0])
        return self._embed_batch(prefixed)

    @staticmethod
    def _check(texts: Sequence[str]) -> None:
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single string")

    # --- running the model ------------------------------------------------------------------------------------

    def _embed_cached(self, text: str) -> np.ndarray:
        with self._cache_lock:
            hit = self._query_cache.get(text)
            if hit is not None:
                self._query_cache.move_to_end(text)
                return hit.copy()
        vector = self._embed_batch([text])
        with self._cache_lock:
            self._query_cache[text] = vector.copy()
            while len(self._query_cache) > self.query_cache_size:
                self._query_cache.popitem(last=False)
        return vector

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        loaded = self._ready()
        encodings = loaded.tokenizer.encode_batch([self._prepared(t) for t in texts])
        lengths = [len(e.ids) for e in encodings]
        # Sorting by length keeps texts of similar length in one run, so little compute goes to padding.
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(lengths[i] for i in chunk)
            input_ids = np.zeros((len(chunk), width), dtype=np.int64)
            attention = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                input_ids[row, : lengths[i]] = encodings[i].ids
                attention[row, : lengths[i]] = 1
            (hidden,) = loaded.session.run(["last_hidden_state"], self._feeds(input_ids, attention))
            out[chunk] = _pooled(np.asarray(hidden, dtype=np.float32), attention, self.pooling)
        return l2_normalised(out)

    def _prepared(self, text: str) -> str:
        """The text as the tokenizer gets it (a model whose tokenizer cannot normalise some characters does it
        here)."""
        return text

    def _feeds(self, input_ids: np.ndarray, attention: np.ndarray) -> dict[str, np.ndarray]:
        """The graph's inputs for one run: a BERT-style graph takes the ids, the mask and the token types."""
        return {"input_ids": input_ids, "attention_mask": attention, "token_type_ids": np.zeros_like(input_ids)}

    def _ready(self) -> Loaded:
        loaded = self._loaded
        if loaded is None:
            with self._load_lock:
                if self._loaded is None:
                    self._loaded = self._load()
                loaded = self._loaded
        return loaded

    def _load(self) -> Loaded:
        """The model's session and tokenizer (called once, under the load lock)."""
        raise NotImplementedError

    def _session(self, model: Path | bytes) -> Any:
        """An onnxruntime session over `model` (a file or its bytes), on this encoder's threads."""
        ort = import_onnxruntime(self.name)
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.intra_op_threads
        options.inter_op_num_threads = 1
        source = str(model) if isinstance(model, Path) else model
        return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])

    def _truncating(self, tokenizer: Tokenizer) -> Tokenizer:
        """`tokenizer` padding nothing (each run pads to its longest text) and truncating at `max_tokens`."""
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens)
        return tokenizer


def import_onnxruntime(model: str) -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise ConfigurationError(f"the {model} embedder needs onnxruntime: {INSTALL_HINT}") from exc
    return onnxruntime


def tokenizer_class(model: str) -> type[Tokenizer]:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ConfigurationError(f"the {model} embedder needs tokenizers: {INSTALL_HINT}") from exc
    return Tokenizer


def verify_sha256(path: Path, expected: str, remedy: str) -> None:
    """Refuse a model file whose checksum is not the pinned one (`remedy` says how to get the right one)."""
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigurationError(f"cannot read the model file {path}: {exc}") from exc
    if digest != expected.lower():
        raise ConfigurationError(
            f"the model file {path} has sha256 {digest}, expected {expected}; {remedy} "
            "(the file is corrupt or not the pinned release)"
        )


def _pooled(hidden: np.ndarray, attention: np.ndarray, pooling: Literal["mean", "cls"]) -> np.ndarray:
    if pooling == "cls":
        return hidden[:, 0, :]
    mask = attention[:, :, None].astype(np.float32)
    summed = (hidden * mask).sum(axis=1)
    counts = np.clip(mask.sum(axis=1), 1e-9, None)
    return summed / counts


def l2_normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
