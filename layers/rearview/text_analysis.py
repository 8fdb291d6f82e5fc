"""Tokenisation shared by the embedded FTS5 index, the query side of keyword search and the hashing embedder.

One tokeniser for both sides is what makes keyword search work: a memory is indexed with `index_text` and
a query is matched with `query_terms`, so both see the same words. Latin (and other space-separated scripts)
split into lowercased words; CJK text has no spaces, so a run of CJK characters becomes its overlapping
character bigrams ("我喜欢猫" -> 我喜 喜欢 欢猫), the usual dictionary-free way to index Chinese and
Japanese. Standard library only.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable

# Ranges of the scripts written without spaces between words: Han ideographs (with extensions and
# compatibility forms), Japanese kana, Hangul, and the CJK symbols block's iteration marks. Sorted by start.
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0x3130, 0x318F),  # Hangul Compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul Syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x2FA1F),  # Extensions B to F and the compatibility supplement
    (0x30000, 0x323AF),  # Extensions G and H
)
_CJK_STARTS = tuple(start for start, _ in _CJK_RANGES)

# Clitics after an apostrophe carry no meaning for search ("caroline's" -> "caroline", "they're" -> "they").
_CLITICS = frozenset({"s", "t", "d", "m", "ll", "re", "ve"})
_APOSTROPHES = frozenset({"'", "\u2019", "\u02bc"})

# English words too common to say what a text is about: articles, pronouns, auxiliaries, question words,
# prepositions, and the stems the tokeniser leaves of contractions (didn't -> didn).
_STOP_WORDS_TEXT = (
    "a about above after again against all also am an and any are as at be because been before being "
    "below between both but by can could did do does doing done down during each either else ever every "
    "few for from further get gets got had has have having he her here hers herself him himself his how i "
    "if in into is it its itself just let may me might mine more most much must my myself neither no nor "
    "not now of off on once only or other ought our ours ourselves out over own per please quite rather "
    "really same shall she should so some such than that the their theirs them themselves then there "
    "these they this those though through thus to too under until up upon us very via was we were what "
    "whatever when whenever where whereas wherever whether which while who whoever whom whose why will "
    "with within without would yet you your yours yourself yourselves anything anyone anybody everything "
    "everyone something someone somebody nothing nobody aren couldn didn doesn don hadn hasn haven isn "
    "mightn mustn needn shan shouldn wasn weren won wouldn cannot ok okay oh um uh hmm yeah yes "
)
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())

# Chinese characters that carry grammar rather than topic: particles, pronouns, copulas, question words,
# common adverbs and measure words. A query term made only of these (的 我们 什么 是不是) matches nearly
# every memory.
CJK_FUNCTION_CHARS: frozenset[str] = frozenset(
    "的地得了着过是在有和与及或而且但就都也还又很太最更再才只已把被给对向从到跟为以于之其所"
    "我你您他她它们咱自己这那哪此些每各某个种样"
    "吗呢吧啊呀嘛哦噢哈嗯么吶啦喔"
    "什怎谁几多少何为啥"
    "不没别一"
)


def is_cjk(ch: str) -> bool:
    """True if the character belongs to a script written without spaces (Han, kana, Hangul)."""
    if len(ch) != 1:
        return False
    code = ord(ch)
    if code < 0x1100:
        return False
    # The one range that may hold it: the last starting at or below it (the tokeniser asks for every character of a
    # non-ASCII text; a scan of the ranges took most of a Chinese episode's indexing time).
    at = bisect_right(_CJK_STARTS, code) - 1
    return code <= _CJK_RANGES[at][1]


def _is_word_char(ch: str) -> bool:
    # Letters, digits and combining marks of every script except CJK; `_` and punctuation separate words,
    # as they do for SQLite's unicode61 tokenizer.
    return unicodedata.category(ch)[0] in "LNM" and not is_cjk(ch)


def _word_tokens(word: str) -> list[str]:
    """Split one apostrophe-joined word: clitic pieces are dropped, other pieces ("o'brien") kept apart."""
    pieces: list[str] = []
    current: list[str] = []
    for ch in word:
        if ch in _APOSTROPHES:
            pieces.append("".join(current))
            current = []
        else:
            current.append(ch)
    pieces.append("".join(current))
    head, rest = pieces[0], pieces[1:]
    return [p for p in [head, *(r for r in rest if r not in _CLITICS)] if p]


def _cjk_tokens(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


# ASCII text (most of what agents store) takes a path with the same result as the general loop below, about twenty
# times faster: indexing spends most of its time here (a bulk load tokenises every episode). One C pass over the
# bytes lowercases the letters and turns every byte that is neither a letter, a digit nor an apostrophe into a space;
# the words are then what `split` finds. An apostrophe joins a word only between two of its letters or digits.
_ASCII_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789'")
_ASCII_FOLD = bytes(c if c in _ASCII_WORD_BYTES else c + 32 if 0x41 <= c <= 0x5A else 0x20 for c in range(256))


def _apostrophe_tokens(chunk: str) -> list[str]:
    """The tokens of a run of letters, digits and apostrophes: each apostrophe-joined word's first piece, and its
    later pieces unless they are clitics (what `_word_tokens` keeps); two apostrophes in a row, or one at either
    end, separate words."""
    out: list[str] = []
    starts_word = True
    for piece in chunk.split("'"):
        if not piece:
            starts_word = True
            continue
        if starts_word or piece not in _CLITICS:
            out.append(piece)
        starts_word = False
    return out


def _ascii_tokens(text: str) -> list[str]:
    words = text.encode("ascii").translate(_ASCII_FOLD).decode("ascii").split()
    if "'" not in text:
        return words  # no word holds an apostrophe: each is a token as it is
    out: list[str] = []
    for word in words:
        if "'" in word:
            out.extend(_apostrophe_tokens(word))
        else:
            out.append(word)
    return out


def tokens(text: str) -> list[str]:
    """Lowercased word tokens: words of non-CJK scripts, and the character bigrams of each CJK run.

    Text is NFKC-normalised first so full-width letters and digits (Ａ１) match their ASCII forms.
    """
    if text.isascii():
        return _ascii_tokens(text)
    normalised = unicodedata.normalize("NFKC", text).lower()
    found = _cjk_and_ascii_tokens(normalised)
    return found if found is not None else _general_tokens(normalised)


# Chinese or Japanese text with ASCII words, digits and punctuation in it (most non-ASCII text agents store here)
# takes a path with the same result as the general loop, about four times faster: the CJK runs found by one regex,
# the ASCII between them by the ASCII path. Any other character than a separator (a letter of another script, a
# combining mark, a typographic apostrophe) sends the text to the general loop.
_CJK_RUN = re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in _CJK_RANGES) + "]+")


def cjk_characters(text: str) -> int:
    """How many of the text's characters are CJK (`is_cjk`)."""
    return sum(len(run) for run in _CJK_RUN.findall(text))


