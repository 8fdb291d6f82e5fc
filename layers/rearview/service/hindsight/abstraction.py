"""The offline statement of a group found by meaning: the constituent its episodes share, taken from the clause
that says it most plainly, and put through one of a few templates (a preference, a fact, a habit; English or
Chinese). Extractive, not generative: every word of the statement but the template's is in the episodes, and the
statement is never one episode copied (the template and the cut see to that)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rearview.domain.hindsight import EvidenceCluster, InducedMemory
from rearview.domain.limits import MAX_FACT_CHARS
from rearview.domain.memory import Episode
from rearview.service.hindsight.meaning import user_clauses
from rearview.service.voice import Unit
from rearview.text_analysis import is_cjk, mostly_chinese

# A statement's predicate is cut to at most this many words (CJK: characters) around what the group shares.
MAX_PREDICATE_WORDS = 10
MAX_PREDICATE_CHARS_CJK = 16

_TEMPLATES = {
    ("preference", False): "The user's preference: {}",
    ("preference", True): "用户的偏好：{}",
    ("fact", False): "The user {}",
    ("fact", True): "用户{}",
    ("habit", False): "The user regularly: {}",
    ("habit", True): "用户经常：{}",
    ("about", False): "About the user: {}",
    ("about", True): "关于用户：{}",
}
# A predicate that starts with one of these is said of the user directly ("lives in Rotterdam", "住在杭州").
_PREDICATE_START = re.compile(
    r"^(?:is|was|has|have|had|lives|works|uses|drinks|eats|runs|owns|does|doesn't|does not|no longer|never|"
    r"always|quit|stopped|gave up|moved|switched|started|prefers|likes|wants|needs|plays|speaks|[a-z]+s)\b"
    r"|^(?:住|在|是|有|对|不|已经|一直|每|开始|戒|用|喜欢|要)",
    re.IGNORECASE,
)


# Words that turn what follows them round: a predicate never starts just after one.
_NEGATING = frozenset({"no", "not", "never", "don't", "dont", "stop", "without", "avoid", "avoids", "hate", "hates"})
# Words a predicate does not end on: it would go on after them.
_DANGLING = frozenset(
    {"a", "an", "the", "to", "of", "with", "for", "and", "or", "no", "not", "in", "on", "at", "by", "as", "but", "that",
     "be", "is", "are", "was", "his", "her", "their", "my", "your", "so", "if", "because", "than", "from"}
)  # fmt: skip


def user_units(episodes: Sequence[Episode]) -> list[Unit]:
    """The user's clauses of the episodes, as grouping read them (`meaning.user_clauses`: what the agent did in
    an episode where the user speaks is the user's too)."""
    return [u for e in episodes for u in user_clauses(e)]


def state_group(cluster: EvidenceCluster) -> InducedMemory | None:
    """The memory a group found by meaning supports, stated offline; None when no clause of it holds what the
    group shares."""
    shared = set(cluster.shared)
    units = [u for u in user_units(cluster.episodes) if shared & set(u.signed_terms)]
    if not units:
        return None
    # The clause that says it most plainly: a wish (a preference; then one of the user), of the user (a fact),
    # holding the most of what is shared, in the fewest words.
    wanted = "wish" if cluster.kind == "preference" else None
    best = max(
        units,
        key=lambda u: (
            u.act == wanted,
            u.about_user or u.act == wanted,
            len(shared & set(u.signed_terms)),
            -len(u.text),
        ),
    )
    predicate = _cut(best.text, [t for t in best.signed_terms if t in shared])
    if not predicate:
        return None
    chinese = mostly_chinese(e.content for e in cluster.episodes)
    form: str = "habit" if cluster.habit else cluster.kind
    if form == "fact" and not _PREDICATE_START.match(predicate):
        form = "about"
    statement = _TEMPLATES[(form, chinese)].format(predicate)
    if len(statement) > MAX_FACT_CHARS:
        statement = statement[: MAX_FACT_CHARS - 1].rstrip() + "…"
    facets = {"value": " ".join(t for t in cluster.shared)}
    return InducedMemory(kind=cluster.kind, statement=statement, dimension=None, facets=facets, provenance=cluster.ids)


def _cut(text: str, anchors: Sequence[str]) -> str:
    """The part of `text` from the first word holding one of the anchors to the last, widened by a word each
    side while it stays within MAX_PREDICATE_WORDS; the whole text when short."""
    if is_cjk(text[0]):
        return _cut_cjk(text, anchors)
    words = text.split()
    if len(words) <= MAX_PREDICATE_WORDS:
        return text.rstrip(" ,.;:")
    bare = [a.lstrip("-") for a in anchors]
    hits = [i for i, w in enumerate(words) if any(w.lower().startswith(b[:4]) for b in bare)]
    if not hits:
        return " ".join(words[:MAX_PREDICATE_WORDS]).rstrip(" ,.;:")
    # What follows the anchors completes them ("the call with the landlord to be audio only"): the window runs on
    # to MAX_PREDICATE_WORDS, back to the last clause break within it, without a dangling word at its end.
    start = max(0, hits[0] - 2)
    end = min(len(words), max(hits[-1] + 2, start + MAX_PREDICATE_WORDS))
    while end - start > MAX_PREDICATE_WORDS and end > hits[-1] + 1:
        end -= 1
    while end - start > MAX_PREDICATE_WORDS and start < hits[0]:
        start += 1
    if start > 0 and words[start - 1].lower() in _NEGATING:
        start -= 1  # "no pandas please" never becomes "pandas please"
    breaks = [i + 1 for i in range(hits[-1], end - 1) if words[i][-1] in ",;:"]
    if breaks:
        end = breaks[-1]
    while end > hits[-1] + 1 and words[end - 1].lower().strip(",.;:") in _DANGLING:
        end -= 1
    return " ".join(words[start:end]).rstrip(" ,.;:")


def _cut_cjk(text: str, anchors: Sequence[str]) -> str:
    """Six characters either side of the anchors (found in any case: "PDF" holds the anchor "pdf"), never through a
    Latin word ("dayjs", not "ayjs")."""
    if len(text) <= MAX_PREDICATE_CHARS_CJK:
        return text.rstrip("，。；：")
    lowered = text.lower()
    spots = [at for a in anchors if (at := lowered.find(a.lstrip("-"))) >= 0]
    if not spots:
        return text[:MAX_PREDICATE_CHARS_CJK]
    start = max(0, min(spots) - 6)
    end = min(len(text), max(spots) + 6)
    while 0 < start < len(text) and _latin(text[start - 1]) and _latin(text[start]):
        start -= 1
    while 0 < end < len(text) and _latin(text[end - 1]) and _latin(text[end]):
        end += 1
    return text[start:end].strip("，。；：,")


def _latin(char: str) -> bool:
    return char.isascii() and char.isalnum()
