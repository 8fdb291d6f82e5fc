"""Lessons from outcomes: the failures of one tool, task or entity, and what worked after them.

An outcome sequence (a subject's episodes in time order, each a failure or a success) yields a *fix* when at least
`lesson_min_failures` failures come before a success ("the geocoding API rejects batches of 100 or more with 413;
batches of 50 succeed"), and a *recurring failure* when `recurring_failure_min` failures come in a row with a
shared error ("deploys to prod keep failing with 'permission denied'"). The statement names the error the failures
share and what the success did differently: a number that changed (with its unit), or the words it added.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rearview.domain.memory import Episode
from rearview.service.hindsight.outcomes import failure_shaped
from rearview.service.hindsight.phrases import shared_phrase, tidy_phrase
from rearview.service.hindsight.wording import normalise
from rearview.text_analysis import STOP_WORDS, is_chinese

_STATUS_CODE = re.compile(r"\b[1-5]\d\d\b")
# A number with the word after it: "200 addresses", "10 req/s", "batch size 50" (the word before then).
_QUANTITY = re.compile(
    r"(?:(?P<lead>[A-Za-z\u4e00-\u9fff][A-Za-z\u4e00-\u9fff_-]*(?:\s+(?:size|of|limit|count))?)\s*(?:=|:|of|为)?\s*)?"
    r"(?<![A-Za-z/])(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z%/][\w/%-]*|个[\u4e00-\u9fff]{1,3}|[\u4e00-\u9fff]{1,2})?"
)
_ERROR_WORDS = re.compile(
    r"(?:[A-Z_]{4,}(?:_[A-Z]+)*|timed? ?out|timeout|rate[- ]limit\w*|permission denied|access denied|"
    r"not found|too large|too many requests|out of memory|connection (?:refused|reset)|certificate\w*|ssl\w*|"
    r"超时|权限不足|没有权限|拒绝访问|限流|内存不足|找不到|太大)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Pattern:
    """One fix or recurring failure found in a subject's outcome sequence."""

    subject: str
    failures: list[Episode]
    success: Episode | None

    @property
    def episodes(self) -> list[Episode]:
        return [*self.failures, *([self.success] if self.success else [])]


def outcome_patterns(
    subject: str, sequence: Sequence[Episode], *, min_failures: int, recurring_min: int
) -> list[Pattern]:
    """Fixes (failures then a success) and a trailing run of failures, oldest first."""
    patterns: list[Pattern] = []
    failures: list[Episode] = []
    for episode in sorted(sequence, key=lambda e: (e.occurred_at, e.id)):
        status = episode.outcome_status
        if status == "failure":
            failures.extend([episode])
        elif status == "success":
            if _failure_count(failures) >= min_failures:
                patterns.append(Pattern(subject, failures, episode))
            failures = []
    if _failure_count(failures) >= recurring_min and error_signature(failures) is not None:
        patterns.append(Pattern(subject, failures, None))
    return patterns


def _failure_count(failures: Sequence[Episode]) -> int:
    """Failures counted with their merged repeats (one episode said three times failed three times)."""
    return sum(max(1, e.confirmations) for e in failures)


def _outcome_text(episode: Episode) -> str:
    return normalise(episode.outcome or "")


_FAILURE_LEAD = re.compile(r"^(?:(?:error|failed|failure|fail|失败|错误|报错)\s*[,，:：-]?\s*)+", re.IGNORECASE)


def error_signature(failures: Sequence[Episode]) -> str | None:
    """What the failures share, without a leading "error:" or "失败，" (a lesson says it failed already); when
    that is all they share, their common error words."""
    signature = _shared_error(failures)
    if signature is None:
        return None
    stripped = _FAILURE_LEAD.sub("", signature).strip(" ,，:：;；")
    return stripped or _common_error_words(failures) or signature


def _shared_error(failures: Sequence[Episode]) -> str | None:
    """Their common status code with its words, the longest phrase most of their outcome texts share, or their
    common error words."""
    outcomes = [_outcome_text(e) or normalise(e.content) for e in failures]
    codes = [set(_STATUS_CODE.findall(text)) for text in outcomes]
    common_codes = set.intersection(*codes) if codes else set()
    phrase = shared_phrase(outcomes, min_terms=1, min_share=0.6) if len(outcomes) > 1 else tidy_phrase(outcomes[0])
    if common_codes:
        code = sorted(common_codes)[0]
        if phrase and code in phrase:
            return phrase
        return code
    if phrase:
        return phrase
    return _common_error_words(failures)


def _common_error_words(failures: Sequence[Episode]) -> str | None:
    words = [{m.lower() for m in _ERROR_WORDS.findall(_outcome_text(e) or e.content)} for e in failures]
    shared = set.intersection(*words) if words else set()
    return sorted(shared, key=len, reverse=True)[0] if shared else None


@dataclass(frozen=True)
class Change:
    """What the success did differently from the failures: a quantity, or words it added."""

    failed: str | None
    worked: str


