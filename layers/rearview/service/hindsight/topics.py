"""Which tasks a preference applies to, by its dimension: some apply to every reply (the language, format, length
and style of answers); others to tasks about their topic, recognised by the words of the task (English and
Chinese). What `brief` reads to offer a preference that shares no word with the task ("book a flight to Osaka":
the aisle-seat preference)."""

from __future__ import annotations

import re

# Dimensions whose preferences shape every reply.
EVERY_REPLY: frozenset[str] = frozenset({"language", "format", "length", "style"})

_TOPIC_WORDS: dict[str, tuple[str, ...]] = {
    "travel": (
        "flight", "flights", "fly", "flying", "trip", "travel", "travelling", "traveling", "airline", "airport",
        "seat", "itinerary", "hotel", "train",
        "机票", "航班", "飞机", "出差", "旅行", "旅游", "座位", "订票", "行程", "酒店", "火车",
    ),
    "units": (
        "temperature", "weather", "forecast", "distance", "price", "prices", "cost", "costs", "convert", "budget",
        "miles", "km", "kilometres", "kilometers", "weight", "height", "pounds", "kg", "currency", "exchange",
        "天气", "温度", "距离", "价格", "费用", "换算", "预算", "重量", "汇率", "公里",
    ),
    "code": (
        "code", "function", "functions", "variable", "variables", "script", "refactor", "class", "method",
        "program", "module", "python", "javascript", "typescript", "java", "rust", "go", "bug", "implement",
        "代码", "函数", "变量", "脚本", "重构", "编程", "方法", "实现",
    ),
    "diet": (
        "restaurant", "dinner", "lunch", "breakfast", "meal", "food", "recipe", "cook", "eat", "menu", "groceries",
        "curry", "snack", "dish", "dishes", "catering",
        "餐厅", "晚饭", "午饭", "早饭", "吃饭", "食谱", "做饭", "菜单", "外卖", "菜", "聚餐", "零食",
    ),
}  # fmt: skip
# Food: what a diet or an allergy is about.
_TOPIC_WORDS["allergy"] = _TOPIC_WORDS["diet"]
_PATTERNS: dict[str, re.Pattern[str]] = {
    dimension: re.compile(
        "|".join(rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w) for w in words), re.IGNORECASE
    )
    for dimension, words in _TOPIC_WORDS.items()
}


def topic_word(dimension: str | None, task: str) -> str | None:
    """The word of `task` that makes it a task about the dimension's topic, or None."""
    pattern = _PATTERNS.get((dimension or "").split(":")[0])
    if pattern is None:
        return None
    match = pattern.search(task)
    return match.group(0) if match else None
