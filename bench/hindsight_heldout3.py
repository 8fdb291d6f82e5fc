"""Third blind held-out set for bench/hindsight.py: 40 scenarios, 20 in English and 20 in Chinese.

Written blind: without reading the implementation of consolidation (nothing under layers/rearview/service/), without
opening any other scenario file (hindsight_heldout.py, hindsight_heldout2.py, or the scenarios of
hindsight_scenarios.py past its `Ep` / `Expect` / `Scenario` dataclasses), and not tuned against the benchmark's
figures: it was never run while writing. Only `rearview/domain/memory.py` was read, for the fields an episode has.

The users are people an assistant or coding agent serves in their lives and jobs: a home baker, a teacher, a sales
rep, an ICU nurse, a retiree who moved, a data analyst, a lab researcher, parents, a 考研 student, a salesperson on
WeChat, a physics teacher, backend and frontend engineers. Per language: 7 preferences, 6 facts, 4 lessons and 3
negatives; six scenarios are two-phase changes (a preference, fact or lesson that later changes, the old one kept
only as superseded history).

User turns are `event_type="user_message"`; tool calls are `event_type="tool_call"` with the tool as the single
entity and the outcome text as the tool reported it (no `outcome_status`: the service should recognise it).
"""

from __future__ import annotations

from hindsight_scenarios import Ep, Expect, Scenario

# The scenarios are laid out by hand, one episode a line.
# fmt: off


def _u(text: str, day: float, session: str) -> Ep:
    return Ep(text, day, session, event_type="user_message")


def _t(text: str, day: float, session: str, tool: str, outcome: str) -> Ep:
    return Ep(text, day, session, event_type="tool_call", entities=(tool,), outcome=outcome)


# ---------------------------------------------------------------------------------------------------------------
# English: preferences
# ---------------------------------------------------------------------------------------------------------------

