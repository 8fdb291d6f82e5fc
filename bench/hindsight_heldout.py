"""Held-out scenarios for the consolidation benchmark (bench/hindsight.py), in the format of `hindsight_scenarios`.

These were written without reading the implementation (nothing under layers/rearview/service/ was opened) and
without reading the existing scenario file beyond its dataclasses and one example: only from what an agent's users
actually say and what its tools actually return. They are a held-out check, so nothing here may be changed to make
the inducer pass; a miss stays a miss.

Layout: preferences, facts and lessons in English and Chinese (the same things said in different words across
sessions and days, typos and side remarks included), changes that run in two phases (the old memory should end up
superseded, `current=False`), and negatives (`expect=[]`: one-off requests, a request made only twice, two mentions
in one chat, one failure then a success, only successes, chatter that repeats words but states nothing lasting).
A key word "a|b" accepts either; a dimension ending in ":" matches a prefix, `None` any dimension.
"""

from __future__ import annotations

from hindsight_scenarios import Ep, Expect, Scenario


def _call(
    text: str,
    day: float,
    session: str,
    tool: str,
    outcome: str,
    event: str = "tool_call",
    status: str | None = None,
) -> Ep:
    return Ep(text, day, session, event_type=event, entities=(tool,), outcome=outcome, outcome_status=status)


# ---------------------------------------------------------------------------------------------------- preferences

PREFERENCES_EN = [
    Scenario(
        "short answers, said five different ways",
        "en",
        [
            [
                Ep("btw can you keep it brief, I'm on mobile", 0, "m-0301"),
                Ep("ok that was waaay too long lol. just the gist next time pls", 3, "m-0304"),
                Ep("Short answer please, 2-3 sentences max.", 7, "m-0308"),
                Ep("tl;dr version? I don't need the whole essay every time", 12, "m-0313"),
                Ep("again, shorter pls. I skim these between meetings", 18, "m-0319"),
            ]
        ],
        [Expect("preference", "length", ("brief|short|concise|succinct|gist",))],
    ),
    Scenario(
        "metric units, asked through conversions",
        "en",
        [
            [
                Ep("how far is 26 miles in km? honestly just give me km by default, I never think in miles", 0, "u1"),
                Ep("recipe says 350F, what's that in celsius? pls use celsius for recipes", 4, "u2"),
                Ep("can you redo the packing list weights in kg instead of lbs", 9, "u3"),
                Ep("metric units please, I keep having to convert everything you send me", 15, "u4"),
            ]
        ],
        [Expect("preference", "units", ("metric|celsius|kilomet|km|kg",))],
    ),
    Scenario(
        "aisle seat on every flight",
        "en",
        [
            [
                Ep("Book me the 7:40 to Denver, aisle seat if there's one left", 0, "trip-den"),
                Ep("for the return flight same thing, aisle. I get up like five times a flight", 0.02, "trip-den"),
                Ep("can you check me in for the Chicago flight? pick an aisle, never the window", 21, "trip-chi"),
                Ep("Heads up for the Austin trip: aisle seats only, I've got long legs", 47, "trip-aus"),
                Ep("switch my seat to 14C or any other aisle pls, they moved me to a middle", 80, "trip-sfo"),
            ]
        ],
        [Expect("preference", "travel", ("aisle",))],
    ),
    Scenario(
        "polars over pandas",
        "en",
        [
            [
                Ep("can we do this with polars instead of pandas? the csv is like 3GB", 0, "d1"),
                Ep("rewrite that snippet in polars pls, I've stopped using pandas for new stuff", 5, "d2"),
                Ep("same as last time - polars, lazy frames if possible", 11, "d3"),
                Ep("no pandas please, I'd just have to port it to polars anyway", 19, "d4"),
            ]
        ],
        [Expect("preference", "tools", ("polars",))],
    ),
    Scenario(
        "no meetings before 10am",
        "en",
        [
            [
                Ep(
                    "Can you find a slot with Priya next week? Nothing before 10am though, I do school drop-off",
                    0,
                    "cal-1",
                ),
                Ep("move the vendor call to after 10 please, 9:00 doesn't work for me", 6, "cal-2"),
                Ep("Propose times for the retro. Mornings before ten are a no-go for me", 13, "cal-3"),
                Ep("they sent an 8:30 invite again... decline it and suggest 10:30 or later", 20, "cal-4"),
            ]
        ],
        [Expect("preference", None, ("10|ten",))],
    ),
    Scenario(
        "no emojis",
        "en",
        [
            [
                Ep("draft a reply to the client, and no emojis, it's going to a bank", 0, "e1"),
                Ep("pls drop the emojis from your answers, they look weird in my notes app", 4, "e2"),
                Ep("Could you redo that without the 🚀 and ✅ stuff? Plain text is fine", 9, "e3"),
                Ep("reminder: no emoji in anything you write for me", 16, "e4"),
            ]
        ],
        [Expect("preference", "style", ("emoji",))],
    ),
    Scenario(
        "bullet points for weeks, then prose",
        "en",
        [
            [
                Ep("summarize this thread as bullet points pls", 0, "b1"),
                Ep("can you bullet-point the pros and cons of both offers", 5, "b2"),
                Ep("Bullets please, easier to skim on my phone", 9, "b3"),
                Ep("give me the meeting notes in bullet form like usual", 14, "b4"),
            ],
            [
                Ep(
                    "hmm I'm kinda over the bullet points tbh. can you just write normal paragraphs from now on?",
                    60,
                    "b5",
                ),
                Ep("paragraphs please, the bullets read like a powerpoint", 63, "b6"),
                Ep("write the status update as flowing prose, no lists", 68, "b7"),
                Ep("again, plain paragraphs - thanks", 75, "b8"),
            ],
        ],
        [
            Expect("preference", "format", ("bullet",), current=False),
            Expect("preference", "format", ("paragraph|prose",)),
        ],
    ),
]

