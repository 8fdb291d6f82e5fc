"""The rules every write passes: content checks, secret redaction (`rearview.service.redaction`), and the importance
score.

All three are deterministic heuristics with no model behind them, so a caller can predict (and a test can pin)
what happens to a given text. `check_content` rejects what should never be stored; `redact_secrets` keeps what
should be stored but masks credentials in it; `score_importance` decides whether an episode is worth keeping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal

from rearview.domain.limits import MAX_EPISODE_CHARS, MAX_FACT_CHARS, MAX_WRITE_CHARS
from rearview.errors import InvalidInput, MemoryTooLarge
from rearview.service.redaction import Redaction, redact_text
from rearview.text_analysis import CJK_FUNCTION_CHARS, STOP_WORDS, is_cjk, tokens

# --- content checks -----------------------------------------------------------------------------------------

_MAX_CHARS: dict[str, int] = {"episodic": MAX_EPISODE_CHARS, "semantic": MAX_FACT_CHARS}
_ALLOWED_CONTROLS = frozenset("\t\n\r")  # \r: text from Windows clients ends lines with \r\n
# Unicode's control characters (category Cc: U+0000-001F and U+007F-009F, fixed since Unicode 1.1) but those allowed.
_FORBIDDEN_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# A JSON object/array with this many keys/items, or this long, is a dump rather than a statement.
JSON_DUMP_MIN_ITEMS = 3
JSON_DUMP_MIN_CHARS = 200
# An embedded JSON value covering this share of the text makes the text a dump ("Response: {...}").
_JSON_DUMP_COVERAGE = 0.8
# Brackets nested deeper than this (outside strings) are a dump, whether or not the JSON parser could follow them:
# its depth limit differs between Python versions (3.11 raises RecursionError near 1000 levels, 3.12+ goes deeper),
# and no statement nests that deep.
_MAX_BRACKET_DEPTH = 64
# Code dumps: at least this many non-blank lines, of which more than this share look like code.
CODE_DUMP_MIN_LINES = 4
CODE_DUMP_MIN_SHARE = 0.5

# Lines that open like code in common languages (Python, JS/TS, C family, Go, Rust, Java, SQL, shell, HTML).
# Keywords are matched in their code case: prose capitalises its first word ("Import duties rose").
_CODE_LINE_START = re.compile(
    r"""^\s*(?:
        (?:async\s+)?def\s+\w+\s*\(
      | class\s+\w+\s*[:(<{] | class\s+\w+\s+(?:extends|implements)\b
      | import\s+[\w.{*] | from\s+[\w.]+\s+import\b
      | (?:export\s+)?(?:default\s+)?(?:async\s+)?function\b | (?:const|let|var)\s+[\w{\[]+\s*[=:;]
      | return\b.*[;)\]}]\s*$ | (?:elif|else|try|finally|except)\b.*:\s*$ | (?:if|for|while|switch)\s*\(
      | \#\s*(?:include|define|ifdef|ifndef|endif|pragma)\b | \#!/ | package\s+[\w.]+;?\s*$
      | func\s+\w+\s*\( | (?:pub\s+)?fn\s+\w+\s*[(<]
      | (?:public|private|protected|static)\s+(?:static\s+|final\s+)?[\w<>\[\]]+\s+\w+\s*[({=;]
      | using\s+namespace\b | @\w+(?:\(.*\))?\s*$ | // | /\* | \*/ | \$\s+\S | >>>\s
      | (?:SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|CREATE\s+TABLE)\b.*\b(?:FROM|VALUES|SET|WHERE|\()
      | <\?php | </?[a-z][\w-]*(?:\s[^>]*)?/?>
    )""",
    re.VERBOSE,
)
_CODE_LINE_END = re.compile(r"(?:[;{}]|\)\s*:|=>|\\)\s*$")
_CODE_SYMBOLS = frozenset("{}[]()<>;=+*/\\|&$^~`")
# A line where this share of the visible characters are code symbols is code ("x[i] = f(a, b) * 2").
_CODE_SYMBOL_DENSITY = 0.2


def check_content(
    content: str, layer: Literal["episodic", "semantic"], *, field: str = "content", chunked: bool = False
) -> None:
    """Raise InvalidInput (MemoryTooLarge for length) if `content` may not be stored in `layer`; `chunked`: an
    episodic write, which may be as long as MAX_WRITE_CHARS (stored as chunks, `rearview.service.chunking`).

    Messages name `field` (batch callers pass `items[3].content`) and the rule broken. Positions are 0-based.
    """
    limit = _MAX_CHARS.get(layer)
    if limit is None:
        raise InvalidInput(f"layer: must be episodic or semantic (got {layer!r})", field="layer")
    if chunked and layer == "episodic":
        limit = MAX_WRITE_CHARS
    if not content or not content.strip():
        raise InvalidInput(f"{field}: must not be empty", field=field)
    if len(content) > limit:
        article = "an" if layer == "episodic" else "a"
        raise MemoryTooLarge(
            f"{field}: must be at most {limit} characters for {article} {layer} memory (got {len(content)})",
            field=field,
        )
    control = _FORBIDDEN_CONTROL.search(content)
    if control is not None:
        raise InvalidInput(
            f"{field}: contains control character U+{ord(control.group()):04X} at position {control.start()} "
            "(only tab, newline and carriage return are allowed)",
            field=field,
        )
    if looks_like_json_dump(content):
        raise InvalidInput(
            f"{field}: looks like a raw JSON document; store the fact it states, not the dump", field=field
        )
    code_lines = code_dump_lines(content)
    if code_lines:
        raise InvalidInput(
            f"{field}: looks like a code dump ({code_lines} lines of code); store what happened, not the code",
            field=field,
        )


def _json_size(value: object) -> int:
    """Keys and items at every depth: a nested object of two keys holding five more is a dump of seven."""
    size, stack = 0, [value]
    while stack:  # iterative: a document nested as deep as the parser allows must not overflow here
        item = stack.pop()
        children = list(item.values()) if isinstance(item, dict) else item if isinstance(item, list) else []
        size += len(children)
        stack.extend(children)
    return size


def _is_json_dump(value: object, span: int) -> bool:
    if not isinstance(value, dict | list):
        return False
    return span > JSON_DUMP_MIN_CHARS or _json_size(value) >= JSON_DUMP_MIN_ITEMS


def looks_like_json_dump(content: str) -> bool:
    """True if the text is (almost all) a JSON object/array of 3+ keys/items (at any depth) or 200+ chars.

    A sentence that merely contains braces ("use {name} as a placeholder") does not parse and is fine.
    """
    text = content.strip()
    if _bracket_depth(text) > _MAX_BRACKET_DEPTH:
        return True
    try:
        return _is_json_dump(json.loads(text), len(text))
    except RecursionError:
        # Valid so far and nested deeper than the parser goes: no statement looks like that.
        return True
    except ValueError:
        pass  # not JSON as a whole: look for a dump behind a short label
    decoder = json.JSONDecoder()
    # Only the first few opening brackets are tried: a dump wrapped in a short label starts early.
    starts = [i for i, ch in enumerate(text) if ch in "{["][:8]
    for start in starts:
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        span = end - start
        if span >= _JSON_DUMP_COVERAGE * len(text) and _is_json_dump(value, span):
            return True
    return False


def _bracket_depth(text: str) -> int:
    """How deep `[` and `{` nest in the text, outside double-quoted strings (closed or not)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _is_code_line(line: str) -> bool:
    stripped = line.strip()
    if _CODE_LINE_START.match(stripped) or _CODE_LINE_END.search(stripped):
        return True
    visible = [ch for ch in stripped if not ch.isspace()]
    symbols = sum(1 for ch in visible if ch in _CODE_SYMBOLS)
    return symbols >= 3 and symbols / len(visible) >= _CODE_SYMBOL_DENSITY


def code_dump_lines(content: str) -> int:
    """How many lines of code the text holds if it is a code dump (4+ lines, mostly code), else 0."""
    lines = [line for line in content.splitlines() if line.strip()]
    if len(lines) < CODE_DUMP_MIN_LINES:
        return 0
    code = sum(1 for line in lines if _is_code_line(line))
    return code if code / len(lines) > CODE_DUMP_MIN_SHARE else 0


# --- secrets ------------------------------------------------------------------------------------------------

# Redaction lives in rearview.service.redaction; its names are kept here for the callers of the content rules.
redact_secrets = redact_text


# --- importance ---------------------------------------------------------------------------------------------

# The score is a weighted sum of features, clipped to [0, 1]:
#   SMALL_TALK_BASE for small talk (only greetings, acknowledgements, laughter), nothing else from the text;
#   otherwise INFORMATIVE_BASE
#     + CONTENT_WORD_WEIGHT per content word (not a stop word; a CJK character pair), up to CONTENT_WORDS_CAP
#     + EXPLICIT_WEIGHT if the text asks to be remembered ("remember that", "don't forget", "记住")
#     + PREFERENCE_WEIGHT for a preference ("I prefer", "I'm allergic", "我喜欢"), or else
#       CONSTRAINT_WEIGHT for a rule or limit ("always", "never", "deadline", "budget", "必须")
#     + NAME_WEIGHT, DATE_WEIGHT, NUMBER_WEIGHT, EMAIL_WEIGHT when the text holds one;
#   + SEMANTIC_WEIGHT for a fact, + ENTITIES_WEIGHT when the caller named entities.
# The write threshold (settings.write.importance_threshold, 0.2) sits between the two bases: small talk is
# skipped and anything else is kept. Explicit requests land at 0.9 or more, preferences and rules at 0.7+.
SMALL_TALK_BASE = 0.05
INFORMATIVE_BASE = 0.25
CONTENT_WORD_WEIGHT = 0.025
CONTENT_WORDS_CAP = 8
EXPLICIT_WEIGHT = 0.65
PREFERENCE_WEIGHT = 0.45
CONSTRAINT_WEIGHT = 0.45
NAME_WEIGHT = 0.1
DATE_WEIGHT = 0.1
NUMBER_WEIGHT = 0.1
EMAIL_WEIGHT = 0.1
SEMANTIC_WEIGHT = 0.2
ENTITIES_WEIGHT = 0.1

# An instruction to remember, at the start of a clause or after "please" / "I want you to"; "do you remember
# when ..." and "I remember the trip" are not instructions.
_EXPLICIT = re.compile(
    r"(?:^|[.!?;:,\n]\s*|\bplease\s+|\b(?:want|need)\s+you\s+to\s+)"
    r"(?:remember(?!\s+(?:when|how|what|where|who|why|the\s+time)\b)|don'?t\s+forget|do\s+not\s+forget|"
    r"never\s+forget|keep\s+in\s+mind|note\s+that|note:|make\s+a\s+note|take\s+note)"
    r"|\bfor\s+future\s+reference\b"
    r"|记住|記住|(?<![还不你我])记得(?![吗吧])|别忘|不要忘|請記|记一下|备忘",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:i|we)\s+(?:really\s+|much\s+|do\s+|still\s+)?(?:prefer|like|love|enjoy|hate|dislike|adore|detest)\b"
    r"|\bi'?d\s+(?:rather|prefer)\b|\bi\s+(?:can'?t|cannot)\s+stand\b"
    r"|\b(?:i|we)\s+(?:don'?t|do\s+not)\s+(?:like|want|eat|drink)\b|\bmy\s+(?:favou?rite|preferred)\b"
    r"|\b(?:i'?m|i\s+am)\s+(?:allergic|vegetarian|vegan|lactose|gluten)|\ballergic\s+to\b"
    r"|我(?:很|最|也|更|还|真|比较|特别|非常)?不?(?:喜欢|爱|讨厌|偏好|想要)|过敏|最喜欢|素食",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\b(?:always|never|must|mustn'?t|don'?t|do\s+not|cannot|can'?t|shouldn'?t|need\s+to|have\s+to|"
    r"required?|deadline|due\s+(?:by|on|date)|budget|no\s+later\s+than|at\s+most|at\s+least)\b"
    r"|必须|一定要|不要|不能|别|总是|从不|永远|截止|预算|最多|至少|只能",
    re.IGNORECASE,
)
# Words that make a negated or modal sentence vague rather than a rule ("I don't know", "can't wait").
_VAGUE_WORDS = frozenset(
    {"know", "think", "guess", "mean", "mind", "care", "sure", "worry", "matter", "believe", "wait", "tell"}
)
# A cue word is not the substance a cue needs ("never mind", "I love it").
_CUE_WORDS = frozenset(
    {
        "always",
        "never",
        "must",
        "mustn",
        "need",
        "required",
        "require",
        "deadline",
        "due",
        "budget",
        "least",
        "later",
        "prefer",
        "like",
        "love",
        "enjoy",
        "hate",
        "dislike",
        "adore",
        "detest",
        "stand",
        "rather",
        "favourite",
        "favorite",
        "preferred",
        "allergic",
        "want",
        "eat",
        "drink",
        "shouldn",
        "can",
        "cannot",
    }
)

_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_MONTHS = (
    "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    "oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_DATE = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b\d{1,2}:\d{2}\b|\b\d{1,2}\s*(?:am|pm)\b"
    rf"|\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b"
    rf"|\b(?:{_WEEKDAYS}|tomorrow|yesterday|tonight)\b"
    r"|\d+\s*[年月日号]|星期[一二三四五六日天]|周[一二三四五六日末]|[今明昨前后]天",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d|[一二三四五六七八九十百千万两]+[个岁块元次年月天号]")
_CAPITALISED = re.compile(r"\b([A-Z][a-z]+(?:['\u2019][a-z]+)?|[A-Z]{2,6})\b")
_MONTH_OR_DAY = re.compile(rf"(?:{_MONTHS}|{_WEEKDAYS})", re.IGNORECASE)
# Capitalised words that are not names wherever they stand.
_NOT_NAMES = frozenset(
    {"I", "I'm", "I've", "I'll", "I'd", "OK", "LOL", "LMAO", "OMG", "BTW", "TBH", "FYI", "IMO", "THX", "TY"}
)
# Characters after which a capital letter is grammar (a sentence or quotation starts), not a name.
_SENTENCE_OPENERS = frozenset(".!?:;\n\"'(\u3002\uff01\uff1f")

_SMALL_TALK_WORDS_TEXT = (
    "hi hey hello hiya yo howdy sup greetings morning evening afternoon night good goodnight gm gn bye "
    "goodbye cya later see ya you too ok okay k kk alright fine sure yes yeah yep yup no nope nah cool nice "
    "great awesome perfect wow oh ah hmm um uh lol lmao rofl haha hahaha hehe xd omg thanks thank thx ty "
    "tysm cheers much so a lot very welcome yw np problem got it understood noted sounds right true indeed "
    "agreed the all best care take there everyone guys folks what's up how are doing well am i"
)
_SMALL_TALK_WORDS = frozenset(_SMALL_TALK_WORDS_TEXT.split())
_SMALL_TALK_LAUGH = re.compile(r"^(?:ha|he|hi|ja|xa)+h?$|^l+o+l+$|^k+$|^o*k+a*y*$|^h+m+$")
_SMALL_TALK_ZH = re.compile(
    r"^(?:哈+|呵+|嘿+|嘻+|嗯+|哦+|噢+|喔+|好的?|好吧|好滴|行|可以|收到|明白了?|知道了|了解|没问题|谢谢你?|"
    r"多谢|感谢|不客气|你好|您好|早上好|早安|早|午安|晚上好|晚安|拜拜|再见|回见|是的?|对的?|嗯哼|哇|棒|厉害|"
    r"太好了|好啊|啊|呀|吧|啦|了|呢)+$"
)


def is_small_talk(content: str) -> bool:
    """True if the text is only greetings, acknowledgements, laughs, emoji ("hi!", "ok thanks", "哈哈")."""
    text = content.strip()
    if any(is_cjk(ch) for ch in text):
        cjk_only = "".join(ch for ch in text if is_cjk(ch))
        if not _SMALL_TALK_ZH.match(cjk_only):
            return False
    words = re.findall(r"[A-Za-z0-9']+", text)
    if len(words) > 8:
        return False
    chatter = [w for w in words if w.lower() in _SMALL_TALK_WORDS or _SMALL_TALK_LAUGH.match(w.lower())]
    others = [w for w in words if w not in chatter]
    if not others:
        return True
    # "Thanks Sarah!", "Hi Bob": a greeting addressed to someone is still a greeting.
    return bool(chatter) and len(others) <= 2 and all(w[0].isupper() and w[1:].islower() for w in others)


def _content_words(content: str) -> tuple[list[str], int]:
    """The text's non-stop words, and its CJK content units (a pair of non-function characters is one)."""
    latin = [t for t in tokens(content) if not is_cjk(t[0]) and t not in STOP_WORDS]
    cjk_chars = sum(1 for ch in content if is_cjk(ch) and ch not in CJK_FUNCTION_CHARS)
    return latin, (cjk_chars + 1) // 2


def _has_name(content: str) -> bool:
    """True if a capitalised word stands where grammar does not capitalise it, or an acronym appears."""
    shouting = content.upper() == content
    for match in _CAPITALISED.finditer(content):
        word = match.group(1)
        if word in _NOT_NAMES or _MONTH_OR_DAY.fullmatch(word):
            continue
        if word.isupper():
            if not shouting:
                return True
            continue
        before = content[: match.start()].rstrip()
        if before and before[-1] not in _SENTENCE_OPENERS:
            return True
    return False


def _text_score(content: str) -> float:
    if is_small_talk(content):
        return SMALL_TALK_BASE
    latin_words, cjk_units = _content_words(content)
    score = INFORMATIVE_BASE + CONTENT_WORD_WEIGHT * min(len(latin_words) + cjk_units, CONTENT_WORDS_CAP)
    if _EXPLICIT.search(content):
        score += EXPLICIT_WEIGHT
    # A cue needs some substance besides itself: "I don't know" and "never mind" are neither rules nor tastes.
    substantive = cjk_units >= 2 or any(w not in _VAGUE_WORDS and w not in _CUE_WORDS for w in latin_words)
    if substantive and _PREFERENCE.search(content):
        score += PREFERENCE_WEIGHT
    elif substantive and _CONSTRAINT.search(content):
        score += CONSTRAINT_WEIGHT
    if _has_name(content):
        score += NAME_WEIGHT
    if _DATE.search(content):
        score += DATE_WEIGHT
    if _NUMBER.search(content):
        score += NUMBER_WEIGHT
    if _EMAIL.search(content):
        score += EMAIL_WEIGHT
    return score


def score_importance(
    content: str,
    *,
    layer: str = "episodic",
    entities: Sequence[str] = (),
    explicit: float | None = None,
) -> float:
    """How worth keeping a memory is, in [0, 1]: a clipped weighted sum of text features (weights above).

    `explicit` (the caller's own importance) overrides the heuristic.
    """
    if explicit is not None:
        return min(1.0, max(0.0, float(explicit)))
    score = _text_score(content)
    if layer == "semantic":
        score += SEMANTIC_WEIGHT
    if entities:
        score += ENTITIES_WEIGHT
    return round(min(1.0, max(0.0, score)), 4)


__all__ = ["Redaction", "check_content", "redact_secrets", "score_importance"]
