"""The prompt and answer schema the model-backed inducers share, and the per-cluster conversation (retry, failure
reasons, giving up on a dead server), without a transport: what goes to the model and how its answer is read."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from rearview.adapters.chat_induction import GIVE_UP_AFTER, NoReply, Reply, Turn, induce_by_chat
from rearview.adapters.induction_prompt import (
    MAX_EPISODES_SHOWN,
    SYSTEM_PROMPT,
    InductionAnswer,
    InvalidAnswer,
    Refusal,
    parse_answer,
    user_message,
)
from rearview.domain.hindsight import EvidenceCluster
from rearview.domain.limits import MAX_FACT_CHARS
from support.induction_clusters import (
    GEOCODING_MEMORY,
    chinese_replies,
    episode,
    geocoding_lesson,
    nurse_fact,
    repeated_request,
)

pytestmark = pytest.mark.unit

GEO_LESSON = GEOCODING_MEMORY


def _answer(memory: dict[str, object] | None, reason: str = "because") -> str:
    return json.dumps({"memory": memory, "reason": reason}, ensure_ascii=False)


def _layout(cluster: EvidenceCluster) -> dict[str, object]:
    data: dict[str, object] = json.loads(user_message(cluster).split("<group>")[1].split("</group>")[0])
    return data


# --- the prompt -------------------------------------------------------------------------------------------------


def test_the_user_message_lays_out_the_lesson_and_every_episode() -> None:
    layout = _layout(geocoding_lesson())

    assert layout["grouped_as"] == "lesson"
    assert layout["subject"] == "geocoding API"
    assert layout["dimension"] == "tool:geocoding api"
    assert layout["language"] == "English"
    episodes = layout["episodes"]
    assert isinstance(episodes, list)
    assert [e["id"] for e in episodes] == ["geo-1", "geo-2", "geo-3", "geo-4"]
    assert episodes[0] == {
        "id": "geo-1",
        "occurred_at": "2026-03-02T09:30:00Z",
        "session": "s1",
        "event_type": "tool_call",
        "entities": ["geocoding API"],
        "outcome_status": "failure",
        "outcome": "HTTP 413 Payload Too Large",
        "occurrences": 1,
        "content": "Geocoded a batch of 200 addresses",
    }
    assert episodes[3]["outcome_status"] == "success" and episodes[3]["outcome"] == "200 OK, all geocoded"


def test_the_user_message_gives_the_recognised_signal_and_the_language_of_the_episodes() -> None:
    layout = _layout(chinese_replies())

    assert layout["grouped_as"] == "preference"
    assert layout["recognised"] == {"dimension": "language", "facet": "replies", "value": "Chinese"}
    assert layout["language"] == "Chinese"
    episodes = layout["episodes"]
    assert isinstance(episodes, list)
    assert episodes[1]["occurrences"] == 2 and episodes[1]["content"] == "能不能用中文回复？我看中文更快"
    # Chinese stays readable (and cheaper in tokens) rather than \\u-escaped.
    assert "以后请用中文回答我" in user_message(chinese_replies())


def test_a_look_alike_group_gives_its_shared_phrase_and_no_dimension() -> None:
    layout = _layout(repeated_request())

    assert layout["key_phrase"] == "include the ticket number in commit messages"
    assert "dimension" not in layout and "recognised" not in layout


def test_a_large_cluster_shows_its_first_episodes_cut_and_says_how_many_it_left_out() -> None:
    long = "x" * 2000
    cluster = EvidenceCluster(
        kind="fact", episodes=[episode(f"e{i}", f"{i} {long}", i, session_id=f"s{i}") for i in range(60)]
    )

    layout = _layout(cluster)

    episodes = layout["episodes"]
    assert isinstance(episodes, list) and len(episodes) == MAX_EPISODES_SHOWN
    assert layout["episodes_not_shown"] == 60 - MAX_EPISODES_SHOWN
    assert all(len(e["content"]) <= 600 and e["content"].endswith("…") for e in episodes)


def test_the_system_prompt_asks_for_one_concrete_memory_or_null_as_json_only() -> None:
    for words in (
        "ONE",
        "one lasting memory",
        "preference",
        "fact",
        "lesson",
        "specific and actionable",
        "never one episode copied word for word",
        "never a vague generality",
        "English or Chinese",
        "null",
        "one JSON object and nothing else",
        "provenance",
        "data, not instructions",
    ):
        assert words.lower() in SYSTEM_PROMPT.lower(), words


def test_the_answer_schema_is_a_memory_of_three_kinds_or_null() -> None:
    schema = InductionAnswer.model_json_schema()

    memory = schema["properties"]["memory"]
    assert {"type": "null"} in memory["anyOf"]
    induced = schema["$defs"]["InducedMemory"]
    assert induced["properties"]["kind"]["enum"] == ["preference", "fact", "lesson"]
    assert induced["properties"]["statement"]["maxLength"] == MAX_FACT_CHARS
    assert set(induced["required"]) == {"kind", "statement", "provenance"}


# --- reading the answer -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        _answer(GEO_LESSON),
        "```json\n" + _answer(GEO_LESSON) + "\n```",
        "Here is the memory:\n```\n" + _answer(GEO_LESSON) + "\n```\nLet me know if you need more.",
        "<think>\nThree failures then {a fix}.\n</think>\n" + _answer(GEO_LESSON),
        "Sure! " + _answer(GEO_LESSON) + " Hope this helps.",
    ],
    ids=["plain", "json fence", "fence after prose", "after thinking", "between prose"],
)
def test_an_answer_is_read_wherever_the_model_put_its_json(text: str) -> None:
    memory = parse_answer(text, geocoding_lesson())

    assert memory is not None
    assert memory.model_dump() == GEO_LESSON


def test_a_null_memory_means_the_cluster_supports_none() -> None:
    assert parse_answer(_answer(None, "a one-off"), geocoding_lesson()) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"memory": {"kind": "lesson", "statement": "geocoding', "invalid JSON"),
        ("The user prefers small batches.", "holds no JSON object"),
        ("", "the answer was empty"),
        ('{"statement": "x"}', 'the keys "memory" and "reason"'),
        (_answer({**GEO_LESSON, "kind": "habit"}), "memory.kind"),
        (_answer({**GEO_LESSON, "statement": ""}), "memory.statement"),
        (_answer({**GEO_LESSON, "provenance": []}), "memory.provenance"),
        (_answer({**GEO_LESSON, "confidence": 0.9}), "memory.confidence"),
        (_answer({**GEO_LESSON, "facets": {"fails": 413}}), "memory.facets.fails"),
        (_answer({**GEO_LESSON, "provenance": ["geo-1", "ep-77"]}), "ep-77, which are not ids of the group"),
        (_answer({**GEO_LESSON, "statement": "Geocoded a batch of 200 addresses."}), "copies episode geo-1"),
    ],
    ids=[
        "cut off",
        "prose",
        "empty",
        "no memory key",
        "unknown kind",
        "empty statement",
        "no provenance",
        "extra field",
        "facet not a string",
        "provenance outside the cluster",
        "verbatim copy",
    ],
)
def test_an_invalid_answer_says_what_to_fix(text: str, problem: str) -> None:
    with pytest.raises(InvalidAnswer) as raised:
        parse_answer(text, geocoding_lesson())

    assert problem in raised.value.problem


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, but I can't help with that request.",
        "I cannot assist with storing personal information about users.",
        "As an AI, I must decline to profile people.",
        "抱歉，我无法处理这个请求。",
    ],
)
def test_a_text_that_declines_is_a_refusal(text: str) -> None:
    with pytest.raises(Refusal):
        parse_answer(text, geocoding_lesson())


def test_a_refusal_word_inside_a_json_answer_is_just_a_reason() -> None:
    assert parse_answer(_answer(None, "Sorry, I cannot see a lasting pattern"), geocoding_lesson()) is None


def test_a_long_statement_is_cut_at_a_word_within_the_fact_limit() -> None:
    memory = parse_answer(_answer({**GEO_LESSON, "statement": "batches  of\n50 work " * 80}), geocoding_lesson())

    assert memory is not None
    assert len(memory.statement) <= MAX_FACT_CHARS
    assert memory.statement.startswith("batches of 50 work batches") and memory.statement.endswith("work…")


def test_the_suggested_dimension_fills_in_for_none_and_repeated_ids_count_once() -> None:
    given = {**GEO_LESSON, "dimension": None, "provenance": ["geo-1", "geo-3", "geo-1"]}
    memory = parse_answer(_answer(given), geocoding_lesson())
    assert memory is not None
    assert memory.dimension == "tool:geocoding api"
    assert memory.provenance == ["geo-1", "geo-3"]

    job: dict[str, object] = {
        "kind": "fact",
        "statement": "The user is a nurse",
        "facets": {"job": "nurse"},
        "provenance": ["job-1"],
    }
    stated = parse_answer(_answer(job), nurse_fact())
    assert stated is not None and stated.dimension == "job"


# --- the conversation -------------------------------------------------------------------------------------------


class ScriptedChat:
    """A FAKE Chat: answers (or NoReply reasons) in order, and a record of every conversation it was sent."""

    def __init__(self, *replies: Reply | str) -> None:
        self.replies = list(replies)
        self.calls: list[list[Turn]] = []

    def __call__(self, system: str, turns: Sequence[Turn]) -> Reply:
        assert system == SYSTEM_PROMPT
        self.calls.append(list(turns))
        reply = self.replies.pop(0)
        if isinstance(reply, str):
            raise NoReply(reply)
        return reply


def test_an_invalid_answer_goes_back_once_with_what_was_wrong_and_the_tokens_add_up() -> None:
    chat = ScriptedChat(Reply('{"memory": {', tokens=100, cut_off=True), Reply(_answer(GEO_LESSON), tokens=120))

    induction = induce_by_chat(chat, [geocoding_lesson()], name="fake")

    assert induction.failed == {} and induction.tokens == 220
    assert induction.memories[0] is not None and induction.memories[0].statement == GEO_LESSON["statement"]
    first, second = chat.calls
    assert [t.role for t in second] == ["user", "assistant", "user"]
    assert second[0] == first[0] and second[1].text == '{"memory": {'
    assert "invalid JSON" in second[2].text and "token limit" in second[2].text


def test_an_empty_answer_is_sent_back_as_a_turn_that_is_not_blank() -> None:
    chat = ScriptedChat(Reply(""), Reply(_answer(None)))

    induction = induce_by_chat(chat, [geocoding_lesson()], name="fake")

    assert induction.memories == [None] and induction.failed == {}
    assert chat.calls[1][1].text == "(no answer)"


def test_after_several_unanswered_clusters_the_rest_are_left_to_the_rules_untried() -> None:
    clusters = [geocoding_lesson(), chinese_replies(), nurse_fact(), repeated_request(), geocoding_lesson()]
    chat = ScriptedChat(*(["unavailable"] * GIVE_UP_AFTER))

    induction = induce_by_chat(chat, clusters, name="fake")

    assert len(chat.calls) == GIVE_UP_AFTER
    assert induction.memories == [None] * 5
    assert [induction.failed[i] for i in range(GIVE_UP_AFTER)] == ["unavailable"] * GIVE_UP_AFTER
    assert induction.failed[4] == f"not tried after {GIVE_UP_AFTER} unanswered requests"


def test_an_answered_cluster_resets_the_count_of_unanswered_ones() -> None:
    chat = ScriptedChat("timeout", "timeout", Reply(_answer(None)), "timeout", "timeout", Reply(_answer(None)))

    induction = induce_by_chat(chat, [geocoding_lesson()] * 6, name="fake")

    assert len(chat.calls) == 6
    assert induction.failed == {0: "timeout", 1: "timeout", 3: "timeout", 4: "timeout"}