PREFERENCES_ZH = [
    Scenario(
        "用中文回复，语气各不相同",
        "zh",
        [
            [
                Ep("以后都用中文回我吧，英文看着太累了", 0, "z1"),
                Ep("又是英文。。能说中文不", 3, "z2"),
                Ep("麻烦用中文解释下这个报错，谢谢", 8, "z3"),
                Ep("跟你说过了哈 中文回复", 14, "z4"),
            ]
        ],
        [Expect("preference", "language", ("中文|chinese",))],
    ),
    Scenario(
        "对比类内容用表格",
        "zh",
        [
            [
                Ep("这几款手机帮我对比下，直接列个表格就行", 0, "g1"),
                Ep("能不能整理成表格？一大段一大段的看不过来", 5, "g2"),
                Ep("还是老样子，用表格", 11, "g3"),
                Ep("三家的报价帮我弄成markdown表格发我", 20, "g4"),
            ]
        ],
        [Expect("preference", "format", ("表格|table",))],
    ),
    Scenario(
        "价格换算成人民币",
        "zh",
        [
            [
                Ep("这个耳机美亚上多少钱？帮我折成人民币", 0, "rmb1"),
                Ep("别光给美元啊，我对美元没概念，按人民币算", 6, "rmb2"),
                Ep("日本那边酒店一晚大概多少，换算成人民币告诉我", 13, "rmb3"),
                Ep("以后报价统一用人民币吧，方便我跟老板汇报", 22, "rmb4"),
            ]
        ],
        [Expect("preference", None, ("人民币|rmb|cny|yuan",))],
    ),
    Scenario(
        "变量命名用 snake_case",
        "zh",
        [
            [
                Ep("python 变量名统一用下划线那种吧，别驼峰", 0, "k1"),
                Ep("你这函数名又是 getUserInfo 这种，改成 get_user_info", 4, "k2"),
                Ep("命名规范再说一遍：snake_case，全小写", 10, "k3"),
                Ep("帮我写个清洗数据的脚本，记得变量用蛇形命名", 17, "k4"),
            ]
        ],
        [Expect("preference", None, ("snake|下划线|蛇形",))],
    ),
    Scenario(
        "先要详细，后来只要结论",
        "zh",
        [
            [
                Ep("能讲详细点吗，我想搞懂原理，不光是怎么用", 0, "x1"),
                Ep("别一句话带过啊，展开说说，越细越好", 6, "x2"),
                Ep("这个概念再详细解释下，多举几个例子", 12, "x3"),
                Ep("写详细一些没关系，我有时间慢慢看", 19, "x4"),
            ],
            [
                Ep("最近太忙了，以后直接说结论就行，别写那么长", 55, "x5"),
                Ep("简单点，三句话以内", 58, "x6"),
                Ep("太长不看。。给我个简短版", 63, "x7"),
                Ep("还是那句话，简洁点，说重点", 70, "x8"),
            ],
        ],
        [
            Expect("preference", "length", ("详细|detail|展开|thorough",), current=False),
            Expect("preference", "length", ("简|short|brief|concise|结论|重点",)),
        ],
    ),
    Scenario(
        "高铁先靠窗，怀孕后改靠过道",
        "zh",
        [
            [
                Ep("帮我订周五去上海的高铁，要靠窗的位置", 0, "h1"),
                Ep("回来的票也一样，选F座靠窗", 0.01, "h1"),
                Ep("下周去南京出差，高铁帮我选个靠窗的", 15, "h2"),
                Ep("订一下去杭州的票，老规矩靠窗", 33, "h3"),
            ],
            [
                Ep("怀孕了老要上厕所😂 以后订票帮我选靠过道的吧", 80, "h4"),
                Ep("去苏州的票，过道位，C座或者D座都行", 92, "h5"),
                Ep("记得选靠过道的，别再给我靠窗了", 104, "h6"),
                Ep("下周回老家，高铁要过道座位，谢谢", 118, "h7"),
            ],
        ],
        [
            Expect("preference", "travel", ("靠窗|window",), current=False),
            Expect("preference", "travel", ("过道|aisle",)),
        ],
    ),
]