_EN_PREFERENCES: list[Scenario] = [
    Scenario(
        name="h3_en_pref_baking_by_weight",
        language="en",
        phases=[[
            _u("Can you convert this banana bread recipe for me? It's all in cups and I weigh everything, so grams please. 2 cups flour, 1 cup sugar, 1/2 cup butter, 3 bananas", 0.3, "bk-0412"),
            _u("found a sourdough recipe on a US blog, can u redo the quantities by weight? g not cups, my scale is the only thing I trust lol", 4.8, "bk-0416"),
            _u("also what temp should the dutch oven be preheated to", 4.81, "bk-0416"),
            _u("Scaling my grandma's oatmeal cookie recipe x3. Give me everything in grams again, I don't even own measuring cups anymore", 11.5, "bk-0423"),
            _u("how much does a cup of cocoa powder weigh? need it in grams for the brownies, recipe says 3/4 cup", 19.2, "bk-0501"),
        ]],
        expect=[Expect("preference", "units", ("gram|weigh",))],
    ),
    Scenario(
        name="h3_en_pref_pytest_style",
        language="en",
        phases=[[
            _u("write tests for this parser function. use pytest please, plain asserts, no unittest.TestCase classes", 1.2, "dev-7c1e"),
            _u("def parse_duration(s: str) -> int:\n    # '1h30m' -> 5400\n    ...", 1.21, "dev-7c1e"),
            _u("can you add a test for the retry decorator? pytest fixtures + parametrize if it makes sense. I really dislike the unittest boilerplate", 6.7, "dev-91aa"),
            _u("rewrite these tests, someone wrote them with self.assertEqual everywhere \U0001F644 convert to pytest style", 13.4, "dev-0b3f"),
            _u("quick test for slugify(), pytest, parametrized over a few unicode cases (umlauts, emoji, CJK)", 20.0, "dev-5d20"),
        ]],
        expect=[Expect("preference", "code", ("pytest",))],
    ),
    Scenario(
        name="h3_en_pref_short_sales_emails",
        language="en",
        phases=[[
            _u("draft a follow-up email to the Brightwell procurement guy, we demoed last Tues. keep it short, like 4-5 sentences max, nobody reads long emails", 0.5, "sl-a"),
            _u("need a cold outreach emial for a VP of ops at a mid-size logistics company. short!! under 100 words", 2.9, "sl-b"),
            _u("rewrite this, it's way too long. trim it to something they can read on their phone in 10 sec: 'Hi Dana, I hope this finds you well. I wanted to circle back on our conversation from last month regarding...'", 7.3, "sl-c"),
            _u("ok better. change 'circle back' to something less cringe", 7.31, "sl-c"),
            _u("Write a renewal reminder for Kessler & Co, contract ends June 30. Brief pls, same as usual, few lines tops", 15.6, "sl-d"),
        ]],
        expect=[Expect("preference", "length", ("short|brief|concise",))],
    ),
    Scenario(
        name="h3_en_pref_aisle_seat",
        language="en",
        phases=[[
            _u("Book me on the 7:40 to Chicago on the 14th. Aisle seat, I'm up and down the whole flight", 2.0, "trv-101"),
            _u("find flights SFO to SEA for next Thursday, anything before 9am. aisle if there's any left", 9.4, "trv-102"),
            _u("they cancelled the Denver leg, rebook me on the next one. window is fine, actually no, get me an aisle, I always regret the window", 23.1, "trv-103"),
            _u("Can you check me in for the Boston flight tomorrow and grab an aisle seat near the front if you can", 30.5, "trv-104"),
        ]],
        expect=[Expect("preference", "travel", ("aisle",))],
    ),
    Scenario(
        name="h3_en_pref_no_emoji_posts",
        language="en",
        phases=[[
            _u("write a linkedin post announcing our seed round ($3.2M, led by Northgate). no emojis please, and none of that 'thrilled to announce' stuff", 0.9, "li-01"),
            _u("Can you make a post about the hiring push? 4 eng roles. Keep the tone plain. Again no emojis, they make us look like a crypto project", 5.2, "li-02"),
            _u("draft a thank-you note to our beta users for the newsletter. skip the emoji and exclamation points", 12.8, "li-03"),
            _u("make the second paragraph mention the CSV export feature", 12.81, "li-03"),
            _u("why did you put \U0001F680 in there lol. remove it. I never want emojis in anything you write for me", 26.0, "li-04"),
        ]],
        expect=[Expect("preference", "style", ("emoji",))],
    ),
    Scenario(
        name="h3_en_pref_pandas_then_polars",
        language="en",
        phases=[
            [
                _u("give me a pandas snippet to pivot this sales csv by region and month", 0.6, "da-01"),
                _u("how do I do a rolling 7 day mean per store in pandas? groupby then rolling?", 3.3, "da-02"),
                _u("rewrite this loop as vectorized pandas, it's taking forever on 2M rows", 8.9, "da-03"),
                _u("pandas again pls: merge orders with customers on customer_id, keep the unmatched orders", 14.1, "da-04"),
            ],
            [
                _u("heads up, the team switched to polars last week. from now on give me polars code, not pandas", 41.0, "da-05"),
                _u("how do I do a group_by + rolling mean in polars? lazy mode if possible", 43.7, "da-06"),
                _u("translate this old pandas function to polars for me, we're deleting pandas from the repo", 50.2, "da-07"),
                _u("polars: pivot sales by region and month, same as that thing we did ages ago", 57.5, "da-08"),
            ],
        ],
        expect=[
            Expect("preference", "code", ("polars",)),
            Expect("preference", "code", ("pandas",), current=False),
        ],
    ),
    Scenario(
        name="h3_en_pref_quiz_answer_key_at_end",
        language="en",
        phases=[[
            _u("Make me a 10 question quiz on the water cycle for 5th graders. put the answer key at the end, separate from the questions, so I can cut it off before printing", 1.5, "tq-1"),
            _u("quizz on fractions, 8 questions, mix multiple choice and short answer. answers at the bottom on their own page like last time", 8.5, "tq-2"),
            _u("can u do a vocab quiz for Hatchet chapters 1-5? answer key at the very end pls, not under each question", 15.4, "tq-3"),
            _u("another one: plate tectonics, 12 qs. same format, questions first and the key separately at the end", 22.6, "tq-4"),
        ]],
        expect=[Expect("preference", "format", ("answer key|answers", "end|bottom|separate"))],
    ),
]

# ---------------------------------------------------------------------------------------------------------------
# English: facts
# ---------------------------------------------------------------------------------------------------------------

