"""Redaction: secrets and personal numbers replaced by `[REDACTED:<kind>]` before anything is stored, queued,
logged or embedded, in every text a caller gives (`rearview.service.redaction.requests` walks a request's fields;
working-memory keys and values, feedback corrections and key descriptions take the same path).

Detection reads the text normalised (`normalise`: NFKC, invisible characters removed, Latin look-alikes read as
Latin) and replaces the matching characters of the original. The detectors, first finding kept where spans overlap:
1. credentials (`credentials`): our rules, then detect-secrets' maintained vendor patterns, then long
   high-entropy tokens;
2. personal numbers (`personal`): payment cards, IBANs and national ids, each validated by its checksum
   (python-stdnum);
3. vendor keys split by spaces (`spaced`).
Every rule runs on RE2 (`rules`), so redaction takes time linear in the text whatever it holds. A screen (`screen`)
skips the rules whose declared keywords a text lacks; the findings are those of running every rule
(`find_secrets(text, screened=False)`, the reference its test compares with). `bench/redaction.py` measures recall
on a labelled corpus and false positives on LoCoMo's turns; `bench/redaction_timing.py` times every rule on
adversarial input.
"""

from __future__ import annotations

from rearview.service.redaction.requests import check_verbatim, redact_given_text, redact_request
from rearview.service.redaction.rules import Finding
from rearview.service.redaction.text import (
    Redaction,
    find_secrets,
    redact_json,
    redact_label,
    redact_labels,
    redact_text,
)

__all__ = [
    "Finding",
    "Redaction",
    "check_verbatim",
    "find_secrets",
    "redact_given_text",
    "redact_json",
    "redact_label",
    "redact_labels",
    "redact_request",
    "redact_text",
]