# ---------------------------------------------------------------------------------------------------------- facts

FACTS_EN = [
    Scenario(
        "lives in Lisbon",
        "en",
        [
            [
                Ep("it's pouring again here in Lisbon, any indoor things to do this weekend?", 0, "l1"),
                Ep("I live in Lisbon, is there a decent bouldering gym near Alfama?", 6, "l2"),
                Ep("what's the easiest way to get from my place in Lisbon to the airport at 5am", 15, "l3"),
                Ep(
                    "Since I moved to Lisbon last year my Portuguese is still terrible, any apps you'd recommend?",
                    31,
                    "l4",
                ),
            ]
        ],
        [Expect("fact", "home_city", ("lisbon|lisboa",))],
    ),
    Scenario(
        "a beagle called Biscuit",
        "en",
        [
            [
                Ep("my beagle Biscuit just ate half a sock, should I be worried?", 0, "p1"),
                Ep("what's a good chew toy for a beagle? Biscuit destroys everything within a day", 8, "p2"),
                Ep("remind me Biscuit has the vet on Friday at 4", 17, "p3"),
                Ep("Biscuit keeps begging for apple slices, are apples ok for dogs?", 29, "p4"),
            ]
        ],
        [Expect("fact", "pet", ("biscuit",))],
    ),
    Scenario(
        "peanut allergy",
        "en",
        [
            [
                Ep("any quick dinner ideas? no peanuts, I'm allergic", 0, "f1"),
                Ep("can you check this granola's ingredient list for peanuts? allergy thing", 5, "f2"),
                Ep("we're ordering thai tonight, what's safe for someone with a peanut allergy (me lol)", 12, "f3"),
                Ep("Swap the peanut butter in this recipe for something else, I can't have peanuts", 26, "f4"),
            ]
        ],
        [Expect("fact", "allergy", ("peanut",))],
    ),
    Scenario(
        "works nights as a nurse",
        "en",
        [
            [
                Ep("I'm a nurse and I work nights. how do I fix my sleep on my days off?", 0, "n1"),
                Ep("help me write a short note to my charge nurse about swapping two shifts", 7, "n2"),
                Ep("as an ICU nurse I need to renew my BLS cert, how long is it usually valid?", 18, "n3"),
                Ep("nursing is brutal this month, can you plan easy meals around 3 night shifts a week", 30, "n4"),
            ]
        ],
        [Expect("fact", "job", ("nurse|nursing",))],
    ),
    Scenario(
        "the team's VPN gateway",
        "en",
        [
            [
                Ep("the VPN gateway is vpn.northwind.dev, why does my client keep saying host unreachable?", 0, "v1"),
                Ep("write the onboarding steps for new hires: connect to vpn.northwind.dev first, then SSO", 9, "v2"),
                Ep("Can you add vpn.northwind.dev to the troubleshooting doc as our only gateway", 20, "v3"),
                Ep("note for the wiki: all remote access goes through vpn.northwind.dev", 33, "v4"),
            ]
        ],
        [Expect("fact", None, ("vpn.northwind.dev",))],
    ),
    Scenario(
        "employer changes from Harbor Analytics to Quill Labs",
        "en",
        [
            [
                Ep("I work at Harbor Analytics, can you help me polish my self-review?", 0, "j1"),
                Ep("Harbor's expense policy is so confusing, how do I claim a train ticket", 12, "j2"),
                Ep("draft a slack message to my team at Harbor Analytics about the offsite", 25, "j3"),
            ],
            [
                Ep("big news: I just started at Quill Labs!! left Harbor last week", 70, "j4"),
                Ep("help me put together a 30-60-90 day plan for the new job at Quill Labs", 72, "j5"),
                Ep("what should I say in my intro post on the Quill Labs slack", 74, "j6"),
                Ep("Quill's benefits portal wants my dependents, who counts?", 85, "j7"),
            ],
        ],
        [
            Expect("fact", "employer", ("harbor",), current=False),
            Expect("fact", "employer", ("quill",)),
        ],
    ),
]

