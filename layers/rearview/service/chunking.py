"""Long texts as linked chunks: an episodic write longer than one episode holds (`MAX_EPISODE_CHARS`) is stored as
consecutive episodes, each searchable on its own and each naming the first as its `parent_id`.

The rule:
1. The text is cut into units no longer than `CHUNK_CHARS`: its paragraphs (split at blank lines); a paragraph too
   long, at its sentences (after `.`, `!`, `?`, `…` and a space, or after `。`, `！`, `？`); a sentence too long, at
   spaces; a word too long, every `CHUNK_CHARS` characters.
2. Units are packed in order into chunks of at most `CHUNK_CHARS` characters, each chunk taking as many whole units
   as fit (so two consecutive chunks together hold more than `CHUNK_CHARS`: a text of n characters makes at most
   2n / CHUNK_CHARS + 1 chunks, 56 for `MAX_WRITE_CHARS`).
3. Every chunk after the first starts with the end of the one before (`OVERLAP_CHARS` at most: its last units that
   fit, else its last words that do), so a sentence cut from its context is still found with it.
The first chunk's id is the write's (the caller's, or a new one), the others `<id>#<n>` (n from 1): a queued write
delivered twice stores each chunk once.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rearview.domain.limits import MAX_CHUNKS, MAX_EPISODE_CHARS, MAX_ID_CHARS

# A chunk's own text, and what it repeats of the chunk before: together at most MAX_EPISODE_CHARS.
CHUNK_CHARS = 1800
OVERLAP_CHARS = MAX_EPISODE_CHARS - CHUNK_CHARS
# The longest id a chunked write may take: its last chunk's id adds `#<n>`.
MAX_PARENT_ID_CHARS = MAX_ID_CHARS - len(f"#{MAX_CHUNKS - 1}")

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r]*\n\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])\s*")
_SPACE = re.compile(r"\s+")

Span = tuple[int, int]


def _cut(text: str, start: int, end: int, boundary: re.Pattern[str]) -> list[Span]:
    """[start, end) cut after each match of `boundary` (the separator stays with the piece before it)."""
    spans: list[Span] = []
    at = start
    for found in boundary.finditer(text, start, end):
        if found.end() > at and found.end() < end:
            spans.append((at, found.end()))
            at = found.end()
    spans.append((at, end))
    return [span for span in spans if span[1] > span[0]]


def _units(text: str) -> list[Span]:
    """The text cut into spans of at most CHUNK_CHARS, at the coarsest boundary each needs (module doc, rule 1)."""
    levels: list[Callable[[int, int], list[Span]]] = [
        lambda s, e: _cut(text, s, e, _PARAGRAPH_BREAK),
        lambda s, e: _cut(text, s, e, _SENTENCE_END),
        lambda s, e: _cut(text, s, e, _SPACE),
        lambda s, e: [(i, min(i + CHUNK_CHARS, e)) for i in range(s, e, CHUNK_CHARS)],
    ]

    def split(start: int, end: int, level: int) -> list[Span]:
        if end - start <= CHUNK_CHARS:
            return [(start, end)]
        return [piece for s, e in levels[level](start, end) for piece in split(s, e, level + 1)]

    return split(0, len(text), 0)


def _packed(units: list[Span]) -> list[list[Span]]:
    """Units packed greedily into runs of at most CHUNK_CHARS characters (rule 2)."""
    runs: list[list[Span]] = []
    for unit in units:
        if runs and unit[1] - runs[-1][0][0] <= CHUNK_CHARS:
            runs[-1].append(unit)
        else:
            runs.append([unit])
    return runs


def _overlap_start(text: str, run: list[Span]) -> int:
    """Where the overlap the next chunk repeats starts in `run`: at its last units within OVERLAP_CHARS, else at a
    space within the last OVERLAP_CHARS characters, else nowhere (its end)."""
    end = run[-1][1]
    starts = [s for s, _ in run if end - s <= OVERLAP_CHARS]
    if starts and starts[0] > run[0][0]:
        return starts[0]
    space = _SPACE.search(text, max(run[0][0], end - OVERLAP_CHARS), end)
    return space.end() if space is not None and space.end() < end else end


def chunk_text(text: str) -> list[str]:
    """The chunks of `text` (module doc): [text] itself when it fits one episode."""
    if len(text) <= MAX_EPISODE_CHARS:
        return [text]
    runs = _packed(_units(text))
    chunks: list[str] = []
    for i, run in enumerate(runs):
        start = _overlap_start(text, runs[i - 1]) if i else run[0][0]
        chunks.append(text[start : run[-1][1]].strip())
    return [chunk for chunk in chunks if chunk]


def chunk_id(parent: str, index: int) -> str:
    """The id of chunk `index` of the write whose id is `parent` (the first chunk's)."""
    return parent if index == 0 else f"{parent}#{index}"
