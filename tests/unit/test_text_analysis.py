"""Tokenisation shared by the FTS5 index, the query side and the hashing embedder."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rearview import text_analysis
from rearview.text_analysis import (
    CJK_FUNCTION_CHARS,
    STOP_WORDS,
    asks_question,
    asks_when,
    estimate_tokens,
    index_text,
    is_cjk,
    mentions_time,
    query_terms,
    strip_names,
    tokens,
)

pytestmark = pytest.mark.unit


# --- tokens -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, World!", ["hello", "world"]),
        ("Caroline's dog", ["caroline", "dog"]),
        ("caroline\u2019s dog", ["caroline", "dog"]),
        (
            "they're here, we've gone, I'll go, he'd know, I'm in",
            ["they", "here", "we", "gone", "i", "go", "he", "know", "i", "in"],
        ),
        ("don't", ["don"]),
        ("O'Brien", ["o", "brien"]),
        ("'quoted' words", ["quoted", "words"]),
        ("snake_case and kebab-case", ["snake", "case", "and", "kebab", "case"]),
        ("Met on 2023-05-07 at 3.5km", ["met", "on", "2023", "05", "07", "at", "3", "5km"]),
        ("iPhone15 RTX4090", ["iphone15", "rtx4090"]),
        ("Café naïve résumé", ["café", "naïve", "résumé"]),
        ("ＡＢＣ１２３", ["abc123"]),  # full-width forms fold to ASCII
        ("Привет мир", ["привет", "мир"]),
        ("", []),
        ("  ... !!! ", []),
    ],
)
def test_tokens_latin(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("猫", ["猫"]),
        ("喜欢", ["喜欢"]),
        ("我喜欢猫", ["我喜", "喜欢", "欢猫"]),
        ("北京，上海", ["北京", "上海"]),  # punctuation ends a run
        ("我去北京。好", ["我去", "去北", "北京", "好"]),
        ("我用Python写代码", ["我用", "python", "写代", "代码"]),
        ("iPhone15用户", ["iphone15", "用户"]),
        ("Caroline去了LGBTQ支持小组", ["caroline", "去了", "lgbtq", "支持", "持小", "小组"]),
        ("東京タワー", ["東京", "京タ", "タワ", "ワー"]),
        ("한국어", ["한국", "국어"]),
    ],
)
def test_tokens_cjk_bigrams(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_index_text_joins_tokens_with_spaces() -> None:
    assert index_text("Caroline's 猫咪 likes FISH!") == "caroline 猫咪 likes fish"
    assert index_text("") == ""


@given(st.text(max_size=200))
@settings(deadline=None, max_examples=200)
def test_tokens_are_lowercase_nonempty_and_space_free(text: str) -> None:
    for token in tokens(text):
        assert token
        assert token == token.lower()
        assert not any(ch.isspace() for ch in token)
    # index_text is exactly what the FTS5 tokenizer re-splits into the same tokens.
    assert index_text(text).split() == tokens(text)


@given(st.text(max_size=200))
@settings(deadline=None, max_examples=200)
def test_tokenising_is_idempotent_on_index_text(text: str) -> None:
    # The index side and the query side must agree even when the query is itself indexed text.
    assert [t for t in tokens(index_text(text)) if not is_cjk(t[0])] == [t for t in tokens(text) if not is_cjk(t[0])]


# ASCII of every kind, with apostrophes, clitics and capitals crowded in so that they meet each other often.
_ASCII_TEXT = st.lists(
    st.one_of(st.characters(max_codepoint=127), st.sampled_from(["'", "'s", "'ll", "O", "A", " "])), max_size=60
).map("".join)


@given(_ASCII_TEXT)
@settings(deadline=None, max_examples=500)
def test_the_ascii_fast_path_tokenises_as_the_general_loop(text: str) -> None:
    assert text.isascii()
    assert tokens(text) == text_analysis._general_tokens(text.lower())


@pytest.mark.parametrize(
    "text",
    ["'s", "a''b", "don't'", "'o'brien's'", "rock'n'roll", "x'" + "''y'll's", "it's 9'o clock", "A'B'C'S", "T\tE\x07'"],
)
def test_the_ascii_fast_path_on_apostrophes_at_every_place(text: str) -> None:
    assert tokens(text) == text_analysis._general_tokens(text.lower())


# CJK runs between ASCII and separators, and now and then what sends a text to the general loop: another script's
# letter, a combining mark (a variation selector after a Han character), a typographic apostrophe, a full-width form.
_CJK_TEXT = st.lists(
    st.one_of(
        st.characters(max_codepoint=127),
        st.sampled_from(list("我猫喜欢〇々あカ한\u3400。、「」：！？ａＡ１\u3000") + ["\U00020000", "'s", " "]),
        st.sampled_from(["\ufe0f", "\u0301", "é", "я", "\u2019", "\u02bc", "\u0915\u093f"]),
    ),
    max_size=40,
).map("".join)


@given(_CJK_TEXT)
@settings(deadline=None, max_examples=500)
def test_the_cjk_and_ascii_path_tokenises_as_the_general_loop(text: str) -> None:
    assert tokens(text) == text_analysis._general_tokens(unicodedata.normalize("NFKC", text).lower())


@pytest.mark.parametrize(
    "text",
    [
        "9月10日徐明要去天津。",
        "提醒：徐明的医生改到周四",
        "猫's 狗'",
        "abc'猫",
        "猫\ufe0f咪",
        "a。b",
        "Ｃａｒｏｌｉｎｅ的猫",
    ],
)
def test_the_cjk_and_ascii_path_on_boundaries(text: str) -> None:
    assert tokens(text) == text_analysis._general_tokens(unicodedata.normalize("NFKC", text).lower())


# --- is_cjk -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ch", ["我", "猫", "〇", "々", "あ", "カ", "한", "\u3400", "\U00020000", "\uf900"])
def test_is_cjk_true(ch: str) -> None:
    assert is_cjk(ch)


@pytest.mark.parametrize("ch", ["a", "Z", "1", "é", "я", " ", "，", "。", "！", "😀", "", "ab"])
def test_is_cjk_false(ch: str) -> None:
    assert not is_cjk(ch)


def _in_a_cjk_range(code: int) -> bool:
    return any(start <= code <= end for start, end in text_analysis._CJK_RANGES)


def test_is_cjk_at_both_edges_of_every_range() -> None:
    edges = {c + d for start, end in text_analysis._CJK_RANGES for c in (start, end) for d in (-1, 0, 1)}
    for code in sorted(edges | {0, 0x10FFFF}):
        assert is_cjk(chr(code)) == _in_a_cjk_range(code), hex(code)


@given(st.characters())
@settings(deadline=None, max_examples=500)
def test_is_cjk_is_membership_of_the_ranges(ch: str) -> None:
    assert is_cjk(ch) == _in_a_cjk_range(ord(ch))


# --- query_terms --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "What did Caroline do when she went to the LGBTQ support group?",
            ["caroline", "went", "lgbtq", "support", "group"],
        ),
        ("Where does Melanie like to go camping?", ["melanie", "like", "go", "camping"]),
        ("How many kids do they have?", ["many", "kids"]),
        ("Who is her favourite author?", ["favourite", "author"]),
        ("what did I do?", []),
        ("Paris paris PARIS trip", ["paris", "trip"]),  # deduplicated, first-seen order
        ("Why wasn't he there?", []),
    ],
)
def test_query_terms_english(query: str, expected: list[str]) -> None:
    assert query_terms(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("他的猫叫什么名字？", ["的猫", "猫叫", "叫什", "么名", "名字"]),
        ("我们是什么时候去的北京", ["么时", "时候", "候去", "去的", "的北", "北京"]),
        ("我喜欢什么", ["我喜", "喜欢", "欢什"]),
        ("你在吗", []),
        ("的", []),
        ("咖啡", ["咖啡"]),
    ],
)
def test_query_terms_chinese_drop_function_only_terms(query: str, expected: list[str]) -> None:
    assert query_terms(query) == expected


@pytest.mark.parametrize(
    "word",
    [
        "what",
        "when",
        "where",
        "who",
        "how",
        "why",
        "which",
        "did",
        "does",
        "do",
        "is",
        "was",
        "were",
        "have",
        "i",
        "you",
        "she",
        "they",
        "the",
        "a",
        "of",
    ],
)
def test_stop_words_cover_question_words_pronouns_and_auxiliaries(word: str) -> None:
    assert word in STOP_WORDS
    assert query_terms(f"{word} tennis") == ["tennis"]


@pytest.mark.parametrize("word", ["paris", "coffee", "like", "birthday", "caroline", "allergic"])
def test_content_words_are_not_stop_words(word: str) -> None:
    assert word not in STOP_WORDS


@pytest.mark.parametrize("ch", ["的", "了", "是", "在", "我", "你", "他", "吗", "呢", "什", "么"])
def test_chinese_function_characters(ch: str) -> None:
    assert ch in CJK_FUNCTION_CHARS


def test_query_terms_are_a_subset_of_the_indexed_tokens() -> None:
    text = "Caroline's 猫咪 went to the vet on Monday, 她很担心"
    assert set(query_terms(text)) <= set(index_text(text).split())


# --- estimate_tokens ----------------------------------------------------------------------------------------


def test_estimate_tokens_empty_is_zero() -> None:
    assert estimate_tokens("") == 0


@pytest.mark.parametrize("text", ["a", " ", "!", "猫", "\n"])
def test_estimate_tokens_nonempty_is_at_least_one(text: str) -> None:
    assert estimate_tokens(text) >= 1


def test_estimate_tokens_one_per_cjk_character() -> None:
    assert estimate_tokens("我喜欢猫") == 4
    assert estimate_tokens("我" * 100) == 100


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        # 9 short words, 44 characters: the words/0.75 rule (12) dominates the chars/4 rule (11).
        ("The quick brown fox jumps over the lazy dog.", 11, 13),
        # 2 long words: the chars/4 rule dominates.
        ("internationalization counterrevolutionaries", 10, 12),
    ],
)
def test_estimate_tokens_latin(text: str, low: int, high: int) -> None:
    assert low <= estimate_tokens(text) <= high


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a b c", 4),  # 3 words / 0.75 = 4 beats 5 chars / 4
        ("abcdefghijklmnopqrstuvwxyz0123456789", 9),  # 36 chars / 4 beats 1 word / 0.75
        ("  padded words  ", 3),  # stripped: 12 chars / 4 = 3 ties 2 words / 0.75 = 2.67
        (" \t\n ", 1),  # no words: at least 1
    ],
)
def test_estimate_tokens_ascii_exact(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_estimate_tokens_mixed_adds_both_parts() -> None:
    latin = "I love hiking in the mountains"
    assert estimate_tokens(latin + "我喜欢猫") == estimate_tokens(latin) + 4


def test_estimate_tokens_grows_with_length() -> None:
    sentence = "We met Caroline at the cafe near the station. "
    assert estimate_tokens(sentence * 10) > 5 * estimate_tokens(sentence)


def test_term_overlap() -> None:
    from rearview.text_analysis import term_overlap

    assert term_overlap("Maria prefers window seats", "Maria prefers window seats!") == 1.0
    assert term_overlap("Booked the ferry", "Booked the ferry to Naxos") == pytest.approx(2 / 3)
    assert term_overlap("the a of", "window seats") == 0.0


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Melanie: which studio did you join?", True),
        ("What was it called? [shares a photo of a bowl]", True),
        ("Is it? (maybe) [photo]", True),
        ("你去过里斯本吗？", True),
        ("I joined the studio. [shares a photo of a bowl]", False),
        ("ok (really?)", False),
        ("Did you? No, I did.", False),
        ("", False),
        ("What was it called? [shares a photo]  \n", True),
        ("Are you coming?  \t\n", True),
        ("I'm coming (soon)?", True),
        ("Coming? [yes] (maybe)", True),
        ("Coming? [yes] no", False),
        ("?)", False),
    ],
)
def test_asks_question_reads_the_last_sentence_past_trailing_asides(text: str, asks: bool) -> None:
    assert asks_question(text) is asks


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When did Nate get his first two turtles?", True),
        ("what year did she move to Lisbon", True),
        ("In which month did the deploy start failing?", True),
        ("How long has John played drums?", True),
        ("Since when is the cache on?", True),
        ("我们什么时候去的杭州？", True),
        ("What did Dave buy?", False),
        ("Where did we go when it rained?", False),
        ("How did the migration fail?", False),
    ],
)
def test_asks_when_reads_questions_about_a_time(query: str, asks: bool) -> None:
    assert asks_when(query) is asks


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        ("I've had them for 3 years now", True),
        ("Last weekend I took the kids camping", True),
        ("We met two weeks ago", True),
        ("I went there in May", True),
        ("On May 3 the deploy failed", True),
        ("Since 2019 I have run every morning", True),
        ("He turns 5 years old next month", True),
        ("上周我们去了杭州", True),
        ("I may go to the studio", False),
        ("Turtles bring me joy and peace", False),
        ("我喜欢猫", False),
    ],
)
def test_mentions_time_finds_dates_durations_and_relative_days(text: str, mentions: bool) -> None:
    assert mentions_time(text) is mentions


@pytest.mark.parametrize(
    ("text", "names", "expected"),
    [
        ("What books has Tim read?", ["Tim"], "What books has read?"),
        ("What is Tim's favourite book?", ["tim"], "What is favourite book?"),
        ("Did Caroline meet her in New York?", ["Caroline", "New York"], "Did meet her in?"),
        ("Timothy and Tim", ["Tim"], "Timothy and"),
        ("Tim?", ["Tim"], "Tim?"),
        ("What did Tim say?", [], "What did Tim say?"),
        ("卡罗琳说她去了哪里？", ["卡罗琳"], "说她去了哪里？"),
        ("Was hat 卡罗琳 gesagt?", ["卡罗琳"], "Was hat gesagt?"),
    ],
)
def test_strip_names_removes_whole_names_and_possessives(text: str, names: list[str], expected: str) -> None:
    assert strip_names(text, names) == expected
