"""Chat text: what the embedded text of a query leaves out (emoji) and evens out (elongated words and repeated
punctuation), and a namespace's vocabulary.

Nothing here is a list of words: emoji are known by their Unicode blocks, an elongation by a letter said three
times or more (no English word spells a letter three times running). Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# The blocks emoji come from: pictographs, emoticons, transport, supplemental symbols, dingbats, miscellaneous
# symbols and arrows, regional indicators (flags), tags, and the joiners and selectors that combine them.
_EMOJI = re.compile(
    "["
    "\U0001f000-\U0001faff"  # mahjong to symbols and pictographs extended-A (incl. flags' regional indicators)
    "\u2600-\u27bf"  # miscellaneous symbols, dingbats
    "\u2b00-\u2bff"  # miscellaneous symbols and arrows (stars, squares)
    "\u2300-\u23ff"  # miscellaneous technical (watch, hourglass)
    "\ufe00-\ufe0f"  # variation selectors (text or emoji presentation)
    "\u200d"  # zero-width joiner (family, profession sequences)
    "\u20e3"  # combining keycap
    "\U000e0000-\U000e007f"  # tags (subdivision flags)
    "]+"
)
# A letter said three times or more ("soooo", "yesss"): English spells no letter more than twice running.
_ELONGATED = re.compile(r"([^\W\d_])\1{2,}")
# "!!!", "???", "?!?!": one mark says as much.
_REPEATED_MARKS = re.compile(r"([!?])[!?]+")
_SPACES = re.compile(r"[ \t]+")


def without_emoji(text: str) -> str:
    """The text without emoji (and the joiners and selectors that build them), spaces tidied."""
    if text.isascii():
        return text
    return _SPACES.sub(" ", _EMOJI.sub(" ", text)).strip()


def unelongated(text: str) -> str:
    """The text with each letter said three times or more said twice ("soooo" -> "soo", "goood" -> "good") and a
    run of exclamation or question marks said once."""
    return _REPEATED_MARKS.sub(r"\1", _ELONGATED.sub(r"\1\1", text))


def plain_chat_text(text: str) -> str:
    """What an embedder reads of a chat message: no emoji, no elongations. The text itself where nothing would be
    left (a message of emoji alone)."""
    plain = unelongated(without_emoji(text))
    return plain if plain.strip() else text


class Vocabulary:
    """The words of a namespace's texts, with how many texts hold each (relevance weighs a query's terms by them)."""

    def __init__(self, counts: Mapping[str, int], texts: int = 0) -> None:
        self.counts = dict(counts)
        # How many texts the counts are of.
        self.texts = texts

    def __len__(self) -> int:
        return len(self.counts)
