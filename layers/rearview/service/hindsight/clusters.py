"""Grouping a namespace's episodes into the clusters an inducer may learn from.

Three ways, deterministic, so every inducer (rules or a model) sees the same clusters and the cost caps count the
same things:
- *outcomes*: a subject's outcome sequence yields lessons (`lessons`);
- *signals*: episodes in which the rules recognise the same preference, fact or habit (`signals`), and statements
  that define a named thing as an identifier;
- *meaning*: the user's requests, choices, corrections and observations, in any voice, grouped by what they mean
  (`meaning`, through the embedder); a group in which the rules recognise one signal takes its dimension.
A cluster only matters if it holds at least one new episode (its knowledge is otherwise held already) and its
evidence passes the guards (`evidence.enough`).

A turn a write asked to extract (`turn_clusters`) is its own cluster, for each signal the rules recognise in it and,
for a model, for the turn itself: said once is enough, since the caller asked for it to be remembered.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from rearview.domain.embedding import CosineScale
from rearview.domain.hindsight import EvidenceCluster, Signal
from rearview.domain.memory import Episode, Kind
from rearview.service.hindsight.evidence import LESSON_MIN_FAILURES, RECURRING_FAILURE_MIN, enough
from rearview.service.hindsight.lessons import outcome_patterns, subject_of
from rearview.service.hindsight.meaning import Embed, as_clusters, meaning_clusters
from rearview.service.hindsight.phrases import content_terms, tidy_phrase
from rearview.service.hindsight.signals import signals_of
from rearview.service.hindsight.wording import normalise
from rearview.service.voice import units_of, units_of_text, without_speaker
from rearview.settings import ConsolidateTuning
from rearview.text_analysis import asks_question, without_asides


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


def build_clusters(
    episodes: Sequence[Episode],
    new_ids: set[str],
    tuning: ConsolidateTuning,
    embed: Embed | None = None,
    scale: CosineScale | None = None,
) -> list[EvidenceCluster]:
    """Every cluster with a new episode whose evidence passes the guards, lessons first, then by evidence. Without
    `embed` and `scale` (the embedder's function and its `CosineScale`), no group is found by meaning."""
    pool = learnable(episodes, tuning)
    clusters = _lesson_clusters(pool, tuning)
    in_lessons = {e.id for c in clusters for e in c.episodes}
    signalled: dict[str, list[Signal]] = {}
    for episode in pool:
        if episode.id in in_lessons or episode.outcome_status in ("failure", "success", "partial"):
            continue
        found = signals_of(episode.content)
        if found and _someone_elses(episode):
            # "Priya said she prefers aisle seats": her preference, not the user's. (What a clause says of the
            # user's daughter or colleague may still be a fact of the user's: "my daughter Duoduo".)
            found = [s for s in found if s.kind != "preference"]
        if found:
            signalled[episode.id] = found
    unsignalled = [e for e in pool if e.id not in in_lessons and e.id not in signalled]
    clusters += _with_mentions(_signal_clusters(pool, signalled), unsignalled, signalled)
    clusters += _definition_clusters([e for e in pool if e.id not in in_lessons])
    kept = [c for c in clusters if passes(c, new_ids, tuning)]
    if embed is not None and scale is not None:
        held = {e.id for c in kept for e in c.episodes}
        rest = [e for e in pool if e.id not in in_lessons]
        for cluster in as_clusters(meaning_clusters(rest, embed, scale)):
            mine = [e for e in cluster.episodes if e.id not in held]
            if len(mine) * 2 <= len(cluster.episodes):
                continue
            named = _named_by_signal(cluster, signalled)
            if passes(named, new_ids, tuning):
                kept.append(named)
                held |= {e.id for e in named.episodes}
    return kept


def _someone_elses(episode: Episode) -> bool:
    """Whether every clause of the episode is held by someone other than the user (and the agent)."""
    units = units_of(episode)
    return bool(units) and all(u.holder == "other" for u in units)


def turn_clusters(turns: Sequence[Episode], tuning: ConsolidateTuning, *, open_ended: bool) -> list[EvidenceCluster]:
    """The clusters of turns a write asked to extract, one turn each and no guard: what the rules recognise in a
    turn (a preference, a fact, a definition) and, when `open_ended` (a model states them), each turn the user says
    something in that the rules recognise nothing in. Only turns in which the user speaks or is spoken of (not a
    colleague alone), and no tool outcome: a lesson needs a sequence of them."""
    clusters: list[EvidenceCluster] = []
    for turn in learnable(turns, tuning):
        if turn.outcome_status in ("failure", "success", "partial"):
            continue
        if not any(u.holder == "user" for u in units_of(turn)):
            continue
        signals = [
            s
            for sentence in sentences_of_user(turn.content)
            for s in signals_of(sentence)
            if s.dimension != "exercise" or _ROUTINE.search(sentence)
        ]
        found = [EvidenceCluster(kind=s.kind, episodes=[turn], signal=s, one_turn=True) for s in dict.fromkeys(signals)]
        for cluster in _definition_clusters([turn]):
            cluster.one_turn = True
            found.append(cluster)
        if not found and open_ended:
            found.append(EvidenceCluster(kind="fact", episodes=[turn], one_turn=True))
        clusters += found
    return clusters


# What makes one mention of an activity a habit rather than an event: "I swim every morning", "每周跑三次".
_ROUTINE = re.compile(
    r"\b(?:every|each|usually|always|often|regularly|daily|weekly|most (?:days|mornings|evenings|weekends)|"
    r"times a week|a week|habit|routine)\b|每天|每周|每晚|每早|经常|通常|一般|总是|习惯",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


# A sentence said to someone: "you" without "I" ("You must love seeing how you've grown as an artist").
_SECOND_PERSON = re.compile(r"\b(?:you|your|you're|you've|yours)\b|你", re.IGNORECASE)
_FIRST_PERSON_ANY = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine)\b|我", re.IGNORECASE)


def sentences_of_user(text: str) -> list[str]:
    """The sentences of a turn that say something of the user, each read on its own: not a question, not a stage
    direction ("[shares a photo of a stained glass window]"), not said to someone else ("you" without "I"), not
    about someone else alone ("my colleague prefers tea")."""
    kept = []
    for sentence in _SENTENCE_END.split(without_speaker(without_asides(normalise(text)))):
        if not sentence.strip() or asks_question(sentence):
            continue
        if _SECOND_PERSON.search(sentence) and not _FIRST_PERSON_ANY.search(sentence):
            continue
        if any(u.holder == "user" for u in units_of_text(sentence)):
            kept.append(sentence)
    return kept


def _named_by_signal(cluster: EvidenceCluster, signalled: dict[str, list[Signal]]) -> EvidenceCluster:
    """A group found by meaning in which the rules recognise one signal in most episodes, as that signal's cluster:
    meaning found the group (however its episodes are worded), the rules name its dimension."""
    counts: dict[Signal, int] = defaultdict(int)
    for episode in cluster.episodes:
        for signal in signalled.get(episode.id, []):
            if signal.kind == cluster.kind:
                counts[signal] += 1
    if not counts:
        return cluster
    signal, count = max(counts.items(), key=lambda kv: kv[1])
    if count * 2 < len(cluster.episodes):
        return cluster
    return EvidenceCluster(kind=signal.kind, episodes=cluster.episodes, signal=signal)


def passes(cluster: EvidenceCluster, new_ids: set[str], tuning: ConsolidateTuning) -> bool:
    """A cluster with a new episode whose evidence passes its kind's guards."""
    if not any(e.id in new_ids for e in cluster.episodes):
        return False
    dimension = "exercise" if cluster.habit else cluster.signal.dimension if cluster.signal else None
    return enough(cluster.kind, dimension, cluster.episodes)


def _signal_clusters(pool: Sequence[Episode], signalled: dict[str, list[Signal]]) -> list[EvidenceCluster]:
    canonical = _canonical_values([s for signals in signalled.values() for s in signals])
    by_signal: dict[Signal, list[Episode]] = defaultdict(list)
    for episode in pool:
        for signal in signalled.get(episode.id, []):
            by_signal[canonical.get(signal, signal)].append(episode)
    return [EvidenceCluster(kind=s.kind, episodes=eps, signal=s) for s, eps in by_signal.items()]


# Facts whose value is a name (a place, an employer, a pet's or a relative's name): a later episode that names it
# again confirms the fact ("my beagle Biscuit" once, then "Biscuit ate a sock").
_MENTIONABLE = frozenset({"home_city", "employer", "pet", "family", "name"})
_MOVED_ON = re.compile(
    r"\b(?:left|moved (?:away )?from|no longer|not anymore|any ?more|used to|former|ex-|quit)\b"
    r"|离开|不再|以前|前公司|搬走",
    re.IGNORECASE,
)


def _with_mentions(
    clusters: list[EvidenceCluster], candidates: Sequence[Episode], signalled: dict[str, list[Signal]]
) -> list[EvidenceCluster]:
    """Fact clusters on a named value, joined by the episodes that name it again without stating it."""
    for cluster in clusters:
        signal = cluster.signal
        if signal is None or signal.kind != "fact" or signal.dimension not in _MENTIONABLE:
            continue
        pattern = _mention_pattern(signal.value)
        if pattern is None:
            continue
        held = {e.id for e in cluster.episodes}
        for episode in candidates:
            if episode.id not in held and pattern.search(episode.content) and not _MOVED_ON.search(episode.content):
                cluster.episodes.append(episode)
    return clusters


def _mention_pattern(value: str) -> re.Pattern[str] | None:
    """How a later episode names the value: the whole name, or the first word of a name of several words
    ("Harbor" of "Harbor Analytics"); CJK names as written. None for a value too common to count as a name."""
    if not value:
        return None
    if not value.isascii():
        return re.compile(re.escape(value)) if len(value) >= 2 else None
    words = [w for w in value.split() if w[:1].isupper()]
    if not words:
        return None
    forms = [re.escape(value)]
    if len(words) > 1 and len(words[0]) >= 4:
        forms.append(re.escape(words[0]))
    return re.compile(r"\b(?:" + "|".join(forms) + r")(?:'s)?\b")


# An identifier (a host, a URL, an address, a path) that a statement defines: "the VPN gateway is vpn.example.dev".
_IDENTIFIER = r"(?:https?://)?[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+(?::\d+)?(?:/[\w./-]*)?|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_DEFINITION = re.compile(
    rf"(?P<subject>[A-Za-z\u4e00-\u9fff][\w \u4e00-\u9fff-]{{2,40}}?)\s*,?\s*"
    rf"(?:is|are|=|:|lives at|points to|goes through|is at|that's|that is|i\.e\.|aka|是|在)\s*(?P<id>{_IDENTIFIER})",
    re.IGNORECASE,
)
_IDENTIFIER_RE = re.compile(_IDENTIFIER, re.IGNORECASE)


