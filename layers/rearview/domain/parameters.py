"""The parameters operations take besides their request models, each typed once with the description every edge
shows (HTTP's OpenAPI, the MCP tools' schemas, the command line's help)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from rearview.domain.access import KEY_ID_PATTERN
from rearview.domain.hindsight_runs import MAX_RECENT_RUNS
from rearview.domain.limits import MAX_WORKING_KEY_CHARS, MemoryId, SessionId

MemoryIdParameter = Annotated[
    MemoryId, Field(description="The memory's id, as a write, `recall`, `brief` or `list_memories` gave it")
]
SessionParameter = Annotated[
    SessionId,
    Field(description="The session (conversation or task) id, 1 to 128 characters of letters, digits and _ . : @ -"),
]
WorkingKeyParameter = Annotated[
    str,
    Field(
        description=f"The key, e.g. 'current_goal' or 'open_questions' (1 to {MAX_WORKING_KEY_CHARS} characters, "
        "no '/' or control characters)",
    ),
]
KeyIdParameter = Annotated[str, Field(description=f"The key's id (`{KEY_ID_PATTERN}`), as listed")]
VersionParameter = Annotated[
    int | None,
    Field(ge=1, description="Optional: the version you read; the edit is refused if the memory changed since"),
]
CursorParameter = Annotated[
    str | None, Field(max_length=1024, description="Omit for the first part; then the next cursor you got")
]
CascadeParameter = Annotated[bool, Field(description="Also update or delete facts induced from it")]
SubtreeParameter = Annotated[bool, Field(description="Also every namespace under it")]
PrefixParameter = Annotated[str | None, Field(max_length=300, description="Only namespaces starting with this")]
RecentRunsParameter = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_RECENT_RUNS,
        description=f"How many of consolidation's latest runs to return, newest first (1 to {MAX_RECENT_RUNS})",
    ),
]
