"""Brief and feedback: the preferences and lessons offered before a task, and what the agent says of them after.

The descriptions are written for the model that calls the MCP tools; HTTP's OpenAPI and the CLI's help read the
same words.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rearview.domain.hindsight_runs import FeedbackVerdict
from rearview.domain.limits import LABEL_PATTERN, MAX_ENTITIES, MAX_ENTITY_CHARS, MAX_TOKEN_BUDGET, MemoryId, SessionId
from rearview.domain.recall import RecallHit
from rearview.domain.request_model import RequestModel
from rearview.domain.timestamps import RequestDatetime

MAX_TASK_CHARS = 2000


class BriefRequest(RequestModel):
    """What an agent is about to do, to be told the preferences and lessons that apply."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(
        min_length=1,
        max_length=MAX_TASK_CHARS,
        description="The task about to start, in plain words, e.g. 'geocode the new customer addresses' "
        f"(at most {MAX_TASK_CHARS} characters)",
    )
    tool: str | None = Field(
        None,
        pattern=LABEL_PATTERN,
        max_length=MAX_ENTITY_CHARS,
        description="The tool, API or command about to be used, e.g. 'geocoding API': its lessons come first",
    )
    entities: list[Annotated[str, Field(pattern=LABEL_PATTERN, max_length=MAX_ENTITY_CHARS)]] = Field(
        default_factory=list,
        max_length=MAX_ENTITIES,
        description="Other people, places, products or services the task involves",
    )
    session_id: SessionId | None = Field(
        None, description="The session the task runs in: its working memory comes back with the brief"
    )
    top_k: int = Field(5, ge=1, le=20, description="How many preferences and lessons at most (1 to 20)")
    token_budget: int | None = Field(
        None, ge=1, le=MAX_TOKEN_BUDGET, description="Token budget for the returned memories (default 800)"
    )
    as_of: RequestDatetime | None = Field(None, description="The 'now' confidence decays against; default now")

    @field_validator("task")
    @classmethod
    def _task_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class BriefItem(BaseModel):
    """One preference or lesson that applies to the task, with why it applies."""

    memory: RecallHit
    why: str = Field(description="Why it applies: the tool or entity it is about, the words it shares with the task, "
                     "or that it applies to every reply")  # fmt: skip
    confidence: float = Field(description="Its confidence now, decayed since it was last confirmed")


class BriefResponse(BaseModel):
    items: list[BriefItem]
    working: dict[str, Any] | None = None
    no_relevant_memory: bool = Field(description="True when no preference or lesson applies")
    truncated: bool = False


class FeedbackRequest(RequestModel):
    """What an agent says of a memory it was given: useful, not useful, or wrong (with the right statement)."""

    model_config = ConfigDict(extra="forbid")

    memory_id: MemoryId = Field(description="The id of the memory, as recall or brief returned it")
    verdict: FeedbackVerdict = Field(
        description="'useful' (it helped: it is confirmed), 'not_useful' (it did not apply), or 'wrong' (it is not "
        "true: its confidence drops, and a correction replaces it)"
    )
    correction: str | None = Field(
        None,
        max_length=500,
        description="With 'wrong': what is true instead, as a self-contained sentence; it supersedes the memory",
    )


class FeedbackResult(BaseModel):
    memory_id: str
    verdict: FeedbackVerdict
    confidence_before: float
    confidence_after: float
    adopted: bool = Field(description="True when the memory had been returned by a recall or brief before")
    corrected_by: str | None = Field(None, description="The id of the correction that superseded the memory")
