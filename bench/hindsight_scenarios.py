"""The scripted scenarios of bench/hindsight.py: what an agent's memory sees, and what consolidation should learn.

Each scenario is a stream of episodes (day offsets, sessions, event types, outcomes) in English or Chinese, split
into phases (consolidation runs after each), with the memories that should then be active (kind, dimension, key
words), the ones that should have been superseded, or none at all. Noise episodes from `NOISE_EN` / `NOISE_ZH`
are woven around every scenario. A key word "a|b" accepts either word; dimensions ending in ":" match a prefix.

Written from what agents' users do, before the rules were tuned, and not changed to fit them since: a scenario the
rule inducer misses stays a miss in the figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ep:
    text: str
    day: float
    session: str
    event_type: str | None = None
    entities: tuple[str, ...] = ()
    outcome: str | None = None
    outcome_status: str | None = None


@dataclass(frozen=True)
class Expect:
    kind: str
    dimension: str | None
    keywords: tuple[str, ...]
    current: bool = True


@dataclass
class Scenario:
    name: str
    language: str
    phases: list[list[Ep]]
    expect: list[Expect] = field(default_factory=list)
    # Episodes (indexes into the flattened phases) forgotten after the last phase, and what should then hold.
    forget: tuple[int, ...] = ()
    after_forget: list[Expect] | None = None

    @property
    def episodes(self) -> list[Ep]:
        return [e for phase in self.phases for e in phase]


def _tool(text: str, day: float, session: str, tool: str, outcome: str, event: str = "tool_call") -> Ep:
    return Ep(text, day, session, event_type=event, entities=(tool,), outcome=outcome)


# The scenarios are laid out by hand (one episode a line, a phase's brackets hugging it); ruff format would
# re-indent every line of them.
# fmt: off
PREFERENCES_EN = [
    Scenario(
        "reply language, five wordings",
        "en",
        [[
            Ep("Please answer in Chinese from now on.", 0, "s1"),
            Ep("Can you reply in Chinese? It's easier for me to read.", 2, "s2"),
            Ep("Chinese please, not English", 3, "s2"),
            Ep("I'd rather you respond in Mandarin.", 6, "s3"),
            Ep("Write your answers in Chinese, thanks.", 9, "s4"),
        ]],
        [Expect("preference", "language", ("chinese",))],
        forget=(0,),
        after_forget=[Expect("preference", "language", ("chinese",))],
    ),
    Scenario(
        "the same request five times",
        "en",
        [[Ep("Reply in Chinese.", d, s) for d, s in ((0, "s1"), (1, "s1"), (4, "s2"), (8, "s3"), (12, "s3"))]],
        [Expect("preference", "language", ("chinese",))],
    ),
    Scenario(
        "the same request five times in one chat",
        "en",
        [[Ep("Reply in Chinese.", 0.01 * i, "s1") for i in range(5)]],
        [Expect("preference", "language", ("chinese",))],
    ),
    Scenario(
        "tables for data, numbered lists for steps",
        "en",
        [[
            Ep("Give me the quarterly numbers as a markdown table.", 0, "s1"),
            Ep("Can you put the price comparison in a table?", 3, "s2"),
            Ep("Show the benchmark results as a table please.", 7, "s3"),
            Ep("List the setup steps as a numbered list.", 1, "s1"),
            Ep("Walk me through the migration step by step, please.", 5, "s2"),
            Ep("Please number the deployment steps.", 8, "s3"),
        ]],
        [Expect("preference", "format", ("table", "numbered"))],
    ),
    Scenario(
        "shorter answers",
        "en",
        [[
            Ep("Keep your answers short please.", 0, "s1"),
            Ep("That's too long, be brief.", 2, "s2"),
            Ep("Can you give me the tl;dr version?", 4, "s3"),
            Ep("Shorter replies please, I'm on my phone.", 6, "s3"),
        ]],
        [Expect("preference", "length", ("concise|short|brief",))],
    ),
    Scenario(
        "no emojis",
        "en",
        [[
            Ep("Please don't use emojis in your replies.", 0, "s1"),
            Ep("No emojis please.", 4, "s2"),
            Ep("Again, stop adding emojis to the summaries.", 9, "s3"),
        ]],
        [Expect("preference", "style", ("emoji",))],
    ),
    Scenario(
        "metric units",
        "en",
        [[
            Ep("Use metric units please, I don't think in miles.", 0, "s1"),
            Ep("Give me the distance in kilometers, not miles.", 5, "s2"),
            Ep("Convert the recipe to grams and kilograms please, metric.", 11, "s3"),
        ]],
        [Expect("preference", "units", ("metric",))],
    ),
    Scenario(
        "window seat",
        "en",
        [[
            Ep("Book me a window seat on the flight to Lisbon.", 0, "s1", event_type="booking"),
            Ep("For the Madrid trip, window seat again please.", 20, "s2", event_type="booking"),
            Ep("Get me a window seat for the red-eye to Boston.", 45, "s3", event_type="booking"),
        ]],
        [Expect("preference", "travel", ("window",))],
    ),
    Scenario(
        "pnpm over npm",
        "en",
        [[
            Ep("Use pnpm instead of npm for installing packages.", 0, "s1"),
            Ep("Please use pnpm, not npm.", 3, "s2"),
            Ep("I prefer pnpm over npm, switch the scripts.", 7, "s3"),
        ]],
        [Expect("preference", "tools", ("pnpm",))],
    ),
    Scenario(
        "type hints, asked again and again",
        "en",
        [[
            Ep("Always add type hints to Python functions.", 0, "s1"),
            Ep("Please add type hints to the new module too.", 4, "s2"),
            Ep("Add type hints everywhere, like before.", 9, "s3"),
        ]],
        [Expect("preference", None, ("type hints",))],
    ),
    Scenario(
        "reply language changes: English, then Spanish",
        "en",
        [
            [
                Ep("Please reply in English.", 0, "s1"),
                Ep("Answer in English, please.", 2, "s2"),
                Ep("English please.", 5, "s3"),
            ],
            [
                Ep("From now on reply in Spanish, I'm practising.", 40, "s4"),
                Ep("Answer in Spanish please.", 42, "s5"),
                Ep("Spanish only from now on.", 44, "s6"),
                Ep("Keep replying in Spanish.", 47, "s7"),
            ],
        ],
        [Expect("preference", "language", ("spanish",)), Expect("preference", "language", ("english",), current=False)],
    ),
    Scenario(
        "a one-off request in French",
        "en",
        [[Ep("Answer this one in French, it's for my colleague.", 0, "s1")]],
        [],
    ),
    Scenario(
        "asked twice only",
        "en",
        [[Ep("Please reply in German.", 0, "s1"), Ep("German please.", 3, "s2")]],
        [],
    ),
]

PREFERENCES_ZH = [
    Scenario(
        "用中文回答，五种说法",
        "zh",
        [[
            Ep("请用中文回答", 0, "s1"),
            Ep("以后用中文回复我", 2, "s2"),
            Ep("中文回答就好，谢谢", 3, "s2"),
            Ep("能不能用中文说？", 6, "s3"),
            Ep("还是用中文吧", 9, "s4"),
        ]],
        [Expect("preference", "language", ("中文|chinese",))],
        forget=(1, 3),
        after_forget=[Expect("preference", "language", ("中文|chinese",))],
    ),
    Scenario(
        "数据用表格",
        "zh",
        [[
            Ep("把季度数据用表格列出来", 0, "s1"),
            Ep("请把对比结果做成表格", 4, "s2"),
            Ep("价格数据还是用表格展示吧", 8, "s3"),
        ]],
        [Expect("preference", "format", ("表格|table",))],
    ),
    Scenario(
        "回答简短一点",
        "zh",
        [[
            Ep("回答简短一点", 0, "s1"),
            Ep("太长了，简洁些", 3, "s2"),
            Ep("简单说就行，说重点", 6, "s3"),
        ]],
        [Expect("preference", "length", ("简短|concise",))],
    ),
    Scenario(
        "不要表情",
        "zh",
        [[
            Ep("回复里不要用表情", 0, "s1"),
            Ep("别用表情符号了", 5, "s2"),
            Ep("总结里也不要加表情", 10, "s3"),
        ]],
        [Expect("preference", "style", ("表情|emoji",))],
    ),
    Scenario(
        "先英文后中文",
        "zh",
        [
            [Ep("用英文回复", 0, "s1"), Ep("请用英语回答", 3, "s2"), Ep("英文回答就好", 6, "s3")],
            [Ep("以后用中文回复吧", 30, "s4"), Ep("请用中文回答", 33, "s5"), Ep("还是用中文说吧", 36, "s6")],
        ],
        [
            Expect("preference", "language", ("中文|chinese",)),
            Expect("preference", "language", ("英文|english",), current=False),
        ],
    ),
    Scenario("这次用日语", "zh", [[Ep("这次用日语回答，给我同事看的", 0, "s1")]], []),
    Scenario(
        "订座靠窗",
        "zh",
        [[
            Ep("帮我订去成都的机票，要靠窗的座位", 0, "s1", event_type="booking"),
            Ep("去广州的航班也订靠窗座位", 21, "s2", event_type="booking"),
            Ep("下周去西安，还是靠窗的座", 50, "s3", event_type="booking"),
        ]],
        [Expect("preference", "travel", ("靠窗|window",))],
    ),
]

FACTS_EN = [
    Scenario(
        "lives in Berlin",
        "en",
        [[
            Ep("I live in Berlin, so CET works for me.", 0, "s1"),
            Ep("Since I moved to Berlin the commute is shorter.", 10, "s2"),
            Ep("Here in Berlin it's been raining all week.", 25, "s3"),
        ]],
        [Expect("fact", "home_city", ("berlin",))],
        forget=(0, 1),
        after_forget=[],
    ),
    Scenario(
        "works as a nurse",
        "en",
        [[
            Ep("I'm a nurse, so my shifts change every week.", 0, "s1"),
            Ep("As a nurse I can't take calls during the day.", 8, "s2"),
            Ep("My job as a nurse means weekends are busy.", 19, "s3"),
        ]],
        [Expect("fact", "job", ("nurse",))],
    ),
    Scenario(
        "allergic to peanuts",
        "en",
        [[
            Ep("I'm allergic to peanuts, keep that in mind for recipes.", 0, "s1"),
            Ep("Remember I'm allergic to peanuts when you pick a restaurant.", 14, "s2"),
        ]],
        [Expect("fact", "allergy", ("peanut",))],
    ),
    Scenario(
        "a dog named Max",
        "en",
        [[
            Ep("My dog Max chewed the charger again.", 0, "s1"),
            Ep("I need a sitter for my dog Max next weekend.", 9, "s2"),
            Ep("Took my dog Max to the vet today.", 30, "s3"),
        ]],
        [Expect("fact", "pet", ("max",))],
    ),
    Scenario(
        "moved from Boston to Denver",
        "en",
        [
            [Ep("I live in Boston and work downtown.", 0, "s1"), Ep("I live in Boston, near the river.", 20, "s2")],
            [Ep("I just moved to Denver!", 80, "s3"), Ep("Here in Denver the air is dry.", 85, "s4")],
        ],
        [Expect("fact", "home_city", ("denver",)), Expect("fact", "home_city", ("boston",), current=False)],
    ),
    Scenario(
        "morning runs, then swimming",
        "en",
        [
            [Ep(f"Went for my morning run, {4 + d % 3}k.", d, f"r{d}") for d in range(0, 90, 6)],
            [Ep(f"Swam {20 + d % 10} laps at the pool this morning.", d, f"w{d}") for d in range(100, 130, 4)],
        ],
        [
            Expect("fact", "exercise", ("swim",)),
            Expect("fact", "exercise", ("running|run",), current=False),
        ],
    ),
    Scenario(
        "the staging server",
        "en",
        [[
            Ep("The staging server is staging.acme.io, use it for previews.", 0, "s1"),
            Ep("Remember that the staging server is staging.acme.io now.", 12, "s2"),
            Ep("FYI the staging server is staging.acme.io since the move.", 30, "s3"),
        ]],
        [Expect("fact", None, ("staging.acme.io",))],
    ),
    Scenario(
        "vegetarian",
        "en",
        [[
            Ep("I'm vegetarian, so no meat dishes please.", 0, "s1"),
            Ep("As I said, I'm vegetarian; suggest veggie places.", 17, "s2"),
        ]],
        [Expect("fact", "diet", ("vegetarian",))],
    ),
    Scenario("lives in Oslo, said once", "en", [[Ep("I live in Oslo these days.", 0, "s1")]], []),
    Scenario(
        "lunch with Tom, twice",
        "en",
        [[Ep("Had lunch with Tom at the Thai place.", 0, "s1"), Ep("Had lunch with Tom again today.", 7, "s2")]],
        [],
    ),
]

FACTS_ZH = [
    Scenario(
        "住在上海",
        "zh",
        [[
            Ep("我住在上海，时区是东八区", 0, "s1"),
            Ep("我住在上海浦东，通勤要一个小时", 12, "s2"),
            Ep("我一直住在上海这边", 26, "s3"),
        ]],
        [Expect("fact", "home_city", ("上海",))],
    ),
    Scenario(
        "职业是老师",
        "zh",
        [[
            Ep("我是一名老师，白天要上课", 0, "s1"),
            Ep("作为老师，我周末要批改作业", 9, "s2"),
            Ep("我是老师，寒假比较空", 40, "s3"),
        ]],
        [Expect("fact", "job", ("老师|teacher",))],
    ),
    Scenario(
        "对花生过敏",
        "zh",
        [[Ep("我对花生过敏，推荐菜的时候注意一下", 0, "s1"), Ep("提醒一下，我对花生过敏", 15, "s2")]],
        [Expect("fact", "allergy", ("花生|peanut",))],
    ),
    Scenario(
        "从北京搬到深圳",
        "zh",
        [
            [Ep("我住在北京，冬天很冷", 0, "s1"), Ep("我住在北京朝阳区", 15, "s2")],
            [Ep("我搬到深圳了", 60, "s3"), Ep("我现在住在深圳，天气很热", 66, "s4")],
        ],
        [Expect("fact", "home_city", ("深圳",)), Expect("fact", "home_city", ("北京",), current=False)],
    ),
    Scenario(
        "早上跑步改成游泳",
        "zh",
        [
            [Ep(f"今天早上跑步{5 + d % 3}公里", d, f"r{d}") for d in range(0, 60, 5)],
            [Ep("今天早上去游泳了，游了一千米", d, f"w{d}") for d in range(70, 95, 4)],
        ],
        [Expect("fact", "exercise", ("游泳|swim",)), Expect("fact", "exercise", ("跑步|run",), current=False)],
    ),
    Scenario("只说过一次住在杭州", "zh", [[Ep("我住在杭州", 0, "s1")]], []),
]

LESSONS_EN = [
    Scenario(
        "geocoding batch size",
        "en",
        [[
            _tool("Called the geocoding API with a batch of 200 addresses", 0, "s1", "geocoding API",
                  "HTTP 413 Payload Too Large"),
            _tool("Called the geocoding API with a batch of 150 addresses", 0.01, "s1", "geocoding API",
                  "HTTP 413 Payload Too Large"),
            _tool("Called the geocoding API with a batch of 100 addresses", 0.02, "s1", "geocoding API",
                  "HTTP 413 Payload Too Large"),
            _tool("Called the geocoding API with a batch of 50 addresses", 0.03, "s1", "geocoding API",
                  "200 OK, all 50 geocoded"),
        ]],
        [Expect("lesson", "tool:", ("413", "50"))],
        forget=(3,),
        after_forget=[Expect("lesson", "tool:", ("413",))],
    ),
    Scenario(
        "deploys keep failing",
        "en",
        [[
            Ep("Deployed the api service to prod", 0, "s1", event_type="deploy",
               outcome="failed: permission denied on iam:PassRole"),
            Ep("Retried the prod deploy of the api service", 0.1, "s1", event_type="deploy",
               outcome="failed: permission denied on iam:PassRole"),
            Ep("Deployed the api service to prod after lunch", 0.3, "s1", event_type="deploy",
               outcome="failed: permission denied on iam:PassRole"),
            Ep("Ran the prod deploy of the api service again", 1, "s2", event_type="deploy",
               outcome="failed: permission denied on iam:PassRole"),
        ]],
        [Expect("lesson", "tool:", ("permission denied",))],
    ),
    Scenario(
        "pip behind the proxy",
        "en",
        [[
            _tool("pip install torch", 0, "s1", "pip", "error: SSL: CERTIFICATE_VERIFY_FAILED", event="shell"),
            _tool("pip install torch --upgrade", 0.01, "s1", "pip", "error: SSL: CERTIFICATE_VERIFY_FAILED",
                  event="shell"),
            _tool("pip install torch --trusted-host pypi.org --trusted-host files.pythonhosted.org", 0.02, "s1", "pip",
                  "Successfully installed torch", event="shell"),
        ]],
        [Expect("lesson", "tool:", ("trusted-host",))],
    ),
    Scenario(
        "search API rate limit",
        "en",
        [[
            _tool("Queried the search API at 10 requests/s", 0, "s1", "search API", "429 Too Many Requests"),
            _tool("Queried the search API at 8 requests/s", 0.01, "s1", "search API", "429 Too Many Requests"),
            _tool("Queried the search API at 5 requests/s", 0.02, "s1", "search API", "429 Too Many Requests"),
            _tool("Queried the search API at 2 requests/s", 0.03, "s1", "search API", "200 OK"),
        ]],
        [Expect("lesson", "tool:", ("429", "2"))],
    ),
    Scenario(
        "export by month",
        "en",
        [[
            _tool("Exported the full orders table to CSV", 0, "s1", "orders export", "timed out after 300s"),
            _tool("Exported the full orders table to CSV again", 0.05, "s1", "orders export", "timed out after 300s"),
            _tool("Exported the orders table to CSV month by month", 0.1, "s1", "orders export", "done, 12 files"),
        ]],
        [Expect("lesson", "tool:", ("timed out|timeout", "month"))],
    ),
    Scenario(
        "one failure then success",
        "en",
        [[
            _tool("Sent the invoice email via SMTP", 0, "s1", "SMTP", "connection reset"),
            _tool("Sent the invoice email via SMTP", 0.01, "s1", "SMTP", "sent"),
        ]],
        [],
    ),
    Scenario(
        "only successes",
        "en",
        [[_tool(f"Backed up the database, run {i}", i, f"s{i}", "backup job", "completed") for i in range(5)]],
        [],
    ),
    Scenario(
        "batch size lesson revised",
        "en",
        [
            [
                _tool("Called the geocoding API with a batch of 200 addresses", 0, "s1", "geocoding API", "HTTP 413"),
                _tool("Called the geocoding API with a batch of 100 addresses", 0.01, "s1", "geocoding API",
                      "HTTP 413"),
                _tool("Called the geocoding API with a batch of 50 addresses", 0.02, "s1", "geocoding API", "200 OK"),
            ],
            [
                _tool("Called the geocoding API with a batch of 50 addresses", 30, "s2", "geocoding API", "HTTP 413"),
                _tool("Called the geocoding API with a batch of 40 addresses", 30.01, "s2", "geocoding API",
                      "HTTP 413"),
                _tool("Called the geocoding API with a batch of 20 addresses", 30.02, "s2", "geocoding API", "200 OK"),
            ],
        ],
        [
            Expect("lesson", "tool:", ("413", "20")),
            Expect("lesson", "tool:", ("413", "50 addresses worked|50 addresses成功"), current=False),
        ],
    ),
]

LESSONS_ZH = [
    Scenario(
        "地图接口批量大小",
        "zh",
        [[
            _tool("调用地图接口，批量200个地址", 0, "s1", "地图接口", "失败，413"),
            _tool("调用地图接口，批量150个地址", 0.01, "s1", "地图接口", "失败，413"),
            _tool("调用地图接口，批量50个地址", 0.02, "s1", "地图接口", "成功"),
        ]],
        [Expect("lesson", "tool:", ("413", "50"))],
    ),
    Scenario(
        "部署反复失败",
        "zh",
        [[
            Ep("部署支付服务到生产环境", 0, "s1", event_type="部署", outcome="失败：权限不足"),
            Ep("重新部署支付服务", 0.1, "s1", event_type="部署", outcome="失败：权限不足"),
            Ep("再次部署支付服务到生产", 1, "s2", event_type="部署", outcome="失败：权限不足"),
        ]],
        [Expect("lesson", "tool:", ("权限",))],
    ),
    Scenario(
        "导出按月",
        "zh",
        [[
            _tool("导出全部订单数据", 0, "s1", "订单导出", "超时"),
            _tool("再次导出全部订单数据", 0.05, "s1", "订单导出", "超时"),
            _tool("按月分批导出订单数据", 0.1, "s1", "订单导出", "成功，12个文件"),
        ]],
        [Expect("lesson", "tool:", ("超时", "按月"))],
    ),
]

NOISE_ONLY = [
    Scenario("noise only", "en", [[]], []),
    Scenario("噪声", "zh", [[]], []),
]

SCENARIOS: list[Scenario] = [
    *PREFERENCES_EN,
    *PREFERENCES_ZH,
    *FACTS_EN,
    *FACTS_ZH,
    *LESSONS_EN,
    *LESSONS_ZH,
    *NOISE_ONLY,
]

# Everyday traffic around the scenarios: one-off tasks, questions, plans, chatter. None should become a memory.
NOISE_EN = [
    "Can you summarize this article about solar panel efficiency?",
    "Draft an email to Sarah about the Q3 budget review.",
    "What's the capital of Peru?",
    "Booked a table at Luigi's for Friday at 7.",
    "The team meeting moved to 3pm tomorrow.",
    "Remind me to call the dentist on Monday.",
    "How do I reverse a list in Python?",
    "Ordered new running shoes online.",
    "Can you explain how compound interest works?",
    "Send the slides to Priya before the review.",
    "I'm feeling a bit tired today, long week.",
    "Find me a good podcast about history.",
    "The printer on the third floor is jammed again.",
    "What time is sunset in Lisbon on Saturday?",
    "Write a haiku about autumn leaves.",
    "Check whether the invoice from Acme was paid.",
    "Compare the iPhone 15 and the Pixel 8 cameras.",
    "My flight lands at 6:40, pick a hotel near the airport.",
    "Rename the project folder to q3-launch.",
    "Translate 'good morning' into Japanese.",
    "Let's plan the offsite agenda next week.",
    "What's a good gift for a five-year-old?",
    "Set up a weekly sync with the design team.",
    "The client liked the mockups.",
]

NOISE_ZH = [
    "帮我写一封请假邮件",
    "今天天气怎么样？",
    "明天下午三点开会",
    "把这段话翻译成英文",
    "推荐几本关于历史的书",
    "帮我查一下去成都的高铁时间",
    "这周末想去看电影",
    "提醒我周一给牙医打电话",
    "帮我总结一下这篇文章",
    "会议纪要发给小王了",
    "给孩子买什么生日礼物好？",
    "下周要交季度报告",
    "Python 里怎么反转列表？",
    "客户对设计稿很满意",
    "帮我订周五晚上的餐厅",
    "打印机又卡纸了",
]
# fmt: on
