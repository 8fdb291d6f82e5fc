"""Candidate memories found by what episodes mean, not by listed words.

The user's clauses (`voice.units_of`: their own turns, an agent's report of them, quoted turns, actions done at
their request; never someone else's) are embedded through the `Embedder` port and linked when they mean the same:
two clauses of different episodes are linked when their vectors are close for this namespace (above a high
percentile of its own pairwise similarities, so any embedder's scale does) and they share a constituent (a term,
with its polarity: "no emojis" is not "emojis"), or when their vectors are very close. A linked group is split by
the constituents its members share, so "evening runs" and, later, "morning runs" are two groups. Each group is
a candidate: a preference when most of its clauses are wishes, else a fact (a habit when they report events).
The guards of `evidence.enough` decide which candidates are learned; `abstraction` states them.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rearview.domain.embedding import CosineScale
from rearview.domain.hindsight import EvidenceCluster
from rearview.domain.memory import Episode, Kind
from rearview.service.hindsight.phrases import FILLER, PHATIC
from rearview.service.voice import STANDING, Unit, frame_terms, units_of
from rearview.stemming import index_terms
from rearview.text_analysis import CJK_FUNCTION_CHARS, is_cjk

Embed = Callable[[list[str]], np.ndarray]

# Pairs of the namespace's clauses above this percentile of its pairwise similarities are "close"; above the
# second, "very close" (linked without a shared constituent). Percentiles, not cosines: every embedder has its own
# scale (MiniLM's unrelated pairs sit near 0.1, e5's near 0.75).
CLOSE_PERCENTILE = 75.0
VERY_CLOSE_PERCENTILE = 99.5
# Below this many clauses the percentiles are not measured: "close" is a little above the embedder's topic floor
# (`CosineScale.topic_floor`; this share of the way to 1: MiniLM's 0.25 gives 0.30), and nothing is linked by its
# vector alone.
MIN_UNITS_FOR_PERCENTILES = 40
SMALL_CLOSE_SHARE = 0.067
# A constituent carried by more than this share of the namespace's clauses is a topic of everything ("meeting" in
# a calendar assistant's log), not what makes a group.
MAX_CONSTITUENT_SHARE = 0.25
# Characters that end no constituent (a CJK pair ending in one is a word and its particle: "放了", "我的").
# "都" and "在" end words too (成都, 现在), so they are not among them.
_PARTICLES = frozenset("的地得了着过吗呢吧啊呀嘛们是和与就也还又很")
# Function characters that begin many content words all the same (地铁, 地址, 过敏): a pair starting with one is
# a word, not grammar.
_WORD_STARTS = frozenset("地过")
# Days named from the day a turn is said: when one task happens, not what a habit is about ("下周去成都"). As the
# clauses' terms are, English words stemmed ("today" is "todai").
_DAYS_FROM_NOW = frozenset(
    term
    for word in (
        "today", "tomorrow", "yesterday", "tonight", "今天", "明天", "昨天", "后天", "前天", "今晚", "明晚", "昨晚",
        "下周", "上周", "本周", "这周", "下个", "上个", "月底", "年底", "周末前",
    )
    for term in {word, *(index_terms(word)[:1] if word.isascii() else ())}
)  # fmt: skip
# A group larger than this is a topic, not one wish or fact: it is split by its constituents.
MAX_GROUP_UNITS = 40


@dataclass
class MeaningGroup:
    """Clauses that mean one thing, with the constituents most of them share."""

    kind: Kind
    units: list[Unit]
    shared: list[str]

    @property
    def episodes(self) -> list[Episode]:
        return list({u.episode.id: u.episode for u in self.units}.values())


def meaning_clusters(pool: Sequence[Episode], embed: Embed, scale: CosineScale) -> list[MeaningGroup]:
    """The candidate groups of the user's clauses among `pool` (episodes with an outcome are lessons' and left
    out), by the cosines of an embedder whose scale is `scale`."""
    units = [u for e in pool if e.outcome_status not in ("failure", "success", "partial") for u in user_clauses(e)]
    units = [u for u in units if constituents(u)]
    if len(units) < 2 and not any(u.episode.confirmations > 1 for u in units):
        return []
    vectors = np.asarray(embed([u.text for u in units]), dtype=np.float32) if units else np.zeros((0, 1))
    close, very_close = _thresholds(vectors, scale)
    common = _too_common(units)
    groups = _linked(units, vectors, close, very_close, common)
    out: list[MeaningGroup] = []
    for members in groups:
        for part in _split_by_constituents(members, common):
            group = _grouped(part)
            if group is not None:
                out.append(group)
    return out


def user_clauses(episode: Episode) -> list[Unit]:
    """The user's clauses of an episode, with what the agent did in an episode where the user says why ("Converted
    the temperatures to Celsius; the user does not read Fahrenheit"): done for the user, so the user's too."""
    units = units_of(episode)
    if not any(u.holder == "user" for u in units):
        return []
    return [u if u.holder == "user" else replace(u, holder="user") for u in units if u.holder != "other"]


