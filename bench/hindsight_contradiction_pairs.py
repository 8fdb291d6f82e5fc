"""Pairs of semantic memories said in free text, English and Chinese, with the judgement a later memory deserves
against an earlier one: it contradicts it (the earlier one is superseded), confirms it (the same thing again),
refines it (says more about the same thing) or is unrelated. Some pairs share a `dimension`, most do not. The
development set of bench/hindsight_contradictions.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["contradicts", "confirms", "refines", "unrelated"]


@dataclass(frozen=True)
class Pair:
    old: str
    new: str
    verdict: Verdict
    language: str
    kind: str = "fact"
    dimension: str | None = None


# fmt: off
PAIRS: list[Pair] = [
    # --- English: contradictions -------------------------------------------------------------------------------
    Pair("The user drinks coffee every morning", "The user quit coffee and drinks tea now", "contradicts", "en"),
    Pair("The user runs in the evenings after work", "The user no longer runs in the evening; he runs before work", "contradicts", "en"),
    Pair("The user lives in Berlin", "The user moved to Munich in March", "contradicts", "en"),
    Pair("The user prefers meetings in the morning", "The user now wants meetings in the afternoon only", "contradicts", "en", "preference"),
    Pair("The user smokes", "The user gave up smoking last year", "contradicts", "en"),
    Pair("The user prefers answers in English", "The user wants answers in Spanish from now on", "contradicts", "en", "preference"),
    Pair("The user works at Acme Corp", "The user left Acme and joined Globex", "contradicts", "en"),
    Pair("The user eats meat", "The user has become vegetarian", "contradicts", "en"),
    Pair("The user likes emojis in replies", "The user does not want emojis in replies anymore", "contradicts", "en", "preference"),
    Pair("The user uses pandas for data work", "The user stopped using pandas and uses polars instead", "contradicts", "en", "preference"),
    Pair("The user plays tennis on Saturdays", "The user doesn't play tennis any more", "contradicts", "en"),
    Pair("The user prefers email for notifications", "Notifications should go to Slack, not email", "contradicts", "en", "preference", "channel"),
    # --- English: confirmations --------------------------------------------------------------------------------
    Pair("The user drinks coffee every morning", "Every morning the user has a coffee", "confirms", "en"),
    Pair("The user lives in Berlin", "The user is based in Berlin", "confirms", "en"),
    Pair("The user prefers meetings in the morning", "Meetings should be scheduled in the morning for the user", "confirms", "en", "preference"),
    Pair("The user is vegetarian", "The user does not eat meat", "confirms", "en"),
    # --- English: refinements ----------------------------------------------------------------------------------
    Pair("The user is vegetarian", "The user is vegetarian but eats fish on Fridays", "refines", "en"),
    Pair("The user prefers morning meetings", "The user prefers morning meetings, ideally before 10am", "refines", "en", "preference"),
    Pair("The user lives in Berlin", "The user lives in Berlin, in the Kreuzberg district", "refines", "en"),
    # --- English: unrelated ------------------------------------------------------------------------------------
    Pair("The user drinks coffee every morning", "The user's daughter is called Nina", "unrelated", "en"),
    Pair("The user lives in Berlin", "The user prefers replies in German", "unrelated", "en"),
    Pair("The user does not eat pork", "The user does not like long meetings", "unrelated", "en"),
    Pair("The user's colleague prefers tabs", "The user prefers spaces for indentation", "unrelated", "en", "preference"),
    Pair("The user runs in the mornings", "The user never runs the test suite locally", "unrelated", "en"),
    Pair("The user is allergic to peanuts", "The user is not allergic to shellfish", "unrelated", "en"),
    # --- Chinese: contradictions -------------------------------------------------------------------------------
    Pair("用户每天早上喝咖啡", "用户已经戒了咖啡，现在喝茶", "contradicts", "zh"),
    Pair("用户每天抽烟", "用户已经戒烟了", "contradicts", "zh"),
    Pair("用户住在北京", "用户上个月搬到了上海", "contradicts", "zh"),
    Pair("用户喜欢上午开会", "用户现在只想下午开会", "contradicts", "zh", "preference"),
    Pair("用户希望用英文回复", "用户希望以后用中文回复", "contradicts", "zh", "preference"),
    Pair("用户周末打羽毛球", "用户不再打羽毛球了", "contradicts", "zh"),
    Pair("用户在华为工作", "用户离开了华为，去了腾讯", "contradicts", "zh"),
    Pair("用户喜欢在回复里用表情", "用户不想再在回复里看到表情", "contradicts", "zh", "preference"),
    Pair("用户吃肉", "用户开始吃素了", "contradicts", "zh"),
    Pair("通知发邮件给用户", "通知改用微信，不要发邮件", "contradicts", "zh", "preference", "channel"),
    # --- Chinese: confirmations --------------------------------------------------------------------------------
    Pair("用户住在北京", "用户家在北京", "confirms", "zh"),
    Pair("用户喜欢上午开会", "用户希望会议安排在上午", "confirms", "zh", "preference"),
    Pair("用户每天早上喝咖啡", "用户每天早上都要喝一杯咖啡", "confirms", "zh"),
    # --- Chinese: refinements ----------------------------------------------------------------------------------
    Pair("用户吃素", "用户吃素，但是吃鸡蛋", "refines", "zh"),
    Pair("用户住在北京", "用户住在北京朝阳区", "refines", "zh"),
    # --- Chinese: unrelated ------------------------------------------------------------------------------------
    Pair("用户每天早上喝咖啡", "用户的女儿叫小雨", "unrelated", "zh"),
    Pair("用户住在北京", "用户希望用中文回复", "unrelated", "zh"),
    Pair("用户不吃辣", "用户不喜欢开长会", "unrelated", "zh"),
    Pair("用户的同事喜欢用Excel", "用户喜欢用Numbers做表格", "unrelated", "zh", "preference"),
    Pair("用户对花生过敏", "用户对海鲜不过敏", "unrelated", "zh"),
]
# fmt: on
