"""Chat spelling: what the embedded text of a chat message leaves out (emoji) and evens out (elongated words and
repeated punctuation), and the spelling variants of a word that a namespace's own vocabulary holds (a typo, an
elongation) for keyword search to match too.

Nothing here is a list of words: emoji are known by their Unicode blocks, an elongation by a letter said three
times or more (no English word spells a letter three times running), and a variant by its distance from the word
(one letter inserted, dropped, changed or two swapped: Damerau's single-error typo) within the vocabulary of the
namespace that is searched, less the words an English word list (the embedder's vocabulary, in the package) knows:
those are words of their own. Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources

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


def _collapsed(word: str) -> str:
    """The word with every run of a letter said once: an elongation and its word collapse alike."""
    return re.sub(r"(.)\1+", r"\1", word)


def _one_edit_apart(a: str, b: str) -> bool:
    """Whether `b` is `a` with one letter inserted, dropped or changed, or two neighbouring letters swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(diff) == 1:
            return True
        first = diff[0]
        return len(diff) == 2 and diff[1] == first + 1 and a[first] == b[first + 1] and a[first + 1] == b[first]
    shorter, longer = (a, b) if len(a) < len(b) else (b, a)
    i = next((i for i, (x, y) in enumerate(zip(shorter, longer, strict=False)) if x != y), len(shorter))
    return shorter[i:] == longer[i + 1 :]


class Vocabulary:
    """The words of a namespace's texts, with how many texts hold each, indexed by their one-letter deletions
    (SymSpell): the words one edit from a term share a deletion with it, so finding them costs a few lookups."""

    def __init__(self, counts: Mapping[str, int], texts: int = 0) -> None:
        self.counts = dict(counts)
        # How many texts the counts are of.
        self.texts = texts
        # Built by the first `variants`: most of a vocabulary's cost, and only the spelling stage (off by default)
        # asks for it; the counts alone serve the rest.
        self._indexes: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None

    def _by_deletion_and_collapse(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """The words by each of their one-letter deletions (and themselves), and by their collapsed spelling."""
        if self._indexes is None:
            by_deletion: dict[str, list[str]] = {}
            by_collapse: dict[str, list[str]] = {}
            for word in self.counts:
                if not word.isalpha():
                    continue
                for key in {word, *_deletions(word)}:
                    by_deletion.setdefault(key, []).append(word)
                by_collapse.setdefault(_collapsed(word), []).append(word)
            # One assignment: a thread reading the profile at the same time sees both indexes or neither.
            self._indexes = (by_deletion, by_collapse)
        return self._indexes

    def __len__(self) -> int:
        return len(self.counts)

    def variants(self, term: str, min_length: int, max_share: float, same: Iterable[str] = ()) -> list[str]:
        """The words likely to be misspellings or elongations of `term`: one edit from it (or the same once
        elongations collapse) and rarer than it, at most `max_share` of its count (a word said about as often as
        the term is a word of its own: "class" and "glass"). A term shorter than `min_length` letters has too many
        real words one edit away. `same`: words already matched as the term (its other inflections). Commonest
        first."""
        if len(term) < min_length or not term.isalpha():
            return []
        own = self.counts.get(term, 0)
        # A term the namespace never says may be the misspelt one: its variants are what the namespace says
        # instead, when they are rare enough to be slips themselves (said once).
        ceiling = max_share * own if own else 1.0
        skip = {term, *same}
        by_deletion, by_collapse = self._by_deletion_and_collapse()
        near = {w for key in {term, *_deletions(term)} for w in by_deletion.get(key, ())}
        near = {w for w in near if _one_edit_apart(term, w)}
        near.update(by_collapse.get(_collapsed(term), ()))
        kept = (w for w in near if w not in skip and len(w) >= min_length - 1 and self.counts[w] <= ceiling)
        found = [(self.counts[w], w) for w in kept]
        return [word for _, word in sorted(found, key=lambda cw: (-cw[0], cw[1]))]


# Endings a known word may carry that the word list leaves to its stem ("jams", "gamers", "shaped").
_ENDINGS = ("s", "es", "d", "ed", "ing", "er", "ers", "ly", "y")


def known_word(word: str) -> bool:
    """Whether a lower-case word (or it less a common ending) is an English word: one of the whole words of the
    word list that ships with the package (MiniLM's WordPiece vocabulary, 21,745 of them). A variant that is a word
    of its own ("games" next to "james") is no misspelling; one that is not ("alergic", "shcool") likely is."""
    words = _word_list()
    return word in words or any(word.endswith(e) and word[: -len(e)] in words for e in _ENDINGS)


@lru_cache(maxsize=1)
def _word_list() -> frozenset[str]:
    text = resources.files("rearview").joinpath("assets/minilm_tokenizer.json").read_text("utf-8")
    vocab = json.loads(text)["model"]["vocab"]
    return frozenset(w for w in vocab if w.isascii() and w.isalpha())


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}
