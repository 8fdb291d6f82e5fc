"""A second held-out set of scenarios for bench/hindsight.py: the final, honest measurement of consolidation.

Written without reading the implementation (layers/rearview/service/) or the other scenario files (only the
`Ep` / `Expect` / `Scenario` definitions at the top of hindsight_scenarios.py were read, and the episode fields
of rearview.domain.memory). Nothing here was tuned against the inducer; a miss stays a miss.

The scenarios follow what agents' users actually write: a fact is usually said outright once or twice and then
only implied ("my beagle Biscuit" once, later "Biscuit ate half a sock"); a preference comes back in different
words, buried in longer requests, with typos; lessons come from tool calls minutes apart within a session and
are confirmed later; negatives are one-off requests, a request made only twice, a repeat inside one chat, a single
failure followed by a success, tool calls that only ever succeed, and chatter that repeats a word but states
nothing lasting. Change scenarios have two phases and expect the old memory as superseded history.

Half the scenarios are English and half Chinese (colloquial, as written to an assistant, not translated).
"""

from __future__ import annotations

from hindsight_scenarios import Ep, Expect, Scenario


def _u(text: str, day: float, session: str) -> Ep:
    """Something the user asked or said."""
    return Ep(text, day, session, event_type="user_message")


def _t(text: str, day: float, session: str, tool: str, outcome: str, status: str | None = None) -> Ep:
    """A tool call with its outcome (status left for the service to recognise unless given)."""
    return Ep(text, day, session, event_type="tool_call", entities=(tool,), outcome=outcome, outcome_status=status)


# --------------------------------------------------------------------------------------------------------------
# English: preferences
# --------------------------------------------------------------------------------------------------------------

