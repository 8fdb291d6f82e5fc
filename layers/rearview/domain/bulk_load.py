"""A bulk load: a history of episodes stored as they are, each with the vector its caller brings or embedded in
batches, through the store's bulk path (`MemoryWriter.load_episodes`) rather than the write path.

What a caller sends is what a write takes (`MemoryWrite`, episodic only, at most one episode's length: a load does
not chunk) and, optionally, the episode's `vector` from the deployment's embedder. What a load does not do that a
write does: merge a near-duplicate into a stored memory, and tell the hindsight triggers (the schedule consolidates
a loaded history).
"""

from __future__ import annotations

from pydantic import BaseModel, Field, StrictFloat, StrictInt

from rearview.domain.request_model import RequestModel
from rearview.domain.write import MemoryWrite

# Episodes per load request, as an import's. The body is at most 1 MiB: a thousand lines fit without vectors, about
# 120 with 384-dimensional ones (`rearview load` splits its requests by bytes too).
MAX_LOAD_ITEMS = 1000
# The longest vector a line may carry (the widest embedders in use give 3,072).
MAX_VECTOR_DIM = 4096


class EpisodeLoad(MemoryWrite):
    """One episode of a bulk load: a write's fields (episodic only) and, optionally, its vector."""

    vector: list[StrictFloat | StrictInt] | None = Field(
        None,
        min_length=1,
        max_length=MAX_VECTOR_DIM,
        description="Optional: the episode's embedding by this deployment's embedder (its model and dimension; "
        "`GET /v1/health` names them), stored as given after scaling to unit length; without it the service embeds "
        "the text. Required where writes are queued (AWS), where a request has no time to embed a thousand texts",
    )


class LoadRequest(RequestModel):
    """Episodes to load, in the order they happened within each session (a turn's context is the turn before)."""

    items: list[EpisodeLoad] = Field(min_length=1, max_length=MAX_LOAD_ITEMS)


class LoadResult(BaseModel):
    namespace: str
    loaded: int = Field(description="Episodes stored by this load")
    skipped: int = Field(description="Episodes whose id is stored already: left as they are, so a load repeats safely")
    low_importance: int = Field(0, description="Episodes under the importance threshold, not stored (as a write)")
    embedded: int = Field(0, description="Episodes the service embedded (those that came without a vector)")
    redacted: int = Field(0, description="Episodes stored with a secret or personal datum redacted")
    ids: list[str] = Field(default_factory=list, description="The ids stored, in the request's order")
