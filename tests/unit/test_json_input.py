"""The JSON every edge accepts (rearview.domain.json_input): the inputs that used to end in a 500."""

from __future__ import annotations

import json

import pytest

from rearview.domain.json_input import MAX_JSON_DEPTH, check_json_value, nesting_depth, parse_json_body
from rearview.errors import InvalidInput

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ('{"value": NaN}', "value", "finite"),
        ('{"value": -Infinity}', "value", "finite"),
        ('{"a": [1, 1e999]}', "a.1", "finite"),
        ('{"top_k": ' + "9" * 5000 + "}", "top_k", "40 digits"),
        ('{"t": ["\\ud800"]}', "t.0", "lone surrogate U+D800"),
        ('{"\\udc00": 1}', "\\udc00", "lone surrogate U+DC00"),
        ("[" * 40 + "]" * 40, "body", f"at most {MAX_JSON_DEPTH}"),
    ],
)
def test_hostile_json_names_the_field(text: str, field: str, words: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_json_body(text)
    assert caught.value.field == field
    assert caught.value.message.startswith(f"{field}: ") and words in caught.value.message
    caught.value.message.encode("utf-8")  # the message itself is always valid text


def test_ordinary_json_passes_and_brackets_in_strings_do_not_count() -> None:
    text = json.dumps({"content": "[[[[{{{{", "n": [1, 2.5, -3], "deep": [[[]]]})
    assert parse_json_body(text)["content"] == "[[[[{{{{"
    assert nesting_depth(text) == 4


def test_malformed_json_is_left_to_the_callers_400() -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_json_body('{"a": ')


def test_values_already_parsed_are_checked_alike() -> None:
    with pytest.raises(InvalidInput, match="arguments.value: must be a finite number"):
        check_json_value({"value": float("inf")}, root="arguments")
    deep: list[object] = []
    for _ in range(MAX_JSON_DEPTH + 2):
        deep = [deep]
    with pytest.raises(InvalidInput, match="nested more than"):
        check_json_value({"value": deep})
