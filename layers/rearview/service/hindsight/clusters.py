"""Grouping a namespace's episodes into the clusters an inducer may learn from.

Three ways, each cheap and deterministic, so every inducer (rules or a model) sees the same clusters and the cost
caps count the same things:
- *signals*: episodes in which the rules recognise the same preference, fact or habit (`signals`), however worded;
- *outcomes*: a subject's outcome sequence yields lessons (`lessons`);
- *look-alikes*: requests or stable statements no rule recognises, grouped by the words they share.
A cluster only matters if it holds at least one new episode (its knowledge is otherwise held already) and its
evidence passes the guards (`evidence.enough`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from rearview.domain.hindsight import EvidenceCluster, Signal
from rearview.domain.memory import Episode
from rearview.service.hindsight.evidence import enough, evidence_of
from rearview.service.hindsight.lessons import outcome_patterns, subject_of
from rearview.service.hindsight.phrases import content_terms, shared_phrase
from rearview.service.hindsight.signals import is_request, signals_of
from rearview.settings import ConsolidateTuning
from rearview.text_analysis import asks_question

# A request that states a lasting wish, not a one-off task: what a look-alike preference needs in one member.
_LASTING = re.compile(
    r"\b(?:always|from now on|going forward|every time|each time|by default|in (?:the )?future|next time|"
    r"i (?:would |'d )?(?:prefer|like|want)|never|don't|do not|stop|keep)\b"
    r"|以后|今后|每次|总是|一直|默认|我(?:更)?喜欢|我希望|不要|别",
    re.IGNORECASE,
)
# A statement of how things are (not of something that happened): what a look-alike fact needs.
_STATIVE = re.compile(
    r"\b(?:is|are|has|have|uses|runs on|lives|works|belongs|costs|located|stored|hosted|sits|means|equals|"
    r"remember that|note that)\b|是|在|有|用|叫",
    re.IGNORECASE,
)
_EVENT = re.compile(
    r"\b(?:yesterday|today|tonight|last (?:night|week|month|year)|ago|just now|this (?:morning|afternoon|evening)|"
    r"went|did|had|was|were|got|made|saw|met|bought|called)\b|昨天|今天|刚才|上周|了",
    re.IGNORECASE,
)


def learnable(episodes: Iterable[Episode], tuning: ConsolidateTuning) -> list[Episode]:
    """The episodes whose event type may be learned from (deny list, and allow list when set)."""
    deny = {t.lower() for t in tuning.deny_event_types}
    allow = {t.lower() for t in tuning.allow_event_types}
    out = []
    for episode in episodes:
        kind = (episode.event_type or "").lower()
        if kind in deny or (allow and kind not in allow):
            continue
        out.append(episode)
    return out


def build_clusters(episodes: Sequence[Episode], new_ids: set[str], tuning: ConsolidateTuning) -> list[EvidenceCluster]:
    """Every cluster with a new episode whose evidence passes the guards, lessons first, then by evidence."""
    pool = learnable(episodes, tuning)
    clusters = _lesson_clusters(pool, tuning)
    in_lessons = {e.id for c in clusters for e in c.episodes}
    signalled: dict[str, list[Signal]] = {}
    for episode in pool:
        if episode.id not in in_lessons and episode.outcome_status not in ("failure", "success", "partial"):
            found = signals_of(episode.content)
            if found:
                signalled[episode.id] = found
    clusters += _signal_clusters(pool, signalled)
    rest = [e for e in pool if e.id not in in_lessons and e.id not in signalled]
    clusters += _lookalike_clusters(rest, tuning)
    kept = []
    for cluster in clusters:
        if not any(e.id in new_ids for e in cluster.episodes):
            continue
        dimension = cluster.signal.dimension if cluster.signal else None
        if enough(cluster.kind, dimension, evidence_of(cluster.episodes), tuning):
            kept.append(cluster)
    return kept


def _signal_clusters(pool: Sequence[Episode], signalled: dict[str, list[Signal]]) -> list[EvidenceCluster]:
    by_signal: dict[Signal, list[Episode]] = defaultdict(list)
    for episode in pool:
        for signal in signalled.get(episode.id, []):
            by_signal[signal].append(episode)
    return [EvidenceCluster(kind=s.kind, episodes=eps, signal=s) for s, eps in by_signal.items()]


def _lesson_clusters(pool: Sequence[Episode], tuning: ConsolidateTuning) -> list[EvidenceCluster]:
    by_subject: dict[str, list[Episode]] = defaultdict(list)
    names: dict[str, str] = {}
    for episode in pool:
        if episode.outcome_status not in ("failure", "success"):
            continue
        subject = subject_of(episode)
        if subject is None:
            continue
        key = subject.lower()
        names.setdefault(key, subject)
        by_subject[key].append(episode)
    clusters = []
    for key, sequence in by_subject.items():
        patterns = outcome_patterns(
            names[key],
            sequence,
            min_failures=tuning.lesson_min_failures,
            recurring_min=tuning.recurring_failure_min,
        )
        clusters += [EvidenceCluster(kind="lesson", episodes=p.episodes, subject=p.subject) for p in patterns]
    return clusters


def _lookalike_clusters(rest: Sequence[Episode], tuning: ConsolidateTuning) -> list[EvidenceCluster]:
    """Requests with a lasting wish, and stable statements, grouped by shared words; each group with a phrase
    most of its members share."""
    requests = [e for e in rest if is_request(e.content) and not asks_question(e.content)]
    statements = [
        e
        for e in rest
        if e not in requests
        and _STATIVE.search(e.content)
        and not _EVENT.search(e.content)
        and not asks_question(e.content)
    ]
    clusters = []
    for kind, members, min_terms in (("preference", requests, 2), ("fact", statements, 3)):
        for group in _groups(members, tuning.lookalike_overlap):
            if (
                kind == "preference"
                and not any(_LASTING.search(e.content) for e in group)
                and sum(max(1, e.confirmations) for e in group) < tuning.preference_repeats_alone
            ):
                continue
            phrase = shared_phrase([e.content for e in group], min_terms=min_terms)
            if phrase:
                clusters.append(EvidenceCluster(kind=kind, episodes=group, key_phrase=phrase))  # type: ignore[arg-type]
    return clusters


def _groups(episodes: Sequence[Episode], overlap: float) -> list[list[Episode]]:
    """Greedy single-link grouping by the Jaccard overlap of content words (embedder-independent: a contextual
    vector carries the turn before, which says nothing about whether two requests are the same)."""
    terms = [set(content_terms(e.content)) for e in episodes]
    groups: list[list[int]] = []
    for i, words in enumerate(terms):
        if not words:
            continue
        home = None
        for g, members in enumerate(groups):
            if any(_jaccard(words, terms[j]) >= overlap for j in members):
                home = g
                break
        if home is None:
            groups.append([i])
        else:
            groups[home].append(i)
    return [[episodes[i] for i in g] for g in groups if sum(max(1, episodes[i].confirmations) for i in g) >= 2]


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0