FACTS_ZH = [
    Scenario(
        "住在成都",
        "zh",
        [
            [
                Ep("我在成都住了五年了，想换个小区，高新区和武侯区哪个好", 0, "cd1"),
                Ep("成都这边办居住证要带什么材料", 7, "cd2"),
                Ep("周末想从成都开车出去玩两天，帮我规划下路线", 16, "cd3"),
                Ep("我们成都最近天天下雨，衣服都晾不干，有啥办法", 28, "cd4"),
            ]
        ],
        [Expect("fact", "home_city", ("成都|chengdu",))],
    ),
    Scenario(
        "女儿朵朵",
        "zh",
        [
            [
                Ep("我女儿朵朵下个月五岁生日，帮我想想派对怎么弄", 0, "dd1"),
                Ep("朵朵幼儿园要交个手工作业，用纸盒能做点啥", 9, "dd2"),
                Ep("朵朵最近晚上老是不肯睡，四五岁小孩这样正常吗", 17, "dd3"),
                Ep("想给朵朵报个兴趣班，画画和跳舞选哪个好", 30, "dd4"),
            ]
        ],
        [Expect("fact", "family", ("朵朵|duoduo",))],
    ),
    Scenario(
        "吃素",
        "zh",
        [
            [
                Ep("我吃素的，帮我规划下这周的晚饭，别放肉", 0, "sv1"),
                Ep("周末请同事吃饭，有没有好点的素食餐厅？我自己不吃肉", 6, "sv2"),
                Ep("吃素的话蛋白质怎么补比较好", 13, "sv3"),
                Ep("下个月去云南玩，当地有什么素菜可以吃？我吃素好几年了", 24, "sv4"),
            ]
        ],
        [Expect("fact", "diet", ("素|vegetarian|vegan",))],
    ),
    Scenario(
        "组里周报周五五点前交给老王",
        "zh",
        [
            [
                Ep("我们组周报每周五下午五点前要发给老王，帮我设个提醒", 0, "wr1"),
                Ep("帮我整理下这周的周报，周五前得交", 7, "wr2"),
                Ep("又到周五了，周报模板发我一下，老王那边五点收", 14, "wr3"),
                Ep("新来的同事问周报啥时候交，我说周五下午5点前发老王，没错吧", 21, "wr4"),
            ]
        ],
        [Expect("fact", None, ("周报|weekly report", "周五|friday"))],
    ),
    Scenario(
        "羽毛球打了三年，膝盖伤了改练瑜伽",
        "zh",
        [
            [
                Ep("每周二四晚上都去打羽毛球，球拍线断了，推荐个线呗", 0, "ex1"),
                Ep("今晚打完羽毛球膝盖有点疼，怎么放松", 9, "ex2"),
                Ep("周四的羽毛球局又约上了，帮我看下那天天气", 16, "ex3"),
                Ep("打羽毛球三年了，反手还是很烂，有什么练习方法", 30, "ex4"),
            ],
            [
                Ep("医生说膝盖得养养，羽毛球先停了，开始去练瑜伽", 75, "ex5"),
                Ep("瑜伽课上老师说我髋太紧，有什么拉伸动作", 82, "ex6"),
                Ep("现在每周去三次瑜伽，想买块好点的瑜伽垫", 90, "ex7"),
                Ep("今天瑜伽练完浑身舒服，下次想试试阴瑜伽", 101, "ex8"),
            ],
        ],
        [
            Expect("fact", "exercise", ("羽毛球|badminton",), current=False),
            Expect("fact", "exercise", ("瑜伽|yoga",)),
        ],
    ),
]

