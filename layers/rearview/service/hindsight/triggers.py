"""When consolidation runs by itself: the triggers, each turning what just happened into a `ConsolidationJob`.

- *count*: the namespace holds `count_trigger` episodes no run has seen (read after every write that stored one);
- *failure streak*: the latest `failure_streak` outcomes of one subject (a tool, task or entity: what a lesson is
  about, `lessons.subject_of`) are all failures, or a success just ended a streak of at least
  `LESSON_MIN_FAILURES` failures (what finally worked): a targeted job over those episodes;
- *session end*: a session's working memory was cleared, or the session was ended;
- *schedule*: every namespace with unconsolidated episodes whose last run is `schedule_hours` old (or that never
  ran), unless its day's caps are spent.
Triggers only say that a run is due; where the job goes (an in-process worker, an SQS queue) is the caller's
`ConsolidationJobs`, and whether it runs now (the lease, the caps) is the runner's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Protocol

from rearview.domain.hindsight_runs import ConsolidationJob, TriggerReason
from rearview.domain.memory import Episode, Memory
from rearview.ports import Clock, ConsolidationBacklog, HindsightLedger, MemoryReader
from rearview.service.hindsight.evidence import LESSON_MIN_FAILURES
from rearview.service.hindsight.lessons import subject_of
from rearview.settings import HindsightSettings


class TriggerStore(MemoryReader, ConsolidationBacklog, Protocol):
    """What the triggers ask of the store: the recent episodes, and what consolidation has still to see."""


# Episodes written this long ago at most are read to find a streak (a streak spread over weeks is the schedule's).
STREAK_WINDOW = timedelta(days=7)
# Recent episodes read to find a streak at most.
STREAK_READ_LIMIT = 300


class HindsightTriggers:
    def __init__(
        self,
        store: TriggerStore,
        ledger: HindsightLedger,
        clock: Clock,
        settings: HindsightSettings,
    ) -> None:
        self._store = store
        self._ledger = ledger
        self._clock = clock
        self._settings = settings

    def after_write(self, namespace: str, written: Sequence[Memory]) -> list[ConsolidationJob]:
        """The jobs the episodes just stored (or merged into a held one) make due: failure streaks first, then the
        count. Cheap when nothing is due: one count read, and one read of recent episodes when an outcome came."""
        episodes = [m for m in written if isinstance(m, Episode)]
        if not episodes:
            return []
        jobs = self._streak_jobs(namespace, episodes)
        count = self._settings.count_trigger
        if count and self._store.unconsolidated_count(namespace, at_most=count) >= count:
            jobs.append(self._job(namespace, "count"))
        return jobs

    def session_ended(self, namespace: str, session_id: str) -> list[ConsolidationJob]:
        if not self._settings.session_end:
            return []
        return [self._job(namespace, "session_end", session_id=session_id)]

    def due_by_schedule(self, namespaces: Iterable[str] | None = None) -> list[ConsolidationJob]:
        """One job per namespace with unconsolidated episodes whose last run is a schedule period old (the
        namespaces given, or every one the store lists as having unconsolidated episodes)."""
        hours = self._settings.schedule_hours
        if not hours:
            return []
        now = self._clock.now()
        candidates = self._store.namespaces_with_unconsolidated() if namespaces is None else list(namespaces)
        jobs = []
        for namespace in candidates:
            last = self._ledger.totals(namespace).last_run_at
            if (last is None or now - last >= timedelta(hours=hours)) and not self._day_spent(namespace):
                jobs.append(self._job(namespace, "schedule"))
        return jobs

    def _day_spent(self, namespace: str) -> bool:
        """Whether the namespace's runs spent the day's cap already (a run would stop at once; the schedule waits
        for the next UTC day instead of sending it every sweep)."""
        spend = self._ledger.spend(namespace, self._clock.now().date())
        s = self._settings
        return spend.clusters >= s.daily_max_clusters or spend.tokens >= s.daily_max_tokens

    def next_trigger(self, namespace: str, unconsolidated: int) -> dict[str, str | int | None]:
        """How far the count trigger is (episodes still needed) and when the schedule comes next (ISO 8601)."""
        count = self._settings.count_trigger
        hours = self._settings.schedule_hours
        last = self._ledger.totals(namespace).last_run_at
        schedule: str | None = None
        if hours and unconsolidated:
            due = (last + timedelta(hours=hours)) if last else self._clock.now()
            schedule = max(due, self._clock.now()).isoformat()
        return {
            "count_episodes_needed": max(count - unconsolidated, 0) if count else None,
            "schedule_at": schedule,
        }

    # --- failure streaks ----------------------------------------------------------------------------------------

    def _streak_jobs(self, namespace: str, written: list[Episode]) -> list[ConsolidationJob]:
        streak = self._settings.failure_streak
        subjects = {s for e in written if e.outcome_status is not None and (s := _subject_key(e))}
        if not streak or not subjects:
            return []
        since = self._clock.now() - STREAK_WINDOW
        recent = {e.id: e for e in self._store.recent_episodes(namespace, since, limit=STREAK_READ_LIMIT)}
        # What was just written may not be readable yet (an index that lags), and is newer than what was read.
        recent.update({e.id: e for e in written})
        by_subject: dict[str, list[Episode]] = defaultdict(list)
        for episode in recent.values():
            key = _subject_key(episode)
            if key in subjects and episode.outcome_status is not None:
                by_subject[key].append(episode)
        jobs = []
        just_written = {e.id for e in written}
        for key in sorted(subjects):
            ids = self._streak(by_subject[key], streak, just_written)
            if ids:
                jobs.append(self._job(namespace, "failure_streak", episode_ids=ids))
        return jobs

    def _streak(self, outcomes: list[Episode], streak: int, just_written: set[str]) -> list[str]:
        """The ids of the streak the subject's latest outcomes end with, when this write makes it due; else [].

        Due: a success just ended at least `LESSON_MIN_FAILURES` failures (what finally worked), or the failures
        in a row (merged repeats count) just reached `streak`, or another multiple of it: a streak that goes on
        confirms its lesson every `streak` failures, not at every one."""
        ordered = sorted(outcomes, key=lambda e: (e.last_seen_at, e.id), reverse=True)
        if not ordered or ordered[0].id not in just_written:
            return []
        latest = ordered[0]
        resolved = latest.outcome_status == "success"
        failures, fresh, ids = 0, 0, [latest.id] if resolved else []
        for episode in ordered[1:] if resolved else ordered:
            if episode.outcome_status != "failure":
                break
            failures += max(1, episode.confirmations)
            fresh += episode.id in just_written
            ids.append(episode.id)
        if resolved:
            return ids if failures >= LESSON_MIN_FAILURES else []
        return ids if failures >= streak and failures // streak > (failures - fresh) // streak else []

    def _job(
        self,
        namespace: str,
        reason: TriggerReason,
        *,
        episode_ids: list[str] | None = None,
        session_id: str | None = None,
    ) -> ConsolidationJob:
        return ConsolidationJob(
            namespace=namespace,
            reason=reason,
            requested_at=self._clock.now(),
            episode_ids=episode_ids or [],
            session_id=session_id,
        )


def _subject_key(episode: Episode) -> str | None:
    subject = subject_of(episode)
    return subject.lower() if subject else None