def _cjk_and_ascii_tokens(normalised: str) -> list[str] | None:
    """`tokens` of normalised text made of CJK runs, ASCII, and other characters that neither make words nor join
    them (separators); None for any other text."""
    out: list[str] = []
    start = 0
    for run in _CJK_RUN.finditer(normalised):
        if not _separated_ascii_tokens(normalised[start : run.start()], out):
            return None
        out.extend(_cjk_tokens(run.group()))
        start = run.end()
    return out if _separated_ascii_tokens(normalised[start:], out) else None


def _separated_ascii_tokens(segment: str, out: list[str]) -> bool:
    """Add the tokens of a segment between CJK runs to `out` if it holds ASCII and separators only (False if not)."""
    if not segment.isascii():
        for ch in segment:
            if not ch.isascii() and (ch in _APOSTROPHES or unicodedata.category(ch)[0] in "LNM"):
                return False
        segment = "".join(ch if ch.isascii() else " " for ch in segment)
    out.extend(_ascii_tokens(segment))
    return True


def _general_tokens(normalised: str) -> list[str]:
    """`tokens` of any NFKC-normalised, lowercased text, character by character."""
    runs = _Runs()
    for i, ch in enumerate(normalised):
        if is_cjk(ch):
            runs.end_word()
            runs.cjk.append(ch)
            continue
        kind = unicodedata.category(ch)[0]
        if kind in "LNM":  # a word character (`_is_word_char`: not CJK, as just seen)
            # A stray combining mark (a variation selector after a Han character) is not a word.
            if runs.word or kind != "M":
                runs.end_cjk()
                runs.word.append(ch)
        elif ch in _APOSTROPHES and runs.word and _is_word_char(normalised[i + 1 : i + 2] or " "):
            # An apostrophe inside a word stays with it until _word_tokens decides what it separates.
            runs.word.append(ch)
        else:
            runs.end_word()
            runs.end_cjk()
    runs.end_word()
    runs.end_cjk()
    return runs.tokens