# -------------------------------------------------------------------------------------------------------- lessons

LESSONS_EN = [
    Scenario(
        "CRM export rejects large pages, 250 works",
        "en",
        [
            [
                _call(
                    "crm_export.list_contacts(page_size=1000)",
                    0,
                    "exp-1",
                    "crm_export",
                    "HTTP 400 Bad Request: invalid page_size",
                ),
                _call(
                    "crm_export.list_contacts(page_size=1000, offset=0) retry",
                    0.01,
                    "exp-1",
                    "crm_export",
                    "HTTP 400 Bad Request: invalid page_size",
                ),
                _call(
                    "crm_export.list_contacts(page_size=500)",
                    0.02,
                    "exp-1",
                    "crm_export",
                    "HTTP 400 Bad Request: invalid page_size",
                ),
                _call(
                    "crm_export.list_contacts(page_size=250)",
                    0.03,
                    "exp-1",
                    "crm_export",
                    "200 OK, 250 contacts returned",
                ),
                _call(
                    "crm_export.list_contacts(page_size=250, offset=250)",
                    0.04,
                    "exp-1",
                    "crm_export",
                    "200 OK, 250 contacts returned",
                ),
                _call(
                    "crm_export.list_contacts(page_size=250) for the weekly sync",
                    6,
                    "exp-2",
                    "crm_export",
                    "200 OK, 250 contacts returned",
                ),
            ]
        ],
        [Expect("lesson", "tool:", ("400", "250"))],
    ),
    Scenario(
        "GitHub API rate limit, fixed by honouring Retry-After",
        "en",
        [
            [
                _call(
                    "github_api: fetch 400 repo READMEs, 20 parallel requests, no delay",
                    0,
                    "crawl-1",
                    "github_api",
                    "HTTP 429 Too Many Requests",
                ),
                _call(
                    "github_api: same loop, retried immediately",
                    0.01,
                    "crawl-1",
                    "github_api",
                    "HTTP 429 Too Many Requests",
                ),
                _call(
                    "github_api: rerun of yesterday's crawl with the same settings",
                    1,
                    "crawl-2",
                    "github_api",
                    "HTTP 429 Too Many Requests",
                ),
                _call(
                    "github_api: crawl honouring the Retry-After header, exponential backoff between retries",
                    1.02,
                    "crawl-2",
                    "github_api",
                    "success: 400/400 READMEs fetched",
                ),
                _call(
                    "github_api: nightly crawl with Retry-After backoff",
                    3,
                    "crawl-3",
                    "github_api",
                    "success: 412/412 READMEs fetched",
                ),
            ]
        ],
        [Expect("lesson", "tool:", ("429", "retry-after|backoff|back off|back-off"))],
    ),
    Scenario(
        "Jira needs an API token, not the account password",
        "en",
        [
            [
                _call(
                    "jira.create_issue(project='OPS') with basic auth (email + account password)",
                    0,
                    "t-1",
                    "jira",
                    "HTTP 401 Unauthorized",
                    event="api_call",
                    status="failure",
                ),
                _call(
                    "jira.create_issue(project='OPS') basic auth again after re-typing the password",
                    0.01,
                    "t-1",
                    "jira",
                    "HTTP 401 Unauthorized: basic auth with passwords is deprecated",
                    event="api_call",
                    status="failure",
                ),
                _call(
                    "jira.create_issue(project='OPS') with an API token in the Authorization header",
                    0.03,
                    "t-1",
                    "jira",
                    "201 Created OPS-1182",
                    event="api_call",
                    status="success",
                ),
                _call(
                    "jira.search(jql='assignee = currentUser()') with the API token",
                    2,
                    "t-2",
                    "jira",
                    "200 OK, 17 issues",
                    event="api_call",
                    status="success",
                ),
            ]
        ],
        [Expect("lesson", "tool:", ("401", "token"))],
    ),
    Scenario(
        "nightly NAS backup keeps failing on the SSH key, never fixed",
        "en",
        [
            [
                _call(
                    "rsync nightly backup of ~/projects to nas.local",
                    0,
                    "cron-0",
                    "nas_backup",
                    "failed: Permission denied (publickey)",
                    event="cron_job",
                ),
                _call(
                    "rsync nightly backup of ~/projects to nas.local",
                    1,
                    "cron-1",
                    "nas_backup",
                    "failed: Permission denied (publickey)",
                    event="cron_job",
                ),
                _call(
                    "manual rerun of the NAS backup after restarting ssh-agent",
                    1.3,
                    "fix-1",
                    "nas_backup",
                    "failed: Permission denied (publickey)",
                ),
                _call(
                    "rsync nightly backup of ~/projects to nas.local",
                    2,
                    "cron-2",
                    "nas_backup",
                    "failed: Permission denied (publickey)",
                    event="cron_job",
                ),
                _call(
                    "rsync nightly backup of ~/projects to nas.local",
                    4,
                    "cron-4",
                    "nas_backup",
                    "failed: Permission denied (publickey)",
                    event="cron_job",
                ),
            ]
        ],
        [Expect("lesson", "tool:", ("permission denied|publickey",))],
    ),
]