EN_PREFERENCES = [
    Scenario(
        "h2_en_pref_markdown_tables",
        "en",
        [
            [
                _u(
                    "Can you pull together the Q3 numbers for the three regions? put it in a markdown table pls, "
                    "columns region / revenue / growth",
                    1,
                    "a1f3",
                ),
                _u(
                    "compare postgres vs mysql vs sqlite for a small internal tool. table format works best for me, "
                    "way easier to scan",
                    4.3,
                    "a2c9",
                ),
                _u("List the open tickets by priority and owner. As usual a table please, not paragraphs", 9.1, "a3d0"),
                _u(
                    "ok what are the actual differences between the three thinkpad models you mentioned? I always find "
                    "a table easier to read than prose",
                    15.6,
                    "a4e7",
                ),
            ]
        ],
        [Expect("preference", "format", ("table",))],
    ),
    Scenario(
        "h2_en_pref_metric_units",
        "en",
        [
            [
                _u("How far is it from Denver to Boulder? in km please, I never think in miles", 2, "b1"),
                _u(
                    "whats the forecast for saturday, planning a hike. give temps in celsius, fahrenheit means nothing "
                    "to me",
                    6.4,
                    "b2",
                ),
                _u("This recipe says 2 cups flour and bake at 350F, can you convert to grams and celsius", 13.2, "b3"),
                _u("how tall is Mount Rainier? metric pls", 20.7, "b4"),
            ]
        ],
        [Expect("preference", "units", ("metric|celsius|kilometer|kilometre|km",))],
    ),
    Scenario(
        "h2_en_pref_flights_aisle_direct",
        "en",
        [
            [
                _u(
                    "Book me a flight SFO to Chicago on the 14th. Aisle seat, and only nonstop - I don't do layovers",
                    3,
                    "c1",
                ),
                _u(
                    "Looking at flights to Austin for the offsite. direct flights only please, I'd rather pay more "
                    "than connect through Dallas",
                    30.2,
                    "c2",
                ),
                _u("Need to get to Seattle next thursday morning. usual rules: aisle, no connections", 58.5, "c3"),
                _u("find me something to Boston friday evening, aisle if there's one left, must be direct", 90.1, "c4"),
            ]
        ],
        [
            Expect("preference", "travel", ("direct|nonstop|non-stop|layover|connection",)),
            Expect("preference", "travel", ("aisle",)),
        ],
    ),
    Scenario(
        "h2_en_pref_pytest_type_hints",
        "en",
        [
            [
                _u(
                    "write a function that parses these nginx log lines into dicts. add type hints pls, and tests with "
                    "pytest not unittest",
                    1,
                    "d1",
                ),
                _u(
                    "Can you refactor this class? also the tests you wrote last time used unittest.TestCase, I want "
                    "plain pytest functions with fixtures",
                    5.2,
                    "d2",
                ),
                _u("new helper to dedupe contacts by email. type hints on everything, pytest tests", 11.4, "d3"),
                _u("add a test for the retry decorator (pytest, parametrize the cases)", 19.8, "d4"),
            ]
        ],
        [
            Expect("preference", "tools", ("pytest",)),
            Expect("preference", None, ("type hint|type hints|type annotation|type annotations|annotated",)),
        ],
    ),
    Scenario(
        "h2_en_pref_short_answers",
        "en",
        [
            [
                _u("whats the difference between a mutex and a semaphore. keep it short, 2-3 sentences max", 2, "e1"),
                _u("explain kubernetes ingress - tl;dr version please, I don't need an essay", 7.3, "e2"),
                _u(
                    "Too long. Just give me the short answer next time, skip the intro and the recap at the end",
                    12.5,
                    "e3",
                ),
                _u("why does my docker build cache keep getting invalidated? brief answer pls", 21.1, "e4"),
            ]
        ],
        [Expect("preference", "length", ("short|brief|concise|succinct",))],
    ),
    Scenario(
        "h2_en_pref_no_emoji",
        "en",
        [
            [
                _u(
                    "draft a reply to the vendor saying we need the invoice corrected. professional, and no emojis",
                    4,
                    "f1",
                ),
                _u(
                    "can you stop putting emojis in your answers? it looks unprofessional when I paste them into our "
                    "docs",
                    10.6,
                    "f2",
                ),
                _u("Write the release notes for v2.3. plain, no emoji, no exclamation marks", 17.2, "f3"),
                _u("rewrite this slack announcement, keep it neutral and again no emojis", 25.9, "f4"),
            ]
        ],
        [Expect("preference", "style", ("emoji|emojis",))],
    ),
    Scenario(
        "h2_en_pref_change_meetings_morning_to_afternoon",
        "en",
        [
            [
                _u("Set up a sync with Dana next week. Mornings work best for me, ideally before 11", 1, "g1"),
                _u("schedule the vendor demo - a morning slot pls, my afternoons are for deep work", 8.2, "g2"),
                _u("Can you move the 1:1 with Marco to a morning? I'm fried after lunch", 20.4, "g3"),
                _u("book a room for the planning session, tuesday 9:30am", 34.1, "g4"),
                _u("put the design review in the morning, like 10ish", 47.3, "g5"),
            ],
            [
                _u(
                    "FYI I've switched to the Singapore-overlap schedule, I start at noon now. so meetings in the "
                    "afternoon from now on",
                    70.2,
                    "g6",
                ),
                _u("set up the retro for thursday afternoon, 3pm", 74.5, "g7"),
                _u("can you push my 9am with finance to after 2pm? mornings don't work for me anymore", 81.3, "g8"),
                _u("book a call with the agency, afternoon please, anything after 1", 88.6, "g9"),
            ],
        ],
        [
            Expect("preference", None, ("afternoon",)),
            Expect("preference", None, ("morning",), current=False),
        ],
    ),
]

# --------------------------------------------------------------------------------------------------------------
# English: facts
# --------------------------------------------------------------------------------------------------------------

