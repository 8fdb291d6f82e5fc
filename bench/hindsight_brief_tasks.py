"""The tasks bench/hindsight.py asks `brief` about, after each scripted scenario's episodes were consolidated.

For every scenario whose consolidation should leave a current preference or lesson, tasks an agent would start
next, and the memory that applies to them (an `Expect` of the scenario). Some name the tool about to be used,
some only describe the task in other words than the episodes, some are in the other language of the suite. A task
scores when a memory matching its `Expect` is among the first three `brief` returns.

Written before brief was run on them, and not changed to fit it since: a miss stays a miss in the figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight_scenarios import Expect


@dataclass(frozen=True)
class BriefTask:
    task: str
    expect: Expect
    tool: str | None = None
    entities: tuple[str, ...] = ()


def _pref(dimension: str | None, *keywords: str) -> Expect:
    return Expect("preference", dimension, keywords)


def _lesson(*keywords: str) -> Expect:
    return Expect("lesson", "tool:", keywords)


def _fact(dimension: str, *keywords: str) -> Expect:
    return Expect("fact", dimension, keywords)


# fmt: off
BRIEF_TASKS: dict[str, list[BriefTask]] = {
    "reply language, five wordings": [
        BriefTask("Summarise this article about the housing market", _pref("language", "chinese")),
        BriefTask("Draft a reply to the landlord about the broken heater", _pref("language", "chinese")),
    ],
    "the same request five times": [
        BriefTask("Explain how compound interest works", _pref("language", "chinese")),
    ],
    "the same request five times in one chat": [
        BriefTask("What should I pack for a weekend hike?", _pref("language", "chinese")),
    ],
    "tables for data, numbered lists for steps": [
        BriefTask("Compare the three laptop models on price and battery life", _pref("format", "table")),
        BriefTask("Explain how to set up the new router", _pref("format", "numbered")),
    ],
    "shorter answers": [
        BriefTask("Tell me what changed in the new tax rules", _pref("length", "concise|short|brief")),
    ],
    "no emojis": [
        BriefTask("Write the weekly status summary for the team", _pref("style", "emoji")),
    ],
    "metric units": [
        BriefTask("How far is it from Denver to Boulder by car?", _pref("units", "metric")),
        BriefTask("What's the weather forecast for the weekend?", _pref("units", "metric")),
    ],
    "window seat": [
        BriefTask("Book a flight to Rome for the conference in May", _pref("travel", "window")),
        BriefTask("Find me a seat on the morning train to Porto", _pref("travel", "window"), tool="booking"),
    ],
    "pnpm over npm": [
        BriefTask("Install the dependencies of the dashboard project", _pref("tools", "pnpm"), tool="npm"),
        BriefTask("Add the date-fns package with npm", _pref("tools", "pnpm")),
    ],
    "type hints, asked again and again": [
        BriefTask("Write a Python function that parses the log files", _pref(None, "type hints")),
    ],
    "reply language changes: English, then Spanish": [
        BriefTask("Explain the rules of chess", _pref("language", "spanish")),
    ],
    "用中文回答，五种说法": [
        BriefTask("帮我写一封请假邮件", _pref("language", "中文|chinese")),
        BriefTask("Summarise the meeting notes", _pref("language", "中文|chinese")),
    ],
    "数据用表格": [
        BriefTask("对比一下这三款手机的价格和续航", _pref("format", "表格|table")),
    ],
    "回答简短一点": [
        BriefTask("解释一下新的个税政策", _pref("length", "简短|concise")),
    ],
    "不要表情": [
        BriefTask("写一份本周的工作总结", _pref("style", "表情|emoji")),
    ],
    "先英文后中文": [
        BriefTask("介绍一下量子计算", _pref("language", "中文|chinese")),
    ],
    "订座靠窗": [
        BriefTask("帮我订下个月去杭州的机票", _pref("travel", "靠窗|window")),
    ],
    "geocoding batch size": [
        BriefTask("Geocode the 3,000 new customer addresses", _lesson("413", "50"), tool="geocoding API"),
        BriefTask("Clean up the delivery addresses and add coordinates with the geocoding API",
                  _lesson("413", "50")),
    ],
    "deploys keep failing": [
        BriefTask("Ship the api service to production", _lesson("permission denied")),
        BriefTask("Roll out the hotfix", _lesson("permission denied"), tool="deploy"),
    ],
    "pip behind the proxy": [
        BriefTask("Install pandas in the new virtualenv", _lesson("trusted-host"), tool="pip"),
        BriefTask("Set up the Python environment for the notebook with pip", _lesson("trusted-host")),
    ],
    "search API rate limit": [
        BriefTask("Look up prices for the 500 products", _lesson("429", "2"), tool="search API"),
        BriefTask("Run the competitor queries through the search API overnight", _lesson("429", "2")),
    ],
    "export by month": [
        BriefTask("Export last year's orders for the auditors", _lesson("timed out|timeout", "month"),
                  tool="orders export"),
        BriefTask("Pull all orders into a CSV for finance", _lesson("timed out|timeout", "month"),
                  entities=("orders export",)),
    ],
    "batch size lesson revised": [
        BriefTask("Geocode the warehouse addresses", _lesson("413", "20"), tool="geocoding API"),
    ],
    "地图接口批量大小": [
        BriefTask("把新客户的地址转换成坐标", _lesson("413", "50"), tool="地图接口"),
        BriefTask("用地图接口处理这批配送地址", _lesson("413", "50")),
    ],
    "部署反复失败": [
        BriefTask("把支付服务发布到生产环境", _lesson("权限"), tool="部署"),
    ],
    "导出按月": [
        BriefTask("给财务导出去年的全部订单", _lesson("超时", "按月"), tool="订单导出"),
    ],
}

# Facts that apply to a task by its topic (reported apart: brief is for preferences and lessons first).
BRIEF_FACT_TASKS: dict[str, list[BriefTask]] = {
    "vegetarian": [BriefTask("Find a restaurant for Friday dinner with the team", _fact("diet", "vegetarian"))],
    "allergic to peanuts": [BriefTask("Suggest a recipe for a Thai curry", _fact("allergy", "peanut"))],
    "对花生过敏": [BriefTask("推荐几道适合聚餐的菜", _fact("allergy", "花生|peanut"))],
}
# fmt: on
