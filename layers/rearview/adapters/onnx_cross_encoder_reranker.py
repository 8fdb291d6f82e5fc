"""OnnxCrossEncoderReranker: the Reranker port on a local cross-encoder in ONNX (e.g. an export of
cross-encoder/ms-marco-MiniLM-L-6-v2), for the embedded backend.

No such model ships in a package the registries hold, so none is bundled: the deployment names a model file
(`REARVIEW_RERANK_MODEL_PATH`) and, unless it is a BERT uncased WordPiece model like MiniLM's, its tokenizer.json.
The model takes `input_ids` and `attention_mask` (and `token_type_ids` if it declares them) of (query, document)
pairs and returns one relevance logit per pair, shape (batch,) or (batch, 1); a two-class head (batch, 2) is read
as its last column. onnxruntime and tokenizers come from the `onnx` extra, as for the MiniLM embedder.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from rearview.errors import ConfigurationError


class OnnxCrossEncoderReranker:
    """A cross-encoder on onnxruntime; loads the model on first use (not at cold start)."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path | None = None,
        *,
        max_tokens: int = 256,
        batch_size: int = 16,
        intra_op_threads: int = 1,
    ) -> None:
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path else None
        self.name = f"onnx:{self.model_path.name}"
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.intra_op_threads = intra_op_threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: set[str] = set()
        self._load_lock = threading.Lock()

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One logit per document, in order; an empty document scores the lowest logit of the call (or 0)."""
        if not documents:
            return []
        session, tokenizer = self._loaded()
        sendable = [i for i, doc in enumerate(documents) if doc.strip()]
        scores = np.zeros(len(documents), dtype=np.float64)
        if not query.strip() or not sendable:
            return scores.tolist()
        encodings = tokenizer.encode_batch([(query, documents[i]) for i in sendable])
        for start in range(0, len(sendable), self.batch_size):
            chunk = encodings[start : start + self.batch_size]
            width = max(len(e.ids) for e in chunk)
            feeds = {
                "input_ids": np.zeros((len(chunk), width), dtype=np.int64),
                "attention_mask": np.zeros((len(chunk), width), dtype=np.int64),
                "token_type_ids": np.zeros((len(chunk), width), dtype=np.int64),
            }
            for row, enc in enumerate(chunk):
                n = len(enc.ids)
                feeds["input_ids"][row, :n] = enc.ids
                feeds["attention_mask"][row, :n] = 1
                feeds["token_type_ids"][row, :n] = enc.type_ids
            (logits,) = session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[:1]
            scores[sendable[start : start + len(chunk)]] = _relevance(np.asarray(logits, dtype=np.float64))
        blank = [i for i, doc in enumerate(documents) if not doc.strip()]
        if blank:
            scores[blank] = min(0.0, float(scores[sendable].min()))
        return scores.tolist()

    def _loaded(self) -> tuple[Any, Any]:
        if self._session is None:
            with self._load_lock:
                if self._session is None:
                    self._load()
        return self._session, self._tokenizer

    def _load(self) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigurationError(
                "the ONNX cross-encoder needs onnxruntime and tokenizers: pip install 'rearview-memory[onnx]'",
                field="reranker",
            ) from exc
        if not self.model_path.is_file():
            raise ConfigurationError(
                f"rerank_model_path: no model file at {self.model_path}", field="rerank_model_path"
            )
        if self.tokenizer_path is not None:
            tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        else:
            # MiniLM's BERT uncased WordPiece vocabulary, which the ms-marco MiniLM cross-encoders share.
            text = resources.files("rearview").joinpath("assets/minilm_tokenizer.json").read_text("utf-8")
            tokenizer = Tokenizer.from_str(text)
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens, strategy="only_second")
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.intra_op_threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(self.model_path), options, providers=["CPUExecutionProvider"])
        inputs = {i.name for i in session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= inputs:
            raise ConfigurationError(
                f"rerank_model_path: {self.model_path.name} takes {sorted(inputs)}, not input_ids and attention_mask",
                field="rerank_model_path",
            )
        self._inputs = inputs
        self._tokenizer = tokenizer
        self._session = session  # set last: the unlocked fast path in _loaded tests it


def _relevance(logits: np.ndarray) -> np.ndarray:
    """One relevance value per row: the logit itself, or a two-class head's last ("relevant") column."""
    if logits.ndim == 1:
        return logits
    if logits.ndim == 2 and logits.shape[1] in (1, 2):
        return logits[:, -1]
    raise ConfigurationError(
        f"the cross-encoder returned logits of shape {logits.shape}; expected (n,), (n, 1) or (n, 2)"
    )
