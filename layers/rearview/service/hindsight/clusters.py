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
from rearview.domain.memory import Episode, Kind
from rearview.service.hindsight.evidence import (
    LESSON_MIN_FAILURES,
    PREFERENCE_REPEATS_ALONE,
    RECURRING_FAILURE_MIN,
    enough,
    evidence_of,
)
from rearview.service.hindsight.lessons import outcome_patterns, subject_of
from rearview.service.hindsight.phrases import content_terms, shared_phrase, tidy_phrase, without_speaker
from rearview.service.hindsight.signals import signals_of
from rearview.service.hindsight.wording import is_request, normalise
from rearview.settings import ConsolidateTuning
from rearview.text_analysis import asks_question, without_asides

# A request that states a lasting wish, not a one-off task: what a look-alike preference needs in one member.
# Statements no rule recognises join one group when they share this share of the shorter one's content words (two
# at least): one request said at two lengths.
LOOKALIKE_OVERLAP = 0.6

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
    clusters = _lesson_clusters(pool)
    in_lessons = {e.id for c in clusters for e in c.episodes}
    signalled: dict[str, list[Signal]] = {}
    for episode in pool:
        if episode.id not in in_lessons and episode.outcome_status not in ("failure", "success", "partial"):
            found = signals_of(episode.content)
            if found:
                signalled[episode.id] = found
    unsignalled = [e for e in pool if e.id not in in_lessons and e.id not in signalled]
    clusters += _with_mentions(_signal_clusters(pool, signalled), unsignalled, signalled)
    definitions = _definition_clusters([e for e in pool if e.id not in in_lessons])
    defined = {e.id for c in definitions for e in c.episodes}
    clusters += definitions
    rest = [e for e in unsignalled if e.id not in defined]
    clusters += _lookalike_clusters(rest)
    kept = []
    for cluster in clusters:
        if not any(e.id in new_ids for e in cluster.episodes):
            continue
        dimension = cluster.signal.dimension if cluster.signal else None
        if enough(cluster.kind, dimension, evidence_of(cluster.episodes)):
            kept.append(cluster)
    return kept


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


def _lesson_clusters(pool: Sequence[Episode]) -> list[EvidenceCluster]:
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


def _said(episode: Episode) -> str:
    """What an episode's speaker said: without a speaker label or trailing asides ("[shares a photo of ...]")."""
    return without_speaker(without_asides(episode.content))


def _lookalike_clusters(rest: Sequence[Episode]) -> list[EvidenceCluster]:
    """Requests with a lasting wish, and stable statements, grouped by shared words; each group with a phrase
    most of its members share."""
    said = {e.id: _said(e) for e in rest}
    requests = [e for e in rest if is_request(said[e.id]) and not asks_question(said[e.id])]
    statements = [
        e
        for e in rest
        if e not in requests
        and _STATIVE.search(said[e.id])
        and not _EVENT.search(said[e.id])
        and not asks_question(said[e.id])
    ]
    clusters = []
    for kind, members, min_terms in (("preference", requests, 2), ("fact", statements, 3)):
        for group in _groups(members, LOOKALIKE_OVERLAP):
            choice = _choice(group) if kind == "preference" else None
            if choice is not None:
                clusters.append(EvidenceCluster(kind="preference", episodes=group, signal=choice))
                continue
            lasting = any(_LASTING.search(said[e.id]) for e in group)
            repeats = sum(max(1, e.confirmations) for e in group)
            if kind == "preference" and not lasting and repeats < PREFERENCE_REPEATS_ALONE:
                continue
            phrase = shared_phrase([said[e.id] for e in group], min_terms=min_terms)
            # A fact is stated by a clause that says how things are, not by a topic ("improving education").
            if phrase and (kind == "preference" or _STATIVE.search(phrase)):
                clusters.append(EvidenceCluster(kind=kind, episodes=group, key_phrase=phrase))  # type: ignore[arg-type]
    return clusters


_AGAINST = (
    r"(?:instead of|rather than|not|no|stopped using|stop using|don'?t use|avoid|without|over|than|别用|不要用|不用|别)"
)


def _choice(group: Sequence[Episode]) -> Signal | None:
    """One thing every request of the group asks for, and another most of them turn away from ("rewrite it in
    polars, I've stopped using pandas", "no pandas please, port it to polars"): a preference of one over the
    other, however each request words it."""
    texts = [normalise(e.content) for e in group]
    terms = [set(content_terms(t)) for t in texts]
    common = set.intersection(*terms) if terms else set()
    against: dict[str, int] = {}
    for text in texts:
        for term in {t for ts in terms for t in ts}:
            if re.search(rf"{_AGAINST}\s+(?:\w+\s+){{0,2}}?{re.escape(term)}\b", text, re.IGNORECASE):
                against[term] = against.get(term, 0) + 1
    avoided = [t for t, n in against.items() if n * 2 >= len(texts) and n >= 2]
    chosen = [t for t in common if t not in against]
    if len(avoided) != 1 or not chosen:
        return None
    return Signal("preference", "tools", avoided[0], max(chosen, key=len))


def _groups(episodes: Sequence[Episode], overlap: float) -> list[list[Episode]]:
    """Greedy single-link grouping by the words two texts share, as a share of the shorter one's content words
    (at least two shared): "always add type hints to Python functions" and "add type hints everywhere" are one
    request said at two lengths. Embedder-independent: a contextual vector carries the turn before, which says
    nothing about whether two requests are the same."""
    terms = [set(content_terms(_said(e))) for e in episodes]
    groups: list[list[int]] = []
    for i, words in enumerate(terms):
        if not words:
            continue
        home = None
        for g, members in enumerate(groups):
            if any(_shared(words, terms[j]) >= overlap for j in members):
                home = g
                break
        if home is None:
            groups.append([i])
        else:
            groups[home].append(i)
    return [[episodes[i] for i in g] for g in groups if sum(max(1, episodes[i].confirmations) for i in g) >= 2]


def _shared(a: set[str], b: set[str]) -> float:
    common = len(a & b)
    return common / min(len(a), len(b)) if common >= 2 else 0.0
