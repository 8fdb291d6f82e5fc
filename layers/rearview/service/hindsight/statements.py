"""Statements of induced memories, built from their structure (kind, dimension, facets) in English or Chinese:
"The user prefers replies in Chinese", "用户偏好用中文回复". Built, not copied, so no statement is one of its
episodes verbatim, and a refined memory (a new facet on its dimension) is stated anew from all its facets."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rearview.service.hindsight import lexicon

Template = Callable[[Mapping[str, str], bool], str]


def _join(parts: list[str], chinese: bool) -> str:
    return ("；" if chinese else "; ").join(parts)


def _language(facets: Mapping[str, str], zh: bool) -> str:
    if zh:
        parts = [
            f"{lexicon.TEXT_OBJECTS_ZH.get(obj, obj)}用{lexicon.LANGUAGE_ZH.get(lang, lang)}"
            for obj, lang in facets.items()
        ]
        return "用户希望" + _join(parts, True)
    return "The user prefers " + _join([f"{obj} in {lang}" for obj, lang in facets.items()], False)


def _format(facets: Mapping[str, str], zh: bool) -> str:
    if zh:
        parts = [
            f"{lexicon.TEXT_OBJECTS_ZH.get(obj, obj)}用{lexicon.FORMATS_ZH.get(v, v)}" for obj, v in facets.items()
        ]
        return "用户希望" + _join(parts, True)
    return "The user wants " + _join([f"{obj} as {value}" for obj, value in facets.items()], False)


def _length(facets: Mapping[str, str], zh: bool) -> str:
    value = next(iter(facets.values()), "concise")
    if zh:
        return "用户偏好简短的回答" if value == "concise" else "用户偏好详细的回答"
    return f"The user prefers {value} answers"


def _style(facets: Mapping[str, str], zh: bool) -> str:
    parts = []
    for facet, value in facets.items():
        if facet == "emojis":
            if zh:
                parts.append("回复中不要使用表情" if value == "none" else "回复中可以多用表情")
            else:
                parts.append("no emojis in replies" if value == "none" else "emojis in replies are welcome")
        else:
            parts.append(f"语气{value}" if zh else f"a {value} {facet}")
    return ("用户希望" if zh else "The user wants ") + _join(parts, zh)


def _units(facets: Mapping[str, str], zh: bool) -> str:
    names_zh = {"metric": "公制单位", "imperial": "英制单位", "Celsius": "摄氏度", "Fahrenheit": "华氏度"}
    if zh:
        return "用户偏好" + "、".join(names_zh.get(v, v) for v in facets.values())
    parts = []
    for facet, value in facets.items():
        parts.append(
            f"{value} units" if facet == "measurements" else f"{facet} in {value}" if facet != "time" else value
        )
    return "The user prefers " + _join(parts, False)


def _travel(facets: Mapping[str, str], zh: bool) -> str:
    parts = []
    for facet, value in facets.items():
        if facet == "seat":
            parts.append(("靠窗的座位" if value == "window" else "靠过道的座位") if zh else f"a {value} seat")
        else:
            parts.append("直飞航班" if zh else f"{value} flights")
    return ("用户出行偏好" if zh else "When travelling, the user prefers ") + _join(parts, zh)


def _tools(facets: Mapping[str, str], zh: bool) -> str:
    if zh:
        return "用户偏好" + _join([f"用{x}而不是{y}" for y, x in facets.items()], True)
    return "The user prefers " + _join([f"{x} over {y}" for y, x in facets.items()], False)


def _code(facets: Mapping[str, str], zh: bool) -> str:
    if zh:
        return "用户的代码规范：" + "；".join(f"{'命名用' if k == 'naming' else k}{v}" for k, v in facets.items())
    return "The user's code style: " + "; ".join(
        f"{v} {k}" if k == "naming" else f"{k}: {v}" for k, v in facets.items()
    )


def _home(facets: Mapping[str, str], zh: bool) -> str:
    place = next(iter(facets.values()))
    return f"用户住在{place}" if zh else f"The user lives in {place}"


def _job(facets: Mapping[str, str], zh: bool) -> str:
    job = next(iter(facets.values()))
    if zh:
        return f"用户的职业是{job}"
    article = "an" if job[:1].lower() in "aeiou" else "a"
    return f"The user works as {article} {job}"


def _employer(facets: Mapping[str, str], zh: bool) -> str:
    org = next(iter(facets.values()))
    return f"用户在{org}工作" if zh else f"The user works at {org}"


def _name(facets: Mapping[str, str], zh: bool) -> str:
    name = next(iter(facets.values()))
    return f"用户的名字是{name}" if zh else f"The user's name is {name}"


def _pet(facets: Mapping[str, str], zh: bool) -> str:
    if zh:
        return "用户养了" + "、".join(f"一只叫{name}的{kind}" for kind, name in facets.items())
    return "The user has " + " and ".join(f"a {kind} named {name}" for kind, name in facets.items())


def _family(facets: Mapping[str, str], zh: bool) -> str:
    if zh:
        return "用户的" + "、".join(f"{rel}叫{name}" for rel, name in facets.items())
    return "The user's " + "; ".join(f"{rel} is {name}" for rel, name in facets.items())


def _allergy(facets: Mapping[str, str], zh: bool) -> str:
    items = list(facets)
    if zh:
        return f"用户对{'、'.join(items)}过敏"
    return f"The user is allergic to {' and '.join(items)}"


def _diet(facets: Mapping[str, str], zh: bool) -> str:
    parts = []
    for facet, value in facets.items():
        if facet == "diet":
            parts.append(lexicon.DIETS_ZH.get(value, value) if zh else f"is {value}")
        else:
            parts.append(f"不吃{facet}" if zh else f"avoids {facet}")
    return ("用户" if zh else "The user ") + ("，" if zh else " and ").join(parts)


def _exercise(facets: Mapping[str, str], zh: bool) -> str:
    slots_zh = {"morning": "早上", "evening": "晚上", "weekend": "周末"}
    activity = facets.get("routine", next(iter(facets.values()), ""))
    slot = facets.get("when")
    if zh:
        activities = "、".join(lexicon.ACTIVITIES_ZH.get(a, a) for a in activity.split(" and "))
        return f"用户经常{slots_zh.get(slot or '', '')}{activities}"
    when = "" if slot is None else " at weekends" if slot == "weekend" else f" in the {slot}"
    return f"The user regularly exercises: {activity}{when}"


TEMPLATES: dict[str, Template] = {
    "language": _language,
    "format": _format,
    "length": _length,
    "style": _style,
    "units": _units,
    "travel": _travel,
    "tools": _tools,
    "code": _code,
    "home_city": _home,
    "job": _job,
    "employer": _employer,
    "name": _name,
    "pet": _pet,
    "family": _family,
    "allergy": _allergy,
    "diet": _diet,
    "exercise": _exercise,
}


def state(dimension: str | None, facets: Mapping[str, str], *, chinese: bool) -> str | None:
    """The statement of a memory on a dimension the templates know, from its facets; None otherwise."""
    template = TEMPLATES.get(dimension or "")
    if template is None or not facets:
        return None
    return template(facets, chinese)


def repeated_request(phrase: str, *, chinese: bool) -> str:
    """A preference no rule recognises: the request the user keeps making."""
    return f"用户多次要求：{phrase}" if chinese else f"The user repeatedly asks: {phrase}"


def stated_fact(phrase: str, *, chinese: bool) -> str:
    """A fact no rule recognises: the statement several sessions share, as a sentence."""
    phrase = phrase.strip()
    if chinese:
        return phrase if phrase.endswith("。") else phrase + "。"
    sentence = phrase[0].upper() + phrase[1:]
    return sentence if sentence.endswith((".", "!", "?")) else sentence + "."


def fix_lesson(
    subject: str, error: str | None, failed: str | None, worked: str, failures: int, *, chinese: bool
) -> str:
    """What failed for a subject, and what worked after."""
    if chinese:
        what = f"{failed}时" if failed else ""
        why = f"（{error}）" if error else ""
        return f"{subject}：{what}失败了{failures}次{why}；{worked}成功"
    what = f" with {failed}" if failed else ""
    why = f" ({error})" if error else ""
    return f"{subject}: failed {failures} times{what}{why}; {worked} worked"


def recurring_failure(
    subject: str, error: str, failures: int, since: str, action: str | None = None, *, chinese: bool
) -> str:
    """A failure that keeps coming back with the same error (and what was being tried, when the failures share
    their words for it)."""
    doing = f" ({action})" if action and action.lower() != subject.lower() else ""
    if chinese:
        return f"{subject}{doing}反复失败：{error}（自{since}起{failures}次）"
    return f"{subject}{doing} keeps failing with {error} ({failures} times since {since})"
