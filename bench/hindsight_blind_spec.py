"""What the blind hindsight suite is made of, and how a held memory is matched against what a scenario expects.

A scenario is episodes in phases (consolidation runs after each phase) and `Want`s: the memories a correct system
holds afterwards. A want names the memory's kind and the concepts its statement must state, each concept an any-of
group of terms ("a|b|c", case-insensitive, matched inside the statement after NFKC normalisation, so "metric" finds
"metric units" and 素食 finds 素食者). A term written "re:<pattern>" is a regular expression; a "|" inside its
parentheses or brackets belongs to it. `forbid` terms make a statement that holds one another memory: the wrong
polarity ("prefers emoji" where the user said to stop), a third person's preference, the old value of a changed
habit.

A want's role says what must be true of it afterwards:
- `active`: an active memory states it (counted by recall, and by kind);
- `superseded`: a superseded memory states it, and no active one does (the old side of a changed habit);
- `optional`: an active memory may state it (right, not required: a colleague's preference held as theirs);
- `absent`: no active memory may state it (the harmful generalisation a negative scenario guards against).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Literal

from rearview.domain.memory import KINDS, Kind, OutcomeStatus

Role = Literal["active", "superseded", "optional", "absent"]
Category = Literal["preference", "fact", "lesson", "change", "negative"]
Label = Literal["confirms", "refines", "contradicts", "unrelated"]

# A term starting so is a regular expression rather than a piece of text.
REGEX_PREFIX = "re:"


@dataclass(frozen=True)
class Ep:
    """One episode as an agent logs it: `day` counts days after the suite's start (the fraction is the time of
    day, 0.5 = 12:00 UTC)."""

    text: str
    day: float
    session: str
    event_type: str | None = None
    entities: tuple[str, ...] = ()
    outcome: str | None = None
    outcome_status: OutcomeStatus | None = None


def u(text: str, day: float, session: str, event: str | None = "user_request") -> Ep:
    """What the user asked or said, as the agent logs it."""
    return Ep(text, day, session, event_type=event)


def a(text: str, day: float, session: str, event: str | None = "agent_action", outcome: str | None = None) -> Ep:
    """What the agent did or noticed."""
    return Ep(text, day, session, event_type=event, outcome=outcome)


def call(text: str, day: float, session: str, outcome: str, tool: str | None = None) -> Ep:
    """A tool call and what the tool answered, verbatim (no outcome_status: the service reads the outcome)."""
    return Ep(text, day, session, event_type="tool_call", entities=(tool,) if tool else (), outcome=outcome)


@dataclass(frozen=True)
class Want:
    """A memory a correct system holds (or must not hold) afterwards: see the module's docstring."""

    role: Role
    kind: Kind
    concepts: tuple[str, ...]
    forbid: tuple[str, ...] = ()
    # Other kinds a correct system may file it under (a diet is a fact or a preference).
    also: tuple[Kind, ...] = ()
    # Lessons: what finally worked, which "lessons that say what worked" look for besides the concepts.
    fix: tuple[str, ...] = ()

    @property
    def kinds(self) -> tuple[Kind, ...]:
        return (self.kind, *self.also)

    def label(self) -> str:
        extra = f" -({' '.join(self.forbid)})" if self.forbid else ""
        fix = f" fix[{' + '.join(self.fix)}]" if self.fix else ""
        return f"{self.role} {'/'.join(self.kinds)}: {' + '.join(self.concepts)}{extra}{fix}"


def held(kind: Kind, *concepts: str, forbid: tuple[str, ...] = (), also: tuple[Kind, ...] = (),
         fix: tuple[str, ...] = ()) -> Want:  # fmt: skip
    """A memory that must be active afterwards."""
    return Want("active", kind, concepts, forbid, also, fix)


# What names a failure whatever its error: "uploads to the drive failed 3 times; a chunked upload worked" says what
# failed without the error's own words, and is a right lesson.
FAILED = "fail|error|失败|错误|报错|出错"


