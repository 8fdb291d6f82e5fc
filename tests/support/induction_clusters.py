"""Evidence clusters for the inducer tests, one of each shape consolidation hands an inducer: a lesson from an
outcome sequence, a preference (in Chinese) and a fact the rules recognised, a look-alike request, and a one-off
that supports nothing. Their episode ids are fixed: the recorded model answers (tests/fixtures/induction/) cite them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from rearview.domain.hindsight import EvidenceCluster, Signal
from rearview.domain.memory import Episode

NS = "acme:u-1"
T0 = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)


def episode(id: str, content: str, day: float, **fields: Any) -> Episode:  # noqa: A002 - the field's name
    """An episode `day` days after T0; `fields` are Episode's own (session_id, outcome_status, confirmations ...)."""
    at = T0 + timedelta(days=day)
    return Episode(id=id, namespace=NS, content=content, created_at=at, occurred_at=at, **fields)


# The memory a model should state for the geocoding lesson.
GEOCODING_MEMORY: dict[str, Any] = {
    "kind": "lesson",
    "statement": "geocoding API: 100 or more addresses failed 3 times (HTTP 413); 50 addresses worked",
    "dimension": "tool:geocoding api",
    "facets": {"fails": "HTTP 413", "works": "50 addresses"},
    "provenance": ["geo-1", "geo-2", "geo-3", "geo-4"],
}


def geocoding_lesson() -> EvidenceCluster:
    """Three batches too large for the geocoding API (HTTP 413), then one that worked."""
    tool = {"event_type": "tool_call", "entities": ["geocoding API"]}
    too_large = {"outcome": "HTTP 413 Payload Too Large", "outcome_status": "failure"}
    return EvidenceCluster(
        kind="lesson",
        subject="geocoding API",
        episodes=[
            episode("geo-1", "Geocoded a batch of 200 addresses", 0, session_id="s1", **tool, **too_large),
            episode("geo-2", "Retried the geocoding with 150 addresses", 0.1, session_id="s1", **tool, **too_large),
            episode("geo-3", "Geocoded 100 addresses in one request", 1, session_id="s2", **tool, **too_large),
            episode(
                "geo-4",
                "Geocoded the list in batches of 50 addresses",
                1.1,
                session_id="s2",
                **tool,
                outcome="200 OK, all geocoded",
                outcome_status="success",
            ),
        ],
    )


def chinese_replies() -> EvidenceCluster:
    """The user asks for answers in Chinese, in Chinese, in three sessions (once twice)."""
    said = [("以后请用中文回答我", 0, 1), ("能不能用中文回复？我看中文更快", 3, 2), ("请用中文写回答，谢谢", 8, 1)]
    return EvidenceCluster(
        kind="preference",
        signal=Signal("preference", "language", "replies", "Chinese"),
        episodes=[
            episode(f"zh-{n}", text, day, session_id=f"s{n}", event_type="message", confirmations=times)
            for n, (text, day, times) in enumerate(said, 1)
        ],
    )


def nurse_fact() -> EvidenceCluster:
    """The user says what they do for a living in two sessions."""
    said = [("I work as a nurse, my shifts change every week", 0, "s1"), ("As a nurse I can't take calls", 5, "s4")]
    episodes = [episode(f"job-{n}", text, day, session_id=s) for n, (text, day, s) in enumerate(said, 1)]
    return EvidenceCluster(kind="fact", signal=Signal("fact", "job", "job", "nurse"), episodes=episodes)


def repeated_request() -> EvidenceCluster:
    """A request no rule recognises, made again and again: grouped by the words it shares."""
    return EvidenceCluster(
        kind="preference",
        key_phrase="include the ticket number in commit messages",
        episodes=[
            episode("req-1", "Always include the ticket number in commit messages", 0, session_id="s1"),
            episode("req-2", "Please include the ticket number in commit messages", 2, session_id="s2"),
            episode("req-3", "Remember to include the ticket number in the commit messages", 6, session_id="s3"),
        ],
    )


def one_off() -> EvidenceCluster:
    """Two failures that share no error and no fix: nothing lasting."""
    calendar = {"session_id": "s1", "event_type": "tool_call", "entities": ["calendar"], "outcome_status": "failure"}
    return EvidenceCluster(
        kind="lesson",
        subject="calendar",
        episodes=[
            episode("cal-1", "Booked the dentist for Friday", 0, outcome="the slot was taken", **calendar),
            episode("cal-2", "Moved the dentist to Monday", 0.2, outcome="the calendar app crashed", **calendar),
        ],
    )


def all_clusters() -> list[EvidenceCluster]:
    return [geocoding_lesson(), chinese_replies(), nurse_fact(), repeated_request(), one_off()]