_EN_FACTS: list[Scenario] = [
    Scenario(
        name="h3_en_fact_icu_night_nurse",
        language="en",
        phases=[[
            _u("I'm an ICU nurse, I work nights, so I'm usually messaging you at like 3am. what's a good meal to eat mid-shift that won't make me sleepy?", 0.2, "nr-1"),
            _u("tips for sleeping during the day after three 12s in a row? blackout curtains already", 6.1, "nr-2"),
            _u("need to study for my CCRN renewal, can you quiz me on hemodynamics?", 13.7, "nr-3"),
            _u("Charge nurse asked me to precept a new grad on the unit next month. how do I give feedback without crushing her", 21.9, "nr-4"),
            _u("she's sweet but she froze during a code last week", 21.95, "nr-4"),
        ]],
        expect=[Expect("fact", "job", ("nurse",))],
    ),
    Scenario(
        name="h3_en_fact_diabetic_cat_miso",
        language="en",
        phases=[[
            _u("my cat Miso was just diagnosed with diabetes. vet says insulin twice a day. how do people manage that with a 9-5?", 0.4, "ct-1"),
            _u("Miso's glucose curve came back better this week!! what number counts as regulated for cats?", 3.2, "ct-2"),
            _u("what's a good low-carb wet food? Miso hates pate", 10.7, "ct-3"),
            _u("going away for 3 days, what should i tell the sitter about her insulin shots", 18.3, "ct-4"),
        ]],
        expect=[Expect("fact", "pet", ("cat", "Miso"))],
    ),
    Scenario(
        name="h3_en_fact_sesame_allergy",
        language="en",
        phases=[[
            _u("I'm allergic to sesame (like, epipen allergic). can you check this thai curry recipe for anything that might hide sesame?", 0.7, "al-1"),
            _u("is there always tahini in hummus? ordering from a lebanese place tonight and obviously need to avoid it", 5.5, "al-2"),
            _u("flying to Tokyo next month. how do I say 'I have a sesame allergy' in Japanese, and which dishes should I stay away from?", 12.2, "al-3"),
            _u("does 'may contain seeds' on UK labels usually mean sesame?", 19.8, "al-4"),
        ]],
        expect=[Expect("fact", "allergy", ("sesame",))],
    ),
    Scenario(
        name="h3_en_fact_lab_nas_path",
        language="en",
        phases=[[
            _u("for context, all our raw microscopy data lives on the lab NAS at /mnt/labnas/raw, one folder per acquisition date. write me a script that lists every .czi file from March", 1.0, "lb-1"),
            _u("modify the script to also copy those files to my scratch dir. source is still /mnt/labnas/raw", 4.4, "lb-2"),
            _u("the labnas mount was crawling today, any rsync flags to speed up pulling 200GB off it?", 9.0, "lb-3"),
            _u("write a cron job that checks the raw folder on labnas for new acquisitions every night and emails me the list", 16.2, "lb-4"),
        ]],
        expect=[Expect("fact", None, ("labnas",))],
    ),
    Scenario(
        name="h3_en_fact_moved_minneapolis_to_tucson",
        language="en",
        phases=[
            [
                _u("We live in Minneapolis and I'm retired. What's the best way to keep our pipes from freezing if we leave for two weeks in January?", 0.5, "rt-1"),
                _u("any good indoor walking spots in Minneapolis for winter? the skyway maybe?", 7.2, "rt-2"),
                _u("is it worth putting snow tires on a 2015 Camry for our winters here", 15.8, "rt-3"),
            ],
            [
                _u("Well we did it, sold the house and moved to Tucson for good! What do I need to do to switch my driver's license to Arizona?", 60.0, "rt-4"),
                _u("best time of day to walk the dog here in Tucson in summer? it's 104 already", 66.3, "rt-5"),
                _u("any pickleball leagues for seniors around Tucson? east side preferably", 75.1, "rt-6"),
            ],
        ],
        expect=[
            Expect("fact", "home_city", ("Tucson",)),
            Expect("fact", "home_city", ("Minneapolis",), current=False),
        ],
    ),
    Scenario(
        name="h3_en_fact_employer_lumenstack",
        language="en",
        phases=[[
            _u("I'm an AE at Lumenstack (we sell data observability). help me prep for a discovery call with a fintech tomorrow", 0.3, "ae-1"),
            _u("write a one-pager comparing Lumenstack to Monte Carlo for a prospect. be fair but obviously we win lol", 6.6, "ae-2"),
            _u("our SKO is next week, I need a 2 min story about a deal I won last quarter", 13.0, "ae-3"),
            _u("my manager wants a Q3 pipeline forecast, what questions should I ask myself about each deal", 20.4, "ae-4"),
        ]],
        expect=[Expect("fact", "employer", ("Lumenstack",))],
    ),
]

# ---------------------------------------------------------------------------------------------------------------
# English: lessons
# ---------------------------------------------------------------------------------------------------------------