EN_FACTS = [
    Scenario(
        "h2_en_fact_lives_in_lisbon",
        "en",
        [
            [
                _u(
                    "I moved to Lisbon last year and still can't figure out the tax stuff. what's NHR and does it "
                    "still exist?",
                    2,
                    "h1",
                ),
                _u("any decent ramen places near Alfama? that's my neighbourhood", 9.4, "h2"),
                _u("is it going to rain here tomorrow? (Lisbon)", 16.1, "h3"),
                _u("quickest way from my place in Lisbon to the airport at 6am, metro or uber?", 27.7, "h4"),
            ]
        ],
        [Expect("fact", "home_city", ("lisbon",))],
    ),
    Scenario(
        "h2_en_fact_beagle_biscuit",
        "en",
        [
            [
                _u("My beagle Biscuit keeps scratching his ears. what could cause that?", 3, "i1"),
                _u("Biscuit ate half a sock this morning, should I be worried", 11.3, "i2"),
                _u("remind me to book Biscuit's vaccination at the vet next week", 19.6, "i3"),
                _u("whats a good chew toy for a dog that destroys everything? asking for Biscuit lol", 30.2, "i4"),
            ]
        ],
        [Expect("fact", "pet", ("biscuit", "beagle|dog"))],
    ),
    Scenario(
        "h2_en_fact_peanut_allergy",
        "en",
        [
            [
                _u("Suggest snacks for a 12h flight. I'm allergic to peanuts so nothing risky", 1, "j1"),
                _u(
                    "Looking for a satay recipe but I can't have peanuts (allergy) - any substitute that tastes "
                    "similar?",
                    14.2,
                    "j2",
                ),
                _u(
                    "we're ordering thai for the team, pick something for me that's peanut free, you know my allergy",
                    29.5,
                    "j3",
                ),
            ]
        ],
        [Expect("fact", "allergy", ("peanut|peanuts",))],
    ),
    Scenario(
        "h2_en_fact_staging_host",
        "en",
        [
            [
                _u(
                    "Deploy the feature branch to staging, that's staging.fernhill.dev, the deploy key is in 1password",
                    1,
                    "k1",
                ),
                _u("the login page on staging.fernhill.dev is throwing 500s, can you check the logs", 6.5, "k2"),
                _u("point the smoke tests at staging.fernhill.dev, not prod!!", 13.2, "k3"),
                _u("can you clear the redis cache on staging.fernhill.dev before QA starts", 22.4, "k4"),
            ]
        ],
        [Expect("fact", None, ("staging.fernhill.dev",))],
    ),
    Scenario(
        "h2_en_fact_sister_maya",
        "en",
        [
            [
                _u(
                    "My sister Maya's birthday is on the 12th, gift ideas for someone who's really into pottery?",
                    4,
                    "l1",
                ),
                _u("Maya is visiting next weekend, what should we do around town", 26.3, "l2"),
                _u(
                    "help me write a toast for Maya's wedding, she's my little sister and I'm the maid of honor",
                    48.1,
                    "l3",
                ),
            ]
        ],
        [Expect("fact", "family", ("maya", "sister"))],
    ),
    Scenario(
        "h2_en_fact_change_employer_stripe_to_kelp",
        "en",
        [
            [
                _u(
                    "I'm a backend engineer at Stripe, on the billing team. how should I prep a staff promo packet?",
                    1,
                    "m1",
                ),
                _u("write a note to my manager at Stripe asking to move my perf review by a week", 12.4, "m2"),
                _u(
                    "our billing service at Stripe is mostly Ruby, any good resources on ruby perf profiling?",
                    40.2,
                    "m3",
                ),
            ],
            [
                _u("big news, I left Stripe! starting at Kelp Labs on monday as their second backend hire", 75.1, "m4"),
                _u("Kelp Labs uses Go for everything, give me a crash course on goroutines and channels", 82.3, "m5"),
                _u("draft my intro message for the Kelp Labs slack, casual", 95.5, "m6"),
                _u("what should I ask the Kelp founders in my 30 day check-in", 110.2, "m7"),
            ],
        ],
        [
            Expect("fact", "employer", ("kelp",)),
            Expect("fact", "employer", ("stripe",), current=False),
            Expect("fact", "job", ("backend",)),
        ],
    ),
    Scenario(
        "h2_en_fact_change_cycling_to_climbing",
        "en",
        [
            [
                _u("planning my sunday ride, about 80km. what should I eat before a long ride?", 1, "n1"),
                _u("I cycle to work every day, any tips for riding in the rain without getting soaked?", 15.2, "n2"),
                _u("my road bike's chain keeps skipping on the big cog, what do I check", 33.4, "n3"),
                _u("sunday group ride got cancelled, suggest an indoor trainer workout", 52.1, "n4"),
                _u("how do I get faster on climbs on the bike", 70.6, "n5"),
            ],
            [
                _u(
                    "doctor says no cycling for a while because of my knee, so I've started bouldering at the "
                    "climbing gym instead",
                    95.2,
                    "n6",
                ),
                _u("what are good forearm exercises for climbing", 99.4, "n7"),
                _u(
                    "went to the climbing gym 3 times this week, fingers are wrecked. how do I avoid pulley injuries?",
                    106.3,
                    "n8",
                ),
                _u("is it worth buying my own climbing shoes or should I keep renting", 115.1, "n9"),
            ],
        ],
        [
            Expect("fact", "exercise", ("climbing|bouldering",)),
            Expect("fact", "exercise", ("cycling|cycle|bike|biking|riding|ride",), current=False),
        ],
    ),
]

