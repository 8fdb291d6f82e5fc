"""Who says what in an episode, whatever voice it is logged in: the user's own turn ("please use metric"), an agent's
report of it ("The user asked for the forecast in Celsius", "用户要求用公里"), a quoted turn (`User: "dark mode
please"`), or an agent's action done for the user ("Exported the report to PDF as the user prefers").

An episode is cut into clauses; each becomes a `Unit`: its words without the reporting frame ("The user asked
to ..."), whose it is (`holder`: the user, someone else, or the agent acting on its own), what kind of saying it is
(`act`: a wish, a state of things, an event), and which of its terms are negated or given up ("no emojis",
"quit coffee", "不要发邮件"). Consolidation groups units by meaning; this module only reads the grammar of voice.

The word lists here are definitions, small and named: the words that refer to the user, the people who are not
the user, the verbs that report a wish or a statement, negation and change.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from typing import Literal

from rearview.domain.memory import Episode
from rearview.service.time_expressions import WEEKDAYS
from rearview.stemming import index_terms
from rearview.text_analysis import STOP_WORDS, asks_question, is_cjk, query_terms, without_asides

Holder = Literal["user", "other", "agent"]
Act = Literal["wish", "state", "event"]


def normalise(text: str) -> str:
    """NFKC (full-width forms to ASCII), curly quotes straightened, whitespace folded."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")
    return re.sub(r"\s+", " ", text).strip()


# A chat transcript's speaker label at the start of a turn ("Deborah: take care"): who spoke, not what was said.
_SPEAKER = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z]+)?:\s+")


def without_speaker(text: str) -> str:
    """The text without a leading speaker label ("Deborah: take care" -> "take care")."""
    return _SPEAKER.sub("", text.lstrip(), count=1)


# --- definitions --------------------------------------------------------------------------------------------------