_EN_LESSONS: list[Scenario] = [
    Scenario(
        name="h3_en_lesson_transcribe_batch_size",
        language="en",
        phases=[[
            _u("transcribe this week's lecture recording for me, it's on my desktop", 2.0, "tx-1"),
            _t("transcribe lecture_week3.mp4 (model=large-v3, batch_size=24)", 2.0, "tx-1", "transcribe", "failed: CUDA out of memory. Tried to allocate 2.30 GiB (GPU 0; 12.00 GiB total capacity)"),
            _t("transcribe lecture_week3.mp4 (model=large-v3, batch_size=24) after torch.cuda.empty_cache()", 2.01, "tx-1", "transcribe", "failed: CUDA out of memory. Tried to allocate 2.30 GiB"),
            _t("transcribe lecture_week3.mp4 (model=large-v3, batch_size=6)", 2.02, "tx-1", "transcribe", "success: 1h52m of audio transcribed in 14 min"),
            _t("transcribe lecture_week4.mp4 (model=large-v3, batch_size=6)", 9.3, "tx-2", "transcribe", "success: 1h47m of audio transcribed in 13 min"),
        ]],
        expect=[Expect("lesson", "tool:", ("6", "batch"))],
    ),
    Scenario(
        name="h3_en_lesson_crm_sync_oauth",
        language="en",
        phases=[[
            _u("sync last week's new contacts from HubSpot into the pipeline sheet", 4.0, "crm-1"),
            _t("crm_sync hubspot contacts created since 2024-05-06 (auth=api_key)", 4.0, "crm-1", "crm_sync", "HTTP 401 Unauthorized: API key authentication is no longer supported for this portal"),
            _t("crm_sync hubspot contacts created since 2024-05-06 (auth=api_key, retry)", 4.01, "crm-1", "crm_sync", "HTTP 401 Unauthorized: API key authentication is no longer supported for this portal"),
            _t("crm_sync hubspot contacts created since 2024-05-06 (auth=oauth private app token)", 4.02, "crm-1", "crm_sync", "200 OK: 312 contacts synced"),
            _t("crm_sync hubspot deals updated this week (auth=oauth private app token)", 11.2, "crm-2", "crm_sync", "200 OK: 87 deals synced"),
        ]],
        expect=[Expect("lesson", "tool:", ("OAuth|private app",))],
    ),
    Scenario(
        name="h3_en_lesson_backup_access_denied_recurring",
        language="en",
        phases=[[
            _t("nightly backup: upload pg_dump_2024-06-02.gz to s3://acme-backups/db/", 1.1, "ops-0602", "backup_s3", "failed: AccessDenied: User arn:aws:iam::4411:user/backup-bot is not authorized to perform s3:PutObject"),
            _t("nightly backup: upload pg_dump_2024-06-03.gz to s3://acme-backups/db/", 2.1, "ops-0603", "backup_s3", "failed: AccessDenied: User arn:aws:iam::4411:user/backup-bot is not authorized to perform s3:PutObject"),
            _t("nightly backup: upload pg_dump_2024-06-04.gz to s3://acme-backups/db/", 3.1, "ops-0604", "backup_s3", "failed: AccessDenied: User arn:aws:iam::4411:user/backup-bot is not authorized to perform s3:PutObject"),
            _u("backup failed AGAIN, third night in a row. can you figure out which IAM policy is missing? I'm not touching it till after standup", 3.12, "ops-0604"),
            _t("nightly backup: upload pg_dump_2024-06-05.gz to s3://acme-backups/db/", 4.1, "ops-0605", "backup_s3", "failed: AccessDenied: User arn:aws:iam::4411:user/backup-bot is not authorized to perform s3:PutObject"),
        ]],
        expect=[Expect("lesson", "tool:", ("AccessDenied|PutObject|access denied",))],
    ),
    Scenario(
        name="h3_en_lesson_warehouse_timeout_then_partition",
        language="en",
        phases=[
            [
                _t("run weekly_revenue.sql on the warehouse (timeout=60s)", 0.0, "wh-1", "warehouse_query", "timed out after 60s"),
                _t("run weekly_revenue.sql on the warehouse (timeout=60s)", 0.01, "wh-1", "warehouse_query", "timed out after 60s"),
                _t("run weekly_revenue.sql on the warehouse (timeout=300s)", 0.02, "wh-1", "warehouse_query", "success: 4.2M rows scanned in 148s"),
                _t("run weekly_revenue.sql on the warehouse (timeout=300s)", 7.0, "wh-2", "warehouse_query", "success: 4.4M rows scanned in 171s"),
            ],
            [
                _u("the revenue report is stuck again, events table doubled since we added the EU shops", 45.0, "wh-3"),
                _t("run weekly_revenue.sql on the warehouse (timeout=300s)", 45.0, "wh-3", "warehouse_query", "timed out after 300s"),
                _t("run weekly_revenue.sql on the warehouse (timeout=300s)", 45.01, "wh-3", "warehouse_query", "timed out after 300s"),
                _t("run weekly_revenue.sql on the warehouse (timeout=600s)", 45.02, "wh-3", "warehouse_query", "timed out after 600s"),
                _t("run weekly_revenue.sql partitioned by month, one query per month (timeout=300s)", 45.03, "wh-3", "warehouse_query", "success: 12 partitions, longest 64s"),
                _t("run weekly_revenue.sql partitioned by month, one query per month (timeout=300s)", 52.0, "wh-4", "warehouse_query", "success: 12 partitions, longest 71s"),
            ],
        ],
        expect=[
            Expect("lesson", "tool:", ("month|partition",)),
            Expect("lesson", "tool:", ("300",), current=False),
        ],
    ),
]

# ---------------------------------------------------------------------------------------------------------------
# English: negatives (nothing lasting to induce)
# ---------------------------------------------------------------------------------------------------------------