def what_changed(failures: Sequence[Episode], success: Episode) -> Change | None:
    """The quantity that differs between the failures and the success ("batches of 200, 150, 100" -> "50"), else
    the words the success added to the last failure's description."""
    quantities = _changed_quantity(failures, success)
    if quantities is not None:
        return quantities
    failed_words = [set(_words(f.content)) for f in failures]
    added = _run_of_new_words(_words(success.content), set.union(*failed_words))
    if not added:
        return None
    success_words = set(_words(success.content))
    # What the failures did that the success dropped, if most of them did it.
    dropped = [_run_of_new_words(_words(f.content), success_words) for f in failures]
    common = max(set(dropped), key=dropped.count) if dropped else None
    failed = common if common and dropped.count(common) * 5 >= len(dropped) * 3 else None
    return Change(failed=failed, worked=added)


def _words(text: str) -> list[str]:
    """Whitespace words, with trailing punctuation off (CJK text: its characters' runs between punctuation)."""
    text = normalise(text)
    if is_chinese(text):
        return [w for w in re.split(r"[，。；：、,;:!?！？\s]+", text) if w]
    return [w.rstrip(",.;:!?") for w in text.split() if w.rstrip(",.;:!?")]


def _run_of_new_words(words: list[str], known: set[str]) -> str | None:
    """The run of consecutive words not in `known` (case-insensitive) with the most characters, joined as written
    (a path or flag says more than a verb: "换成 GET /api/v2/stock" -> the path)."""
    lowered = {w.lower() for w in known}
    best: list[str] = []
    run: list[str] = []
    for word in [*words, ""]:
        # A known stop word ("the", "in") does not end a run: "an API token in the Authorization header".
        if word and (word.lower() not in lowered or (run and word.lower() in STOP_WORDS)):
            run.append(word)
            continue
        while run and run[-1].lower() in STOP_WORDS:
            run.pop()
        if sum(map(len, run)) > sum(map(len, best)):
            best = run
        run = []
    joiner = "" if best and is_chinese(best[0]) else " "
    return joiner.join(best) or None


def _quantities(text: str) -> dict[str, list[float]]:
    """Numbers in the text by the word that names them (the unit after, else the word before)."""
    found: dict[str, list[float]] = {}
    for m in _QUANTITY.finditer(normalise(text)):
        unit, lead = (m.group("unit") or "").lower(), (m.group("lead") or "").lower().strip()
        if not unit and lead in ("http", "status", "code", "error", "returned", "got"):
            continue  # a status code, not a quantity
        name = unit or lead
        if not name:
            continue
        found.setdefault(name, []).append(float(m.group("n")))
    return found


def _changed_quantity(failures: Sequence[Episode], success: Episode) -> Change | None:
    worked = _quantities(success.content)
    failed_each = [_quantities(f.content) for f in failures]
    for name, values in worked.items():
        if not all(name in each for each in failed_each):
            continue
        failed_values = sorted({v for each in failed_each for v in each[name]})
        if set(values) & set(failed_values):
            continue
        chinese = is_chinese(success.content)
        return Change(
            failed=_failed_range(failed_values, values[0], name, chinese), worked=_amount(values[0], name, chinese)
        )
    return None


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _amount(value: float, unit: str, chinese: bool) -> str:
    return f"{_number(value)}{unit}" if chinese else f"{_number(value)} {unit}"


def _failed_range(failed: list[float], worked: float, unit: str, chinese: bool) -> str:
    """ "100 or more addresses" when every failure was above what worked, "20 or fewer" when below, else the list."""
    low, high = failed[0], failed[-1]
    if len(failed) > 1 and low > worked:
        return f"{_number(low)}{unit}及以上" if chinese else f"{_number(low)} or more {unit}"
    if len(failed) > 1 and high < worked:
        return f"{_number(high)}{unit}及以下" if chinese else f"{_number(high)} or fewer {unit}"
    joined = ("、" if chinese else ", ").join(_number(v) for v in failed)
    return f"{joined}{unit}" if chinese else f"{joined} {unit}"


def read_in_sequence(pool: Sequence[Episode]) -> list[Episode]:
    """The pool with each outcome no word settled (unknown) read from its subject's sequence: after failures of
    its subject, an outcome that has neither a failure's shape nor the error the failures share is what finally
    worked ("parsed 4,812 rows" after two ValueErrors). Other episodes are returned as they are."""
    by_subject: dict[str, list[Episode]] = {}
    for episode in pool:
        subject = subject_of(episode)
        if subject is not None and episode.outcome:
            by_subject.setdefault(subject.lower(), []).append(episode)
    read: dict[str, Episode] = {}
    for sequence in by_subject.values():
        failures: list[Episode] = []
        for episode in sorted(sequence, key=lambda e: (e.occurred_at, e.id)):
            status = episode.outcome_status
            if status == "failure":
                failures.append(episode)
                continue
            if status == "unknown" and failures and _unlike_failures(episode, failures):
                read[episode.id] = episode.model_copy(update={"outcome_status": "success"})
            failures = []
    return [read.get(e.id, e) for e in pool]


def _unlike_failures(episode: Episode, failures: Sequence[Episode]) -> bool:
    text = _outcome_text(episode)
    if failure_shaped(text):
        return False
    shared = error_signature(failures) if len(failures) > 1 else None
    return not (shared and shared.lower() in text.lower())


def subject_of(episode: Episode) -> str | None:
    """What an outcome is about: its first entity, else its event type."""
    if episode.entities:
        return episode.entities[0].strip()
    if episode.event_type:
        return episode.event_type.strip()
    return None
