"""The blind scenario suite of bench/hindsight_blind.py: 65 scenarios, 35 in English and 30 in Chinese.

How it was written: from the public API alone (README.md, docs/, the domain models of a write, a consolidation
request and result and a semantic memory, bootstrap and settings), without reading the code that induces memories
(layers/rearview/service/hindsight/, service/contradiction.py, the induction adapters and their tests) and without
opening the scenario data of the earlier suites (hindsight_scenarios.py, hindsight_heldout*.py). The episodes are
written as agents log things: mostly third person ("User asked for ...", "Agent booked ...; user rejected ..."),
with the event types, entities and outcomes an agent would give, over several sessions and days. Tool outcomes are
copied as tools print them (HTTP statuses, stack-trace fragments, vendor codes, JSON, Chinese messages, timeouts),
never with an `outcome_status`. The Chinese scenarios are written as a Chinese user's assistant logs things, not
translated from the English ones.

What a correct system holds afterwards is stated as concepts (`hindsight_blind_spec.Want`): groups of synonyms in
both languages, so that a right memory worded in a way nobody foresaw still matches, with forbidden terms for the
wrong polarity or the wrong person, so that a wrong one does not.

It must not be tuned on: nothing here may be changed to make a figure better, and no code may be written from
these sentences. A scenario the system misses stays a miss. Tune on the other suites; report this one last.

Per language and category:

| category | en | zh | what it holds |
|---|---|---|---|
| preference | 9 | 7 | habits about time of day, units, tone, channels, formats, diet, tools, accessibility, seats |
| fact | 6 | 5 | facts about the user said in the agent's voice (job, home, pet, health, family) |
| lesson | 7 | 6 | tool failures with errors of many shapes and what finally worked (one never fixed) |
| change | 5 | 5 | an old habit, preference or fact, then a new one in free text: new active, old superseded |
| negative | 8 | 7 | one-offs, small talk, a third person's preferences, one word for unrelated things, a request about one thing that must not become a preference about another, transient failures, trips that are not a home |

`FILLERS_EN` / `FILLERS_ZH` are one-off errands the harness weaves into every scenario of their language (a few
each, on its days): what an agent's log holds between the episodes that matter. None of them is worth learning.
"""

from __future__ import annotations

from hindsight_blind_scenarios_en import SCENARIOS_EN
from hindsight_blind_scenarios_zh import SCENARIOS_ZH
from hindsight_blind_spec import Scenario

SCENARIOS: list[Scenario] = [*SCENARIOS_EN, *SCENARIOS_ZH]

FILLERS_EN = [
    "Agent summarised the quarterly sales deck for the user.",
    "User asked what time the pharmacy on King Street closes today.",
    "Agent renewed the user's library books online.",
    "User asked for the capital of Mongolia for a pub quiz.",
    "Agent drafted a thank-you note to the plumber.",
    "Agent compared two cordless vacuum cleaners for the user.",
    "User asked when the next full moon is.",
    "User asked for a synonym for 'resilient'.",
    "Agent tracked the user's parcel; it is out for delivery.",
    "User asked who won the 1998 World Cup final.",
    "Agent looked up the opening hours of the Natural History Museum.",
    "Agent proofread the user's cover letter and fixed two typos.",
]

FILLERS_ZH = [
    "用户问助手'画蛇添足'是什么意思。",
    "助手帮用户把上周的照片整理到相册里。",
    "用户问附近有没有开到很晚的药店。",
    "助手帮用户查了快递，已经到驿站了。",
    "用户问今年端午节放几天假。",
    "助手给用户推荐了三本讲宋朝历史的书。",
    "用户问绿萝怎么换盆。",
    "助手帮用户比较了两款空气净化器。",
    "助手给用户的朋友圈配图写了一句文案。",
    "用户问黄山的门票多少钱。",
    "助手帮用户查了社保缴费的截止日期。",
    "用户问助手明天会不会降温。",
]
