"""The limits every edge enforces (HTTP, MCP, CLI, the queue): sizes, counts and the patterns of ids and labels."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

MAX_EPISODE_CHARS = 2000
# The longest text one write may send: an episodic one longer than MAX_EPISODE_CHARS is stored as linked chunks
# (`rearview.service.chunking`), at most MAX_CHUNKS of them; past this, a 422 naming `content` and the limit.
MAX_WRITE_CHARS = 50_000
MAX_CHUNKS = 64
MAX_FACT_CHARS = 500
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_ENTITIES = 32
MAX_ENTITY_CHARS = 128
MAX_ID_CHARS = 128
MAX_BATCH = 100
MAX_QUERY_CHARS = 2000
MAX_TOP_K = 100
MAX_TOKEN_BUDGET = 32000
MAX_EXCLUSIONS = 16
MAX_EXCLUSION_CHARS = 128
MAX_TIMEOUT_MS = 60_000
MAX_WORKING_KEY_CHARS = 256
MAX_WORKING_VALUE_BYTES = 64 * 1024
MAX_TTL_SECONDS = 30 * 24 * 3600
# A memory's own time to live: at most a hundred years (its expiry stays within the calendar a request may name).
MAX_MEMORY_TTL_SECONDS = 100 * 365 * 24 * 3600
# Where a memory came from: a URL, a document's name, "user said"; one line of text.
MAX_SOURCE_CHARS = 2048
SOURCE_PATTERN = r"^[^\x00-\x1f\x7f]{1,2048}$"
ID_PATTERN = r"^[A-Za-z0-9_.:@#-]{1,128}$"
SESSION_PATTERN = r"^[A-Za-z0-9_.:@-]{1,128}$"
LABEL_PATTERN = r"^[^\x00-\x1f\x7f]{1,128}$"

DIMENSION_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"


class Verbatim:
    """Marks a string kept as given, because something finds it by it: an id, a session id, a fact's dimension, a
    key's id. Redaction (`rearview.service.redaction.requests`) refuses a secret in such a field, naming it, where it
    rewrites every other string a caller gives."""

    def __repr__(self) -> str:
        return "VERBATIM"


VERBATIM = Verbatim()

# The ids as types, so each field that takes one states only its own description.
MemoryId = Annotated[str, Field(pattern=ID_PATTERN), VERBATIM]
SessionId = Annotated[str, Field(pattern=SESSION_PATTERN), VERBATIM]
Dimension = Annotated[str, Field(pattern=DIMENSION_PATTERN), VERBATIM]
# A string stored as given that no request pattern constrains (a stored memory's own id, say).
Identifier = Annotated[str, VERBATIM]