_EN_NEGATIVES: list[Scenario] = [
    Scenario(
        # One request, once: a translation for one dinner is no language preference.
        name="h3_en_neg_one_off_spanish_menu",
        language="en",
        phases=[[
            _u("translate this menu into Spanish for my abuela's birthday dinner: braised short ribs, roasted carrots with honey, tres leches", 2.0, "ms-1"),
            _u("make 'braised short ribs' sound a bit fancier", 2.01, "ms-1"),
            _u("what wine goes with short ribs? nothing over $25", 9.0, "ms-2"),
        ]],
        expect=[],
    ),
    Scenario(
        # One failure, then the same call succeeds and keeps succeeding: a blip, not a lesson.
        name="h3_en_neg_single_failure_then_success",
        language="en",
        phases=[[
            _t("upload board_deck_q2.pdf to Drive folder 'Q2 board'", 3.0, "up-1", "gdrive_upload", "HTTP 503 Service Unavailable"),
            _t("upload board_deck_q2.pdf to Drive folder 'Q2 board'", 3.01, "up-1", "gdrive_upload", "success"),
            _t("upload board_minutes_q2.docx to Drive folder 'Q2 board'", 10.0, "up-2", "gdrive_upload", "success"),
        ]],
        expect=[],
    ),
    Scenario(
        # A word repeats across sessions, but nothing is said about the user or a lasting state of the world.
        name="h3_en_neg_deadline_word_chatter",
        language="en",
        phases=[[
            _u("where does the word 'deadline' come from? someone told me it was from civil war prison camps??", 1.0, "ch-1"),
            _u("is it 'dead line' or 'deadline' in AP style", 5.0, "ch-2"),
            _u("lol my kid asked if deadlines kill people. how do I explain the word to a 6 year old", 9.5, "ch-3"),
            _u("generally speaking, what's the deadline for filing a US tax extension?", 14.0, "ch-4"),
        ]],
        expect=[],
    ),
]

# ---------------------------------------------------------------------------------------------------------------
# Chinese: preferences
# ---------------------------------------------------------------------------------------------------------------

_ZH_PREFERENCES: list[Scenario] = [
    Scenario(
        name="h3_zh_pref_plain_text_for_wechat",
        language="zh",
        phases=[[
            _u("帮我写个家长群通知，下周三春游，要带水和帽子，早上7点50校门口集合。别用那种带井号星号的格式啊，我要直接复制到微信群里的", 0.4, "wx-01"),
            _u("再写个班费收支的说明，纯文字就行，上次你弄的加粗什么的贴到微信全是星号", 3.8, "wx-02"),
            _u("运动会报名通知，照旧，别加粗别弄标题，纯文本我直接转发", 10.1, "wx-03"),
            _u("人数那句改成“每班限报12人”", 10.11, "wx-03"),
            _u("你又用markdown了…… 改成普通文字，我要发群里的", 17.6, "wx-04"),
        ]],
        expect=[Expect("preference", "format", ("纯文本|纯文字|普通文字|plain text|markdown",))],
    ),
    Scenario(
        name="h3_zh_pref_code_comments_in_english",
        language="zh",
        phases=[[
            _u("帮我写个Go的中间件，记录每个请求的耗时，打到zap日志里。注释用英文写，我们仓库是开源的", 1.3, "cm-a1"),
            _u("这个函数帮忙加点注释，英文的哈，别写中文注释", 5.9, "cm-a2"),
            _u("重构一下这段redis缓存的代码，注释还是英文，顺便把变量名起的好一点", 12.4, "cm-a3"),
            _u("写个单测，comment 用 english，review 的时候老外同事也要看", 19.0, "cm-a4"),
        ]],
        expect=[Expect("preference", "code", ("注释|comment", "英文|English"))],
    ),
    Scenario(
        name="h3_zh_pref_short_answers_retiree",
        language="zh",
        phases=[[
            _u("我血压高，早上吃药前能不能喝豆浆？你说简单点，字太多我看不过来", 0.6, "lr-1"),
            _u("老伴膝盖疼，贴膏药还是热敷好？别说那么长，几句话就行", 4.2, "lr-2"),
            _u("手机上怎么把字调大？还是一样，说短点", 11.3, "lr-3"),
            _u("孙子老说“yyds”是啥意思？简单说说就行，别长篇大论的", 18.7, "lr-4"),
        ]],
        expect=[Expect("preference", "length", ("简短|简洁|简单|短|short|brief|concise",))],
    ),
    Scenario(
        name="h3_zh_pref_travel_train_then_flights",
        language="zh",
        phases=[
            [
                _u("下周二去南京见客户，帮我查下高铁，早上8点前出发的。飞机就算了，老延误", 0.5, "cc-01"),
                _u("月底去武汉出差，还是坐高铁，二等座靠窗", 6.8, "cc-02"),
                _u("帮我看看去杭州的高铁票，周四去周五回", 14.2, "cc-03"),
            ],
            [
                _u("最近高铁太挤了，上次站着回来的，受不了。以后出差帮我优先看飞机吧", 48.0, "cc-04"),
                _u("下周去成都，看看航班，早班机就行", 53.5, "cc-05"),
                _u("去西安的机票帮我比一下，东航南航都行，别再给我查高铁了", 61.2, "cc-06"),
            ],
        ],
        expect=[
            Expect("preference", "travel", ("飞机|航班|机票|flight|fly|plane",)),
            Expect("preference", "travel", ("高铁|high-speed|train|rail",), current=False),
        ],
    ),
    Scenario(
        name="h3_zh_pref_casual_sales_tone",
        language="zh",
        phases=[[
            _u("帮我写段微信话术，跟客户说我们618有活动，满3000减300。语气亲切一点，别像公文，客户一看就烦", 1.0, "xs-1"),
            _u("客户嫌贵，怎么回？写的口语化点，像朋友聊天那样", 7.4, "xs-2"),
            _u("老客户回访的消息帮我写几条，别太官方，轻松点，可以带个表情", 14.9, "xs-3"),
            _u("这条太正式了，改的随意一点，就跟平时微信聊天一样", 22.0, "xs-4"),
        ]],
        expect=[Expect("preference", "style", ("口语|亲切|随意|轻松|不要太正式|别太官方|casual|friendly|informal|conversational",))],
    ),
    Scenario(
        name="h3_zh_pref_pnpm",
        language="zh",
        phases=[[
            _u("新建个vite+vue3+ts的项目，给我命令。用pnpm啊，别npm", 2.2, "fe-11"),
            _u("装一下 element-plus 和 dayjs，给pnpm的命令", 8.6, "fe-12"),
            _u("为啥我 npm install 之后 lock 文件冲突了……算了你以后给命令都用 pnpm，我们组统一的", 16.3, "fe-13"),
            _u("怎么把所有依赖升到最新？pnpm 下面咋弄", 23.9, "fe-14"),
        ]],
        expect=[Expect("preference", "tools", ("pnpm",))],
    ),
    Scenario(
        name="h3_zh_pref_vocab_english_then_chinese",
        language="zh",
        phases=[
            [
                _u("考研英语单词，帮我解释一下 ubiquitous，用英文释义，别给我中文翻译，我想练练英英", 0.3, "ky-1"),
                _u("meticulous 和 scrupulous 有啥区别？还是用英文解释哈", 2.7, "ky-2"),
                _u("alleviate 用英语解释一下，再给两个例句", 6.1, "ky-3"),
            ],
            [
                _u("英文释义我看着太累了，还是用中文解释吧，离考试没几天了，要快", 30.0, "ky-4"),
                _u("deteriorate 啥意思，中文说", 31.2, "ky-5"),
                _u("compensate 和 compromise 这俩给我用中文讲讲区别，老搞混", 33.8, "ky-6"),
            ],
        ],
        expect=[
            Expect("preference", "language", ("中文|Chinese",)),
            Expect("preference", "language", ("英文|英语|English",), current=False),
        ],
    ),
]

