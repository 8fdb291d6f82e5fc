"""Content checks, secret redaction and the importance score applied on every write."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rearview.domain.limits import MAX_EPISODE_CHARS, MAX_FACT_CHARS
from rearview.errors import InvalidInput, MemoryTooLarge
from rearview.service.content_rules import (
    _FORBIDDEN_CONTROL,
    ENTITIES_WEIGHT,
    SEMANTIC_WEIGHT,
    Redaction,
    check_content,
    code_dump_lines,
    is_small_talk,
    looks_like_json_dump,
    redact_secrets,
    score_importance,
)
from rearview.settings import WriteTuning

pytestmark = pytest.mark.unit


def _rejection(content: str, layer: str = "episodic", field: str = "content") -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        check_content(content, layer, field=field)  # type: ignore[arg-type]
    return info.value


def _prose(length: int) -> str:
    """Ordinary prose of exactly `length` characters."""
    text = ("We walked along the river and talked about the summer. " * (length // 20 + 1))[:length]
    return text[:-1] + "." if text.endswith(" ") else text


# --- length -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("layer", "limit"), [("episodic", MAX_EPISODE_CHARS), ("semantic", MAX_FACT_CHARS)])
def test_content_at_the_limit_is_accepted(layer: str, limit: int) -> None:
    check_content(_prose(limit), layer)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("layer", "limit", "article"),
    [("episodic", MAX_EPISODE_CHARS, "an"), ("semantic", MAX_FACT_CHARS, "a")],
)
@pytest.mark.parametrize("over", [1, 112])
def test_content_over_the_limit_is_too_large(layer: str, limit: int, article: str, over: int) -> None:
    error = _rejection(_prose(limit + over), layer)
    assert type(error) is MemoryTooLarge
    assert error.field == "content"
    assert error.message == (
        f"content: must be at most {limit} characters for {article} {layer} memory (got {limit + over})"
    )


def test_semantic_limit_is_stricter_than_episodic() -> None:
    text = _prose(MAX_FACT_CHARS + 100)
    check_content(text, "episodic")
    assert isinstance(_rejection(text, "semantic"), MemoryTooLarge)


# --- empty and control characters ---------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", " ", "\n", "\t \n  "])
def test_empty_content_is_rejected(content: str) -> None:
    error = _rejection(content)
    assert type(error) is InvalidInput
    assert error.message == "content: must not be empty"


@pytest.mark.parametrize(
    ("content", "code", "position"),
    [
        ("ring\x07 the bell", "U+0007", 4),
        ("\x00null first", "U+0000", 0),
        ("escape \x1b[31m red", "U+001B", 7),
        ("delete\x7f", "U+007F", 6),
        ("next line \x85 C1", "U+0085", 10),
    ],
)
def test_control_characters_are_rejected_with_code_and_position(content: str, code: str, position: int) -> None:
    error = _rejection(content)
    assert error.message == (
        f"content: contains control character {code} at position {position} "
        "(only tab, newline and carriage return are allowed)"
    )


def test_every_control_character_but_tab_newline_and_return_is_rejected() -> None:
    # The check is one character class: every code point of Unicode's category Cc but the three allowed is in it,
    # and nothing else is.
    rejected = {code for code in range(sys.maxunicode + 1) if _FORBIDDEN_CONTROL.search(chr(code))}
    controls = {code for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) == "Cc"}

    assert rejected == controls - {ord(ch) for ch in "\t\n\r"}


def test_tab_newline_and_windows_line_endings_are_allowed() -> None:
    check_content("Monday:\tgym\nTuesday:\tswim", "episodic")
    check_content("Monday: gym\r\nTuesday: swim", "episodic")


def test_unicode_text_and_emoji_are_allowed() -> None:
    check_content("我今天去了北京 🎉 — café naïve «quoted»", "episodic")


# --- JSON dumps ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        '{"name": "Caroline", "age": 34, "city": "Boston"}',
        "[1, 2, 3]",
        '{"a": {"b": 1, "c": 2}}',  # three keys counting the nested ones
        '  [{"id": 1}, {"id": 2}, {"id": 3}]  ',
        json.dumps({"note": "x" * 220}),  # one key, but over 200 characters
        json.dumps([["a" * 250]]),
        'Response: {"status": "ok", "items": [1, 2], "count": 2}',
        json.dumps({"user": {"name": "Ann", "prefs": {"diet": "vegan"}}, "ts": 1}, indent=2),
    ],
)
def test_json_dumps_are_rejected(content: str) -> None:
    error = _rejection(content)
    assert error.message == "content: looks like a raw JSON document; store the fact it states, not the dump"
    assert looks_like_json_dump(content)


@pytest.mark.parametrize(
    "content",
    [
        "Use {name} as a placeholder in the greeting template",
        "She said {hello} and [goodbye] in the same breath",
        '{"diet": "vegan"}',
        "[1, 2]",
        '{"a": {"b": 1}}',
        '"just a quoted sentence that happens to be valid JSON"',
        "42",
        "The config had {timeout: 30} set, which is why the job died after half a minute",
        'We changed the flag to {"beta": true} for Caroline\'s account after the call on Monday',
    ],
)
def test_text_with_braces_or_small_json_is_accepted(content: str) -> None:
    check_content(content, "episodic")
    assert not looks_like_json_dump(content)


@pytest.mark.parametrize("content", ["[" * 500 + "]" * 500, "[" * 999 + "]" * 999, "[" * 1900])
def test_bracket_towers_deeper_than_the_parser_are_rejected_without_crashing(content: str) -> None:
    assert "raw JSON document" in _rejection(content).message


def test_a_few_unbalanced_brackets_are_not_json() -> None:
    check_content("[[[ draft ]] see the notes", "episodic")


def test_the_depth_limit_is_the_rules_not_the_parsers() -> None:
    # Python 3.11's parser gives up near 1000 levels and 3.13's goes deeper: the rule must not depend on which.
    # Unclosed, so no parser takes it for JSON on any version: only the depth decides.
    assert looks_like_json_dump("[" * 65) and looks_like_json_dump("{" * 65)
    assert not looks_like_json_dump("[" * 64)
    # Brackets inside a quoted string do not nest.
    check_content('The log line read "' + "[" * 100 + '" before the crash', "episodic")


# --- code dumps ---------------------------------------------------------------------------------------------

_PYTHON = """import os
from pathlib import Path

