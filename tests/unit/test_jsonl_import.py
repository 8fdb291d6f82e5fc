"""Parsing JSONL import lines: MemoryWrite fields, the LoCoMo-style aliases, and errors naming the field."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from rearview.cli.jsonl_import import LOAD_REQUEST_BYTES, LineError, load_lines, parse_line
from rearview.domain.bulk_load import EpisodeLoad, LoadResult

pytestmark = pytest.mark.unit


def line(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def test_a_locomo_turn_maps_text_dia_id_speaker_and_ts() -> None:
    item, ignored = parse_line(
        line(
            {
                "speaker": "Caroline",
                "dia_id": "D1:3",
                "text": "I went to a support group",
                "ts": 1683554160,
                "blip_caption": "a photo",
            }
        )
    )
    assert item.content == "I went to a support group"
    assert item.id == "D1:3"
    assert item.entities == ["Caroline"]
    assert item.occurred_at is not None and item.occurred_at.isoformat() == "2023-05-08T13:56:00+00:00"
    assert ignored == ["blip_caption"]


def test_the_speaker_is_not_added_twice_to_entities() -> None:
    item, _ = parse_line(line({"content": "Caroline called Mel", "speaker": "Caroline", "entities": ["Caroline"]}))
    assert item.entities == ["Caroline"]


def test_memorywrite_fields_pass_through() -> None:
    item, ignored = parse_line(
        line(
            {
                "content": "Prefers tea",
                "layer": "semantic",
                "dimension": "drink",
                "confidence": 0.9,
                "tags": ["a"],
            }
        )
    )
    assert (item.layer, item.dimension, item.confidence, item.tags) == ("semantic", "drink", 0.9, ["a"])
    assert ignored == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"content": "unterminated', "line: not valid JSON"),
        (b"\xff\xfe{}", "line: not UTF-8"),
        (b'["content"]', "line: must be a JSON object (got list)"),
        (line({"tags": ["x"]}), "content: required"),
        (line({"content": "a", "text": "b"}), "text: give content or text, not both"),
        (
            line({"content": "a", "ts": "2024-01-01T00:00:00Z", "timestamp": "2024-01-02T00:00:00Z"}),
            "timestamp:",
        ),
        (line({"content": "a", "speaker": 7}), "speaker: must be a string"),
        (line({"content": "a", "occurred_at": "someday"}), "occurred_at:"),
        (line({"content": "   "}), "content:"),
        (line({"content": "a", "id": "has space"}), "id:"),
    ],
)
def test_invalid_lines_name_the_field(raw: bytes, message: str) -> None:
    with pytest.raises(LineError) as err:
        parse_line(raw)
    assert str(err.value).startswith(message)


def test_a_load_line_may_bring_its_vector_and_requests_stay_under_the_body_limit() -> None:
    item, ignored = parse_line(line({"text": "Ana booked the Alfama flat", "vector": [0.25, -1, 0.5]}), EpisodeLoad)
    assert item.vector == [0.25, -1, 0.5] and item.content == "Ana booked the Alfama flat" and not ignored
    with pytest.raises(LineError, match="vector"):
        parse_line(line({"text": "A vector of words", "vector": ["0.1", "0.2"]}), EpisodeLoad)

    dim = 384
    lines = [line({"text": f"Turn {i} of the chat", "vector": [0.123456789] * dim}) for i in range(400)]
    sizes: list[int] = []

    def send(items: list[EpisodeLoad]) -> LoadResult:
        sizes.append(len(items))
        return LoadResult(namespace="acme", loaded=len(items), skipped=0)

    summary = load_lines(send, lines, batch_size=1000)

    assert summary.loaded == 400 and sum(sizes) == 400 and len(sizes) > 1
    for start, size in zip(itertools.accumulate([0, *sizes]), sizes, strict=False):
        assert sum(len(raw) for raw in lines[start : start + size]) <= LOAD_REQUEST_BYTES