# Who the user is in a log: the user, the first person of the user's own turn, and the pronouns that refer back.
_USER_EN = r"(?:the\s+)?(?:user|customer|client)|i|we"
_PRONOUN_EN = r"he|she|they"
_USER_ZH = "用户|客户|我"
_PRONOUN_ZH = "他|她"
# People who are not the user: a relation names them ("her colleague", "用户的老板"), and what they want is theirs.
OTHER_PEOPLE_EN = (
    "colleague|colleagues|coworker|co-worker|teammate|boss|manager|wife|husband|partner|son|daughter|kids?|"
    "children|mother|father|mom|mum|dad|friend|friends|sister|brother|parents?|team|assistant|neighbou?r"
)
OTHER_PEOPLE_ZH = (
    "同事|老板|领导|上司|经理|妻子|老婆|丈夫|老公|女儿|儿子|孩子|妈妈|爸爸|母亲|父亲|朋友|姐姐|哥哥|妹妹|弟弟|团队|邻居"
)
# Verbs that report a wish (a request, a choice, a correction) and ones that report a statement.
_WISH_EN = (
    r"asks?|asked|requests?|requested|wants?|wanted|prefers?|preferred|insists?|insisted|reminds?|reminded|"
    r"corrects?|corrected|needs?|needed|likes?|liked|would like|chose|chooses|picked|declined|told the agent|"
    r"keeps? asking|always asks|expects?|expected"
)
_STATE_EN = r"mentioned|mentions|said|says|noted|notes|told|tells|explained|explains|confirmed|confirms|shared|stated"
_WISH_ZH = "要求|希望|想要|让|请|提醒|纠正|坚持|习惯|喜欢|偏好|要|选择|选了|拒绝了"
_STATE_ZH = "提到|说|表示|告诉|透露|确认|讲"
# A modal or adverb that makes a statement a standing wish: "meetings should go in the morning", "以后都用微信".
STANDING = re.compile(
    r"\b(?:should|must|never|from now on|going forward|by default|please|pls)\b|^以后|^今后|一律|都要|默认|务必|^请",
    re.IGNORECASE,
)
# A modal or a negative imperative that says what the user wants, in a reported statement ("the user said to call
# after nine, 别打扰他").
_WISHED = re.compile(r"\b(?:would rather|'d rather)\b|别|不要", re.IGNORECASE)
# What opens a value slot: the way something is to be done ("in Celsius", "as a PDF", "用微信", "改到上午"), as
# against the task's topic ("the Python docs"). A preference is a value asked for again; a topic asked about again
# is a run of tasks.
_VALUE_OPENERS_EN = frozenset(
    re.findall(
        r"\S+",
        "in into to as on via with by using use uses before after at for more less than only prefer prefers want "
        "wants like likes need needs keep switch set make over instead",
    )
)
# "发" as in "发微信", "发我邮件": the channel a thing is sent by.
_VALUE_OPENERS_ZH = (
    "改用", "换成", "通过", "都要", "用", "以", "按", "成", "到", "在", "走", "得", "只", "更", "比较", "发",
)  # fmt: skip
_SKIPPED_EN = frozenset({"the", "a", "an", "my", "his", "her", "their", "your", "our", "some"})
# Negation and giving up: the terms after one of these, in its clause, are negated.
# A Chinese yes-no question holds a 不 or 没 that negates nothing: 能不能 (can you), 有没有, 要不要, 可不可以.
ZH_YES_NO = re.compile(r"(.)[不没]\1|可不可以")
_NEGATION = re.compile(
    r"\b(?:not|no|never|don'?t|doesn'?t|didn'?t|won'?t|isn'?t|aren'?t|cannot|can'?t|without|avoid|avoids|"
    r"no longer|no more|any ?more|stop(?:ped)?|quit|quitting|gave up|give up|instead of|rather than|"
    r"left|dropped|ditched|over)\b"
    r"|不要|不再|不用|不想|不能|别|没有|没|不|戒了|戒掉|戒|停了|放弃|而不是|离开",
    re.IGNORECASE,
)
# A marker that, ending its clause, gives up what comes before it ("mornings don't work for me anymore").
_CLAUSE_FINAL = re.compile(r"any ?more$", re.IGNORECASE)
_CLAUSE_END = re.compile(r"\s*(?:[,.;:!?)]|$)")
# A clause ends at these: sentence ends, semicolons, and the conjunctions that start a clause of its own.
_CLAUSES = re.compile(
    r"(?<=[.!?])\s+|(?<=[。！？；])|\s*[;；]\s*|\s*\n\s*|,\s+(?=(?:and|but|so|because|since|as|while)\b)"
    r"|\s+(?=(?:because|since|as the user|so that|but)\b)|,\s+(?=who\b)"
    r"|[，,]\s*(?=因为|所以|但是|但|而且|说|他说|她说|用户(?!的)|他(?!们|的)|她(?!们|的)|问(?!题)|[让请叫]助手)",
    re.IGNORECASE,
)
_QUOTE = re.compile(
    r"^(?:the\s+)?(?:user|customer)\s*(?:said|says|wrote|asked)?\s*[:：]\s*[\"'“‘「]?(?P<q>.+?)[\"'”’」]?$", re.I
)
_CHINESE_QUOTE = re.compile(r"^用户(?:说|问|写道)?[:：]\s*[\"'“‘「]?(?P<q>.+?)[\"'”’」]?$")