# --------------------------------------------------------------------------------------------------------------
# English: lessons
# --------------------------------------------------------------------------------------------------------------

EN_LESSONS = [
    Scenario(
        "h2_en_lesson_crm_export_page_size",
        "en",
        [
            [
                _t(
                    "crm_export: export all contacts, page_size=1000", 0, "o1", "crm_export", "HTTP 504 Gateway Timeout"
                ),
                _t(
                    "crm_export: retry contacts export, page_size=1000",
                    0.01,
                    "o1",
                    "crm_export",
                    "HTTP 504 Gateway Timeout",
                ),
                _t(
                    "crm_export: export contacts, page_size=250",
                    0.02,
                    "o1",
                    "crm_export",
                    "ok: 18,402 rows in 74 pages",
                ),
                _t("crm_export: export deals, page_size=250", 3.2, "o2", "crm_export", "ok: 5,120 rows"),
            ]
        ],
        [Expect("lesson", "tool:", ("504", "250"))],
    ),
    Scenario(
        "h2_en_lesson_github_token_auth",
        "en",
        [
            [
                _t(
                    "github_api: list org repos using basic auth (username + password)",
                    0,
                    "p1",
                    "github_api",
                    "HTTP 401 Bad credentials",
                ),
                _t(
                    "github_api: list org repos, basic auth, re-entered the password",
                    0.01,
                    "p1",
                    "github_api",
                    "HTTP 401 Bad credentials",
                ),
                _t(
                    "github_api: list org repos with a personal access token in the Authorization header",
                    0.02,
                    "p1",
                    "github_api",
                    "200 OK, 64 repos",
                    "success",
                ),
                _t(
                    "github_api: open an issue in fernhill/api using the personal access token",
                    2.4,
                    "p2",
                    "github_api",
                    "201 Created",
                    "success",
                ),
            ]
        ],
        [Expect("lesson", "tool:", ("401", "token"))],
    ),
    Scenario(
        "h2_en_lesson_image_resize_oom_workers",
        "en",
        [
            [
                _t(
                    "image_resize: resize 12k product photos to 1200px, workers=16",
                    0,
                    "q1",
                    "image_resize",
                    "killed: out of memory",
                ),
                _t(
                    "image_resize: resume batch, workers=16",
                    0.01,
                    "q1",
                    "image_resize",
                    "killed: out of memory (RSS 15.8 GB)",
                ),
                _t("image_resize: resume batch, workers=4", 0.02, "q1", "image_resize", "done, 12,003 images"),
                _t(
                    "image_resize: resize the new catalog photos, workers=4",
                    5.3,
                    "q2",
                    "image_resize",
                    "done, 830 images",
                ),
            ]
        ],
        [Expect("lesson", "tool:", ("out of memory|oom", "4"))],
    ),
    Scenario(
        "h2_en_lesson_vpn_recurring_handshake",
        "en",
        [
            [
                _t(
                    "vpn_connect: connect to office VPN gw.fernhill.dev",
                    0,
                    "r1",
                    "vpn_connect",
                    "failed: TLS handshake timeout",
                ),
                _t("vpn_connect: connect to office VPN", 1.1, "r2", "vpn_connect", "failed: TLS handshake timeout"),
                _t(
                    "vpn_connect: connect to office VPN after restarting the wifi adapter",
                    3.4,
                    "r3",
                    "vpn_connect",
                    "failed: TLS handshake timeout",
                ),
                _t("vpn_connect: connect to office VPN", 6.2, "r4", "vpn_connect", "failed: TLS handshake timeout"),
            ]
        ],
        [Expect("lesson", "tool:", ("handshake",))],
    ),
]

# --------------------------------------------------------------------------------------------------------------
# English: negatives (nothing lasting should be induced)
# --------------------------------------------------------------------------------------------------------------

