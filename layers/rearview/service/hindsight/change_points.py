"""Change points: a new turn in which the user says that something already learned has changed ("he has switched
to black coffee", "不去健身房了，改成游泳", "从今天起戒奶茶了").

Said once, explicitly, of what a memory is about, a change is enough: the turn is its own cluster (no guard, as an
extraction's), and its memory supersedes the one it changes, which is kept as history. Evidence from after the change
no longer confirms the old memory: a cluster that re-finds the old memory's episodes is cut at the change point, so
"bought a sugar-free tea instead of milk tea" does not keep the milk-tea habit current.

A change point needs both: a clause of the user's that says a change (a change word, or a negation), and a verdict
of `contradiction.judge` that it contradicts an active memory it shares words with (a term, or two CJK characters):
a vector's closeness alone never ends a memory on one turn's word. A turn that makes an exception ("just this once
... instead", "这次改用英文") is no change point.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from rearview.domain.hindsight import EvidenceCluster
from rearview.domain.memory import Episode, Fact
from rearview.service.contradiction import says_change
from rearview.service.hindsight.meaning import constituents, user_clauses
from rearview.service.voice import Unit, units_of_text

# Episodes with these outcomes are a lesson's evidence, never a change of habit.
_OUTCOMES = ("failure", "success", "partial")

# A turn that makes an exception ("just this once", "这次破例") says what holds this time, not that a habit changed.
_ONE_OFF = re.compile(
    r"\b(?:just this once|this once|this time|for today|today only|just for today|for this one|one-off|"
    r"for a change|as an exception|exception)\b|这次|这一次|破例|临时|今天先|例外|偶尔",
    re.IGNORECASE,
)

# Whether a clause, said in an episode, contradicts an active memory (and shares words with it).
Changes = Callable[[str, Episode, Fact], bool]


@dataclass(frozen=True)
class ChangePoint:
    """A new episode whose clauses say that the active memory `replaces` no longer holds."""

    episode: Episode
    clauses: tuple[Unit, ...]
    replaces: Fact

    @property
    def at(self) -> datetime:
        return self.episode.occurred_at

    def cluster(self) -> EvidenceCluster:
        """The turn as its own cluster, of the kind of the memory it changes (a preference changed is a
        preference): what its change clauses hold is what the new memory states; of clauses that end the old
        value and clauses that name a new one ("mornings no longer work; afternoons from now on"), the new one."""
        old = {t for u in units_of_text(self.replaces.content) for t in u.terms}
        new = [u for u in self.clauses if not u.negated and not old & set(u.terms)]
        shared = tuple(dict.fromkeys(t for u in new or self.clauses for t in constituents(u)))
        return EvidenceCluster(kind=self.replaces.kind, episodes=[self.episode], shared=shared, one_turn=True)


def change_points(
    pool: Sequence[Episode], new_ids: set[str], active: Iterable[Fact], changes: Changes
) -> list[ChangePoint]:
    """The new episodes of `pool` that say an active memory (not a lesson) changed, in time order; at most one
    point an episode (the memory with the most recent evidence that it changes), one an old memory (the first
    turn that says so)."""
    held = [f for f in active if f.kind != "lesson"]
    points: list[ChangePoint] = []
    taken: set[str] = set()
    for episode in pool:
        if episode.id not in new_ids or episode.outcome_status in _OUTCOMES or not held:
            continue
        if _ONE_OFF.search(episode.content):
            continue
        clauses = tuple(u for u in user_clauses(episode) if constituents(u) and (says_change(u.text) or u.negated))
        if not clauses:
            continue
        said = " ".join(u.text for u in clauses)
        changed = [
            f
            for f in held
            if f.id not in taken
            and episode.id not in f.provenance
            and (f.first_seen_at is None or f.first_seen_at < episode.occurred_at)
            and changes(said, episode, f)
        ]
        if changed:
            fact = max(changed, key=lambda f: (f.last_confirmed_at, f.id))
            taken.add(fact.id)
            points.append(ChangePoint(episode=episode, clauses=clauses, replaces=fact))
    return points


def cut_at_changes(
    clusters: Sequence[EvidenceCluster], points: Sequence[ChangePoint], passes: Callable[[EvidenceCluster], bool]
) -> list[EvidenceCluster]:
    """Each cluster that re-finds the episodes of a memory a change point ends, without its episodes from the change
    on (they are evidence of the new state, not of the old one), kept while what is left of it still `passes` the
    guards; the others as they are."""
    out = []
    for cluster in clusters:
        ids = set(cluster.ids)
        cuts = [
            p.at
            for p in points
            if ids & set(p.replaces.provenance) and min(e.occurred_at for e in cluster.episodes) < p.at
        ]
        if cuts:
            cluster = replace(cluster, episodes=[e for e in cluster.episodes if e.occurred_at < min(cuts)])
            if not passes(cluster):
                continue
        out.append(cluster)
    return out