_SUBJECT_EN = re.compile(
    rf"^(?P<subject>(?:(?:the\s+)?(?:user|customer|client)(?:'s)?|{_PRONOUN_EN}|who|his|her|their|i|we|my|our)"
    rf"(?:'(?P<contraction>m|re|ve|d|ll|s)\b|\b)"
    rf"(?:\s+(?P<relation>{OTHER_PEOPLE_EN})\b)?)\s*,?\s*(?:(?-i:[A-Z])[\w-]+\s*,?\s*)?"
    rf"(?:(?:also|again|then|just|now|still|once again|has|had|have)\s+)*",
    re.IGNORECASE,
)
# What a subject's contraction stands for, said of the user ("I'm" -> "is", "we've" -> "has").
_CONTRACTED = {"m": "is", "re": "is", "ve": "has", "d": "would", "ll": "will", "s": "is"}
_NAME_SUBJECT = re.compile(
    r"^(?P<name>[A-Z][a-z]+)(?:'s\b|\s*,|\s+(?:(?:always|sometimes|often|usually|never|also)\s+)?"
    r"(?=[a-z]+(?:s|ed)\b|is\b|was\b|has\b|had\b|(?:said|told|thought|felt|wrote|knew|meant|heard|chose)\b))"
)
# A clause that goes on with "I" after its first word and a comma: that word is a vocative or an opener ("Sarah, I
# love it", "Also, I live in Berlin", "Honestly, I prefer tea"), not the subject.
_I_AFTER = re.compile(r"\s*(?:i|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
_FRAME_EN = re.compile(
    rf"^(?P<verb>{_WISH_EN}|{_STATE_EN})\b(?:\s+(?:the agent|the assistant|us|me|him|her|them)\b)?"
    r"(?:\s+(?:that|to|for|if|whether|about))?\s*[:,]?\s*",
    re.IGNORECASE,
)
_SUBJECT_ZH = re.compile(
    rf"^(?P<subject>(?:{_USER_ZH}|{_PRONOUN_ZH})(?:的)?(?P<relation>{OTHER_PEOPLE_ZH})?|(?P<other>{OTHER_PEOPLE_ZH}))"
    r"(?:又|再次|还|也|一直|已经|刚刚)?"
)
_FRAME_ZH = re.compile(rf"^(?P<verb>{_WISH_ZH}|{_STATE_ZH})(?:了|过|道)?[:：，,]?\s*")
# An agent's action done for the user: "at the user's request", "as the user prefers", "按用户要求".
_ON_BEHALF = re.compile(
    r"\b(?:at the user's request|(?:as|the way|how|like) (?:the user|she|he|they) (?:asked|requested|prefers?|"
    r"wants?|likes?)|"
    r"as requested|per the user|the user (?:always|usually) asks?)\b"
    r"|按(?:用户|客户|他|她)的?(?:要求|习惯|新要求|意思)|(?:用户|他|她)(?:一直|总是|每次都)要",
    re.IGNORECASE,
)
# An agent's action on the user's own thing: "Logged the user's evening run".
_USERS_THING = re.compile(
    r"\b(?:the user's|his|her|their)\s+(?P<thing>\w+(?:\s+\w+)?)|\bfor the user\b|用户的|给用户|帮用户", re.IGNORECASE
)
# The agent as the actor of a clause ("The assistant booked ...", "助手帮用户..."): a statement never keeps it, so
# the clause is read as what was done for the user (the agent's helping verb goes with it: "帮用户订了" -> "订了").
_AGENT_ACTOR_EN = re.compile(r"^(?:the\s+)?(?:assistant|agent)\s+(?:(?:also|again|then|just)\s+)*(?=\w)", re.I)
_AGENT_ACTOR_ZH = re.compile(
    r"^(?:助手|助理)?(?:又|也|再次|已)?(?:帮|给|为|替)?(?=用户)|^(?:助手|助理)(?:又|也|再次|已)?"
)
# A frame that asks about a topic rather than for a value: "asked about", "asked whether".
_ASKED_ABOUT = re.compile(r"\b(?:about|if|whether)\s*[:,]?\s*$", re.IGNORECASE)
# The first person of the user's own turn.
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|my|we|we're|our)\b|^我", re.IGNORECASE)
# A question reported without its question mark: "asked how to install ...", "问苹果手机怎么截屏".
_QUESTION = re.compile(
    r"^(?:how|what|when|where|why|whether|if|which|who|whose)\b|^(?:问|询问|打听)|[吗么呢]$|什么时候|怎么|为什么|多少|是否",
    re.IGNORECASE,
)
# A request put as a question: "can you set the dashboard to dark mode?".
_ASKS_FOR = re.compile(r"^(?:can|could|would|will) you\b|^(?:能不能|可以|能否|麻烦)", re.IGNORECASE)
_PAST = re.compile(r"\b\w+ed\b|\b(?:went|did|had|was|were|got|made|saw|met|bought|ran|swam|took|ate|drank)\b")


# The words of the frames themselves, which never say what a clause is about.
_FRAME_WORDS = (
    "ask asks asked request requests requested want wants wanted prefer prefers preferred insist insisted remind "
    "reminds reminded correct corrected need needs needed like likes liked choose chose picked decline declined "
    "told tell mention mentioned said say says note noted explain explained confirm confirmed share shared stated "
    "agent assistant also again keep keeps 要求 希望 想要 提醒 纠正 坚持 习惯 喜欢 偏好 选择 拒绝 提到 表示 告诉 透露 "
    "确认 帮我 给我 麻烦"
)


@cache
def frame_terms() -> frozenset[str]:
    """The terms of the reporting frames' words, as clauses' terms are written."""
    return frozenset(_term(w) for w in _FRAME_WORDS.split())


@dataclass(frozen=True)
class Unit:
    """One clause of an episode, read for who says what."""

    episode: Episode
    text: str
    holder: Holder
    act: Act
    terms: tuple[str, ...]
    negated: frozenset[str]
    # The clause says something of the user: the user (or the first person) is its subject.
    about_user: bool = False
    # Its terms in a value slot ("in Celsius", "用微信"): how something is to be done, not what it is about.
    values: frozenset[str] = frozenset()
    # The term of the past-tense verb an agent's note opens with ("Found ...", "Ordered ..."): the act that was
    # done, not what the clause is about.
    leading_verb: str | None = None

    @property
    def signed_terms(self) -> tuple[str, ...]:
        """Its terms, a negated one as "-term": "no emojis" and "emojis please" are not the same constituent."""
        return tuple(f"-{t}" if t in self.negated else t for t in self.terms)


def units_of(episode: Episode) -> list[Unit]:
    """The clauses of an episode, each with its holder and act; the user's own clauses first-person when the
    episode is the user's turn (no reporting frame at all)."""
    text = normalise(episode.content)
    if not _QUOTE.match(text):
        text = without_speaker(without_asides(text))
    out: list[Unit] = []
    holder: Holder | None = None
    before = ""
    for clause in _split(text):
        # "My colleague Priya, who sits next to me, prefers tea": "who" is the person just named.
        prior: Holder | None = "other" if _WHO.match(clause) and _ends_naming_other(before) else holder
        before = clause
        unit = _unit(episode, _CONJUNCTION.sub("", clause), prior)
        if unit is None:
            continue
        out.append(unit)
        holder = unit.holder if unit.holder != "agent" else holder
    if _ON_BEHALF.search(text):
        # "Exported the report to PDF as the user prefers": what the agent did is what the user wants.
        out = [replace(u, holder="user", act="wish") if u.holder == "agent" else u for u in out]
    return out


_WHO = re.compile(r"who\b", re.IGNORECASE)
_RELATION_AT_END = re.compile(rf"\b(?:{OTHER_PEOPLE_EN})$", re.IGNORECASE)
_NAME_AT_END = re.compile(r"\b(?P<name>[A-Z][a-z]+)$")


def _ends_naming_other(clause: str) -> bool:
    """Whether a clause ends by naming someone other than the user: a relation ("my colleague") or a name."""
    clause = clause.rstrip(" ,")
    if _RELATION_AT_END.search(clause):
        return True
    name = _NAME_AT_END.search(clause)
    return name is not None and name.group("name").lower() not in STOP_WORDS | {"user", "customer", "client"}


def units_of_text(text: str) -> list[Unit]:
    """The clauses of a statement that is not an episode (a semantic memory's text), read the same way."""
    return units_of(Episode(id="-", namespace="-", content=text, occurred_at=_EPOCH, created_at=_EPOCH))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A conjunction that opens a clause: "because the user is lactose intolerant" is a clause about the user.
_CONJUNCTION = re.compile(r"^(?:because|since|so that|so|and|but|while)\s+|^(?:因为|所以|但是|而且)", re.IGNORECASE)


def _split(text: str) -> list[str]:
    return [c.strip(" ,，.。\"'“”") for c in _CLAUSES.split(text) if c and len(c.strip(" ,，.。\"'“”")) > 1]


def _unit(episode: Episode, clause: str, previous: Holder | None) -> Unit | None:
    quoted = _QUOTE.match(clause) or _CHINESE_QUOTE.match(clause)
    if quoted:
        said = quoted.group("q")
        return _made(episode, said, "user", _own_act(said), about=bool(_FIRST_PERSON.search(said)))
    if is_cjk(clause[0]):
        return _chinese(episode, clause, previous)
    return _english(episode, clause, previous)


def _english(episode: Episode, clause: str, previous: Holder | None) -> Unit | None:
    acting = _AGENT_ACTOR_EN.match(clause)
    if acting:
        # "The assistant ordered the user's latte": what the agent did, said without the agent as its actor.
        return _unframed(episode, clause[acting.end() :])
    name = _NAME_SUBJECT.match(clause)
    if name and _names_someone(name, clause):
        return _made(episode, clause[name.end() :], "other", "state")
    subject = _SUBJECT_EN.match(clause)
    if subject and subject.group("subject"):
        return _reported(episode, clause, subject, previous)
    if _FIRST_PERSON.match(clause):
        return _made(episode, clause, "user", _own_act(clause), about=True)
    if _ON_BEHALF.search(clause):
        return _made(episode, _ON_BEHALF.sub(" ", clause), "user", "wish")
    return _unframed(episode, clause)


def _unframed(episode: Episode, clause: str) -> Unit | None:
    """A clause without a subject: what the agent did about the user's own thing, the user's own turn (a request,
    a statement, or what they did), or what the agent did."""
    # Every match: "a table for the user at his favourite ramen place" is for the user, and of his own liking.
    found = list(_USERS_THING.finditer(clause))
    if found and not _mentions_other(clause):
        # "ordered grain-free kibble for Biscuit, the user's beagle": the user's own thing says something of them.
        return _made(episode, clause, "user", "event", about=any(m.group("thing") for m in found))
    if episode.event_type in _OWN_TURNS and not _mentions_other(clause):
        return _made(episode, clause, "user", _own_act(clause))
    return _made(episode, clause, "agent", "event")


# A verb in the past tense, as an agent's note opens with one.
_DONE = re.compile(r"[a-z]{3,}ed|found|got|made|put|sent|set|wrote|gave|brought|bought|took|paid|kept|ran|did|saw|met")


def _leading_verb(text: str, terms: tuple[str, ...]) -> str | None:
    """The term of the past-tense verb a clause opens with, when it is the clause's first term."""
    first = text.split(maxsplit=1)[0].lower() if text else ""
    if not _DONE.fullmatch(first):
        return None
    term = _term(first)
    return term if terms and terms[0] == term else None


# Event types of a turn the user wrote themselves (no type at all is taken as one too).
_OWN_TURNS = (None, "user_message", "message", "chat")
# Those said to be the user's own words: a third person there ("he", "她") is never the user.
_USER_WRITTEN = ("user_message",)


# What a clause says of a thing put to a use, not of a person: "Slack is fine for quick questions", "Email is best
# for anything formal", "Monday works better for me".
_JUDGED_FOR_A_USE = re.compile(
    r"\s*(?:is|was|are|works|worked|seems|sounds)\s+(?:(?:much|far|way|really|usually|always|just|so|the)\s+)*"
    r"(?:fine|ok|okay|good|great|better|best|easier|easiest|faster|quicker|simpler|ideal|perfect|preferable|"
    r"enough|well)\s+(?:for|to|with|when|than)\b",
    re.IGNORECASE,
)


def _names_someone(name: re.Match[str], clause: str) -> bool:
    """Whether a clause's capitalised first word is a person who is its subject: not a word of grammar ("Also",
    "Please"), not the user's own label, not a weekday, not a thing the clause judges for a use ("Slack is fine for
    quick questions"), not a word the user goes on from with "I"."""
    word = name.group("name").lower()
    if word in ("user", "customer", "client") or word in STOP_WORDS or word in WEEKDAYS:
        return False
    if _JUDGED_FOR_A_USE.match(clause, name.end()):
        return False
    return not (name.group(0).rstrip().endswith(",") and _I_AFTER.match(clause, name.end()))


def _reported(episode: Episode, clause: str, subject: re.Match[str], previous: Holder | None) -> Unit | None:
    """A clause with its subject named: the user, a pronoun (who was named before), or someone else."""
    word = subject.group("subject").lower().split()[0].split("'")[0]
    pronoun = word in ("he", "she", "they", "who", "his", "her", "their")
    holder: Holder = "other" if subject.group("relation") else (previous or "user") if pronoun else "user"
    if word != "who" and pronoun and episode.event_type in _USER_WRITTEN:
        holder = "other"  # the user writes of themselves as "I": "she froze during a code" is someone else
    rest = clause[subject.end() :]
    if subject.group("contraction"):
        # "I'm an ICU nurse" -> "is an ICU nurse": the statement says it of the user.
        rest = f"{_CONTRACTED[subject.group('contraction').lower()]} {rest}"
    frame = _FRAME_EN.match(rest)
    if frame:
        complement = rest[frame.end() :]
        inner = _SUBJECT_EN.match(complement)
        if (inner and inner.group("relation")) or _NAME_SUBJECT.match(complement):
            holder = "other"
        act: Act = "wish" if re.fullmatch(_WISH_EN, frame.group("verb").lower()) else _stated_act(complement)
        if act == "wish" and _ASKED_ABOUT.search(frame.group(0)):
            # "asked about parking permits in Leeds": a question about a topic, not a wish for it.
            act = "state"
        return _made(episode, _drop_subject(complement), holder, act, about=True)
    if _mentions_other(rest):
        # "User forwarded Priya's note: she prefers ...": what follows is the other person's.
        holder = "other"
    return _made(episode, rest, holder, _stated_act(rest), about=True)


def _chinese(episode: Episode, clause: str, previous: Holder | None) -> Unit | None:
    clause = _AGENT_ACTOR_ZH.sub("", clause, count=1) or clause
    if _ON_BEHALF.search(clause):
        return _made(episode, _ON_BEHALF.sub("", clause), "user", "wish")
    if previous == "user" and _FRAME_ZH.match(clause):
        # "用户体检血糖偏高，说从今天起戒奶茶了": a clause that opens with a verb of saying goes on with its subject.
        clause = "用户" + clause
    subject = _SUBJECT_ZH.match(clause)
    if subject:
        relation = subject.group("relation") or subject.group("other")
        pronoun = subject.group("subject") in ("他", "她") if subject.group("subject") else False
        holder: Holder = "other" if relation else (previous or "user") if pronoun else "user"
        if pronoun and episode.event_type in _USER_WRITTEN:
            holder = "other"
        rest = clause[subject.end() :]
        frame = _FRAME_ZH.match(rest)
        if frame:
            verb = frame.group("verb")
            complement = rest[frame.end() :]
            inner = _SUBJECT_ZH.match(complement)
            if inner and (inner.group("relation") or inner.group("other")):
                holder = "other"
            act: Act = "wish" if re.fullmatch(_WISH_ZH, verb) else _stated_act(complement)
            complement = _AGENT_ACTOR_ZH.sub("", complement, count=1) or complement
            return _made(episode, re.sub(rf"^(?:{_PRONOUN_ZH}|自己)", "", complement), holder, act, about=True)
        return _made(episode, rest, holder, _stated_act(rest), about=True)
    if "用户" in clause and not _mentions_other(clause):
        return _made(episode, clause, "user", "event")
    if episode.event_type in _OWN_TURNS and not _mentions_other(clause):
        return _made(episode, clause, "user", _own_act(clause))
    return _made(episode, clause, "agent", "event")


def _drop_subject(complement: str) -> str:
    """ "she lives in Rotterdam" -> "lives in Rotterdam" (the holder is known already)."""
    return re.sub(rf"^(?:{_PRONOUN_EN}|{_USER_EN})\s+(?=[a-z])", "", complement, flags=re.IGNORECASE)


def _stated_act(text: str) -> Act:
    """A statement's act: a standing wish ("meetings should be short"), a wish said in the user's words ("别打扰他",
    "she would rather not be on camera"), a state, or a past event."""
    if (
        STANDING.search(text)
        or re.search(rf"\b(?:{_WISH_EN})\b", text, re.IGNORECASE)
        or re.search(_WISH_ZH, text)
        or _WISHED.search(text)
    ):
        return "wish"
    return "event" if _PAST.search(text[:40]) else "state"


# What makes a Chinese turn a request without a "please": a suggestion or a softener ("还是淘宝买吧", "看一下",
# "发我微信就行").
ZH_SOFTENERS = "就行|就好|就可以"
_REQUEST_ZH = re.compile(rf"(?:吧|{ZH_SOFTENERS})$|一下|看看")


# An imperative of any verb: a clause that opens with a word in its base form (no -s, -ed, -ing, no function word)
# and goes straight on to what it acts on ("drop today's summary in Slack", "book a table", "move my 1:1").
_OBJECT_EN = r"(?:me|us|it|them|him|her|the|a|an|my|our|this|that|these|those|every|all|some|\w+'s)"
_IMPERATIVE_EN = re.compile(rf"^(?P<verb>[a-z]{{3,}}) {_OBJECT_EN}\b", re.IGNORECASE)
_INFLECTED_EN = re.compile(r"(?:[^s]s|ed|ing)$")


def _imperative(text: str) -> bool:
    found = _IMPERATIVE_EN.match(text)
    if found is None:
        return False
    verb = found.group("verb").lower()
    return verb not in STOP_WORDS and not _INFLECTED_EN.search(verb)


def _own_act(text: str) -> Act:
    """The act of the user's own words: a request (imperative, please, a modal of wish), or a statement."""
    if STANDING.search(text) or _ASKS_FOR.match(text) or re.match(r"^(?:use|keep|make|give|send|put|write|"
                                          r"reply|answer|switch|stop|don'?t|no)\b|^(?:请|麻烦|帮我|给我|以后|别|不要)",
                                          text, re.IGNORECASE) or _REQUEST_ZH.search(text):  # fmt: skip
        return "wish"
    if _imperative(text):
        return "wish"
    return _stated_act(text)


def _mentions_other(text: str) -> bool:
    """Whether a clause names someone other than the user: a relation, or a named person's thing ("Priya's"); not
    one named after the user said "I" ("I run at dawn now, before the kids wake up" is the user's)."""
    found = [
        m.start()
        for m in (
            re.search(rf"\b(?:{OTHER_PEOPLE_EN})\b", text, re.IGNORECASE),
            re.search(OTHER_PEOPLE_ZH, text),
            re.search(r"\b(?!User's)[A-Z][a-z]+'s\b", text),
        )
        if m is not None
    ]
    return bool(found) and not re.search(r"\bI\b", text[: min(found)])


def _made(episode: Episode, text: str, holder: Holder, act: Act, *, about: bool = False) -> Unit | None:
    text = text.strip(" ,，.。:：\"'“”")
    if not text or _QUESTION.search(text) or (asks_question(text) and not _ASKS_FOR.match(text)):
        return None
    terms = tuple(dict.fromkeys(_term(t) for t in query_terms(text) if not t.isdigit() or len(t) > 1))
    if not terms:
        return None
    values = value_terms(text, act == "wish")
    return Unit(episode, text, holder, act, terms, negated_terms(text), about, values, _leading_verb(text, terms))


# Words whose stem is a word of another meaning: "evening" stems to "even".
_OWN_STEMS = {"evening": "evening", "evenings": "evening"}


def _term(token: str) -> str:
    if token.lower() in _OWN_STEMS:
        return _OWN_STEMS[token.lower()]
    stemmed = index_terms(token)
    return stemmed[0] if stemmed else token


def value_terms(text: str, wish: bool) -> frozenset[str]:
    """The terms of `text` in a value slot: after an opener (two words at most, articles skipped), or at the start
    of a wish ("Celsius please", "dark theme please")."""
    if is_cjk(text[0]):
        # A Latin word in a Chinese clause is a value as a Chinese one is: "用PDF格式", "导出成PDF".
        lowered = text.lower()
        found = {
            t
            for t in query_terms(text)
            if (at := (text if is_cjk(t[0]) else lowered).find(t)) >= 0 and _opened_cjk(text, at)
        }
        return frozenset(_term(t) for t in found)
    words = [w.strip(",.;:!?()\"'").lower() for w in text.split()]
    found = set()
    for i, word in enumerate(words):
        before = [w for w in words[max(0, i - 3) : i] if w not in _SKIPPED_EN][-2:]
        if (wish and i < 2) or any(w in _VALUE_OPENERS_EN for w in before):
            found.update(_term(t) for t in query_terms(word))
    return frozenset(found)


def _opened_cjk(text: str, at: int) -> bool:
    before = text[max(0, at - 3) : at]
    return at <= 1 or any(before.endswith(o) or before[:-1].endswith(o) for o in _VALUE_OPENERS_ZH)


def negated_terms(text: str) -> frozenset[str]:
    """The terms of `text` in the scope of a negation or of giving up: from the marker to the end of its clause
    (English: at most six words; Chinese: at most eight characters)."""
    found: set[str] = set()
    questions = list(ZH_YES_NO.finditer(text))
    for m in _NEGATION.finditer(text):
        after = text[m.end() :]
        if any(q.start() <= m.start() < q.end() for q in questions):
            # "有没有当天能到的": a question whether, not a negation.
            continue
        if is_cjk(m.group(0)[0]):
            scope = re.split(r"[，,。；;！!？?]|而|改|换", after, maxsplit=1)[0][:8]
        elif _CLAUSE_FINAL.match(m.group(0)) and _CLAUSE_END.match(after):
            scope = " ".join(re.split(r"[,.;:!?]|\b(?:and|but|so)\b", text[: m.start()])[-1].split()[-6:])
        else:
            scope = " ".join(re.split(r"[,.;:!?]|\b(?:and|but|instead|now)\b", after, maxsplit=1)[0].split()[:6])
        # A number and what follows it is a limit, not what is negated: "never run past 30 minutes".
        scope = re.split(r"\d", scope, maxsplit=1)[0]
        found.update(_term(t) for t in query_terms(scope))
    return frozenset(found)