EN_NEGATIVES = [
    Scenario(
        "h2_en_neg_one_off_requests",
        "en",
        [
            [
                _u("translate this paragraph into French for the client email", 1, "s1"),
                _u("give me the config as JSON this time", 5.2, "s2"),
                _u("write the standup update as a haiku lol, it's friday", 9.7, "s3"),
                _u("can you do this one in bullet points", 16.3, "s4"),
            ]
        ],
        [],
    ),
    Scenario(
        "h2_en_neg_two_mentions_one_chat",
        "en",
        [
            [
                _u("summarise this incident report, use bullet points please", 3, "t1"),
                _u("again bullets please, easier to skim on my phone", 3.007, "t1"),
            ]
        ],
        [],
    ),
    Scenario(
        "h2_en_neg_single_failure_then_success",
        "en",
        [
            [
                _t(
                    "slack_post: post deploy notice to #releases", 0, "u1", "slack_post", "HTTP 503 Service Unavailable"
                ),
                _t("slack_post: post deploy notice to #releases (retry)", 0.01, "u1", "slack_post", "ok"),
                _t("slack_post: post weekly metrics to #team", 4.2, "u2", "slack_post", "ok"),
            ]
        ],
        [],
    ),
]

# --------------------------------------------------------------------------------------------------------------
# Chinese: preferences
# --------------------------------------------------------------------------------------------------------------

