"""Retention: how long a namespace keeps its episodes, set per namespace and enforced by a sweep.

A policy set on a namespace governs it and every namespace under it that has none of its own (`acme` covers
`acme:u-42`), as a key's scope does. Episodes are what a policy ages out; semantic memories live on the evidence
consolidation keeps, and go with their episodes only where the max age cascades (see RetentionPolicy).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rearview.domain.request_model import RequestModel

MAX_RETENTION_DAYS = 36_500.0


class RetentionPolicy(RequestModel):
    """What a namespace keeps. Every rule is optional; a policy with none keeps everything (as no policy does)."""

    model_config = ConfigDict(extra="forbid")

    episode_max_age_days: float | None = Field(
        None,
        gt=0,
        le=MAX_RETENTION_DAYS,
        description="Episodes that happened longer ago than this are forgotten, with cascade: a preference, fact or "
        "lesson induced from them alone goes too, one induced from others as well loses them (as forget does)",
    )
    archive_after_days: float | None = Field(
        None,
        gt=0,
        le=MAX_RETENTION_DAYS,
        description="Episodes older than this that consolidation has already read are archived into what it learnt: "
        "the episode's own record goes, the preferences, facts and lessons induced from it stay (forget without "
        "cascade). Unconsolidated episodes wait for a run",
    )
    keep_accessed_at_least: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Episodes that recall or brief returned at least this many times are kept by both rules above: "
        "what is used is not aged out",
    )

    @model_validator(mode="after")
    def _archive_before_max_age(self) -> RetentionPolicy:
        limit, archive = self.episode_max_age_days, self.archive_after_days
        if limit is not None and archive is not None and archive >= limit:
            raise ValueError(
                f"archive_after_days: must be less than episode_max_age_days ({archive} >= {limit}); episodes would "
                "be forgotten before they could be archived"
            )
        return self


class NamespaceRetention(BaseModel):
    """The policy that governs a namespace, and where it is set."""

    namespace: str
    policy: RetentionPolicy | None = Field(None, description="None: nothing is aged out")
    set_on: str | None = Field(
        None, description="The namespace the policy is set on: this one, or the nearest above it that has one"
    )
    updated_at: datetime | None = None


class RetentionReport(BaseModel):
    """What one sweep of one namespace did."""

    namespace: str
    set_on: str
    forgotten: int = Field(0, description="Episodes past the max age, forgotten with cascade")
    archived: int = Field(0, description="Consolidated episodes past the archive age, forgotten without cascade")
    kept: int = Field(0, description="Episodes past an age kept because they are often recalled")
    facts_removed: int = Field(0, description="Semantic memories that went with their episodes (max age cascade)")


class RetentionSweep(BaseModel):
    """What a sweep over every namespace did."""

    at: datetime
    namespaces: list[RetentionReport] = Field(default_factory=list)
    working_purged: int = Field(0, description="Expired working-memory rows deleted from storage")
    expired: int = Field(0, description="Memories forgotten because their expiry came (and what went with them)")
    unfinished: int = Field(0, description="Namespaces under a policy the sweep ran out of time to reach")
    access_settled: int = Field(
        0, description="Memories whose access counts, kept apart from them by the store, were folded into them"
    )


def governing_policy(
    namespace: str, policies: dict[str, tuple[RetentionPolicy, datetime]]
) -> tuple[str, RetentionPolicy, datetime] | None:
    """The policy set on `namespace` or, failing that, on the nearest namespace above it; None when none is."""
    segments = namespace.split(":")
    for length in range(len(segments), 0, -1):
        owner = ":".join(segments[:length])
        if owner in policies:
            policy, updated_at = policies[owner]
            return owner, policy, updated_at
    return None