class _Runs:
    """The tokens read so far, and the word or CJK run being read (a character of another kind ends it)."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.word: list[str] = []
        self.cjk: list[str] = []

    def end_word(self) -> None:
        if self.word:
            self.tokens.extend(_word_tokens("".join(self.word)))
            self.word.clear()

    def end_cjk(self) -> None:
        if self.cjk:
            self.tokens.extend(_cjk_tokens("".join(self.cjk)))
            self.cjk.clear()


def index_text(text: str) -> str:
    """The text as FTS5 should index it: tokens joined by spaces (unicode61 re-splits on the spaces)."""
    return " ".join(tokens(text))


def _is_stop(token: str) -> bool:
    if is_cjk(token[0]):
        return all(ch in CJK_FUNCTION_CHARS for ch in token)
    return token in STOP_WORDS


def query_terms(text: str) -> list[str]:
    """The tokens of a query worth matching: no stop words, no CJK function-character terms, no repeats.

    May be empty (for "what did I do?"); the caller then relies on vector search alone.
    """
    return list(dict.fromkeys(t for t in tokens(text) if not _is_stop(t)))


# Words that ask "what went on" without naming a topic: a query made only of these and a time expression asks for
# the time range itself ("what happened yesterday?", "上周我们做了什么").
_VAGUE_TERMS = frozenset(
    [
        "happen",
        "happened",
        "happens",
        "happening",
        "going",
        "go",
        "went",
        "do",
        "did",
        "done",
        "doing",
        "discuss",
        "discussed",
        "talk",
        "talked",
        "say",
        "said",
        "anything",
        "something",
        "everything",
        "stuff",
        "thing",
        "things",
        "up",
        "new",
        "work",
        "worked",
    ]
)
_VAGUE_CJK_CHARS = frozenset("发生了什么做说讨论干事情的我们你他她过有吗呢啥聊天")


def is_vague_term(term: str) -> bool:
    """Whether a query term names no topic ("happened", "did", "发生"): one of the words that ask what went on."""
    return term in _VAGUE_TERMS or all(ch in _VAGUE_CJK_CHARS for ch in term)


# A trailing bracketed or parenthesised aside ("... coming? [shares a photo]"), which does not change what was said.
_TRAILING_ASIDE = re.compile(r"(?:\s*(?:\[[^\[\]]*\]|\([^()]*\)))+\s*$")


def without_asides(text: str) -> str:
    """The text without its trailing bracketed or parenthesised asides: what was said, not a stage direction."""
    return _TRAILING_ASIDE.sub("", text).rstrip()


def asks_question(text: str) -> bool:
    """Whether the text ends by asking something: its last sentence, trailing asides set apart, ends with a
    question mark (ASCII or full-width)."""
    body = text.rstrip()
    # An aside ends in a bracket: without one there is nothing to remove, and the search over the text is saved.
    if body.endswith(("]", ")")):
        body = _TRAILING_ASIDE.sub("", body).rstrip()
    return body.endswith(("?", "\uff1f"))


# A query that asks for a time: "when ...", "what year ...", "how long ...", "多久", "什么时候".
_ASKS_WHEN = re.compile(
    r"^\W*(?:when\b|since\s+when\b|(?:in\s+|on\s+)?(?:what|which)\s+(?:year|month|date|day|week|time)\b"
    r"|how\s+long\b|how\s+old\b|at\s+what\s+age\b)"
    r"|什么时候|何时|哪一?年|哪个月|几月|哪一?天|几号|多久|多长时间",
    re.IGNORECASE,
)
_MONTHS_AND_DAYS = (
    "january|february|march|april|june|july|august|september|october|november|december"
    "|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
)
# A text that says when something happened or for how long: relative days and weeks, durations, years, month and
# weekday names, "ago", "since", ages and anniversaries; in Chinese the same words and dates.
_MENTIONS_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|since|birthday|anniversary|first\s+time"
    r"|(?:last|next|this|past)\s+(?:night|morning|week|weekend|month|year|summer|winter|spring|fall|autumn|time"
    r"|may|" + _MONTHS_AND_DAYS + r")"
    r"|the\s+other\s+day|years?\s+old"
    r"|(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|several|couple\s+of|\d+)\s+"
    r"(?:days?|weeks?|months?|years?|decades?)"
    r"|(?:19|20)\d\d|"
    + _MONTHS_AND_DAYS
    # "May" the month, not the verb: with a day or after a preposition.
    + r"|may\s+\d|(?:in|of|since|until|early|late|mid)[\s-]+may)\b"
    r"|昨天|今天|明天|前天|后天|上周|下周|本周|上个?月|下个?月|去年|今年|明年|最近|周末|星期|\d+\s*[年月日号]",
    re.IGNORECASE,
)


def asks_when(text: str) -> bool:
    """Whether a query asks for a time ("When did we ...?", "What year ...", "How long ...", "什么时候")."""
    return _ASKS_WHEN.search(text) is not None


def mentions_time(text: str) -> bool:
    """Whether a text says when or for how long ("last week", "two years ago", "in May", "since 2019", "上周")."""
    return _MENTIONS_TIME.search(text) is not None


def strip_names(text: str, names: Iterable[str]) -> str:
    """The text without the given names (whole words, any case, with a possessive 's), spaces tidied. The text
    itself when nothing would be left to search for."""
    stripped = text
    for name in sorted({n.strip() for n in names if n.strip()}, key=len, reverse=True):
        # Whole words; a CJK name has no spaces around it ("卡罗琳说她…"), so its CJK ends need no boundary.
        before = "" if is_cjk(name[0]) else r"(?<!\w)"
        after = "" if is_cjk(name[-1]) else r"(?:['\u2019]s)?(?!\w)"
        stripped = re.sub(before + re.escape(name) + after, " ", stripped, flags=re.IGNORECASE)
    stripped = re.sub(r"\s+([?!.,;:])", r"\1", re.sub(r"\s+", " ", stripped)).strip()
    return stripped if query_terms(stripped) else text


def without_speaker_label(text: str, names: Iterable[str]) -> str:
    """The text without a leading "<name>: " label when the name is one of `names` (any case); else the text."""
    head, sep, rest = text.partition(":")
    if sep and rest.strip() and any(head.strip().lower() == n.strip().lower() for n in names if n.strip()):
        return rest.strip()
    return text


def estimate_tokens(text: str) -> int:
    """Rough LLM token count: one per CJK character, and for the rest the larger of chars/4 and words/0.75.

    Taking the larger of the two rules errs on the high side, which is the safe side for a token budget.
    At least 1 for any non-empty text, 0 for the empty string.
    """
    if not text:
        return 0
    if text.isascii():  # no CJK to count or space out: the character loops below cost ~25 us a memory
        cjk, rest = 0, text
    else:
        cjk = sum(1 for ch in text if is_cjk(ch))
        rest = "".join(" " if is_cjk(ch) else ch for ch in text)
    words = len(rest.split())
    chars = len(rest.strip()) if words else 0
    latin = max(chars / 4, words / 0.75)
    return max(1, cjk + round(latin))


def term_overlap(a: str, b: str) -> float:
    """Jaccard overlap of two texts' content words (`query_terms`), in [0, 1]; 0 if either has none."""
    terms_a, terms_b = set(query_terms(a)), set(query_terms(b))
    if not terms_a or not terms_b:
        return 0.0
    return len(terms_a & terms_b) / len(terms_a | terms_b)


_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def numbers_in(text: str) -> frozenset[str]:
    """The numbers a text states ("batch of 200", "3pm", "1,5"): two texts with different numbers say different
    things however alike their words."""
    return frozenset(m.group(0).replace(",", ".") for m in _NUMBER.finditer(unicodedata.normalize("NFKC", text)))


def is_chinese(text: str) -> bool:
    """True when at least a fifth of the text's letters are CJK characters."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return False
    return sum(1 for ch in letters if is_cjk(ch)) >= 0.2 * len(letters)


def mostly_chinese(texts: Iterable[str]) -> bool:
    """Whether most of the texts are written in Chinese (what an induced memory is then stated in)."""
    votes = [is_chinese(t) for t in texts]
    return sum(votes) * 2 > len(votes)


def names_subject(subject: str, text: str) -> bool:
    """Whether `text` names `subject` (a tool, task or entity): as whole words for Latin script, as a substring
    for Chinese."""
    subject = subject.strip()
    if not subject:
        return False
    if subject.isascii():
        return re.search(rf"(?<![\w-]){re.escape(subject)}(?![\w-])", text, re.IGNORECASE) is not None
    return subject in text