def lesson(subject: str, failure: str, fix: tuple[str, ...] = ()) -> Want:
    """A lesson that must be active: about `subject`, naming the failure (its error, or that it failed), and where
    the failures ended in a success, what worked (`fix`)."""
    return held("lesson", subject, f"{failure}|{FAILED}", fix=fix)


def old(kind: Kind, *concepts: str, forbid: tuple[str, ...] = (), also: tuple[Kind, ...] = ()) -> Want:
    """A memory that must have been superseded (kept as history), with no active memory still stating it."""
    return Want("superseded", kind, concepts, forbid, also)


def maybe(kind: Kind, *concepts: str, forbid: tuple[str, ...] = (), also: tuple[Kind, ...] = ()) -> Want:
    """A memory a correct system may hold (not required, not wrong)."""
    return Want("optional", kind, concepts, forbid, also)


def never(*concepts: str, forbid: tuple[str, ...] = (), kinds: tuple[Kind, ...] = KINDS) -> Want:
    """A memory no active memory may state, of any of `kinds`."""
    return Want("absent", kinds[0], concepts, forbid, kinds[1:])


@dataclass(frozen=True)
class Scenario:
    id: str
    category: Category
    language: Literal["en", "zh"]
    phases: tuple[tuple[Ep, ...], ...]
    wants: tuple[Want, ...] = ()
    # What the scenario tests, in a line (shown by --verbose).
    about: str = ""

    @property
    def episodes(self) -> list[Ep]:
        return [e for phase in self.phases for e in phase]


@dataclass(frozen=True)
class ContradictionCase:
    """An active semantic memory written directly (`held`), then a later statement: another semantic memory
    written directly (a string) or episodes that consolidation induces from. `held_means` and `later_means` are
    what each says, to find them among the memories held afterwards whatever their wording."""

    id: str
    language: Literal["en", "zh"]
    label: Label
    held: str
    held_kind: Kind
    held_means: Want
    later: str | tuple[Ep, ...]
    later_kind: Kind
    later_means: Want
    about: str = ""


@dataclass
class Verdict:
    """Whether a statement states a want, and if not the first reason why."""

    ok: bool
    missing: list[str] = field(default_factory=list)
    reason: str = ""


def normalise(text: str) -> str:
    """Lower case, full-width forms folded (NFKC), whitespace collapsed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).lower().strip()


def has_term(term: str, text: str) -> bool:
    """`term` is in the normalised `text` (a regex term: matches it). A plain term keeps its edge spaces: "no "
    is the word, not the start of "not"."""
    if term.startswith(REGEX_PREFIX):
        return re.search(term[len(REGEX_PREFIX) :], text) is not None
    return unicodedata.normalize("NFKC", term).lower() in text


def terms(group: str) -> list[str]:
    """The terms of an any-of group: split at each "|" outside a regex's brackets and parentheses."""
    out, depth, start, escaped = [], 0, 0, False
    for i, char in enumerate(group):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "|" and depth == 0:
            out.append(group[start:i])
            start = i + 1
    return [*out, group[start:]]


def has_group(group: str, text: str) -> bool:
    return any(has_term(term, text) for term in terms(group))


def judge(want: Want, kind: str, statement: str) -> Verdict:
    """Does a memory of `kind` saying `statement` state `want`? Its kind must be one the want accepts, every
    concept group must be in it, and no forbidden term."""
    text = normalise(statement)
    missing = [group for group in want.concepts if not has_group(group, text)]
    if missing:
        return Verdict(False, missing, f"lacks {' + '.join(missing)}")
    forbidden = [term for group in want.forbid for term in terms(group) if has_term(term, text)]
    if forbidden:
        return Verdict(False, [], f"says {forbidden[0]!r} (forbidden: wrong polarity or subject)")
    if kind not in want.kinds:
        return Verdict(False, [], f"is a {kind}, expected {'/'.join(want.kinds)}")
    return Verdict(True)


def states(want: Want, kind: str, statement: str) -> bool:
    return judge(want, kind, statement).ok


def says_fix(want: Want, statement: str) -> bool:
    """A lesson's statement names what finally worked (every `fix` group)."""
    text = normalise(statement)
    return bool(want.fix) and all(has_group(group, text) for group in want.fix)