def constituents(unit: Unit) -> list[str]:
    """The signed terms of a clause that can say what it is about: not filler, small talk, the verbs of voice, the
    verb an agent's note opens with ("Found ...", "Ordered ..."), a day named from the day it is said ("tomorrow",
    "下周": one occasion, never a habit), numbers alone or CJK pairs of grammar characters."""
    out = []
    for term in unit.signed_terms:
        bare = term.lstrip("-")
        if bare == unit.leading_verb:
            continue
        if bare in FILLER or bare in PHATIC or bare in frame_terms() or bare in ("user", "agent", "用户"):
            continue
        if bare in _DAYS_FROM_NOW:
            continue
        if bare.isdigit() and len(bare) < 2:
            continue
        if is_cjk(bare[0]) and (bare[0] in CJK_FUNCTION_CHARS - _WORD_STARTS or bare[-1] in _PARTICLES):
            continue
        out.append(term)
    return out


def _thresholds(vectors: np.ndarray, scale: CosineScale) -> tuple[float, float]:
    """The namespace's "close" and "very close" similarities."""
    n = len(vectors)
    floor = scale.topic_floor
    if n < MIN_UNITS_FOR_PERCENTILES:
        return floor + SMALL_CLOSE_SHARE * (1.0 - floor), 1.01
    sims = vectors @ vectors.T
    upper = sims[np.triu_indices(n, k=1)]
    close = float(np.percentile(upper, CLOSE_PERCENTILE))
    very = float(np.percentile(upper, VERY_CLOSE_PERCENTILE))
    return max(close, floor), max(very, close + 0.4 * (1.0 - close))


def _too_common(units: Sequence[Unit]) -> set[str]:
    counts = Counter(t for u in units for t in set(constituents(u)))
    if len(units) < 20:
        return set()
    return {t for t, n in counts.items() if n > MAX_CONSTITUENT_SHARE * len(units)}


def _linked(
    units: Sequence[Unit], vectors: np.ndarray, close: float, very_close: float, common: set[str]
) -> list[list[Unit]]:
    """Connected groups: clauses of different episodes that are close and share a constituent, or very close."""
    n = len(units)
    joined = _Joined(n)
    by_term: dict[str, list[int]] = defaultdict(list)
    for i, unit in enumerate(units):
        for term in set(constituents(unit)) - common:
            by_term[term].append(i)
    sims = vectors @ vectors.T if n else np.zeros((0, 0))
    pairs = {(a, b) for members in by_term.values() for at, a in enumerate(members) for b in members[at + 1 :]}
    pairs = {(a, b) for a, b in pairs if sims[a, b] >= close}
    rows, cols = np.nonzero(np.triu(sims, k=1) >= very_close)
    pairs |= set(zip(rows.tolist(), cols.tolist(), strict=True))
    for a, b in pairs:
        if _may_link(units[a], units[b]):
            joined.join(a, b)
    groups: dict[int, list[Unit]] = defaultdict(list)
    for i in range(n):
        groups[joined.root(i)].append(units[i])
    return [g for g in groups.values() if len({u.episode.id for u in g}) > 1 or g[0].episode.confirmations > 1]