LESSONS_ZH = [
    Scenario(
        "报表接口 30 秒超时，改成 120 秒成功",
        "zh",
        [
            [
                _call("调用 report_api 导出 3 月报表，timeout=30", 0, "rp-1", "report_api", "失败：超时（30 秒）"),
                _call("参数不变再导一次", 0.01, "rp-1", "report_api", "失败：超时"),
                _call("report_api 导出 3 月报表，timeout 改成 120 秒", 0.02, "rp-1", "report_api", "成功"),
                _call("report_api 导出 4 月报表，timeout=120", 3, "rp-2", "report_api", "成功"),
            ]
        ],
        [Expect("lesson", "tool:", ("超时|timeout|timed out|time out", "120"))],
    ),
    Scenario(
        "订单导入每批 5000 条内存溢出，800 条可以",
        "zh",
        [
            [
                _call(
                    "order_import 批量导入订单，每批 5000 条",
                    0,
                    "imp-1",
                    "order_import",
                    "失败：进程被杀，内存溢出（OOM）",
                ),
                _call("order_import 每批 3000 条重跑", 0.01, "imp-1", "order_import", "失败：内存溢出 OOM"),
                _call("order_import 每批改成 800 条", 0.03, "imp-1", "order_import", "成功，已导入 800 条"),
                _call("剩下的订单也按每批 800 条导入", 0.05, "imp-1", "order_import", "成功"),
            ]
        ],
        [Expect("lesson", "tool:", ("oom|内存|memory", "800"))],
    ),
    Scenario(
        "库存接口 v1 地址 404，换 v2 成功",
        "zh",
        [
            [
                _call(
                    "GET /api/v1/stock?sku=A1023 查库存",
                    0,
                    "inv-1",
                    "inventory_api",
                    "失败：HTTP 404 Not Found",
                    event="api_call",
                ),
                _call(
                    "GET /api/v1/stock?sku=B2210 查库存", 0.01, "inv-1", "inventory_api", "失败：404", event="api_call"
                ),
                _call(
                    "换成 GET /api/v2/inventory/stock?sku=A1023",
                    0.02,
                    "inv-1",
                    "inventory_api",
                    "成功",
                    event="api_call",
                ),
                _call("用 v2 接口查 B2210 的库存", 1, "inv-2", "inventory_api", "成功", event="api_call"),
            ]
        ],
        [Expect("lesson", "tool:", ("404", "v2"))],
    ),
    Scenario(
        "pip 连官方源 SSL 报错，加清华镜像成功",
        "zh",
        [
            [
                _call(
                    "pip install torch", 0, "env-1", "pip", "失败：SSLError，连接 pypi.org 超时", event="shell_command"
                ),
                _call(
                    "pip install -r requirements.txt",
                    0.01,
                    "env-1",
                    "pip",
                    "失败：SSLError: HTTPSConnectionPool(host='files.pythonhosted.org', port=443)",
                    event="shell_command",
                ),
                _call(
                    "pip install -r requirements.txt -i https://pypi.tuna.tsinghua.edu.cn/simple",
                    0.02,
                    "env-1",
                    "pip",
                    "成功",
                    event="shell_command",
                ),
                _call(
                    "pip install polars -i https://pypi.tuna.tsinghua.edu.cn/simple",
                    5,
                    "env-2",
                    "pip",
                    "成功",
                    event="shell_command",
                ),
            ]
        ],
        [Expect("lesson", "tool:", ("ssl", "tuna|清华|镜像|mirror"))],
    ),
    Scenario(
        "比价爬虫一直 403 滑块验证，没解决",
        "zh",
        [
            [
                _call(
                    "price_crawler 抓取京东商品价格", 0, "cr-1", "price_crawler", "失败：403 Forbidden，触发滑块验证码"
                ),
                _call(
                    "price_crawler 换了个 User-Agent 再抓",
                    0.02,
                    "cr-1",
                    "price_crawler",
                    "失败：403 Forbidden，触发滑块验证码",
                ),
                _call("price_crawler 每日定时抓取", 1, "cr-2", "price_crawler", "失败：403 Forbidden"),
                _call(
                    "price_crawler 加了 3 秒间隔重新抓",
                    3,
                    "cr-3",
                    "price_crawler",
                    "失败：403 Forbidden，触发滑块验证码",
                ),
                _call("price_crawler 每日定时抓取", 6, "cr-4", "price_crawler", "失败：403 Forbidden"),
            ]
        ],
        [Expect("lesson", "tool:", ("403",))],
    ),
]