ZH_PREFERENCES = [
    Scenario(
        "h2_zh_pref_reply_in_chinese",
        "zh",
        [
            [
                _u("帮我看下这个报错啥意思 ModuleNotFoundError: No module named 'cv2'，用中文解释哈", 1, "za1"),
                _u("你怎么又用英文回我了。。以后统一中文回复吧，我英文一般", 5.3, "za2"),
                _u("总结一下这篇英文论文的摘要，中文说就行", 12.6, "za3"),
                _u("这个 API 文档太长了，帮我用中文讲讲重点", 20.2, "za4"),
            ]
        ],
        [Expect("preference", "language", ("中文|chinese",))],
    ),
    Scenario(
        "h2_zh_pref_numbered_steps",
        "zh",
        [
            [
                _u("mac 上怎么装 homebrew？步骤给我编个号，1 2 3 那种，方便我一步步跟着做", 2, "zb1"),
                _u("教我配一下 nginx 反向代理，还是老样子分步骤写，带序号", 8.4, "zb2"),
                _u("git rebase 怎么弄，你一条一条列出来，编号的那种，别写成一大段", 15.1, "zb3"),
                _u("重装系统之后怎么恢复微信聊天记录？按步骤编号列出来", 23.7, "zb4"),
            ]
        ],
        [Expect("preference", "format", ("编号|序号|numbered",))],
    ),
    Scenario(
        "h2_zh_pref_prices_in_rmb",
        "zh",
        [
            [
                _u("亚马逊上这个耳机 $349，折合人民币多少？以后价格都帮我换成人民币吧", 3, "zc1"),
                _u("对比下阿里云、腾讯云、AWS 这几个入门款服务器的月费，统一按人民币算", 10.2, "zc2"),
                _u("东京这家酒店一晚 28000 日元贵不贵，换算成人民币看看", 18.5, "zc3"),
                _u("帮我列一下 MacBook Air 在美国、香港、日本的价格，都折成人民币", 27.3, "zc4"),
            ]
        ],
        [Expect("preference", "units", ("人民币|rmb|cny|renminbi|yuan",))],
    ),
    Scenario(
        "h2_zh_pref_iso_dates",
        "zh",
        [
            [
                _u("把这份会议纪要里的日期统一改成 YYYY-MM-DD 格式，就是 2024-03-05 这种", 1, "zd1"),
                _u("生成的表格里日期别写成 3/5/24 这样，根本看不出是几月几号，用 年-月-日，四位年份", 9.3, "zd2"),
                _u("导出的 csv 里时间那列改一下格式，还是 YYYY-MM-DD", 16.6, "zd3"),
                _u("写个 python 脚本，把文件名里的日期都改成 2024-03-05 这种格式", 24.2, "zd4"),
            ]
        ],
        [Expect("preference", None, ("yyyy-mm-dd|年-月-日|iso|2024-03-05",))],
    ),
    Scenario(
        "h2_zh_pref_hotel_atour",
        "zh",
        [
            [
                _u("下周去成都出差两天，帮我看看酒店，优先亚朵，积分都在那边", 5, "ze1"),
                _u("深圳出差订个酒店，老规矩亚朵，没有的话全季也凑合", 33.2, "ze2"),
                _u("西安那边有亚朵吗？有的话订一间离会展中心近的", 61.4, "ze3"),
                _u("下个月去武汉，酒店还是亚朵，我是他们家金卡", 88.1, "ze4"),
            ]
        ],
        [Expect("preference", "travel", ("亚朵|atour",))],
    ),
    Scenario(
        "h2_zh_pref_no_cilantro",
        "zh",
        [
            [
                _u("帮我点个午饭外卖，牛肉面就行，备注不要香菜！", 2, "zf1"),
                _u("晚上点个麻辣烫，记得跟商家说别放香菜，闻着都难受", 6.5, "zf2"),
                _u("周五团建订餐，我那份别加香菜哈", 13.2, "zf3"),
                _u("点一份越南粉，香菜全部去掉", 21.4, "zf4"),
            ]
        ],
        [Expect("preference", "diet", ("香菜|cilantro|coriander",))],
    ),
    Scenario(
        "h2_zh_pref_change_vue_to_react",
        "zh",
        [
            [
                _u("写个 todo 列表组件，用 Vue 3 + composition API", 1, "zg1"),
                _u("我们前端都是 Vue 的，帮我把这个 jQuery 页面改成 Vue 组件", 10.3, "zg2"),
                _u("vue 里 watch 和 computed 到底啥时候用哪个", 25.2, "zg3"),
                _u("这个表单校验用 Vue 写一下，配 element-plus", 40.4, "zg4"),
            ],
            [
                _u("团队决定前端全面迁到 React 了，以后组件都用 React + TypeScript 写吧", 62.1, "zg5"),
                _u("帮我把这个弹窗组件用 React 重写，hooks 写法", 66.3, "zg6"),
                _u("react 里 useEffect 的依赖数组老是搞错，给我讲讲", 75.2, "zg7"),
                _u("写个分页表格组件，React 的，别再给我 Vue 的了", 83.5, "zg8"),
            ],
        ],
        [
            Expect("preference", "tools", ("react",)),
            Expect("preference", "tools", ("vue",), current=False),
        ],
    ),
    Scenario(
        "h2_zh_pref_change_detailed_to_short",
        "zh",
        [
            [
                _u("讲讲 TCP 三次握手，说详细点，最好举个例子", 1, "zh1"),
                _u("这个概念我还是没太懂，能不能再展开讲讲，写长点没关系", 7.2, "zh2"),
                _u("解释一下 Redis 持久化，RDB 和 AOF，越详细越好", 18.4, "zh3"),
                _u("帮我讲下 Kafka 的分区机制，详细一点，配个例子", 30.1, "zh4"),
            ],
            [
                _u("最近太忙了，以后回答简短点，三五句话说清楚就行", 50.3, "zh5"),
                _u("又写这么长。。简单说重点就好", 53.1, "zh6"),
                _u("docker 和虚拟机有啥区别，简短点", 60.4, "zh7"),
                _u("k8s 的 pod 是啥，简短回答", 68.2, "zh8"),
            ],
        ],
        [
            Expect("preference", "length", ("简短|简洁|简单|short|brief|concise",)),
            Expect("preference", "length", ("详细|detailed|detail|展开",), current=False),
        ],
    ),
]

# --------------------------------------------------------------------------------------------------------------
# Chinese: facts
# --------------------------------------------------------------------------------------------------------------

