"""Whether a near neighbour found by the write path is the new memory said again (merged) or another memory."""

from __future__ import annotations

from rearview.domain.memory import Episode, Memory
from rearview.domain.write import MemoryWrite
from rearview.service.contradiction import opposite_polarity
from rearview.service.hindsight.outcomes import recognise_outcome
from rearview.text_analysis import numbers_in, term_overlap

# Share of content words a near-duplicate must share with the new memory, on top of the cosine threshold.
_DEDUP_MIN_TERM_OVERLAP = 0.5


def says_the_same(found: Memory, item: MemoryWrite, content: str) -> bool:
    """Whether a near neighbour is the new memory said again: the same polarity, the same numbers, the same metadata
    and (an episode) the same outcome. "batch of 200: 413" and "batch of 50: OK" are two episodes, the lesson lies in
    their difference; the same words under another project's metadata are another project's memory. Never a chunk
    of a long text (forgetting its text would forget what merged into it)."""
    if opposite_polarity(found.content, content) or found.metadata != item.metadata:
        return False
    # Contextual vectors (context_turns) carry the turns before a memory: a short reply and the question it
    # answers can then sit above the threshold without saying the same thing. Same wording is required too.
    if term_overlap(found.content, content) < _DEDUP_MIN_TERM_OVERLAP or numbers_in(found.content) != numbers_in(
        content
    ):
        return False
    if isinstance(found, Episode):
        status = item.outcome_status or recognise_outcome(item.outcome)
        return found.parent_id is None and found.outcome_status == status
    return True
