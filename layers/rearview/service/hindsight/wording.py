"""How an episode is worded, for the rules that read it: normalised text, a negation standing before a word, and
whether the text asks for something (a request or a stated preference) rather than reports what happened."""

from __future__ import annotations

import re

from rearview.service.voice import ZH_SOFTENERS, ZH_YES_NO, normalise

__all__ = ["is_request", "negated_before", "normalise"]


_NEGATION_BEFORE = re.compile(
    r"(?:\b(?:not|no|never|without|avoid|stop|don't|dont|do not|didn't|doesn't|no more|instead of|rather than|"
    r"tired of|sick of|fed up with|over the|enough of|done with)\b[^.!?;,]{0,12}|"
    r"(?:不要|别|不用|不想|没有|不)[^。！？；，]{0,4})$",
    re.IGNORECASE,
)


def negated_before(text: str, start: int) -> bool:
    """True when a negation stands within a few words before `start` in the same clause."""
    window = ZH_YES_NO.sub("", text[max(0, start - 24) : start])
    return bool(_NEGATION_BEFORE.search(window))


# A request or a stated preference: what makes "in Chinese" a preference rather than a report of something done.
_REQUEST = re.compile(
    r"\b(?:please|pls|plz|always|from now on|going forward|in (?:the )?future|next time|by default|"
    r"i (?:would |'d )?(?:prefer|like|love|want|need|rather)|i'd rather|can you|could you|would you|will you|"
    r"make sure|keep|stick (?:to|with)|stop|don't|do not|never|no more|only|instead|rather than|too long|"
    r"too short|give me|send me|show me|use|reply|respond|answer|write|works? (?:best|better)|easier (?:for me|to)|"
    r"i find|best for me|as usual|usual rules|like before|like last time|same as (?:always|usual|before)|again)\b"
    r"|请|以后|今后|每次|总是|一直|默认|我(?:更)?喜欢|我想要|我希望|我要|给我|帮我|麻烦|不要|别|还是|可以吗|能不能|能否"
    # Chinese instructions name what to do with the text: 用 (use; not 用户, the user), 做成 (make into), 改成 ...
    rf"|{ZH_SOFTENERS}"
    r"|用(?!户)|做成|列成|整理成|改成|换成|列出|一点|一些"
    # ... and softened or asked: 详细点, 解释下, 能说中文不, 可以吗; or repeated: 说过了, 老规矩, 记得.
    r"|[点下些]$|[点下些][，,。！!~吧]|能.{1,8}[吗不]|可以.{0,6}吗|行不行|好不好|好吗|说过|记得|记住|老规矩|老样子|统一"
    r"|最好|比较好|更好|方便|习惯|照旧|照例|又",
    re.IGNORECASE,
)
# An imperative: a sentence that opens with a verb ("List the steps ...", "Keep it short").
_IMPERATIVE = re.compile(
    r"(?:^|[.!?;]\s+)(?:and\s+|also\s+|then\s+)?(?:list|put|make|format|show|give|send|write|use|keep|be|do|add|"
    r"include|set|switch|convert|summari[sz]e|book|order|reply|respond|answer|present|display|lay out)\b",
    re.IGNORECASE,
)


def is_request(text: str) -> bool:
    """A request or a stated preference (rather than a report of something that happened)."""
    return bool(_REQUEST.search(text) or _IMPERATIVE.search(text))
