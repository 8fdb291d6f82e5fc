"""The deterministic inducer: states a memory from a cluster's structure, with no model.

A signal cluster is stated from its dimension and facets by the templates of `statements`; a lesson from its
subject, the error its failures share, and what the success changed; a look-alike cluster from the phrase its
members share. It abstracts rather than copies, so no induced memory is any one episode verbatim. It is the default
inducer, and the fallback of the model-backed ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from rearview.domain.hindsight import EvidenceCluster, InducedMemory, Induction, lesson_dimension
from rearview.domain.limits import MAX_FACT_CHARS
from rearview.domain.memory import Kind
from rearview.service.hindsight import statements
from rearview.service.hindsight.abstraction import state_group
from rearview.service.hindsight.lessons import error_signature, what_changed
from rearview.service.hindsight.phrases import shared_phrase
from rearview.service.hindsight.signals import time_slot
from rearview.text_analysis import mostly_chinese


class RuleInducer:
    """The Inducer port, by rules (English and Chinese)."""

    name = "rules"

    def induce(self, clusters: Sequence[EvidenceCluster]) -> Induction:
        return Induction(memories=[induce_one(cluster) for cluster in clusters])


def induce_one(cluster: EvidenceCluster) -> InducedMemory | None:
    """The memory a cluster supports, or None."""
    chinese = mostly_chinese(e.content for e in cluster.episodes)
    if cluster.kind == "lesson":
        return _lesson(cluster, chinese)
    ids = cluster.ids
    if cluster.shared:
        return state_group(cluster)
    if cluster.signal is not None:
        value = cluster.signal.value
        if value == "a table" and any("markdown" in e.content.lower() for e in cluster.episodes):
            value = "a markdown table"
        facets = {cluster.signal.facet: value}
        if cluster.signal.dimension == "exercise":
            facets.update(_usual_time(cluster))
        statement = statements.state(cluster.signal.dimension, facets, chinese=chinese)
        if statement is None and cluster.key_phrase:
            # A definition ("the VPN gateway is vpn.example.dev"): the statement is the defining clause.
            statement = statements.stated_fact(cluster.key_phrase, chinese=chinese)
        if statement is None:
            return None
        return _memory(cluster.kind, statement, cluster.signal.dimension, facets, ids)
    if cluster.key_phrase is None:
        return None
    if cluster.kind == "preference":
        statement = statements.repeated_request(cluster.key_phrase, chinese=chinese)
    else:
        statement = statements.stated_fact(cluster.key_phrase, chinese=chinese)
    return _memory(cluster.kind, statement, None, {}, ids)


def _lesson(cluster: EvidenceCluster, chinese: bool) -> InducedMemory | None:
    episodes = cluster.episodes
    failures = [e for e in episodes if e.outcome_status == "failure"]
    successes = [e for e in episodes if e.outcome_status == "success"]
    subject = cluster.subject or "this task"
    count = sum(max(1, e.confirmations) for e in failures)
    error = error_signature(failures)
    dimension = lesson_dimension(subject)
    if successes:
        change = what_changed(failures, successes[-1])
        if change is None:
            return None
        statement = statements.fix_lesson(subject, error, change.failed, change.worked, count, chinese=chinese)
        facets = {"works": change.worked}
        if error:
            facets["fails"] = error
        return _memory("lesson", statement, dimension, facets, [e.id for e in episodes])
    if error is None:
        return None
    since = min(e.occurred_at for e in failures).date().isoformat()
    # What keeps being tried, in the failures' own shared words ("Deployed the api service to prod").
    action = shared_phrase([e.content for e in failures], min_terms=2) if len(failures) > 1 else None
    statement = statements.recurring_failure(subject, error, count, since, action, chinese=chinese)
    return _memory("lesson", statement, dimension, {"fails": error}, [e.id for e in episodes])


def _memory(kind: Kind, statement: str, dimension: str | None, facets: dict[str, str], ids: list[str]) -> InducedMemory:
    if len(statement) > MAX_FACT_CHARS:
        statement = statement[: MAX_FACT_CHARS - 1].rstrip() + "…"
    return InducedMemory(kind=kind, statement=statement, dimension=dimension, facets=facets, provenance=ids)


def _usual_time(cluster: EvidenceCluster) -> dict[str, str]:
    """When the activity usually happens now, if most of its latest episodes say the same (morning, evening,
    weekend): a habit that moved from the evening to the morning is a morning habit."""
    latest = sorted(cluster.episodes, key=lambda e: e.last_seen_at)[-_RECENT_EPISODES:]
    slots = [time_slot(e.content) for e in latest]
    named = [s for s in slots if s is not None]
    if named:
        best = max(set(named), key=named.count)
        if named.count(best) * 2 > len(slots):
            return {"when": best}
    return {}


# How many of a habit's latest episodes say when it happens now.
_RECENT_EPISODES = 3