# ---------------------------------------------------------------------------------------------------------------
# Chinese: facts
# ---------------------------------------------------------------------------------------------------------------

_ZH_FACTS: list[Scenario] = [
    Scenario(
        name="h3_zh_fact_daughter_duoduo",
        language="zh",
        phases=[[
            _u("我女儿朵朵今年上三年级，数学应用题老是读不懂题，有什么办法吗", 0.5, "jz-1"),
            _u("朵朵周末要交一篇《我的妈妈》，帮我看看她写的这个怎么改（别直接改成大人的口气）", 5.1, "jz-2"),
            _u("三年级的孩子每天做多少课外题合适？我家那个一写作业就磨蹭", 12.6, "jz-3"),
            _u("朵朵学校下个月要去科技馆研学，给她准备点啥", 20.3, "jz-4"),
        ]],
        expect=[Expect("fact", "family", ("女儿|daughter", "朵朵|Duoduo"))],
    ),
    Scenario(
        name="h3_zh_fact_vegetarian",
        language="zh",
        phases=[[
            _u("我吃素好几年了，蛋奶可以，肉和海鲜都不吃。帮我配一周的晚饭吧", 1.0, "sc-1"),
            _u("周末请朋友来家里吃饭，我自己不吃肉，但他们吃，菜单怎么安排两边都满意", 7.5, "sc-2"),
            _u("光吃素的话蛋白质够不够？最近老觉得累", 15.0, "sc-3"),
            _u("出差住酒店，自助早餐有啥能吃的，我又不碰肉", 24.4, "sc-4"),
        ]],
        expect=[Expect("fact", "diet", ("素|vegetarian",))],
    ),
    Scenario(
        name="h3_zh_fact_swimming",
        language="zh",
        phases=[[
            _u("我每周一三五下班去游泳，一次大概1500米，游完特别饿，吃点啥好", 0.8, "ys-1"),
            _u("自由泳换气总是呛水，有什么练习方法", 6.2, "ys-2"),
            _u("今天泳馆换水关门了，在家能练点啥代替一下", 13.9, "ys-3"),
            _u("游了快一年了，最近右肩有点疼，是不是划水姿势有问题", 20.8, "ys-4"),
        ]],
        expect=[Expect("fact", "exercise", ("游泳|泳|swim",))],
    ),
    Scenario(
        name="h3_zh_fact_physics_teacher",
        language="zh",
        phases=[[
            _u("我是高中物理老师，带高二两个班。帮我出5道关于动量守恒的选择题", 0.4, "wl-1"),
            _u("明天公开课讲电磁感应，怎么导入能让学生感兴趣一点", 6.0, "wl-2"),
            _u("期中卷子改完了，平均分才62，我们班学生受力分析普遍不行，怎么补", 13.3, "wl-3"),
            _u("帮我写个高二家长会的发言稿，主要讲选科和物理怎么学", 20.1, "wl-4"),
        ]],
        expect=[Expect("fact", "job", ("物理|physics", "老师|教师|teacher"))],
    ),
    Scenario(
        name="h3_zh_fact_employer_huatuo_then_xinghe",
        language="zh",
        phases=[
            [
                _u("我在华拓科技做后端，年底要评职级了，帮我写个述职的大纲", 0.6, "gz-1"),
                _u("华拓这边加班太多了，有点想跳槽，简历里项目经历怎么写比较好", 8.0, "gz-2"),
                _u("明天公司团建，华拓一年也就这一次，给我想几个破冰小游戏", 15.3, "gz-3"),
            ],
            [
                _u("我已经入职星禾医疗了，上周刚办完手续。新公司用Java，我之前一直写Go，怎么快速上手Spring Boot", 40.0, "gz-4"),
                _u("星禾这边要求每周写周报，帮我弄个模板", 44.6, "gz-5"),
                _u("新公司试用期三个月，星禾的转正答辩一般会问啥", 52.9, "gz-6"),
            ],
        ],
        expect=[
            Expect("fact", "employer", ("星禾|Xinghe",)),
            Expect("fact", "employer", ("华拓|Huatuo",), current=False),
        ],
    ),
    Scenario(
        name="h3_zh_fact_jump_host",
        language="zh",
        phases=[[
            _u("我们公司线上机器都得先登跳板机 jump.yq-inner.com，帮我写个ssh config，一条命令直接跳到 app-01", 1.4, "ty-1"),
            _u("从跳板机上scp文件下来老要输两次密码，有办法简化吗", 4.9, "ty-2"),
            _u("写个脚本，通过 jump.yq-inner.com 批量到10台机器上看磁盘使用率", 11.7, "ty-3"),
            _u("跳板机今天连不上，ssh -v 输出这个，帮我看看：debug1: connect to host jump.yq-inner.com port 22: Connection timed out", 19.2, "ty-4"),
        ]],
        expect=[Expect("fact", None, ("jump.yq-inner.com",))],
    ),
]

