"""An adversarial corpus for redaction: texts of a given size built to make each rule work hard, for timing the rules
(bench/redaction_timing.py) and for the tests of their keywords (tests/unit/test_redaction_screen.py).

For every rule, from its own keywords (what it looks for first), the shapes that make a backtracking matcher
quadratic or worse: a keyword repeated densely, with and without the separators rules expect after it; a keyword
before a long run of the characters a secret is made of, with no ending; near-matches that fail on their last
character, one after another; labels ("password is", "token:") before values that never qualify. Each ends in the
punctuation rules require besides their keyword, so that the text reaches the rule's matcher past any screen. Then
the shapes every rule meets: long runs of digits with and without separators, of token characters, of spaces, of
zero-width and full-width characters, of Cyrillic look-alikes, and of markers already redacted. `corpus()` returns
the same texts on every run.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

SEED = 40
TOKEN = "aB3dEf9hIjK1mNoP"
SEPARATORS = ("", " ", "-", "_", ".", ":", "=", "/", "@", "\n")
# Ends every keyword's text: the punctuation rules require besides their keyword ("@" after a URL's password, "."
# between a JWT's parts), so that no screen skips the rule and the text reaches its matcher.
TAIL = " @.:=/-_~\"'"


@dataclass(frozen=True)
class Text:
    rule: str  # the rule's name ("*" for a shape every rule meets)
    keyword: str
    shape: str
    text: str


def _fill(unit: str, size: int) -> str:
    return (unit * (size // max(1, len(unit)) + 1))[:size]


def _keyword_shapes(keyword: str, size: int) -> Iterator[tuple[str, str]]:
    for sep in SEPARATORS:
        yield f"keyword{sep!r} repeated", _fill(keyword + sep, size)
    yield "keyword then a run of token characters", keyword + _fill(TOKEN, size - len(keyword))
    yield "keyword then a run of one letter", keyword + _fill("a", size - len(keyword))
    yield "keyword then a run of digits", keyword + _fill("7", size - len(keyword))
    yield "near-matches failing last", _fill(keyword + TOKEN[:12] + "." + TOKEN + "!", size)
    yield "keyword, label words, no value", _fill(f"{keyword} for the account is ", size)
    yield "keyword is a long word", _fill(f"{keyword} is " + "word" * 40 + " ", size)
    yield "keyword, quote never closed", keyword + ': "' + _fill("x", size - len(keyword) - 3)
    yield "keyword, url without host", _fill(f"://{keyword}:", size)
    yield "keyword split by spaces", _fill(" ".join(keyword + TOKEN) + " ", size)


def _shared_shapes(size: int, rng: random.Random) -> Iterator[tuple[str, str]]:
    yield "digits", _fill("4", size)
    for sep in (" ", "-", ".", "  "):
        yield f"digit groups by {sep!r}", _fill("4111" + sep, size)
    yield "single digits by spaces", _fill("1 ", size)
    yield "token characters", _fill(TOKEN, size)
    yield "base64 with padding", _fill(TOKEN + "==", size)
    yield "equals signs", _fill("=", size)
    yield "spaces", " " * size
    yield "zero-width splits", _fill("a\u200b", size)
    yield "full-width", _fill("ｓｋ＿ｌｉｖｅ＿", size)
    yield "Cyrillic look-alikes", _fill("АКІА", size)
    yield "markers", _fill("[REDACTED:", size)
    yield "random printable", "".join(rng.choice("aZ09 :=/@._-'\"\n") for _ in range(size))


def corpus(keywords_by_rule: dict[str, tuple[str, ...]], size: int = 64 * 1024) -> list[Text]:
    """For each rule (its kind and keywords), its adversarial texts of `size` characters, then the shared ones."""
    rng = random.Random(SEED)
    texts: list[Text] = []
    for kind, keywords in keywords_by_rule.items():
        for keyword in keywords or ("",):
            word = keyword if keyword != "#digit" else "4"
            texts.extend(
                Text(kind, keyword, shape, text[: size - len(TAIL)] + TAIL)
                for shape, text in _keyword_shapes(word, size)
            )
    texts.extend(Text("*", "", shape, text[:size]) for shape, text in _shared_shapes(size, rng))
    return texts
