"""What one episode says about the user, recognised by rules in English and Chinese: a preference ("reply in
Chinese" -> language: replies = Chinese), a stable fact ("I live in Berlin" -> home_city: home = Berlin) or a habit
("went for my morning run" -> exercise: morning = running).

Rules, not a model: they are cheap, deterministic, explainable, and they abstract, so five differently worded
requests meet in one signal. What they miss, the look-alike grouping of `clusters` still catches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from rearview.domain.hindsight import Signal
from rearview.service.hindsight import lexicon
from rearview.service.hindsight.wording import is_request, negated_before, normalise
from rearview.text_analysis import STOP_WORDS


def _object_facet(text: str, default: str) -> str:
    """The kind of text a language or format preference is about ("code comments", "data", "steps"...)."""
    lowered = text.lower()
    found = [lexicon.TEXT_OBJECTS[w] for w in re.findall(r"[a-z-]+", lowered) if w in lexicon.TEXT_OBJECTS]
    found += [facet for word, facet in lexicon.TEXT_OBJECTS.items() if not word.isascii() and word in text]
    # The most specific wins: "code comments" over "code".
    return max(found, key=len) if found else default


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


# --- preferences ----------------------------------------------------------------------------------------------

_EN_LANGS = _alternation(w for w in lexicon.LANGUAGES if w.isascii())
_ZH_LANGS = _alternation(w for w in lexicon.LANGUAGES if not w.isascii())
_LANGUAGE_EN = re.compile(
    rf"\b(?:in|into|using|use|switch to|stick to|stick with)\s+(?:plain\s+|simple\s+)?(?P<a>{_EN_LANGS})\b"
    rf"|\b(?P<b>{_EN_LANGS})\s+(?:please|pls|only|from now on|instead|is fine|is better|works better)\b"
    rf"|\b(?:prefer|rather have|want)\s+(?:it\s+|them\s+|answers\s+|replies\s+)?(?:in\s+)?(?P<c>{_EN_LANGS})\b",
    re.IGNORECASE,
)
_LANGUAGE_ZH = re.compile(
    rf"(?:用|以|说|讲|改用|换成)\s*(?P<a>{_ZH_LANGS}|{_EN_LANGS})"
    rf"|(?P<b>{_ZH_LANGS})\s*(?:回答|回复|答复|来答|来回|说|写|交流|沟通|就好|就行|吧|可以)",
    re.IGNORECASE,
)
_TRANSLATION = re.compile(r"\btranslat\w*|翻译|译成", re.IGNORECASE)


_LANGUAGE_WORD = re.compile(rf"\b(?P<a>{_EN_LANGS})\b|(?P<b>{_ZH_LANGS})", re.IGNORECASE)
# A question about a language itself, not a wish about the replies: "how do you say X in Spanish?", "中文输入法".
_ABOUT_A_LANGUAGE = re.compile(
    r"\bhow (?:do|would) you say\b|\bwhat(?:'s| is| does)\b.{0,30}\b(?:mean|for)\b|什么意思|怎么说|输入法|字体|中文系|"
    r"中文里",
    re.IGNORECASE,
)
# A complaint about the language just used: "你怎么又用英文回我了", "why English again?".
_COMPLAINED = re.compile(r"(?:又|怎么|为什么|why)\s*(?:又|还)?\s*(?:用|in)?\s*$", re.IGNORECASE)
# The texts a language preference can be about on its own; anything else is the replies.
_LANGUAGE_OBJECTS = frozenset({"code comments", "commit messages", "emails"})


_AIM_BEFORE = re.compile(
    r"(?:\b(?:in|into|to|use|using|switch to|stick to|prefer)\s+|用|以|说|讲|改用|换成|统一)\s*$", re.I
)
_AIM_AFTER = re.compile(
    r"^\s*(?:please|pls|only|from now on|instead|回复|回答|答复|说|写|讲|交流|沟通|就好|就行|吧)", re.I
)


def _aimed(text: str, m: re.Match[str]) -> bool:
    """A mention that says what to use ("in Chinese", "用中文", "中文回复"), not one that only names a language."""
    return bool(_AIM_BEFORE.search(text[max(0, m.start() - 12) : m.start()]) or _AIM_AFTER.search(text[m.end() :]))


def language_signals(text: str) -> list[Signal]:
    """ "Please answer in Chinese", "中文回答就好", "以后统一中文回复吧" -> language: replies = Chinese. Of several
    languages named, the last one not negated or complained about is the wish."""
    if _TRANSLATION.search(text) or not is_request(text) or _ABOUT_A_LANGUAGE.search(text):
        return []
    wished = [
        m
        for m in _LANGUAGE_WORD.finditer(text)
        if not negated_before(text, m.start()) and not _COMPLAINED.search(text[max(0, m.start() - 8) : m.start()])
    ]
    if not wished:
        return []
    aimed = [m for m in wished if _aimed(text, m)]
    chosen = (aimed or wished)[-1]
    word = (chosen.group("a") or chosen.group("b") or "").lower()
    facet = _object_facet(text, "replies")
    return [
        Signal("preference", "language", facet if facet in _LANGUAGE_OBJECTS else "replies", lexicon.LANGUAGES[word])
    ]


_FORMAT_MENTION = re.compile(
    r"\b(?P<md>markdown\s+)?(?P<a>tables?|tabular|bullet[- ]?points?|bulleted(?: list)?|bullets|bullet(?: form| list)?|"
    r"numbered(?: list| steps)?|step[- ]by[- ]step|json|csv|yaml|code blocks?|(?:normal |plain |flowing )?"
    r"(?:paragraphs|prose))\b|\b(?P<num>number)\s+(?:the|each|all|your|those)?\s*(?:\w+\s+)?(?:steps|items|points)\b"
    r"|(?P<zh>表格|列个表|列表|要点|分点|编号|分步骤|一步一步|段落)|(?:用|做成|转成|输出成?|以|按)\s*(?P<zhx>JSON|CSV)",
    re.IGNORECASE,
)
_FORMAT_AIM_BEFORE = re.compile(
    r"(?:\b(?:as|in|into|use|using|via|format(?:ted)? as|a|an)\s+|用|做成|整理成|列成|弄成)\s*$", re.I
)
_FORMAT_AIM_AFTER = re.compile(
    r"^\s*(?:please|pls|format|form|only|works|is (?:easier|better|best)|就好|就行|吧|展示|列出)", re.I
)
# "table" is also furniture: as a format it is asked for ("as a table", "give me a table", "table please"), or it
# holds something ("a table of the prices", "a comparison table").
_TABLE_AIM_BEFORE = re.compile(
    r"\b(?:as|in|into|use|using|via|format(?:ted)? as|give me|send me|show me|make(?: it| me)?|want|prefer|need|"
    r"put (?:it|them|this|that|these|those)(?: all)? in(?:to)?|comparison|summary|pivot)\s+(?:a\s+|an\s+|one\s+)?$",
    re.I,
)
_TABLE_AIM_AFTER = re.compile(
    r"^\s*(?:of|with (?:columns|rows)|please|pls|format|form|only|is (?:easier|better|best))\b", re.I
)


def _is_table_wish(text: str, start: int, end: int) -> bool:
    return bool(_TABLE_AIM_BEFORE.search(text[max(0, start - 30) : start])) or bool(_TABLE_AIM_AFTER.search(text[end:]))


# What each format is naturally for: a table holds data, a numbered list steps, a code block code.
_FORMAT_FACET = {"a table": "data", "a numbered list": "steps", "code blocks": "code"}


def format_signals(text: str) -> list[Signal]:
    """ "Give me the numbers as a markdown table", "As usual a table please, not paragraphs", "步骤请编号" ->
    format: data = a table. Of several formats named, the last one asked for (not negated) is the wish."""
    if not is_request(text):
        return []
    wished: list[tuple[bool, str]] = []
    for m in _FORMAT_MENTION.finditer(text):
        if negated_before(text, m.start()):
            continue
        groups = m.groupdict()
        word = (
            "numbered list" if groups.get("num") else (groups.get("a") or groups.get("zh") or groups.get("zhx") or "")
        )
        value = _format_value(re.sub(r"[\s-]+", " ", word.lower()).strip())
        if value is None:
            continue
        aimed = bool(_FORMAT_AIM_BEFORE.search(text[max(0, m.start() - 14) : m.start()])) or bool(
            _FORMAT_AIM_AFTER.search(text[m.end() :])
        )
        if groups.get("zh") and not aimed:
            continue  # "列表组件", "表格组件": a thing to build, not a way to answer
        furniture = word.lower() in ("table", "tables") and not groups.get("md")
        if furniture and not _is_table_wish(text, m.start(), m.end()):
            continue  # "a photo of a cake on a wooden table": furniture, not a way to answer
        wished.append((aimed, value))
    if not wished:
        return []
    aimed_values = [value for aimed, value in wished if aimed]
    value = (aimed_values or [value for _, value in wished])[-1]
    return [Signal("preference", "format", _FORMAT_FACET.get(value, "answers"), value)]


def _format_value(word: str) -> str | None:
    if word in lexicon.FORMATS:
        return lexicon.FORMATS[word]
    for key, value in lexicon.FORMATS.items():
        if key.isascii() and key in word:
            return value
    return None


_CONCISE = re.compile(
    r"\b(?:short(?:er)?|brief(?:er)?|concise|succinct|to the point|tl;?dr|less verbose|fewer words|"
    r"too long|too wordy|one[- ]liners?|keep it tight|just the gist|the gist)\b"
    r"|简短|简洁|精简|短一点|短点|简单说|简单点|说重点|太长|说结论|直接说结论|别写那么长|三句话|三五句|几句话",
    re.IGNORECASE,
)
_DETAILED = re.compile(
    r"\b(?:more detail(?:ed)?|in (?:more )?detail|detailed|in[- ]depth|more thorough|elaborate more|too short|"
    r"longer answers?)\b|详细|具体一点|展开说|展开讲|越细越好|写长点|长一点|太短",
    re.IGNORECASE,
)
_ANSWER_WORDS = re.compile(
    r"\b(?:answers?|repl(?:y|ies)|responses?|explanations?|summar(?:y|ies)|messages?|versions?|it|this|that|you)\b"
    r"|回答|回复|解释|总结|说|讲|写",
    re.IGNORECASE,
)
# Complaints about an answer's length that need no other word to say what is too long.
_LENGTH_COMPLAINT = re.compile(
    r"\b(?:too long|too wordy|too short|tl;?dr|be (?:brief|concise|succinct|more detailed))\b"
    r"|太长|太短|简短一?点|简洁些|详细一?点|简短回答|简单回答|短点|写长点",
    re.IGNORECASE,
)


def length_signals(text: str) -> list[Signal]:
    """ "Keep it short", "回答简短一点" -> length: answers = concise."""
    if not _LENGTH_COMPLAINT.search(text) and not (is_request(text) and _ANSWER_WORDS.search(text)):
        return []
    for pattern, value in ((_CONCISE, "concise"), (_DETAILED, "detailed")):
        m = pattern.search(text)
        if m and not negated_before(text, m.start()):
            return [Signal("preference", "length", "answers", value)]
    return []


_EMOJI = re.compile(
    r"\bemojis?\b|\bemoticons?\b|\bsmileys?\b|表情|颜文字|[\U0001F300-\U0001FAFF\u2600-\u27BF]", re.IGNORECASE
)
_NO_EMOJI = re.compile(
    r"\b(?:no|without|drop|remove|lose|ditch|skip|stop (?:using|adding)|don'?t use)\s+(?:the\s+|any\s+)?(?:\w+\s+)?"
    r"(?:emojis?|emoticons?|[\U0001F300-\U0001FAFF\u2600-\u27BF])|不要.{0,3}表情|别.{0,3}表情|去掉.{0,3}表情",
    re.IGNORECASE,
)
_MORE_EMOJI = re.compile(r"\b(?:more|some|add|use)\s+(?:\w+\s+)?emojis?\b|多用表情|加点表情", re.IGNORECASE)


def style_signals(text: str) -> list[Signal]:
    """ "No emojis please", "别用表情" -> style: emojis = none; "be more formal" -> style: tone = formal."""
    found: list[Signal] = []
    m = _EMOJI.search(text)
    if m and is_request(text):
        if negated_before(text, m.start()) or _NO_EMOJI.search(text):
            found.append(Signal("preference", "style", "emojis", "none"))
        elif _MORE_EMOJI.search(text):
            found.append(Signal("preference", "style", "emojis", "welcome"))
    tone = re.search(
        r"\b(?:more|be|keep it|sound|stay|in a)\s+(?P<a>formal|casual|informal|professional|friendly|polite)\b"
        r"|(?P<b>正式|随意|口语化|礼貌)一?[点些]",
        text,
        re.IGNORECASE,
    )
    if tone and is_request(text) and not negated_before(text, tone.start()):
        word = (tone.group("a") or tone.group("b") or "").lower()
        value = {"informal": "casual", "随意": "casual", "口语化": "casual", "正式": "formal", "礼貌": "polite"}.get(
            word, word
        )
        found.append(Signal("preference", "style", "tone", value))
    return found


_UNITS = (
    (re.compile(r"\b(?:metric|kilomet(?:er|re)s?|km|kilograms?|kg|grams?|centimet(?:er|re)s?|cm|met(?:er|re)s?)\b"
                r"|公制|公里|公斤|厘米|米", re.I),
     "measurements", "metric"),
    (re.compile(r"\b(?:imperial|miles?|pounds?|lbs?|feet|inches|ounces?)\b|英制|英里|英尺", re.I),
     "measurements", "imperial"),
    (re.compile(r"\b(?:celsius|centigrade|°c)\b|摄氏", re.I), "temperature", "Celsius"),
    (re.compile(r"\b(?:fahrenheit|°f)\b|华氏", re.I), "temperature", "Fahrenheit"),
    (re.compile(r"\b24[- ]?h(?:our)?\b|24小时制", re.I), "time", "24-hour clock"),
    (re.compile(r"\b12[- ]?h(?:our)?\b|12小时制|\bam/pm\b", re.I), "time", "12-hour clock"),
)  # fmt: skip
_UNIT_REQUEST = re.compile(
    r"\b(?:in|use|using|convert|give|show|switch|prefer|not|into|to|please|pls|only)\b|用(?!户)|换算|换成|改成|折成|按",
    re.I,
)


_CURRENCY = re.compile(
    r"\b(?:in|into|to|use|using|convert(?:ed)? (?:\w+ )?to)\s+"
    r"(?P<a>rmb|cny|yuan|renminbi|usd|us dollars|dollars|eur|euros|gbp|jpy|yen|chf)\b"
    r"|(?:折成|换算成|按|用|换成|折算成|算成)\s*(?P<b>人民币|美元|美金|欧元|英镑|日元)",
    re.IGNORECASE,
)


def unit_signals(text: str) -> list[Signal]:
    """ "Use metric units", "temperatures in Celsius please" -> units: measurements = metric; "换算成人民币" ->
    units: currency = CNY."""
    if not is_request(text) or not _UNIT_REQUEST.search(text):
        return []
    found: list[Signal] = []
    c = _CURRENCY.search(text)
    if c and not negated_before(text, c.start()):
        found.append(
            Signal("preference", "units", "currency", lexicon.CURRENCIES[(c.group("a") or c.group("b")).lower()])
        )
    for pattern, facet, value in _UNITS:
        wished = [m for m in pattern.finditer(text) if not negated_before(text, m.start()) and not _dismissed(text, m)]
        if wished:
            found.append(Signal("preference", "units", facet, value))
    # Both units of one kind named (asked to convert from one to the other): the one converted to is the wish.
    by_facet: dict[str, list[Signal]] = {}
    for signal in found:
        by_facet.setdefault(signal.facet, []).append(signal)
    kept = []
    for signals in by_facet.values():
        if len(signals) > 1:
            signals = [s for s in signals if _converted_to(text, s.value)] or signals[-1:]
        kept.extend(signals[:1])
    return kept


_DISMISSED = re.compile(
    r"^\W{0,3}(?:means nothing|is useless|doesn'?t help|isn'?t helpful|confuses me|没概念|看不懂)", re.I
)


def _dismissed(text: str, m: re.Match[str]) -> bool:
    """A unit the text waves away: "fahrenheit means nothing to me", "英制我没概念"."""
    return bool(_DISMISSED.search(text[m.end() :]))


def _converted_to(text: str, value: str) -> bool:
    for pattern, _facet, unit_value in _UNITS:
        if unit_value != value:
            continue
        for m in pattern.finditer(text):
            if re.search(
                r"(?:\b(?:in|into|to|use|using|give(?: \w+)? in)\s+|用|换成|换算成|折成|按)\s*$",
                text[max(0, m.start() - 16) : m.start()],
                re.I,
            ):
                return True
    return False


_SEAT = re.compile(r"\b(?P<a>window|aisle)\s+seats?\b|(?P<b>靠窗|靠过道|过道)", re.IGNORECASE)
# A bare "aisle" names a seat; a bare "window" only where a trip is being booked.
_BARE_AISLE = re.compile(r"(?<!the )\b(?P<a>aisle)\b", re.IGNORECASE)  # not "down the aisle"
_BARE_SEAT = re.compile(r"\b(?P<a>aisle|window)\b", re.IGNORECASE)
_TRAVEL = re.compile(
    r"\b(?:flights?|fly|flying|plane|seat|check(?:ed)? (?:me )?in|book(?:ed|ing)?|trip|train|return|red-?eye|"
    r"boarding|airline)\b|(?-i:\b\d{1,3}[A-F]\b)|航班|机票|高铁|火车|座|订票|票",
    re.IGNORECASE,
)
_DIRECT = re.compile(
    r"\b(?:direct|non-?stop)\s+(?:flights?|only)\b|\bonly\s+(?:non-?stop|direct)\b|\bmust be (?:direct|non-?stop)\b|"
    r"\bno\s+(?:layovers?|stopovers?|connections?)\b|\bdon'?t do (?:layovers?|connections?)\b|直飞|不转机|不要转机",
    re.IGNORECASE,
)


def travel_signals(text: str) -> list[Signal]:
    """ "Book me a window seat", "只订直飞" -> travel: seat = window."""
    found: list[Signal] = []
    m = _SEAT.search(text)
    if m is None:
        m = _BARE_SEAT.search(text) if _TRAVEL.search(text) else _BARE_AISLE.search(text)
    if m and not negated_before(text, m.start()):
        word = (m.group("a") or m.group("b") or "").lower()
        found.append(
            Signal("preference", "travel", "seat", "aisle" if word in ("aisle", "靠过道", "过道") else "window")
        )
    d = _DIRECT.search(text)
    if d:
        found.append(Signal("preference", "travel", "flights", "direct"))
    return found


_TOOL = r"[A-Za-z][\w.+#/-]{0,30}"
_CHOICE_EN = re.compile(
    rf"\b(?:use|try|pick|choose|go with|with|in)\s+(?P<x>{_TOOL}),?\s+"
    rf"(?:instead\s+of|rather\s+than|over|not)\s+(?P<y>{_TOOL})"
    rf"|\bprefer\s+(?P<x2>{_TOOL})\s+(?:over|to|to using)\s+(?P<y2>{_TOOL})"
    rf"|\b(?:instead\s+of|rather\s+than)\s+(?P<y3>{_TOOL}),?\s+(?:please\s+)?use\s+(?P<x3>{_TOOL})",
    re.IGNORECASE,
)
_CHOICE_ZH = re.compile(
    rf"(?:用|使用)\s*(?P<x>{_TOOL})\s*(?:而不是|别用|不要用|代替)\s*(?P<y>{_TOOL})"
    rf"|(?:别|不要)用\s*(?P<y2>{_TOOL})\s*[，,]?\s*(?:改用|换成|用)\s*(?P<x2>{_TOOL})",
)
_NOT_TOOLS = frozenset({"it", "this", "that", "them", "the", "a", "an", "me", "you", "one", "those", "these"})


def _not_a_tool(word: str) -> bool:
    """A word of grammar ("in order not to forget": "order" over "to") or a pronoun is no tool."""
    return word.lower() in _NOT_TOOLS or word.lower() in STOP_WORDS


def choice_signals(text: str) -> list[Signal]:
    """ "Use pnpm instead of npm" -> tools: npm = pnpm (the facet is what is replaced)."""
    found: list[Signal] = []
    for pattern in (_CHOICE_EN, _CHOICE_ZH):
        for m in pattern.finditer(text):
            groups = {k: v for k, v in m.groupdict().items() if v}
            x = next((v for k, v in groups.items() if k.startswith("x")), None)
            y = next((v for k, v in groups.items() if k.startswith("y")), None)
            if not x or not y or _not_a_tool(x) or _not_a_tool(y) or x.lower() == y.lower():
                continue
            found.append(Signal("preference", "tools", y.strip(".,").lower(), x.strip(".,")))
    return _distinct(found)


# --- facts about the user ---------------------------------------------------------------------------------------

_PLACE = r"(?P<place>(?:[A-Z][\w'-]+)(?:\s+(?:[A-Z][\w'-]+|(?:de|del|la|am|upon)\b))*)"
_HOME_EN = tuple(
    re.compile(rf"\b(?i:{lead})\s+{_PLACE}")
    for lead in (
        r"I(?:'m| am)?\s+(?:now\s+|currently\s+)?(?:live|living|based|settled|residing)\s+in",
        r"I(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+)?moved\s+to",
        r"my\s+(?:home|apartment|flat|house|place)\s+(?:is\s+)?in",
        r"here\s+in",
    )
)
_ZH_PLACE = r"(?P<place>[\u4e00-\u9fff]{2,5}?)"
_HOME_ZH = re.compile(
    rf"(?:我(?:现在|目前|一直)?(?:住在|住|生活在|定居在|在)|我家在|搬到了?|搬去了?|搬家到){_ZH_PLACE}"
    r"(?=住|生活|定居|了|啦|，|。|,|\.|$|市|这边|浦东|滨江|[东南西北]|区|\s)"
)
_JOB_EN = re.compile(
    rf"\b(?:I(?:'m| am)|I\s+work\s+as|my\s+job\s+as|as|being)\s+(?:a|an)\s+"
    rf"(?P<job>(?:[A-Za-z-]+\s+)?(?:{lexicon.JOBS}))\b",
    re.IGNORECASE,
)
_JOB_ZH = re.compile(
    rf"(?:我(?:是|当)|作为|我的职业是)(?:一名|一个|一位|个)?(?P<job>[\u4e00-\u9fff]{{0,4}}?(?:{lexicon.JOBS_ZH}))"
)
_EMPLOYER_EN = re.compile(
    r"(?:\bI(?:'ve| have)?\s+(?:just\s+|recently\s+)?(?:work|am working|started(?: a new job)?|joined|began)\s+"
    r"(?:at|for|with)?"
    r"|\b(?i:starting|started|joining|joined) (?:at )?|\bI(?:'m| am) an? (?:[a-z-]+ ){0,2}(?:"
    + lexicon.JOBS
    + r") (?:at|for|with))\s*(?P<org>[A-Z][\w&.-]+(?:\s+[A-Z][\w&.-]+){0,3})"
)
_EMPLOYER_ZH = re.compile(r"我在(?P<org>[\u4e00-\u9fffA-Za-z]{2,10}?)(?:工作|上班)")
_NAME = re.compile(
    r"\bmy\s+name\s+is\s+(?P<n>[A-Z][\w'-]+)|\bcall\s+me\s+(?P<m>[A-Z][\w'-]+)|我叫(?P<z>[\u4e00-\u9fff]{2,3})"
)
_PET_EN = re.compile(
    rf"\bmy\s+(?P<kind>{lexicon.PETS})(?:'s name is|,? named|,? called|,)?\s+(?P<name>(?-i:[A-Z])[\w'-]+)"
    rf"|\bI\s+have\s+an?\s+(?P<kind2>{lexicon.PETS})\s+(?:named|called)\s+(?P<name2>[A-Z][\w'-]+)",
    re.IGNORECASE,
)
_PET_ZH = re.compile(
    rf"我(?:家)?(?:的|养的|养了一只|有一只)?(?P<kind>{lexicon.PETS_ZH})(?:叫|名叫|名字叫)(?P<name>[\u4e00-\u9fff]{{1,4}}?)"
    r"(?=[，,。.！!？?\s]|[一二两三四五六七八九十\d]|今|最|又|$)"
)
_RELATIVE = re.compile(
    rf"\b(?i:my)\s+(?i:(?P<rel>{lexicon.RELATIVES}))(?:'s name is|,? named|,? called|,)?\s+"
    rf"(?P<name>[A-Z][a-z][\w'-]*)\b"
)
# The allergen: a word or two, up to punctuation or the next clause ("allergic to peanuts when you pick ...").
_RELATIVES_ZH = (
    "女儿|儿子|老婆|老公|妻子|丈夫|太太|先生|妈妈|爸爸|姐姐|哥哥|妹妹|弟弟|奶奶|爷爷|外婆|外公|男朋友|女朋友"
)
_RELATIVE_ZH = re.compile(
    rf"我(?:的|家)?(?P<rel>{_RELATIVES_ZH})(?:叫|名叫)?(?P<name>[\u4e00-\u9fff]{{2,3}}?)(?=[，,。.！!？?\s]|下|最|要|的|今|明|昨|在|说|想|又|老|是|刚|也|和|跟|$)"
)
_ALLERGY_EN = re.compile(
    r"\ballergic\s+to\s+(?P<a>[a-z][a-z-]+(?:\s+(?!and\b|so\b|but\b|when\b|if\b|which\b|because\b|too\b|as\b)"
    r"[a-z][a-z-]+)?)",
    re.IGNORECASE,
)
_ALLERGY_ZH = re.compile(r"对(?P<a>[\u4e00-\u9fff]{1,6}?)过敏")
# "a peanut allergy", "no peanuts, I'm allergic": the allergen before the word.
_ALLERGY_BEFORE = re.compile(
    r"\b(?:no\s+|without\s+|can'?t\s+(?:have|eat)\s+)?(?P<a>[a-z]{3,}?)s?,?\s+(?:\(?me\)?\s+)?\(?"
    r"(?:allerg(?:y|ies)\b|(?:I'?m|I am)\s+allergic\b)"
    r"|\b(?P<free>[a-z]{3,}?)s?[- ]free\b.{0,40}\ballerg",
    re.IGNORECASE,
)
_DIET_EN = re.compile(
    r"\bI(?:'m| am)\s+(?:a\s+|strictly\s+|fully\s+)?(?P<d>vegetarian|vegan|pescatarian|lactose intolerant)\b"
    r"|\b(?:I|we)\s+(?:only\s+)?(?:eat|keep)\s+(?P<d2>halal|kosher)\b"
    r"|\b(?P<d3>gluten[- ]free|dairy-free)\s+(?:diet|only)\b",
    re.IGNORECASE,
)
_DIET_ZH = re.compile(r"我(?:是|一直|现在|只)?(?P<d>吃素|素食主义|素食|纯素|吃清真)")
_AVOID_FOOD = re.compile(
    r"\bI\s+(?:don't|do not|never|can't|cannot)\s+eat\s+(?P<f>pork|beef|meat|fish|seafood|shellfish|dairy|eggs|"
    r"gluten|spicy food|nuts)\b|我不(?:能)?吃(?P<z>猪肉|牛肉|肉|鱼|海鲜|辣|鸡蛋|乳制品)",
    re.IGNORECASE,
)


def fact_signals(text: str) -> list[Signal]:
    """Stable statements about the user: home, job, employer, name, pets, family, allergies, diet."""
    found = _where_and_work(text)
    m = _NAME.search(text)
    if m:
        found.append(Signal("fact", "name", "name", next(g for g in m.groups() if g)))
    found += _pet_and_family(text)
    found += _allergies(text)
    found += _diet(text)
    return _distinct(found)


_CALENDAR_WORDS = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "today", "yesterday",
    "tomorrow", "last", "next", "this",
})  # fmt: skip


def _where_and_work(text: str) -> list[Signal]:
    found: list[Signal] = []
    for pattern in (*_HOME_EN, _HOME_ZH):
        for m in pattern.finditer(text):
            if not negated_before(text, m.start()):
                found.append(Signal("fact", "home_city", "home", m.group("place")))
    for dimension, group, patterns in (
        ("job", "job", (_JOB_EN, _JOB_ZH)),
        ("employer", "org", (_EMPLOYER_EN, _EMPLOYER_ZH)),
    ):
        for pattern in patterns:
            found_match = pattern.search(text)
            if found_match and not negated_before(text, found_match.start()):
                value = found_match.group(group)
                if value.split()[0].lower() in _CALENDAR_WORDS:
                    continue  # "It all started August last year": a date, not an employer
                found.append(Signal("fact", dimension, dimension, value.lower() if dimension == "job" else value))
    return found


_NOT_ALLERGENS = frozenset({"an", "the", "my", "food", "some", "any"})


def _allergen(word: str) -> bool:
    """A word that can name what one is allergic to: not a word of grammar, an adverb ("Unfortunately, I'm
    allergic"), or a conjunction ("since I'm allergic")."""
    first = word.split()[0]
    return not (word in _NOT_ALLERGENS or first in STOP_WORDS or first.endswith("ly") or first in _CONJUNCTIONS)


_CONJUNCTIONS = frozenset({"since", "because", "cause", "though", "although", "unless", "whereas"})


def _allergies(text: str) -> list[Signal]:
    found: list[Signal] = []
    for pattern in (_ALLERGY_EN, _ALLERGY_ZH, _ALLERGY_BEFORE):
        for m in pattern.finditer(text):
            allergen = (m.group("a") or m.groupdict().get("free") or "").strip().lower()
            negated = pattern is not _ALLERGY_BEFORE and negated_before(text, m.start())
            if allergen and _allergen(allergen) and not negated:
                found.append(Signal("fact", "allergy", _singular(allergen), "allergic"))
    return found


def _unpossessed(name: str) -> str:
    """ "Maya's" -> "Maya"."""
    return re.sub(r"'s$", "", name)


def _singular(word: str) -> str:
    """ "peanuts" -> "peanut": one allergen however it is said (English plurals only)."""
    if word.isascii() and len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _pet_and_family(text: str) -> list[Signal]:
    found: list[Signal] = []
    for pattern in (_PET_EN, _PET_ZH):
        for m in pattern.finditer(text):
            groups = m.groupdict()
            kind = (groups.get("kind") or groups.get("kind2") or "").lower()
            name = groups.get("name") or groups.get("name2")
            if kind and name and name.lower() not in ("is", "was", "and", "the"):
                found.append(Signal("fact", "pet", kind, _unpossessed(name)))
    for m in _RELATIVE.finditer(text):
        found.append(Signal("fact", "family", m.group("rel").lower(), _unpossessed(m.group("name"))))
    for m in _RELATIVE_ZH.finditer(text):
        found.append(Signal("fact", "family", m.group("rel"), m.group("name")))
    return found


def _diet(text: str) -> list[Signal]:
    found: list[Signal] = []
    for pattern in (_DIET_EN, _DIET_ZH):
        m = pattern.search(text)
        if m and not negated_before(text, m.start()):
            word = next(g for g in m.groups() if g).lower()
            value = lexicon.DIETS.get(word) or lexicon.DIETS.get(word.replace(" ", "-"))
            if value:
                found.append(Signal("fact", "diet", "diet", value))
    for m in _AVOID_FOOD.finditer(text):
        food = (m.group("f") or m.group("z") or "").lower()
        if food in ("meat", "肉") and not found:
            found.append(Signal("fact", "diet", "diet", "vegetarian"))
        elif food:
            found.append(Signal("fact", "diet", food, "avoids"))
    return found


# --- habits -----------------------------------------------------------------------------------------------------

_ACTIVITY_WORDS = _alternation(w for w in lexicon.ACTIVITIES if w.isascii())
_ACTIVITY_EN = re.compile(rf"\b(?P<a>{_ACTIVITY_WORDS})\b", re.IGNORECASE)
_ACTIVITY_ZH = re.compile("|".join(re.escape(w) for w in lexicon.ACTIVITIES if not w.isascii()))
# An activity word names exercise only next to one of these ("ran the tests" is no run).
_EXERCISE_CONTEXT = re.compile(
    r"\b(?:\d+(?:\.\d+)?\s*(?:k|km|kilomet\w*|miles?|mi|laps|minutes|mins?|hours?)|morning|evening|before work|"
    r"after work|park|trail|track|pool|beach|marathon|workout|exercise|training|class|session|went for|go for|"
    r"my (?:run|swim|ride|hike)|pace|personal best|pb|every day|daily|weekly|each week|times a week|gym|group ride|"
    r"(?:road |mountain )?bike|ride|riding|climbing gym|exercises|wall|routes?)\b"
    r"|早上|早晨|晚上|周末|公里|圈|锻炼|每周|每天",
    re.IGNORECASE,
)
_NOT_EXERCISE = re.compile(
    r"\b(?:ran|run|running|runs)\s+(?:the\s+|a\s+|an\s+|my\s+|our\s+|this\s+|that\s+)?(?:\w+\s+)?"
    r"(?:tests?|scripts?|jobs?|migrations?|pipelines?|builds?|quer(?:y|ies)|servers?|code|commands?|program|app|"
    r"analysis|report|numbers|errands?|late|out of|into|over|away|low|through|a business|a company|the show)\b"
    r"|\brunning\s+(?:late|low|out|on|a|the)\b|跑(?:了)?(?:一下|一个|个)?(?:测试|脚本|程序|代码|任务)",
    re.IGNORECASE,
)
_SLOTS = (
    (re.compile(r"\bmorning\b|早上|早晨|清晨|晨跑", re.I), "morning"),
    (re.compile(r"\bevening\b|\bafter work\b|\btonight\b|晚上|傍晚|下班后", re.I), "evening"),
    (re.compile(r"\bweekends?\b|\bsaturday\b|\bsunday\b|周末|星期六|星期天|周六|周日", re.I), "weekend"),
)


# An activity given up: "羽毛球先停了", "quit tennis", "stopped running".
_GIVEN_UP_AFTER = re.compile(r"^.{0,4}(?:停了|不打了|不跑了|不练了|放弃了|暂停)|^\s*(?:is|was)\s+over\b", re.IGNORECASE)
_GIVEN_UP_BEFORE = re.compile(r"\b(?:quit|stopped|gave up|no more|give up)\s+(?:\w+\s+)?$|(?:不再|放弃了?|停了)$", re.I)


def habit_signals(text: str) -> list[Signal]:
    """ "Went for my morning run, 5k" -> exercise: routine = running. One such episode is an event; consolidation
    makes it a habit only when it recurs (see evidence.HABIT_MIN_OCCURRENCES). Of several activities, the
    last one not given up counts ("羽毛球先停了，开始去练瑜伽" is yoga)."""
    if _NOT_EXERCISE.search(text):
        return []
    found: list[tuple[int, str]] = []
    if _EXERCISE_CONTEXT.search(text):
        found += [(m.start(), lexicon.ACTIVITIES[m.group("a").lower()]) for m in _ACTIVITY_EN.finditer(text)]
    found += [(z.start(), lexicon.ACTIVITIES[z.group(0)]) for z in _ACTIVITY_ZH.finditer(text)]
    kept = [
        (at, activity)
        for at, activity in sorted(found)
        if not negated_before(text, at)
        and not _GIVEN_UP_BEFORE.search(text[max(0, at - 20) : at])
        and not _GIVEN_UP_AFTER.search(text[at + 1 : at + 12])
    ]
    if not kept:
        return []
    return [Signal("fact", "exercise", "routine", kept[-1][1])]


def time_slot(text: str) -> str | None:
    """When in the day or week an activity happens, if the text says: morning, evening or weekend."""
    return next((name for pattern, name in _SLOTS if pattern.search(text)), None)


# --- code style ---------------------------------------------------------------------------------------------------

_NAMING = (
    (re.compile(r"\bsnake[_ ]case\b|下划线|蛇形", re.I), "snake_case"),
    (re.compile(r"\bcamel[_ ]?case\b|驼峰", re.I), "camelCase"),
    (re.compile(r"\bpascal[_ ]?case\b|大驼峰", re.I), "PascalCase"),
    (re.compile(r"\bkebab[_ -]case\b|短横线", re.I), "kebab-case"),
)
_NAMING_CONTEXT = re.compile(r"\b(?:names?|naming|variables?|functions?|identifiers?|keys?)\b|命名|变量|函数|名", re.I)


def code_style_signals(text: str) -> list[Signal]:
    """ "Use snake_case for variables", "变量名用下划线那种，别驼峰" -> code: naming = snake_case."""
    if not is_request(text) or not _NAMING_CONTEXT.search(text):
        return []
    for pattern, value in _NAMING:
        m = pattern.search(text)
        if m and not negated_before(text, m.start()):
            return [Signal("preference", "code", "naming", value)]
    return []


# --- all of them ------------------------------------------------------------------------------------------------

EXTRACTORS: tuple[Callable[[str], list[Signal]], ...] = (
    language_signals,
    format_signals,
    length_signals,
    style_signals,
    unit_signals,
    travel_signals,
    choice_signals,
    code_style_signals,
    fact_signals,
    habit_signals,
)


def signals_of(text: str) -> list[Signal]:
    """Every signal the rules recognise in one episode's text."""
    text = normalise(text)
    found: list[Signal] = []
    for extract in EXTRACTORS:
        found.extend(extract(text))
    return _distinct(found)


def _distinct(signals: list[Signal]) -> list[Signal]:
    return list(dict.fromkeys(signals))