ZH_FACTS = [
    Scenario(
        "h2_zh_fact_daughter_duoduo",
        "zh",
        [
            [
                _u("我女儿朵朵今年上二年级，数学应用题老是读不懂题，有啥办法", 3, "zi1"),
                _u("朵朵周末学校组织春游，帮我列个要带的东西清单", 17.2, "zi2"),
                _u("给朵朵找几本适合八岁小孩看的科普书", 31.5, "zi3"),
                _u("朵朵发烧38度5，精神还行，要不要现在去医院", 45.1, "zi4"),
            ]
        ],
        [Expect("fact", "family", ("朵朵|duoduo", "女儿|daughter"))],
    ),
    Scenario(
        "h2_zh_fact_physics_teacher",
        "zh",
        [
            [
                _u("我是高中物理老师，帮我出 5 道动量守恒的选择题，难度中等", 2, "zj1"),
                _u("下周要上公开课，讲电磁感应，帮我设计个导入环节", 11.3, "zj2"),
                _u("帮我分析下高二（3）班这次物理月考的成绩分布", 20.5, "zj3"),
                _u("帮我写一份我们物理教研组的学期工作总结", 34.2, "zj4"),
            ]
        ],
        [Expect("fact", "job", ("物理|physics", "老师|教师|teacher"))],
    ),
    Scenario(
        "h2_zh_fact_vegetarian",
        "zh",
        [
            [
                _u("我吃素好几年了，推荐几个高蛋白的素食早餐", 4, "zk1"),
                _u("周末跟朋友聚餐，帮我找家有素食选择的火锅店", 19.4, "zk2"),
                _u("帮我规划一周的晚饭菜单，全素的", 37.2, "zk3"),
                _u("出差住酒店早餐基本没啥能吃的，吃素的人一般怎么解决", 52.6, "zk4"),
            ]
        ],
        [Expect("fact", "diet", ("素|vegetarian|vegan",))],
    ),
    Scenario(
        "h2_zh_fact_weekly_meeting_monday",
        "zh",
        [
            [
                _u("我们组每周一上午十点开周会，帮我弄个会议纪要模板", 0, "zl1"),
                _u("明天周会要汇报进度，帮我把这周干的活整理成几条", 6.8, "zl2"),
                _u("周一十点那个周会我得请假，帮我想想怎么跟组长说", 13.7, "zl3"),
                _u("把周会议程发群里，还是老时间周一上午十点", 20.9, "zl4"),
            ]
        ],
        [Expect("fact", None, ("周一|monday", "周会|例会|weekly|meeting"))],
    ),
    Scenario(
        "h2_zh_fact_corgi_doubao",
        "zh",
        [
            [
                _u("我家柯基叫豆包，两岁了，最近掉毛特别厉害，是换季了吗", 2, "zm1"),
                _u("豆包今天把沙发咬了个洞。。怎么训练它不咬家具", 15.3, "zm2"),
                _u("带豆包去打疫苗要注意点啥", 28.2, "zm3"),
                _u("柯基一天该喂多少狗粮？豆包大概 12 斤", 40.6, "zm4"),
            ]
        ],
        [Expect("fact", "pet", ("豆包|doubao", "柯基|corgi|狗|dog"))],
    ),
    Scenario(
        "h2_zh_fact_change_shanghai_to_hangzhou",
        "zh",
        [
            [
                _u("上海这周末有啥好看的展览吗", 1, "zn1"),
                _u("我住上海浦东，想找个周末能去的周边游，开车两小时以内", 12.3, "zn2"),
                _u("上海落户积分是怎么算的", 30.4, "zn3"),
                _u("浦东这边哪有靠谱点的修车店", 48.2, "zn4"),
            ],
            [
                _u("上个月搬到杭州了，帮我查下社保怎么从上海转到杭州", 70.1, "zn5"),
                _u("杭州有啥适合周末去的地方，不想人太多", 75.5, "zn6"),
                _u("我家在杭州滨江，附近有没有好点的健身房", 83.2, "zn7"),
                _u("杭州的车牌摇号怎么弄", 95.4, "zn8"),
            ],
        ],
        [
            Expect("fact", "home_city", ("杭州|hangzhou",)),
            Expect("fact", "home_city", ("上海|shanghai",), current=False),
        ],
    ),
]

# --------------------------------------------------------------------------------------------------------------
# Chinese: lessons
# --------------------------------------------------------------------------------------------------------------