# ------------------------------------------------------------------------------------------------------ negatives

NEGATIVES_EN = [
    Scenario(
        "one-off requests on different dimensions",
        "en",
        [
            [
                Ep("translate this paragraph into French for me", 0, "o1"),
                Ep("can you make this one a table?", 5, "o2"),
                Ep("give me the short version this time, I'm in a rush", 11, "o3"),
                Ep("use a formal tone for this letter to the landlord", 17, "o4"),
            ]
        ],
        [],
    ),
    Scenario(
        "a request made only twice",
        "en",
        [
            [
                Ep("reply in German please, I'm practicing for my exam", 0, "de1"),
                Ep("German again pls", 9, "de2"),
            ]
        ],
        [],
    ),
    Scenario(
        "one failure, then the same call succeeds",
        "en",
        [
            [
                _call("weather_api.forecast(city='Oslo', days=3)", 0, "w1", "weather_api", "HTTP 502 Bad Gateway"),
                _call("weather_api.forecast(city='Oslo', days=3) retry", 0.01, "w1", "weather_api", "200 OK"),
            ]
        ],
        [],
    ),
    Scenario(
        "questions about Spanish, no request to use it",
        "en",
        [
            [
                Ep("how do you say 'library' in Spanish? I always mix it up with librería", 0, "sp1"),
                Ep("is Spanish or Italian easier for an English speaker?", 8, "sp2"),
                Ep("a coworker sent me a Spanish meme, what does 'estoy hecho polvo' mean", 15, "sp3"),
                Ep("what's the Spanish for 'see you tomorrow'", 23, "sp4"),
            ]
        ],
        [],
    ),
]