# ---------------------------------------------------------------------------------------------------------------
# Chinese: lessons
# ---------------------------------------------------------------------------------------------------------------

_ZH_LESSONS: list[Scenario] = [
    Scenario(
        name="h3_zh_lesson_bank_csv_gbk",
        language="zh",
        phases=[[
            _u("把招行导出的账单csv读进来，帮我统计下每个月吃饭花了多少", 3.0, "zd-1"),
            _t("excel_import 招行账单_2024.csv (encoding=utf-8)", 3.0, "zd-1", "excel_import", "失败：UnicodeDecodeError: 'utf-8' codec can't decode byte 0xd5 in position 0: invalid continuation byte"),
            _t("excel_import 招行账单_2024.csv (encoding=utf-8, 重试)", 3.01, "zd-1", "excel_import", "失败：UnicodeDecodeError: 'utf-8' codec can't decode byte 0xd5 in position 0: invalid continuation byte"),
            _t("excel_import 招行账单_2024.csv (encoding=gbk)", 3.02, "zd-1", "excel_import", "成功：读取 1284 行"),
            _t("excel_import 招行账单_2024-05.csv (encoding=gbk)", 33.0, "zd-2", "excel_import", "成功：读取 97 行"),
        ]],
        expect=[Expect("lesson", "tool:", ("gbk|gb18030",))],
    ),
    Scenario(
        name="h3_zh_lesson_wecom_bot_message_size",
        language="zh",
        phases=[[
            _u("每天的监控日报推到企业微信群里，早上9点", 6.0, "bj-1"),
            _t("wecom_bot 推送监控日报 markdown（5812 字节）", 6.0, "bj-1", "wecom_bot", "失败：errcode=40058, errmsg=markdown.content exceed max length 4096"),
            _t("wecom_bot 推送监控日报 markdown（5812 字节，重试）", 6.01, "bj-1", "wecom_bot", "失败：errcode=40058, errmsg=markdown.content exceed max length 4096"),
            _t("wecom_bot 推送监控日报，拆成 2 条，每条不超过 3500 字节", 6.02, "bj-1", "wecom_bot", "成功：errcode=0"),
            _t("wecom_bot 推送监控日报，按 3500 字节拆成 2 条", 7.0, "bj-2", "wecom_bot", "成功：errcode=0"),
        ]],
        expect=[Expect("lesson", "tool:", ("3500|4096",))],
    ),
    Scenario(
        name="h3_zh_lesson_docker_pull_tls_timeout_recurring",
        language="zh",
        phases=[[
            _t("docker pull pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", 2.0, "dk-1", "docker_pull", "失败：Get \"https://registry-1.docker.io/v2/\": net/http: TLS handshake timeout"),
            _t("docker pull pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", 2.01, "dk-1", "docker_pull", "失败：Get \"https://registry-1.docker.io/v2/\": net/http: TLS handshake timeout"),
            _t("docker pull pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", 5.3, "dk-2", "docker_pull", "失败：Get \"https://registry-1.docker.io/v2/\": net/http: TLS handshake timeout"),
            _u("又是TLS handshake timeout，这个镜像拉了好几天都拉不下来，烦死了", 5.31, "dk-2"),
            _t("docker pull pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", 9.8, "dk-3", "docker_pull", "失败：Get \"https://registry-1.docker.io/v2/\": net/http: TLS handshake timeout"),
        ]],
        expect=[Expect("lesson", "tool:", ("TLS|handshake|超时|timeout",))],
    ),
    Scenario(
        name="h3_zh_lesson_oss_endpoint_region",
        language="zh",
        phases=[[
            _u("把这次活动的报名表传到OSS上，链接发我", 10.0, "os-1"),
            _t("oss_upload 报名表.xlsx -> oss://hd-activity/2024/ (endpoint=oss-cn-hangzhou.aliyuncs.com)", 10.0, "os-1", "oss_upload", "失败：AccessDenied: The bucket you are attempting to access must be addressed using the specified endpoint"),
            _t("oss_upload 报名表.xlsx -> oss://hd-activity/2024/ (endpoint=oss-cn-hangzhou.aliyuncs.com, 重试)", 10.01, "os-1", "oss_upload", "失败：AccessDenied: The bucket you are attempting to access must be addressed using the specified endpoint"),
            _t("oss_upload 报名表.xlsx -> oss://hd-activity/2024/ (endpoint=oss-cn-shenzhen.aliyuncs.com)", 10.02, "os-1", "oss_upload", "成功"),
            _t("oss_upload 活动照片.zip -> oss://hd-activity/2024/ (endpoint=oss-cn-shenzhen.aliyuncs.com)", 17.0, "os-2", "oss_upload", "成功"),
        ]],
        expect=[Expect("lesson", "tool:", ("shenzhen|深圳",))],
    ),
]

