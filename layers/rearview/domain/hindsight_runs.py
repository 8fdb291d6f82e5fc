"""Consolidation that runs by itself: what triggers a run, the job that asks for one, the record a run leaves, the
budget it spends, and the figures `stats` shows about it."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rearview.domain.limits import SessionId
from rearview.domain.namespaces import Namespace
from rearview.domain.timestamps import UtcDatetime
from rearview.domain.write import PoisonMessage, short_error
from rearview.errors import RearviewError

# What asked for a run: a caller, enough new episodes, a streak of failures, a session that ended, the schedule;
# or a write that asked for its turns to be extracted (`extract`: a run over those turns alone, without the guards).
TriggerReason = Literal["manual", "count", "failure_streak", "session_end", "schedule", "extract"]
TRIGGER_REASONS: tuple[TriggerReason, ...] = ("manual", "count", "failure_streak", "session_end", "schedule", "extract")


# A job names this many episodes at most.
MAX_JOB_EPISODES = 1000


class ConsolidationJob(BaseModel):
    """A request for one run over one namespace, as it travels through a job queue (in process, or SQS)."""

    model_config = ConfigDict(extra="forbid")

    namespace: Namespace
    reason: TriggerReason
    requested_at: UtcDatetime
    # The episodes that fired a failure-streak trigger or that a write asked to extract, or the session that ended:
    # what the run is for.
    episode_ids: list[str] = Field(default_factory=list, max_length=MAX_JOB_EPISODES)
    session_id: SessionId | None = None


def consolidation_job_body(job: ConsolidationJob) -> str:
    """The message body of one job on a queue (read back by `parse_consolidation_job`)."""
    return job.model_dump_json(exclude_defaults=True)


def parse_consolidation_job(body: str) -> ConsolidationJob:
    """The job in a message body; PoisonMessage if it is not one (retrying such a body cannot help)."""
    try:
        return ConsolidationJob.model_validate_json(body)
    except (ValidationError, ValueError, RearviewError) as exc:
        raise PoisonMessage(short_error(exc)) from exc


class ConsolidationRun(BaseModel):
    """What one run did and spent, as the ledger keeps it."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    namespace: str
    reason: TriggerReason
    started_at: UtcDatetime
    finished_at: UtcDatetime
    episodes_considered: int = 0
    new_episodes: int = 0
    clusters: int = 0
    # Clusters left for a later run because a budget ran out (their new episodes stay unconsolidated).
    clusters_deferred: int = 0
    induced: dict[str, int] = Field(default_factory=dict)
    confirmed: int = 0
    superseded: int = 0
    tokens: int = 0
    inducer: str = "rules"
    fallback: str | None = None
    error: str | None = Field(None, description="Why the run failed; it applied nothing")


# The most runs `stats` returns: enough for the inspector's chart of the runs, still one page of a ledger's query.
MAX_RECENT_RUNS = 100

# How long a ledger keeps a run's record, and a day's spend (only the current day's is held against the caps; the
# week before stays for a look back). DynamoDB's TTL removes them lazily; the other ledgers as runs are recorded.
RUN_RETENTION = timedelta(days=90)
SPEND_RETENTION = timedelta(days=8)


class Spend(BaseModel):
    """What a namespace's runs spent on one UTC day (the daily caps are held against it)."""

    day: date
    runs: int = 0
    clusters: int = 0
    tokens: int = 0


FeedbackVerdict = Literal["useful", "not_useful", "wrong"]


class FeedbackCounts(BaseModel):
    """Feedback on one kind of memory: each verdict, and `adopted`: useful feedback on a memory a recall or a brief
    had returned (how induction quality is judged in practice)."""

    useful: int = 0
    not_useful: int = 0
    wrong: int = 0
    adopted: int = 0


class HindsightStats(BaseModel):
    """The consolidation side of `stats`: runs, what they induced and spent, when the next one comes, adoption."""

    runs: int = 0
    runs_failed: int = 0
    induced: dict[str, int] = Field(default_factory=lambda: {"preference": 0, "fact": 0, "lesson": 0})
    tokens: int = 0
    today: Spend | None = None
    last_run_at: datetime | None = None
    last_run_reason: TriggerReason | None = None
    unconsolidated: int = Field(0, description="Episodes no run has seen yet")
    next_trigger: dict[str, str | int | None] = Field(
        default_factory=dict,
        description="How far the count trigger is (new episodes still needed) and when the schedule runs next",
    )
    feedback: dict[str, FeedbackCounts] = Field(default_factory=dict, description="By kind of memory")
    recent_runs: list[ConsolidationRun] = Field(default_factory=list, description="The latest runs, newest first")


class LedgerTotals(BaseModel):
    """The running totals a ledger keeps per namespace (the core adds today's spend and the next trigger)."""

    runs: int = 0
    runs_failed: int = 0
    induced: dict[str, int] = Field(default_factory=dict)
    tokens: int = 0
    last_run_at: UtcDatetime | None = None
    last_run_reason: TriggerReason | None = None
    feedback: dict[str, FeedbackCounts] = Field(default_factory=dict)