NEGATIVES_ZH = [
    Scenario(
        "同一次对话里说了两遍用英文",
        "zh",
        [
            [
                Ep("这封邮件用英文写吧，要发给新加坡的同事", 0, "q1"),
                Ep("嗯对 还是英文，语气客气点", 0.01, "q1"),
            ]
        ],
        [],
    ),
    Scenario(
        "繁体字只提了两次",
        "zh",
        [
            [
                Ep("这段帮我转成繁体字，要发给台湾的客户", 0, "ft1"),
                Ep("这个也转一下繁体", 12, "ft2"),
            ]
        ],
        [],
    ),
    Scenario(
        "查快递每次都成功",
        "zh",
        [
            [
                _call("查快递单号 SF1402236618", 0, "kd1", "express_tracker", "成功"),
                _call("查快递单号 YT7730192245", 3, "kd2", "express_tracker", "成功"),
                _call("查快递单号 SF1402299120", 3.01, "kd2", "express_tracker", "成功"),
                _call("查快递单号 JD0088173626", 9, "kd3", "express_tracker", "成功"),
                _call("查快递单号 ZTO7513380021", 15, "kd4", "express_tracker", "成功"),
            ]
        ],
        [],
    ),
    Scenario(
        "反复提到“中文”但没有任何要求",
        "zh",
        [
            [
                Ep("中文系的同学推荐了本书，叫《额尔古纳河右岸》，好看吗", 0, "lk1"),
                Ep("电脑上中文输入法又卡住了，咋整", 6, "lk2"),
                Ep("这个海报上的中文字体叫啥，挺好看的", 13, "lk3"),
                Ep("外国朋友问中文里“随便”到底啥意思，帮我解释下", 21, "lk4"),
            ]
        ],
        [],
    ),
]

HELDOUT: list[Scenario] = [
    *PREFERENCES_EN,
    *PREFERENCES_ZH,
    *FACTS_EN,
    *FACTS_ZH,
    *LESSONS_EN,
    *LESSONS_ZH,
    *NEGATIVES_EN,
    *NEGATIVES_ZH,
]
