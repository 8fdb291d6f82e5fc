"""Hindsight: what consolidation learns from episodes, and the evidence it learns from.

Semantic memory comes in three kinds: a *preference* (repeated requests or choices of the user), a *fact* (a
stable statement about the user or the world, repeated across sessions) and a *lesson* (what failed for a tool,
task or entity, and what worked after). An induced memory is stated from an `EvidenceCluster` by an `Inducer`
(`rearview.ports`), with a dimension and facets that say what it is about, so that a later memory on the same
dimension can be recognised as the same, a refinement, or a contradiction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.limits import MAX_FACT_CHARS
from rearview.domain.memory import Episode, Kind


@dataclass(frozen=True)
class Signal:
    """What one episode says about a dimension of the user or a task, recognised by rules: "reply in Chinese" is
    (preference, language, replies=Chinese)."""

    kind: Kind
    dimension: str
    facet: str
    value: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.kind, self.dimension, self.facet, self.value)


@dataclass
class EvidenceCluster:
    """Episodes that may support one semantic memory, as grouped by consolidation: an inducer decides whether
    they do and states it. `signal` is what the grouping recognised (None for a group found by meaning);
    `subject` names the tool, task or entity of a lesson's outcome sequence; `shared` holds the constituents a
    group found by meaning shares (its terms, "-term" for a negated one: "-emoji" is "no emojis"); `habit` says its
    episodes report things the user does again and again; `one_turn` marks one turn a write asked to extract: what
    it says once is enough, the guards do not apply."""

    kind: Kind
    episodes: list[Episode]
    signal: Signal | None = None
    subject: str | None = None
    key_phrase: str | None = None
    shared: tuple[str, ...] = ()
    habit: bool = False
    one_turn: bool = False

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.episodes]


class InducedMemory(BaseModel):
    """A semantic memory as an inducer states it from a cluster (before it is reconciled with what is held)."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind
    statement: str = Field(min_length=1, max_length=MAX_FACT_CHARS)
    dimension: str | None = Field(None, max_length=64)
    facets: dict[str, str] = Field(default_factory=dict)
    provenance: list[str] = Field(min_length=1, description="The episodes that support it (a subset of the cluster)")


@dataclass
class Induction:
    """What an inducer made of a batch of clusters: one result per cluster (None where the cluster supports no
    memory), the model tokens it spent, and the clusters it could not handle (left to the fallback)."""

    memories: list[InducedMemory | None]
    tokens: int = 0
    failed: dict[int, str] = field(default_factory=dict)


def lesson_dimension(subject: str) -> str:
    """The dimension of a lesson about a tool, task or entity: what every inducer names it, so that a model's lesson
    and the rules' on the same subject are recognised as one."""
    return f"tool:{subject.lower()}"[:64]