ZH_LESSONS = [
    Scenario(
        "h2_zh_lesson_oss_region",
        "zh",
        [
            [
                _t("oss_sync: 上传数据库备份到 oss-cn-beijing 的 bucket", 0, "zo1", "oss_sync", "失败：超时"),
                _t("oss_sync: 重试上传到 oss-cn-beijing", 0.01, "zo1", "oss_sync", "失败：连接超时"),
                _t("oss_sync: 改用 oss-cn-shanghai 区域上传", 0.02, "zo1", "oss_sync", "成功"),
                _t("oss_sync: 上传今天的备份到 oss-cn-shanghai", 2.1, "zo2", "oss_sync", "成功，共 3.2GB"),
            ]
        ],
        [Expect("lesson", "tool:", ("超时|timeout|timed out", "shanghai|上海"))],
    ),
    Scenario(
        "h2_zh_lesson_translate_concurrency",
        "zh",
        [
            [
                _t("translate_api: 批量翻译商品标题，并发 20", 0, "zp1", "translate_api", "HTTP 429 Too Many Requests"),
                _t("translate_api: 并发 20 重跑一遍", 0.01, "zp1", "translate_api", "HTTP 429 Too Many Requests"),
                _t("translate_api: 并发降到 5 再跑", 0.03, "zp1", "translate_api", "成功，完成 3000 条"),
                _t("translate_api: 翻译新上架的商品，并发 5", 1.2, "zp2", "translate_api", "成功"),
            ]
        ],
        [Expect("lesson", "tool:", ("429", "5"))],
    ),
    Scenario(
        "h2_zh_lesson_weather_api_version",
        "zh",
        [
            [
                _t("weather_api: 调 /v1/forecast 查北京未来三天", 0, "zq1", "weather_api", "HTTP 410 Gone", "failure"),
                _t("weather_api: 调 /v1/forecast 查上海", 0.01, "zq1", "weather_api", "HTTP 410 Gone", "failure"),
                _t("weather_api: 改用 /v3/forecast 查北京", 0.02, "zq1", "weather_api", "成功"),
                _t("weather_api: /v3/forecast 查杭州周末天气", 4.3, "zq2", "weather_api", "成功"),
            ]
        ],
        [Expect("lesson", "tool:", ("410", "v3"))],
    ),
    Scenario(
        "h2_zh_lesson_nas_recurring_permission",
        "zh",
        [
            [
                _t(
                    "nas_backup: 把手机照片同步到 /volume1/backup/photos",
                    0,
                    "zr1",
                    "nas_backup",
                    "失败：permission denied",
                ),
                _t("nas_backup: 再同步一次照片", 1.2, "zr2", "nas_backup", "失败：permission denied"),
                _t("nas_backup: 换了个管理员账号登录后再同步", 2.4, "zr3", "nas_backup", "失败：permission denied"),
                _t("nas_backup: 同步照片到 NAS", 5.1, "zr4", "nas_backup", "失败：permission denied"),
            ]
        ],
        [Expect("lesson", "tool:", ("permission denied|权限",))],
    ),
]

# --------------------------------------------------------------------------------------------------------------
# Chinese: negatives
# --------------------------------------------------------------------------------------------------------------

ZH_NEGATIVES = [
    Scenario(
        "h2_zh_neg_request_only_twice",
        "zh",
        [
            [
                _u("帮我把这段话翻译成日语，要发给日本客户的", 3, "zs1"),
                _u("这封邮件也帮我翻成日语吧", 20.4, "zs2"),
            ]
        ],
        [],
    ),
    Scenario(
        "h2_zh_neg_only_successes",
        "zh",
        [
            [
                _t("calendar_create: 周三下午三点 产品评审", 0, "zt1", "calendar_create", "成功"),
                _t("calendar_create: 周五上午 牙医复诊", 2.3, "zt2", "calendar_create", "成功"),
                _t("calendar_create: 下周一 出差提醒", 6.1, "zt3", "calendar_create", "成功"),
                _t("calendar_create: 月底 交房租", 11.4, "zt4", "calendar_create", "成功"),
            ]
        ],
        [],
    ),
    Scenario(
        "h2_zh_neg_rain_chatter",
        "zh",
        [
            [
                _u("又下雨了，烦死", 1, "zu1"),
                _u("这雨下得没完没了哈哈", 4.2, "zu2"),
                _u("雨好大，外卖估计又要晚了", 9.6, "zu3"),
                _u("今天终于不下雨了，开心", 15.3, "zu4"),
            ]
        ],
        [],
    ),
]


HELDOUT2: list[Scenario] = [
    *EN_PREFERENCES,
    *EN_FACTS,
    *EN_LESSONS,
    *EN_NEGATIVES,
    *ZH_PREFERENCES,
    *ZH_FACTS,
    *ZH_LESSONS,
    *ZH_NEGATIVES,
]