# ---------------------------------------------------------------------------------------------------------------
# Chinese: negatives
# ---------------------------------------------------------------------------------------------------------------

_ZH_NEGATIVES: list[Scenario] = [
    Scenario(
        # The same request in only two sessions: not enough to be a preference.
        name="h3_zh_neg_japanese_translation_twice",
        language="zh",
        phases=[[
            _u("帮我把这封邮件翻译成日语，是发给日本供应商的，问他们交期能不能提前", 1.0, "fy-1"),
            _u("这段也帮我翻成日语，还是发给那个供应商", 8.0, "fy-2"),
        ]],
        expect=[],
    ),
    Scenario(
        # "Shorter" said twice, but within one chat about one question.
        name="h3_zh_neg_shorter_twice_in_one_chat",
        language="zh",
        phases=[[
            _u("帮我想想周末带爸妈去哪玩，从杭州出发，回答短点啊", 3.0, "yl-1"),
            _u("太长了，说短点，就给我三个地方", 3.01, "yl-1"),
            _u("那就去千岛湖吧，自驾怎么走", 3.02, "yl-1"),
        ]],
        expect=[],
    ),
    Scenario(
        # A tool that only ever succeeds: nothing to learn from it.
        name="h3_zh_neg_invoice_ocr_only_successes",
        language="zh",
        phases=[[
            _t("invoice_ocr 识别 发票_0412.jpg", 4.0, "fp-1", "invoice_ocr", "成功：金额 ¥356.00，开票日期 2024-04-12"),
            _t("invoice_ocr 识别 发票_0413.jpg", 4.01, "fp-1", "invoice_ocr", "成功：金额 ¥1280.00，开票日期 2024-04-13"),
            _t("invoice_ocr 识别 发票_0420.pdf", 11.0, "fp-2", "invoice_ocr", "成功：金额 ¥89.50，开票日期 2024-04-20"),
            _u("报销单帮我汇总一下，这个月的三张", 11.01, "fp-2"),
        ]],
        expect=[],
    ),
]

# fmt: on

HELDOUT3: list[Scenario] = [
    *_EN_PREFERENCES,
    *_EN_FACTS,
    *_EN_LESSONS,
    *_EN_NEGATIVES,
    *_ZH_PREFERENCES,
    *_ZH_FACTS,
    *_ZH_LESSONS,
    *_ZH_NEGATIVES,
]
