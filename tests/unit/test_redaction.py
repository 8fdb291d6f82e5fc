"""Redaction (rearview.service.redaction): what the issue found passing through, each field of a write, the queue
of the AWS write path, and the mechanics (normalisation map, markers, idempotence)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.write import MemoryWrite, queued_write_body
from rearview.service.redaction import find_secrets, redact_json, redact_labels, redact_text
from rearview.service.redaction import text as redaction
from rearview.service.redaction.normalise import normalise
from rearview.service.write import redact_write
from support.write_queue import RecordingQueue, queued_services

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("card 4111 1111 1111 1111 exp 04/29", "4111 1111 1111 1111", "payment_card"),
        ("amex 3782-822463-10005", "3782-822463-10005", "payment_card"),
        ("ssn 536-90-4399 on file", "536-90-4399", "us_ssn"),
        ("NI number AB 12 34 56 C", "AB 12 34 56 C", "uk_nino"),
        ("身份证号 11010519491231002X 订票", "11010519491231002X", "cn_resident_id"),
        ("IBAN DE89 3704 0044 0532 0130 00 please", "DE89 3704 0044 0532 0130 00", "iban"),
        ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_key"),
        ("npm npm_Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789", "npm_Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789", "npm_token"),
        ("twilio SK0123456789abcdef0123456789abcdef", "SK0123456789abcdef0123456789abcdef", "twilio_key"),
        ("my password is Tr0ub4dor&3 ok", "Tr0ub4dor&3", "password"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyzabcdef", "abcdefghijklmnopqrstuvwxyzabcdef", "bearer_token"),
        (
            "the key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY here",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "high_entropy_secret",
        ),  # fmt: skip
        ("postgres://app:p@ss@w0rd@db.internal:5432/main", "p@ss@w0rd", "url_password"),
        ("密码是 Abc12345", "Abc12345", "password"),
    ],
)
def test_what_the_issue_found_passing_through_is_redacted(text: str, secret: str, kind: str) -> None:
    result = redact_text(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text, result


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("key AKIA\u200bIOSFODNN7\u200dEXAMPLE end", "IOSFODNN7"),
        ("支付 ｓｋ＿ｌｉｖｅ＿４ｅＣ３９ＨｑＬｙｊＷＤａｒｊｔＴ１ｚｄｐ７ｄｃ 保存", "４ｅＣ３９"),
        ("card 4111\u00a01111\u00a01111\u00a01111 ok", "1111\u00a01111"),
    ],
)
def test_secrets_split_or_written_in_full_width_are_found(text: str, hidden: str) -> None:
    result = redact_text(text)
    assert hidden not in result.text and "[REDACTED:" in result.text
    assert result.text.startswith(text.split()[0]) and result.text.endswith(text.split()[-1])


# Issue 40: what a red-team pass found passing through, each form once (bench/redaction_corpus.py holds six of each).
@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("the key is AKIA IOSF ODNN 7EXA MPLE (typed from the screen)", "IOSF ODNN 7EXA"),
        ("paste sk_live_4eC3 9HqLyj WDarjt T1zdp7dc into the config", "9HqLyj WDarjt"),
        ("please use \u0410\u041aIAIOSFODNN7EXAMPLE for the integration", "IOSFODNN7EXAMPLE"),
        ("stored \u0455k_liv\u0435_4eC39HqLyjWDarjtT1zdp7dc in the vault", "4eC39HqLyjWDarjt"),
        ("charge it to my card 4111.1111.1111.1111, expiry 04/29", "4111.1111"),
        ("the password for the router is Hunter2!x", "Hunter2!x"),
        ("my password for gmail is Tr0ub4dor&3.", "Tr0ub4dor&3"),
        ("110105 19491231 002X is on the form", "19491231 002X"),
        ("the value was dGhpc2lzYXNlY3JldA== in the header", "dGhpc2lzYXNlY3JldA=="),
        ("my token is c2VjcmV0MTIz", "c2VjcmV0MTIz"),
    ],
)
def test_the_forms_issue_40_found_missed_are_redacted(text: str, hidden: str) -> None:
    result = redact_text(text)
    assert hidden not in result.text and "[REDACTED:" in result.text, result


@pytest.mark.parametrize(
    "text",
    [
        "the password is expired",
        "The password is expired!",
        "my password was changed yesterday.",
        "the PIN is required at the door",
        "I noticed a spiderman pin on your purse. Is Spider-Man your favorite superhero?",
        "version 1.2.3.4 of the app shipped",
    ],
)
def test_plain_sentences_about_passwords_stay(text: str) -> None:
    assert redact_text(text).text == text


def test_normalisation_maps_every_character_back() -> None:
    norm = normalise("a\u200bｂc")
    assert norm.text == "abc"
    assert norm.original_span(1, 3) == (2, 4)


def test_invalid_checksums_and_ordinary_numbers_stay() -> None:
    for text in ("order 4111 1111 1111 1112", "call 13800138000", "身份证号 110105194912310021", "SSN 000-12-3456"):
        assert redact_text(text).text == text, text


def test_every_text_field_of_a_write_is_redacted() -> None:
    item = MemoryWrite(
        content="rotated sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        outcome="used ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        event_type="npm_Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789",
        tags=["AKIAIOSFODNN7EXAMPLE"],
        entities=["4111 1111 1111 1111"],
    )
    redacted, kinds = redact_write(item)
    dumped = redacted.model_dump_json()
    for secret in ("4eC39Hq", "ghp_abc", "npm_Ab3", "AKIAIOSF", "4111 1111"):
        assert secret not in dumped
    assert set(kinds) >= {"stripe_key", "github_token", "npm_token", "aws_access_key", "payment_card"}


def test_labels_are_redacted_as_texts_are_the_second_time_too() -> None:
    """Labels' redactions are kept (`redact_labels`): each label given again, short or long, with a secret or not,
    gets what `redact_text` gives it."""
    labels = [
        "Caroline",
        "AKIAIOSFODNN7EXAMPLE",
        "card 4111 1111 1111 1111",
        "ops",
        "Caroline",
        "x" * 200 + " ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "",
    ]
    expected = [redact_text(label) for label in labels]
    kinds = tuple(dict.fromkeys(k for r in expected for k in r.kinds))
    for _ in range(2):
        assert redact_labels(labels) == ([r.text for r in expected], kinds)
    assert kinds == ("aws_access_key", "payment_card", "github_token")
    # Only clean labels are remembered: no secret outlives its write in the process's memory.
    assert "Caroline" in redaction._clean_labels
    # (Another test may have remembered a clean label holding "4111" alone: the cache is the process's.)
    assert not [
        label for label, r in zip(labels, expected, strict=True) if r.kinds and label in redaction._clean_labels
    ]


def test_working_values_are_redacted_keys_included() -> None:
    value, kinds = redact_json({"AKIAIOSFODNN7EXAMPLE": ["my password is hunter22", 3, None]})
    assert value == {"[REDACTED:aws_access_key]": ["my password is [REDACTED:password]", 3, None]}
    assert kinds == ("aws_access_key", "password")


@given(st.text(max_size=200))
@settings(deadline=None, max_examples=150)
def test_findings_never_overlap_and_redaction_is_idempotent(text: str) -> None:
    findings = find_secrets(text)
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:], strict=False))
    once = redact_text(text)
    assert redact_text(once.text).text == once.text


@pytest.fixture
def queued(tmp_path: Path, clock: ManualClock) -> Iterator[tuple[Services, RecordingQueue]]:
    with queued_services(tmp_path / "data", clock) as built:
        yield built


def test_the_queue_and_its_dead_letters_never_see_a_raw_secret(
    queued: tuple[Services, RecordingQueue], clock: ManualClock
) -> None:
    services, queue = queued
    results = services.writer.submit(
        "acme", [MemoryWrite(content="Deploy key is sk_live_4eC39HqLyjWDarjtT1zdp7dc", tags=["AKIAIOSFODNN7EXAMPLE"])]
    )
    assert results[0].status == "accepted" and results[0].redacted
    body = queued_write_body(*queue.sent[0], clock.now())
    assert "4eC39Hq" not in body and "AKIAIOSF" not in body and "[REDACTED:stripe_key]" in body