def _definition_clusters(pool: Sequence[Episode]) -> list[EvidenceCluster]:
    """A statement that defines a named thing as an identifier, with every episode naming that identifier: the
    fact is the definition, dimension `setting:<the thing>` (a new definition of it supersedes the old)."""
    definitions: dict[str, tuple[str, str]] = {}
    for episode in pool:
        for m in _DEFINITION.finditer(normalise(episode.content)):
            subject = " ".join(content_terms(m.group("subject")))
            identifier = m.group("id").lower().rstrip("./")
            if subject and ("." in identifier or "@" in identifier):
                definitions.setdefault(identifier, (subject, _clause(normalise(episode.content), m.start("id"))))
    clusters = []
    for identifier, (subject, clause) in definitions.items():
        naming = [e for e in pool if identifier in {i.lower().rstrip("./") for i in _IDENTIFIER_RE.findall(e.content)}]
        signal = Signal("fact", f"setting:{subject}"[:64], "value", identifier)
        clusters.append(EvidenceCluster(kind="fact", episodes=naming, signal=signal, key_phrase=clause))
    return clusters


def _clause(text: str, at: int) -> str:
    """The clause of `text` around position `at`: from the last clause break before it to the next one after."""
    start = max(text.rfind(ch, 0, at) for ch in ",;:!?。，；：！？\n")
    end_candidates = [i for i in (text.find(ch, at) for ch in ",;!?。，；！？\n") if i >= 0]
    end = min(end_candidates) if end_candidates else len(text)
    return tidy_phrase(text[start + 1 : end])


def _canonical_values(signals: Sequence[Signal]) -> dict[Signal, Signal]:
    """A value that extends another value of the same slot is that value said more precisely ("北京朝阳区" is in
    "北京", "New York City" is "New York"): both count as the shorter one."""
    by_slot: dict[tuple[Kind, str, str], set[str]] = defaultdict(set)
    for s in signals:
        by_slot[(s.kind, s.dimension, s.facet)].add(s.value)
    mapping: dict[Signal, Signal] = {}
    for (kind, dimension, facet), values in by_slot.items():
        for value in values:
            shorter = [v for v in values if v != value and value.lower().startswith(v.lower())]
            if shorter:
                mapping[Signal(kind, dimension, facet, value)] = Signal(kind, dimension, facet, min(shorter, key=len))
    return mapping


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
            min_failures=LESSON_MIN_FAILURES,
            recurring_min=RECURRING_FAILURE_MIN,
        )
        clusters += [EvidenceCluster(kind="lesson", episodes=p.episodes, subject=p.subject) for p in patterns]
    return clusters
