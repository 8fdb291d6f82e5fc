"""Redacting one text, a label or a JSON value: the detectors' findings (credentials, personal numbers, keys split
by spaces) chosen where they overlap and replaced by `[REDACTED:<kind>]`."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import re2

from rearview.service.redaction.credentials import OUR_RULES, credential_findings
from rearview.service.redaction.normalise import normalise
from rearview.service.redaction.personal import personal_findings
from rearview.service.redaction.rules import Finding, Subject
from rearview.service.redaction.spaced import SplitRules, spaced_findings

_MARKER = re2.compile(r"\[REDACTED:[a-z0-9_]+\]")
_SPLIT_RULES = SplitRules(OUR_RULES)


@dataclass(frozen=True)
class Redaction:
    """The text with secrets replaced by `[REDACTED:<kind>]`, and the kinds found (in the order they appear)."""

    text: str
    kinds: tuple[str, ...]


def _chosen(findings: Iterable[Finding], markers: Iterable[tuple[int, int]], length: int) -> list[Finding]:
    """The findings that overlap neither a marker already in the text nor an earlier finding. A byte per character
    says what is taken, so each finding costs its own length (no comparison with every finding kept before)."""
    taken = bytearray(length)
    for start, end in markers:
        taken[start:end] = b"\x01" * (end - start)
    kept: list[Finding] = []
    for finding in findings:
        if taken.find(1, finding.start, finding.end) != -1:
            continue
        kept.append(finding)
        taken[finding.start : finding.end] = b"\x01" * (finding.end - finding.start)
    return kept


def find_secrets(text: str, screened: bool = True) -> list[Finding]:
    """The spans of `text` (original indices) to redact, in order, without overlaps. `screened=False` runs every
    pattern rule instead of only those the text could match (`screen`): the same findings, the reference for tests
    and benchmarks."""
    norm = normalise(text)
    markers = [m.span() for m in _MARKER.finditer(norm.text)]
    subject = Subject(norm.text)
    found = [
        *credential_findings(subject, screened),
        *personal_findings(subject, screened),
        *spaced_findings(norm.text, _SPLIT_RULES),
    ]
    chosen = _chosen(found, markers, len(norm.text))
    spans = [Finding(*norm.original_span(f.start, f.end), f.kind) for f in chosen]
    return sorted(spans, key=lambda f: f.start)


def redact_text(text: str) -> Redaction:
    """`text` with every secret and personal number found replaced by `[REDACTED:<kind>]`; labels around a secret
    ("Bearer ", "password=") stay. Idempotent: a marker is never redacted again."""
    if not text:
        return Redaction(text, ())
    findings = find_secrets(text)
    if not findings:
        return Redaction(text, ())
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts.append(text[position : finding.start])
        parts.append(f"[REDACTED:{finding.kind}]")
        position = finding.end
    parts.append(text[position:])
    return Redaction("".join(parts), tuple(dict.fromkeys(f.kind for f in findings)))


def redact_labels(values: Iterable[str]) -> tuple[list[str], tuple[str, ...]]:
    """Each label (tag, entity) redacted, and the kinds found in any."""
    redacted = [redact_label(value) for value in values]
    return [r.text for r in redacted], tuple(dict.fromkeys(k for r in redacted for k in r.kinds))


# Labels repeat (the same speakers and tags on write after write) and their redaction depends on the text alone, so
# the most recent short labels found clean are remembered: checking a speaker's name cost ~90 us on a loaded machine,
# a quarter of the redaction of a write of bench/write_rate.py (issue 22). Only clean labels: a label holding a secret
# is redacted afresh each time, so no secret outlives the write that carried it. At most 4,096 labels of 128
# characters; the oldest remembered goes first.
_CACHED_LABEL_CHARS = 128
_CLEAN_LABELS_KEPT = 4096
_clean_labels: dict[str, None] = {}
_clean_labels_lock = threading.Lock()


def redact_label(value: str) -> Redaction:
    """`redact_text` of `value`; a short one found clean is remembered (tags, entities and keys repeat)."""
    if value in _clean_labels:
        return Redaction(value, ())
    if len(value) > _CACHED_LABEL_CHARS:
        return redact_text(value)
    redaction = redact_text(value)
    if not redaction.kinds and redaction.text == value:
        with _clean_labels_lock:  # writes from many threads: the oldest is taken while none is added
            if len(_clean_labels) >= _CLEAN_LABELS_KEPT:
                del _clean_labels[next(iter(_clean_labels))]
            _clean_labels[value] = None
    return redaction


def redact_json(value: Any) -> tuple[Any, tuple[str, ...]]:
    """A JSON value (working memory) with every string in it, keys included, redacted; and the kinds found."""
    kinds: list[str] = []

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            result = redact_text(item)
            kinds.extend(result.kinds)
            return result.text
        if isinstance(item, dict):
            return {walk(k): walk(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    # Depth is bounded before a value gets here (rearview.domain.json_input), so recursion is safe.
    return walk(value), tuple(dict.fromkeys(kinds))


__all__ = ["Finding", "Redaction", "find_secrets", "redact_json", "redact_label", "redact_labels", "redact_text"]