def load(path):
    with open(path) as f:
        return f.read();
class Loader(object):
    pass"""

_JS = """const fs = require('fs');
function main() {
  let x = 1;
  console.log(x);
}"""

_C = """#include <stdio.h>
int main(void) {
    printf("hi\\n");
    return 0;
}"""

_SHELL = """$ cd /srv/app
$ git pull
$ make build
$ ./run.sh"""


@pytest.mark.parametrize(("content", "code_lines"), [(_PYTHON, 5), (_JS, 5), (_C, 5), (_SHELL, 4)])
def test_code_dumps_are_rejected_with_line_count(content: str, code_lines: int) -> None:
    error = _rejection(content)
    assert error.message == (
        f"content: looks like a code dump ({code_lines} lines of code); store what happened, not the code"
    )
    assert code_dump_lines(content) == code_lines


@pytest.mark.parametrize(
    "content",
    [
        "I ran pip install requests and the import error went away",
        "Fixed the bug with `x = y + 1;` in the parser",
        # Fewer lines than the minimum: a snippet quoted in a note is fine.
        "def f(x):\n    return x;\nprint(f(1));",
        "Shopping list:\n- milk\n- eggs\n- bread\n- apples",
        "Meeting notes:\nAlice drafts the plan.\nBob reviews it on Friday.\nWe ship in May.\nBudget: $5k.",
        "Trip plan\nDay 1: Paris (Louvre)\nDay 2: Lyon\nDay 3: Nice, then fly home",
    ],
)
def test_prose_mentioning_code_is_accepted(content: str) -> None:
    check_content(content, "episodic")
    assert code_dump_lines(content) == 0


# --- field names and layers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "layer"),
    [
        ("", "episodic"),
        ("x" * (MAX_FACT_CHARS + 1), "semantic"),
        ("bell\x07", "episodic"),
        ('{"a": 1, "b": 2, "c": 3}', "semantic"),
        (_PYTHON, "episodic"),
    ],
)
def test_every_message_names_the_callers_field(content: str, layer: str) -> None:
    error = _rejection(content, layer, field="items[3].content")
    assert error.field == "items[3].content"
    assert error.message.startswith("items[3].content: ")
    assert error.to_dict()["field"] == "items[3].content"


def test_unknown_layer_is_rejected() -> None:
    error = _rejection("a fine sentence", "working")
    assert error.field == "layer"


# --- redaction ----------------------------------------------------------------------------------------------

_PEM = """-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun
VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK
-----END RSA PRIVATE KEY-----"""
_JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("deploy key AKIAIOSFODNN7EXAMPLE for prod", "AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
        ("temp creds ASIAY34FZKBOKMUTVV7A expire soon", "ASIAY34FZKBOKMUTVV7A", "aws_access_key"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_key",
        ),
        (
            'AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_key",
        ),
        ("Authorization: Bearer 4f9a8b7c6d5e4f3a2b1c0d9e", "4f9a8b7c6d5e4f3a2b1c0d9e", "bearer_token"),
        ("curl -H 'authorization: bearer abc.def-ghi_jkl~mnop'", "abc.def-ghi_jkl~mnop", "bearer_token"),
        (
            "my key is sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "anthropic_api_key",
        ),
        (
            "OPENAI key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12",
            "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12",
            "openai_api_key",
        ),
        (
            "old key sk-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
            "sk-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
            "openai_api_key",
        ),
        (
            "token ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "github_token",
        ),
        (
            "oauth gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "github_token",
        ),
        (
            "pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
            "github_token",
        ),
        ("slack xoxb-1234567890-0987654321-AbCdEfGh", "xoxb-1234567890-0987654321-AbCdEfGh", "slack_token"),
        ("user token xoxp-1234567890-abcdefghij", "xoxp-1234567890-abcdefghij", "slack_token"),
        (
            "maps AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "google_api_key",
        ),
        ("gitlab glpat-AbCdEfGhIj0123456789", "glpat-AbCdEfGhIj0123456789", "gitlab_token"),
        ("our key rv_k1a2b3_Zx9yW8vU7tS6rQ5pO4nM", "rv_k1a2b3_Zx9yW8vU7tS6rQ5pO4nM", "rearview_api_key"),
        (f"session cookie {_JWT} expired", _JWT, "jwt"),
        (
            f"here it is:\n{_PEM}\nkeep it safe",
            "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
            "private_key",
        ),
        (
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
            "private_key",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXktdjE",
            "private_key",
        ),
        ("db password=hunter2 on staging", "hunter2", "password"),
        ('login with password: "correct horse battery"', "correct horse battery", "password"),
        ("DB_PASSWORD=s3cr3t!x", "s3cr3t!x", "password"),
        ('{"user": "ann", "password": "pa55"}', "pa55", "password"),
        ("postgres://app:Tr0ub4dor@db.internal:5432/main", "Tr0ub4dor", "url_password"),
        ("api_key = 9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706", "api_key"),
    ],
)
def test_each_secret_kind_is_redacted(text: str, secret: str, kind: str) -> None:
    result = redact_secrets(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert result.kinds == (kind,)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Authorization: Bearer 4f9a8b7c6d5e4f3a2b1c0d9e", "Authorization: Bearer [REDACTED:bearer_token]"),
        ("db password=hunter2 on staging", "db password=[REDACTED:password] on staging"),
        ("https://ann:pw1234@host/x", "https://ann:[REDACTED:url_password]@host/x"),
    ],
)
def test_labels_around_a_secret_are_kept(text: str, kept: str) -> None:
    assert redact_secrets(text).text == kept


def test_several_kinds_are_reported_once_each_in_order() -> None:
    text = "key AKIAIOSFODNN7EXAMPLE, password=abc, other key AKIAI44QH8DHBEXAMPLE, password=def"
    result = redact_secrets(text)
    assert result.kinds == ("aws_access_key", "password")
    assert result.text.count("[REDACTED:aws_access_key]") == 2
    assert result.text.count("[REDACTED:password]") == 2


@pytest.mark.parametrize(
    "text",
    [
        "Caroline went to the LGBTQ support group on May 7 and felt accepted.",
        "The bearer of bad news arrived yesterday with a very long explanation",
        "Memory 01ARZ3NDEKTSV4RRFFQ69G5FAV was merged into 01HGW2N8Z4Q6V8X5T3R1P0M9KJ",
        "Fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b on main",
        "See https://example.com:8080/docs?page=2&lang=en#setup for details",
        "Email ann@example.com about the invoice 550e8400-e29b-41d4-a716-446655440000",
        "I reset my password yesterday and chose a passphrase from a book",
        "We asked about the API key rotation policy and the secret santa budget",
        "The task-force met; risk-assessment first, then the sk-ant workshop",
        "我把密码改了，下次再告诉你",
        "Call me at +1 555 0100 after 6pm",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact_secrets(text) == Redaction(text=text, kinds=())


@given(st.text(max_size=300))
@settings(deadline=None, max_examples=200)
def test_redaction_is_idempotent(text: str) -> None:
    once = redact_secrets(text)
    twice = redact_secrets(once.text)
    assert twice.text == once.text
    assert twice.kinds == ()


# --- importance ---------------------------------------------------------------------------------------------

EXPLICIT = [
    "Remember that my sister's birthday is June 12",
    "Please remember that I park on level 3",
    "Don't forget the spare key is under the blue pot",
    "Note that the office moves to Leeds next month",
    "I want you to remember my wife is vegetarian",
    "记住我的护照号码在抽屉里",
    "记住我对花生过敏",
]
PREFERENCES = [
    "I prefer window seats on long flights",
    "I like jazz more than rock",
    "I love hiking in the mountains",
    "I hate cilantro in my food",
    "My favourite colour is green",
    "I'm allergic to peanuts",
    "我喜欢喝咖啡",
    "我不喜欢香菜",
]
CONSTRAINTS = [
    "Always use metric units in reports",
    "Never schedule meetings on Friday afternoons",
    "Invoices must be approved by finance",
    "Don't book flights through that agency",
    "The deadline for the grant is next week",
    "Our budget for the trip is tight",
    "开会必须提前一天通知",
]
INFORMATIVE = [
    "We went hiking in the mountains last weekend",
    "The meeting went well and we agreed on the plan",
    "The new espresso machine in the kitchen makes decent coffee",
    "My brother started a new job at a bakery downtown",
    "今天天气不错我们去公园散步了",
]
SMALL_TALK = [
    "hi",
    "hey!",
    "ok",
    "okay",
    "thanks!",
    "thank you so much",
    "lol",
    "hahaha",
    "good morning",
    "Good night!",
    "see you later",
    "got it",
    "Thanks Sarah!",
    "👍",
    "哈哈",
    "哈哈哈哈",
    "好的",
    "谢谢",
    "嗯嗯",
    "好的，谢谢！",
    "ok 谢谢",
]


@pytest.mark.parametrize("content", EXPLICIT)
def test_explicit_remember_scores_at_least_0_9(content: str) -> None:
    assert score_importance(content) >= 0.9


@pytest.mark.parametrize("content", PREFERENCES + CONSTRAINTS)
def test_preferences_and_constraints_score_at_least_0_7(content: str) -> None:
    assert score_importance(content) >= 0.7


@pytest.mark.parametrize("content", INFORMATIVE)
def test_ordinary_informative_sentences_score_between_0_3_and_0_6(content: str) -> None:
    assert 0.3 <= score_importance(content) <= 0.6


@pytest.mark.parametrize("content", SMALL_TALK)
def test_small_talk_scores_below_0_2(content: str) -> None:
    assert score_importance(content) < 0.2
    assert is_small_talk(content)


@pytest.mark.parametrize(
    "content",
    [
        "hi, I'm Caroline and I just moved to Boston",
        "ok so the flight lands at 6pm",
        "谢谢你帮我订了去上海的机票",
        "Hey, remember that the vet appointment is on Monday",
    ],
)
def test_small_talk_words_inside_content_are_not_small_talk(content: str) -> None:
    assert not is_small_talk(content)
    assert score_importance(content) >= 0.3


def test_default_write_threshold_separates_small_talk_from_content() -> None:
    threshold = WriteTuning().importance_threshold
    assert max(score_importance(c) for c in SMALL_TALK) < threshold
    assert min(score_importance(c) for c in EXPLICIT + PREFERENCES + CONSTRAINTS + INFORMATIVE) >= threshold


@pytest.mark.parametrize(
    ("explicit", "preference", "informative", "small_talk"),
    [
        ("Remember that I drink oat milk", "I prefer oat milk", "We bought oat milk at the shop today", "ok"),
        ("Don't forget that I hate olives", "I hate olives", "The pizza had olives and peppers on it", "lol"),
        ("记住我喜欢猫", "我喜欢猫", "邻居家的猫今天跑到我们院子里来了", "哈哈"),
    ],
)
def test_importance_orders_explicit_then_preference_then_informative_then_small_talk(
    explicit: str, preference: str, informative: str, small_talk: str
) -> None:
    scores = [score_importance(c) for c in (explicit, preference, informative, small_talk)]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == 4


@pytest.mark.parametrize(
    ("plain", "richer"),
    [
        ("we met a friend at the cafe", "we met Caroline at the cafe"),
        ("we met a friend at the cafe", "we met at the cafe with the NASA team"),
        ("we bought some apples at the market", "we bought 12 apples at the market"),
        ("the dentist appointment got moved", "the dentist appointment got moved to 2024-03-05"),
        ("the dentist appointment got moved", "the dentist appointment got moved to Tuesday"),
        ("send the invoice to the accountant", "send the invoice to ann@example.com"),
    ],
)
def test_names_numbers_dates_and_emails_raise_importance(plain: str, richer: str) -> None:
    assert score_importance(richer) > score_importance(plain)


def test_capitalised_sentence_start_is_not_a_name() -> None:
    # Same words; only the capital at the start of the sentence differs.
    assert score_importance("Yesterday we went swimming at the lake") == score_importance(
        "yesterday we went swimming at the lake"
    )
    assert score_importance("we went swimming. Then we ate at the lake") == score_importance(
        "we went swimming. then we ate at the lake"
    )


def test_semantic_layer_adds_its_weight() -> None:
    content = "The cafe on the corner closes early on weekdays"
    assert score_importance(content, layer="semantic") == pytest.approx(score_importance(content) + SEMANTIC_WEIGHT)


def test_entities_add_their_weight() -> None:
    content = "The cafe on the corner closes early on weekdays"
    assert score_importance(content, entities=["cafe"]) == pytest.approx(score_importance(content) + ENTITIES_WEIGHT)
    assert score_importance(content, entities=[]) == score_importance(content)


@pytest.mark.parametrize(("explicit", "expected"), [(0.33, 0.33), (0.0, 0.0), (1.0, 1.0), (1.7, 1.0), (-0.5, 0.0)])
def test_explicit_importance_overrides_the_heuristic(explicit: float, expected: float) -> None:
    assert score_importance("hi", explicit=explicit) == expected
    assert score_importance("Remember that I hate olives", layer="semantic", explicit=explicit) == expected


@pytest.mark.parametrize(
    "content",
    [
        "I don't know",
        "never mind",
        "I can't wait",
        "Do you remember when we went to Paris?",
        "I remember the trip to Rome",
    ],
)
def test_vague_cues_are_not_preferences_rules_or_requests(content: str) -> None:
    assert score_importance(content) < 0.7


@given(
    st.text(max_size=300),
    st.sampled_from(["episodic", "semantic"]),
    st.lists(st.text(min_size=1, max_size=5), max_size=3),
)
@settings(deadline=None, max_examples=200)
def test_importance_is_within_zero_and_one(content: str, layer: str, entities: list[str]) -> None:
    assert 0.0 <= score_importance(content, layer=layer, entities=entities) <= 1.0