class _Joined:
    """Union-find over the clause indexes."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def root(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, a: int, b: int) -> None:
        self.parent[self.root(a)] = self.root(b)


def _may_link(a: Unit, b: Unit) -> bool:
    """Two clauses of different episodes that do not say opposite things ("drinks coffee" and "quit coffee" are
    about one thing, but are two memories: the second may replace the first)."""
    if a.episode.id == b.episode.id:
        return False
    return not ((a.negated & set(b.terms) - b.negated) or (b.negated & set(a.terms) - a.negated))


def _split_by_constituents(members: list[Unit], common: set[str]) -> list[list[Unit]]:
    """A linked group that falls into parts by the constituents its episodes carry ("周一" in three episodes,
    "周三" in three others): the parts, each a constituent held by at least two episodes that no earlier part holds
    (for a value the user asks for, most of its holders are enough), largest first; the group itself when it does
    not fall into two or more."""
    holders: dict[str, set[str]] = defaultdict(set)
    asked: dict[str, set[str]] = defaultdict(set)
    for unit in members:
        for term in set(constituents(unit)) - common:
            holders[term].add(unit.episode.id)
            if term in unit.values:
                asked[term].add(unit.episode.id)
    episodes = len({u.episode.id for u in members})
    gaps = _gaps_in_time(members, holders)
    parts: list[set[str]] = []
    # Constituents held by at most half the group first (what a group's topic is not), then by most of it; of as
    # many holders, one held through a stretch of time first (a value of its period, "开车" then "地铁"), not one
    # spread over the group's whole span ("通勤", said of both).
    for share in (0.5, 0.8):
        telling = sorted(
            (t for t, held in holders.items() if 2 <= len(held) <= share * episodes and len(held) < episodes),
            key=lambda t: (-len(holders[t]), gaps[t], t),
        )
        parts = []
        for term in telling:
            rest = holders[term].difference(*parts)
            if rest == holders[term] or (
                # An episode already in a part stays there ("a morning slot pls, my afternoons are for deep work"):
                # a value the user asks for makes a part of the rest of its holders when they are most of them.
                len(rest) >= 2 and len(rest) * 2 > len(holders[term]) and len(rest & asked[term]) * 2 > len(rest)
            ):
                parts.append(rest)
        if len(parts) >= 2:
            break
    if len(parts) < 2:
        return [members] if len(members) <= MAX_GROUP_UNITS else []
    return [[u for u in members if u.episode.id in part] for part in parts]


def _gaps_in_time(members: list[Unit], holders: dict[str, set[str]]) -> dict[str, int]:
    """For each constituent, how many of the group's episodes that do not hold it fall between the first and the
    last that do, in time."""
    order = sorted({u.episode.id: u.episode for u in members}.values(), key=lambda e: (e.occurred_at, e.id))
    position = {e.id: i for i, e in enumerate(order)}
    out = {}
    for term, held in holders.items():
        at = sorted(position[i] for i in held)
        out[term] = at[-1] - at[0] + 1 - len(at)
    return out


def _grouped(units: list[Unit]) -> MeaningGroup | None:
    """The group with its kind and shared constituents, kept to the clauses that hold one (they are its evidence):
    a preference when most of it is wishes and a shared constituent is a value asked for ("in Celsius", not "the
    Python docs"), a fact when most of it says something of the user; None when it is neither (tasks, things that
    happened around the user)."""
    holders: dict[str, set[str]] = defaultdict(set)
    values: dict[str, set[str]] = defaultdict(set)
    for unit in units:
        for term in constituents(unit):
            holders[term].add(unit.episode.id)
            if term.lstrip("-") in unit.values:
                values[term].add(unit.episode.id)
    episodes = len({u.episode.id for u in units})
    needed = max(2 if episodes >= 2 else 1, (episodes + 1) // 2)
    shared = sorted((t for t, held in holders.items() if len(held) >= needed), key=lambda t: -len(holders[t]))
    if not shared:
        return None
    units = [u for u in units if set(shared) & set(u.signed_terms)]
    acts = Counter(u.act for u in units)
    if acts["wish"]:
        # Where the user asked for it at least once, what was done for the user in the same way is their wish too
        # ("Ordered the user's latte with oat milk" beside "asked for oat milk").
        acts["wish"] += sum(1 for u in units if u.act == "event" and set(shared) & u.values)
    kind: Kind
    if acts["wish"] * 2 >= len(units):
        # The evidence of a preference: the clauses that ask for a shared value, or say the wish lasts.
        asked = {t for t in shared if len(values[t]) >= min(2, episodes)}
        units = [u for u in units if asked & set(u.signed_terms) or _lasting(u)]
        if not units or not (asked or sum(1 for u in units if _lasting(u)) * 2 >= len(units)):
            return None
        kind = "preference"
    elif sum(1 for u in units if u.about_user and not _social(u)) * 2 >= len(units):
        kind = "fact"
    else:
        return None
    return MeaningGroup(kind=kind, units=units, shared=shared[:6])


def as_clusters(groups: Sequence[MeaningGroup]) -> list[EvidenceCluster]:
    """The groups as clusters an inducer states: their episodes, kind, shared constituents, and whether they
    report a habit."""
    return [
        EvidenceCluster(kind=g.kind, episodes=g.episodes, shared=tuple(g.shared), habit=is_habit(g)) for g in groups
    ]


# A wish said as lasting: what makes a repeated request about a task's topic a preference all the same ("always add
# type hints").
_LASTING = re.compile(
    r"\b(?:always|every time|each time|everywhere|by default|from now on|going forward|as usual|like before|"
    r"any ?more|in future|next time)\b|以后|今后|每次|总是|一律|都要|默认|照旧|老规矩|一直",
    re.IGNORECASE,
)


def _social(unit: Unit) -> bool:
    """A clause of social talk ("thanks, have a good weekend"): it says nothing lasting of the user."""
    return any(t in PHATIC for t in unit.terms) or any(w in unit.text for w in PHATIC if not w.isascii())


def _lasting(unit: Unit) -> bool:
    return bool(_LASTING.search(unit.episode.content) or STANDING.search(unit.text))


_HABIT_WORDS = re.compile(r"\b(?:again|usual|every|each|daily|weekly)\b|又|每|经常|照例", re.IGNORECASE)


def is_habit(group: MeaningGroup) -> bool:
    """A group of reported events (things the user did), rather than statements of how things are."""
    events = sum(1 for u in group.units if u.act == "event")
    return events * 2 > len(group.units) or sum(1 for u in group.units if _HABIT_WORDS.search(u.text)) >= 2
