"""The experience behind a semantic memory: counting it, judging whether it is enough (the guards that keep one-off
events out), turning it into a confidence, and decaying that confidence while nothing confirms the memory."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta

from rearview.domain.memory import Episode, Evidence, Kind

# The guards that keep one-off events out of semantic memory (bench/hindsight.py measures what they let through).
# A preference: this many occurrences in at least MIN_SPREAD sessions or days ...
PREFERENCE_MIN_OCCURRENCES = 3
# ... or this many anywhere: asked five times in one chat is a preference too.
PREFERENCE_REPEATS_ALONE = 5
# Turns of one session this close to the one before them are one occasion (a request, and the note that it was
# done): a preference needs PREFERENCE_MIN_OCCURRENCES occasions, not turns.
OCCASION_GAP = timedelta(hours=1)
# A fact: this many mentions in at least MIN_SPREAD sessions or days, stable rather than said in passing.
FACT_MIN_OCCURRENCES = 2
MIN_SPREAD = 2
# A habit (an activity done again and again): this many occurrences on as many distinct days.
HABIT_MIN_OCCURRENCES = 3
HABIT_MIN_DAYS = 3
# A lesson: this many failures before the success that ended them (one failure then a success is transient) ...
LESSON_MIN_FAILURES = 2
# ... or this many failures in a row sharing an error.
RECURRING_FAILURE_MIN = 3


def evidence_of(episodes: Sequence[Episode]) -> Evidence:
    """Counts over the episodes: each merged repeat is an occurrence, sessions and UTC days are distinct."""
    if not episodes:
        return Evidence()
    sessions = {s for e in episodes for s in e.sessions}
    days = {e.occurred_at.date() for e in episodes} | {e.last_seen_at.date() for e in episodes}
    return Evidence(
        episodes=len(episodes),
        occurrences=sum(max(1, e.confirmations) for e in episodes),
        sessions=len(sessions),
        days=len(days) + sum(_days_between_repeats(e) for e in episodes),
        first_at=min(e.occurred_at for e in episodes),
        last_at=max(e.last_seen_at for e in episodes),
        failures=sum(1 for e in episodes if e.outcome_status == "failure"),
        successes=sum(1 for e in episodes if e.outcome_status == "success"),
    )


def _days_between_repeats(episode: Episode) -> int:
    """Days a merged episode's repeats fell on besides its first and last (which are counted already): a repeat
    keeps only its count and its first and last time, so its days are estimated as evenly spread, at most one a
    day."""
    repeats = max(1, episode.confirmations) - 2
    if repeats <= 0:
        return 0
    days_between = (episode.last_seen_at.date() - episode.occurred_at.date()).days - 1
    return max(0, min(repeats, days_between))


def occasions_of(episodes: Sequence[Episode]) -> int:
    """How many times it came up: the turns of one session each within OCCASION_GAP of the one before are one
    occasion; each merged repeat of an episode is one more."""
    count = 0
    last: dict[str, Episode] = {}
    for episode in sorted(episodes, key=lambda e: (e.occurred_at, e.id)):
        count += max(1, episode.confirmations) - 1
        before = last.get(episode.session_id) if episode.session_id else None
        if before is None or episode.occurred_at - before.last_seen_at > OCCASION_GAP:
            count += 1
        if episode.session_id:
            last[episode.session_id] = episode
    return count


def enough(kind: Kind, dimension: str | None, episodes: Sequence[Episode]) -> bool:
    """Whether the episodes are more than a one-off (see the guards above); a preference's requests are counted by
    occasion."""
    evidence = evidence_of(episodes)
    spread = max(evidence.sessions, evidence.days)
    if kind == "lesson":
        fixed = evidence.successes >= 1 and evidence.failures >= 1
        return evidence.occurrences - evidence.successes >= (LESSON_MIN_FAILURES if fixed else RECURRING_FAILURE_MIN)
    if dimension == "exercise":
        return evidence.occurrences >= HABIT_MIN_OCCURRENCES and evidence.days >= HABIT_MIN_DAYS
    if kind == "preference":
        if evidence.occurrences >= PREFERENCE_REPEATS_ALONE:
            return True
        return occasions_of(episodes) >= PREFERENCE_MIN_OCCURRENCES and spread >= MIN_SPREAD
    return evidence.occurrences >= FACT_MIN_OCCURRENCES and spread >= MIN_SPREAD


def confidence_of(kind: Kind, evidence: Evidence) -> float:
    """More occurrences, more sessions or days, and (for lessons) a success that ended the failures mean more
    confidence; capped below certainty. Three occurrences in two sessions give about 0.6."""
    by_count = 1.0 - math.pow(0.5, evidence.occurrences / 3.0)
    by_spread = min(1.0, max(evidence.sessions, evidence.days) / 3.0)
    if kind == "lesson":
        by_spread = 1.0 if evidence.successes else 0.6
    return round(min(0.95, 0.3 + 0.65 * by_count * (0.5 + 0.5 * by_spread)), 4)
