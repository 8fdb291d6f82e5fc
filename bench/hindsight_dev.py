"""Development scenarios for bench/hindsight.py in the voice agents log in: third person ("The user asked ...",
"用户要求..."), reports of what the agent did at the user's request, quoted turns, English and Chinese.

This is the set the meaning-based inducer is developed on (the blind suite that measures it is kept apart and is
not this file). It holds what the older sets lack: habits about time, units, tone, scheduling, formats and
channels; facts told in passing by the agent; a colleague's or a relative's preferences (never the user's);
one-offs, small talk and unrelated repeats of one word; habits that change; contradictions said in free text; and
failures whose error strings have shapes of many kinds. Expectations name a kind and key words only (no
dimension): what the memory must say, whatever the inducer calls its dimension.
"""

from __future__ import annotations

from hindsight_scenarios import Ep, Expect, Scenario

# The scenarios are laid out by hand, one episode a line.
# fmt: off


def _n(text: str, day: float, session: str) -> Ep:
    """An agent's note of what the user said or asked."""
    return Ep(text, day, session, event_type="agent_note")


def _t(text: str, day: float, session: str, tool: str, outcome: str) -> Ep:
    """A tool call with its outcome as the tool reported it (no status: the service reads it)."""
    return Ep(text, day, session, event_type="tool_call", entities=(tool,), outcome=outcome)


_EN_PREFERENCES: list[Scenario] = [
    Scenario("dev_en_morning_meetings", "en", [[
        _n("User asked to move the vendor sync to the morning; she said she has no focus after lunch.", 0.2, "a1"),
        _n("Scheduled the design review at 9:30 as the user prefers mornings for meetings.", 3.1, "a2"),
        _n("The user declined a 4pm slot and asked for something before noon instead.", 8.4, "a3"),
        _n("Booked the 1:1 with Omar for 10am; user reminded the agent that meetings go in the morning.", 15.0, "a4"),
    ]], [Expect("preference", None, ("morning|before noon",))]),
    Scenario("dev_en_celsius", "en", [[
        _n("User asked for the Lisbon forecast in Celsius.", 0.5, "b1"),
        _n("Converted the oven temperatures to Celsius because the user does not read Fahrenheit.", 5.2, "b2"),
        _n("The user corrected the agent: temperatures should be in °C, not °F.", 12.7, "b3"),
    ]], [Expect("preference", None, ("celsius|°c",))]),
    Scenario("dev_en_formal_tone_clients", "en", [[
        _n("User asked the agent to make the email to the Hartley client more formal.", 1.0, "c1"),
        _n("Rewrote the proposal cover letter in a formal register at the user's request; she said clients expect it.", 6.3, "c2"),
        _n("The user said the draft was too casual and wants a formal tone for anything sent to clients.", 13.9, "c3"),
    ]], [Expect("preference", None, ("formal",))]),
    Scenario("dev_en_pdf_attachments", "en", [[
        _n("User wants the invoice sent as a PDF, not a Word file.", 0.4, "d1"),
        _n("Exported the quarterly report to PDF since the user always asks for PDFs.", 9.8, "d2"),
        _n("The user asked again for PDF rather than .docx when sharing the contract.", 21.0, "d3"),
    ]], [Expect("preference", None, ("pdf",))]),
    Scenario("dev_en_slack_not_email", "en", [[
        _n("The user asked to be pinged on Slack rather than by email when the build finishes.", 2.0, "e1"),
        _n("Sent the deploy summary to the user's Slack DM; he said email notifications get buried.", 7.5, "e2"),
        _n("User reminded the agent to use Slack for alerts, not email.", 16.2, "e3"),
    ]], [Expect("preference", None, ("slack",))]),
    Scenario("dev_en_iso_dates", "en", [[
        _n("User asked that dates in the spreadsheet be written as YYYY-MM-DD.", 0.3, "f1"),
        _n("Reformatted the changelog dates to ISO 8601 (2024-03-05 style) as the user requested.", 4.4, "f2"),
        _n("The user pointed out 03/05 is ambiguous and wants ISO dates everywhere.", 11.6, "f3"),
    ]], [Expect("preference", None, ("iso|yyyy-mm-dd",))]),
    Scenario("dev_en_quoted_dark_mode", "en", [[
        _n("User: \"can you set the dashboard to dark mode?\"", 1.1, "g1"),
        _n("User said: 'dark theme please, the white background hurts my eyes'", 5.0, "g2"),
        _n("Switched the editor to the dark theme again; the user asked for dark mode in every tool.", 10.3, "g3"),
    ]], [Expect("preference", None, ("dark",))]),
    Scenario("dev_en_30_minute_meetings", "en", [[
        _n("The user asked to keep the planning call to 30 minutes.", 2.5, "h1"),
        _n("Shortened the retro invite to half an hour; user said meetings should never run past 30 minutes.", 9.1, "h2"),
        _n("User asked for the customer call to be booked as a 30-minute slot.", 17.4, "h3"),
    ]], [Expect("preference", None, ("30|half an hour",))]),
]

_EN_FACTS: list[Scenario] = [
    Scenario("dev_en_lives_rotterdam", "en", [[
        _n("The user mentioned she lives in Rotterdam.", 0.6, "i1"),
        _n("Looked up train times from Rotterdam Centraal for the user, who is based in Rotterdam.", 8.0, "i2"),
        _n("User said the Rotterdam weather is grim again.", 19.5, "i3"),
    ]], [Expect("fact", None, ("rotterdam",))]),
    Scenario("dev_en_works_at_northwind", "en", [[
        _n("User noted that he works at Northwind Logistics as a fleet planner.", 1.0, "j1"),
        _n("Drafted the out-of-office for the user's Northwind Logistics account.", 6.0, "j2"),
        _n("The user said his team at Northwind is short-staffed this month.", 14.0, "j3"),
    ]], [Expect("fact", None, ("northwind",))]),
    Scenario("dev_en_macbook_user", "en", [[
        _n("User is on a MacBook, so the agent gave the Homebrew install steps.", 0.8, "k1"),
        _n("The user mentioned their laptop is a MacBook Pro with an M2 chip.", 7.7, "k2"),
        _n("Gave macOS keyboard shortcuts since the user works on a Mac.", 18.0, "k3"),
    ]], [Expect("fact", None, ("mac",))]),
    Scenario("dev_en_daughter_nina", "en", [[
        _n("User said her daughter Nina starts school in September.", 2.0, "l1"),
        _n("Set a reminder for Nina's dentist appointment; Nina is the user's daughter.", 12.0, "l2"),
        _n("The user asked for birthday ideas for her daughter Nina, turning seven.", 25.0, "l3"),
    ]], [Expect("fact", None, ("nina",))]),
    Scenario("dev_en_lactose", "en", [[
        _n("User mentioned being lactose intolerant when picking the lunch order.", 3.0, "m1"),
        _n("Filtered the recipe list to dairy-free dishes because the user is lactose intolerant.", 9.0, "m2"),
        _n("The user reminded the agent: no milk or cheese, lactose intolerance.", 20.0, "m3"),
    ]], [Expect("fact", None, ("lactose|dairy",))]),
]

_EN_LESSONS: list[Scenario] = [
    Scenario("dev_en_lesson_econnreset_chunks", "en", [[
        _t("upload backup.tar (2.1 GB) in one request", 1.0, "n1", "blob_upload", "ECONNRESET after 312s"),
        _t("upload backup.tar (2.1 GB) in one request, retry", 1.01, "n1", "blob_upload", "ECONNRESET after 298s"),
        _t("upload backup.tar in 64 MB chunks", 1.02, "n1", "blob_upload", "uploaded 34/34 parts"),
    ]], [Expect("lesson", None, ("chunk|64",))]),
    Scenario("dev_en_lesson_exit_137_memory", "en", [[
        _t("run etl job with --workers 16", 2.0, "o1", "etl_runner", "process exited with status 137"),
        _t("run etl job with --workers 12", 2.01, "o1", "etl_runner", "process exited with status 137"),
        _t("run etl job with --workers 4", 2.02, "o1", "etl_runner", "exit status 0, 1.2M rows loaded"),
    ]], [Expect("lesson", None, ("4",))]),
    Scenario("dev_en_lesson_quota_recurring", "en", [[
        _t("translate product catalogue batch 1", 3.0, "p1", "translator", "QuotaExceeded: daily character limit reached"),
        _t("translate product catalogue batch 2", 4.0, "p2", "translator", "QuotaExceeded: daily character limit reached"),
        _t("translate product catalogue batch 3", 5.0, "p3", "translator", "QuotaExceeded: daily character limit reached"),
    ]], [Expect("lesson", None, ("quota|limit",))]),
    Scenario("dev_en_lesson_locale_fix", "en", [[
        _t("parse sales.csv with default settings", 0.5, "q1", "csv_import", "ValueError: could not convert string to float: '1.234,56'"),
        _t("parse sales.csv with default settings, skip header", 0.51, "q1", "csv_import", "ValueError: could not convert string to float: '2.010,00'"),
        _t("parse sales.csv with decimal=',' and thousands='.'", 0.52, "q1", "csv_import", "parsed 4,812 rows"),
    ]], [Expect("lesson", None, ("decimal",))]),
]

_EN_CHANGES: list[Scenario] = [
    Scenario("dev_en_change_evening_to_morning_runs", "en", [
        [
            _n("The user logged an evening run along the river, 6 km.", 0.8, "r1"),
            _n("User went running after work again, 5 km in the evening.", 3.8, "r2"),
            _n("Logged the user's evening run, 7 km.", 6.8, "r3"),
        ],
        [
            _n("The user has switched to running in the mornings before work; no more evening runs.", 40.2, "r4"),
            _n("Logged the user's morning run, 6 km at 6:30am.", 42.2, "r5"),
            _n("User did his morning run again, 8 km before breakfast.", 45.2, "r6"),
        ],
    ], [Expect("fact", None, ("morning",)), Expect("fact", None, ("evening",), current=False)]),
    Scenario("dev_en_change_quit_coffee", "en", [
        [
            _n("User ordered his usual double espresso before the standup.", 0.3, "s1"),
            _n("The user drinks coffee every morning; picked up an espresso for him.", 4.3, "s2"),
            _n("User asked for another espresso, his third coffee this week.", 8.3, "s3"),
        ],
        [
            _n("The user said he quit coffee last month and drinks green tea now.", 50.0, "s4"),
            _n("Ordered green tea for the user, who no longer drinks coffee.", 53.0, "s5"),
        ],
    ], [Expect("fact", None, ("tea|no longer|quit",)), Expect("fact", None, ("espresso|coffee",), current=False)]),
]

_EN_NEGATIVES: list[Scenario] = [
    Scenario("dev_en_neg_colleague_prefers", "en", [[
        _n("The user's colleague Priya prefers meetings after 3pm.", 1.0, "t1"),
        _n("Priya, the user's teammate, asked for the notes in Google Docs.", 6.0, "t2"),
        _n("User forwarded Priya's note: she prefers late-afternoon meetings.", 13.0, "t3"),
    ]], []),
    Scenario("dev_en_neg_one_off_french", "en", [[
        _n("User asked for this one email to be translated into French for a supplier in Lyon.", 2.0, "u1"),
        _n("The user asked what time it is in Tokyo.", 9.0, "u2"),
    ]], []),
    Scenario("dev_en_neg_small_talk", "en", [[
        _n("The user said thanks and wished the agent a good weekend.", 1.0, "v1"),
        _n("User chatted about the football match last night.", 5.0, "v2"),
        _n("The user said thanks again, great work.", 9.0, "v3"),
        _n("User said good morning and asked how the agent was doing.", 13.0, "v4"),
    ]], []),
    Scenario("dev_en_neg_repeated_word", "en", [[
        _n("User asked for the Python docs on asyncio.", 1.0, "w1"),
        _n("The user saw a python at the zoo with her kids.", 7.0, "w2"),
        _n("User asked how to install Python 3.12 on the build server.", 15.0, "w3"),
    ]], []),
    Scenario("dev_en_neg_wife_vegetarian", "en", [[
        _n("User said his wife is vegetarian, so the anniversary dinner needs veggie options.", 2.0, "x1"),
        _n("Booked a table at a place with vegetarian dishes for the user's wife.", 10.0, "x2"),
        _n("The user mentioned his wife has been vegetarian for years.", 22.0, "x3"),
    ]], []),
]


_ZH_PREFERENCES: list[Scenario] = [
    Scenario("dev_zh_morning_meetings", "zh", [[
        _n("用户要求把周会改到上午，说下午没精神。", 0.3, "za1"),
        _n("按用户习惯把评审会安排在上午十点。", 5.0, "za2"),
        _n("用户拒绝了下午四点的时间，要求约在上午。", 11.0, "za3"),
    ]], [Expect("preference", None, ("上午",))]),
    Scenario("dev_zh_wechat_notify", "zh", [[
        _n("用户要求构建完成后用微信通知他，不要发邮件。", 1.0, "zb1"),
        _n("把部署结果通过微信发给了用户，他说邮件总是看不到。", 8.0, "zb2"),
        _n("用户再次提醒：通知一律走微信。", 16.0, "zb3"),
    ]], [Expect("preference", None, ("微信",))]),
    Scenario("dev_zh_formal_tone", "zh", [[
        _n("用户要求给客户的邮件写得正式一些。", 2.0, "zc1"),
        _n("按用户要求把合作方案改成了正式的书面语。", 7.0, "zc2"),
        _n("用户说草稿太口语化了，对外的文字都要正式。", 15.0, "zc3"),
    ]], [Expect("preference", None, ("正式",))]),
    Scenario("dev_zh_pdf", "zh", [[
        _n("用户要求发票用PDF格式发送，不要Word。", 0.5, "zd1"),
        _n("把季度报告导出成PDF发给用户，他一直要PDF。", 9.0, "zd2"),
        _n("用户又说合同也要PDF版本。", 20.0, "zd3"),
    ]], [Expect("preference", None, ("pdf",))]),
    Scenario("dev_zh_metric", "zh", [[
        _n("用户要求距离用公里表示。", 1.0, "ze1"),
        _n("按用户习惯把路线长度换算成了公里。", 6.0, "ze2"),
        _n("用户纠正：不要用英里，用公里。", 12.0, "ze3"),
    ]], [Expect("preference", None, ("公里|公制",))]),
    Scenario("dev_zh_brief_summary", "zh", [[
        _n("用户说会议纪要太长了，要求只列三条要点。", 3.0, "zf1"),
        _n("按用户要求把周报压缩成三条要点。", 10.0, "zf2"),
        _n("用户要求日报也只写三条要点。", 18.0, "zf3"),
    ]], [Expect("preference", None, ("要点|三条",))]),
]

_ZH_FACTS: list[Scenario] = [
    Scenario("dev_zh_lives_hangzhou", "zh", [[
        _n("用户提到她住在杭州。", 0.5, "zg1"),
        _n("帮用户查了杭州东站的高铁时刻，用户家在杭州。", 9.0, "zg2"),
        _n("用户说杭州这几天一直下雨。", 19.0, "zg3"),
    ]], [Expect("fact", None, ("杭州",))]),
    Scenario("dev_zh_allergy_mango", "zh", [[
        _n("用户说自己对芒果过敏。", 2.0, "zh1"),
        _n("点外卖时避开了芒果，因为用户芒果过敏。", 8.0, "zh2"),
        _n("用户提醒：甜品里不能有芒果，过敏。", 17.0, "zh3"),
    ]], [Expect("fact", None, ("芒果",))]),
    Scenario("dev_zh_works_at_company", "zh", [[
        _n("用户提到他在蓝海科技做产品经理。", 1.0, "zi1"),
        _n("帮用户起草了蓝海科技的周报。", 7.0, "zi2"),
        _n("用户说蓝海科技这个月在搬办公室。", 15.0, "zi3"),
    ]], [Expect("fact", None, ("蓝海",))]),
]

_ZH_LESSONS: list[Scenario] = [
    Scenario("dev_zh_lesson_rate_limit", "zh", [[
        _t("批量查询 500 个快递单号", 1.0, "zj1", "快递查询", "返回 429：请求过于频繁"),
        _t("批量查询 500 个快递单号，重试", 1.01, "zj1", "快递查询", "返回 429：请求过于频繁"),
        _t("每批 50 个，间隔 1 秒查询快递单号", 1.02, "zj1", "快递查询", "全部 500 个查询完毕"),
    ]], [Expect("lesson", None, ("50",))]),
    Scenario("dev_zh_lesson_encoding", "zh", [[
        _t("读取 客户名单.csv", 2.0, "zk1", "表格导入", "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xb5"),
        _t("读取 客户名单.csv，跳过第一行", 2.01, "zk1", "表格导入", "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xc4"),
        _t("用 GBK 编码读取 客户名单.csv", 2.02, "zk1", "表格导入", "读取 1,204 行"),
    ]], [Expect("lesson", None, ("gbk",))]),
    Scenario("dev_zh_lesson_recurring_cert", "zh", [[
        _t("同步订单到财务系统", 3.0, "zl1", "财务同步", "证书已过期，握手失败"),
        _t("同步订单到财务系统", 4.0, "zl2", "财务同步", "证书已过期，握手失败"),
        _t("同步订单到财务系统", 5.0, "zl3", "财务同步", "证书已过期，握手失败"),
    ]], [Expect("lesson", None, ("证书",))]),
]

_ZH_CHANGES: list[Scenario] = [
    Scenario("dev_zh_change_quit_smoking", "zh", [
        [
            _n("用户说他每天抽一包烟。", 0.5, "zm1"),
            _n("用户又提到自己抽烟，想找个好点的打火机。", 6.0, "zm2"),
            _n("用户说抽烟是他放松的方式。", 12.0, "zm3"),
        ],
        [
            _n("用户说他已经戒烟两个月了。", 60.0, "zm4"),
            _n("用户提到戒烟以后睡得好多了，现在不抽烟了。", 66.0, "zm5"),
        ],
    ], [Expect("fact", None, ("戒烟|不抽烟",)), Expect("fact", None, ("抽烟|烟",), current=False)]),
    Scenario("dev_zh_change_weekly_meeting_day", "zh", [
        [
            _n("用户要求把例会安排在周一。", 0.5, "zn1"),
            _n("按用户要求例会定在周一上午。", 7.5, "zn2"),
            _n("用户说例会还是放周一。", 14.5, "zn3"),
        ],
        [
            _n("用户说以后例会不放周一了，改到周三。", 40.0, "zn4"),
            _n("按用户新要求把例会改到周三。", 47.0, "zn5"),
            _n("用户确认例会固定在周三。", 54.0, "zn6"),
        ],
    ], [Expect("preference", None, ("周三",)), Expect("preference", None, ("周一",), current=False)]),
]

_ZH_NEGATIVES: list[Scenario] = [
    Scenario("dev_zh_neg_boss_prefers", "zh", [[
        _n("用户的老板喜欢用Excel看数据。", 1.0, "zo1"),
        _n("用户转达：老板要求周报用Excel。", 8.0, "zo2"),
        _n("用户说他老板只看Excel表格。", 15.0, "zo3"),
    ]], []),
    Scenario("dev_zh_neg_small_talk", "zh", [[
        _n("用户说谢谢，祝周末愉快。", 1.0, "zp1"),
        _n("用户聊了聊昨晚的球赛。", 5.0, "zp2"),
        _n("用户又说了声谢谢，辛苦了。", 9.0, "zp3"),
    ]], []),
    Scenario("dev_zh_neg_one_off", "zh", [[
        _n("用户让把这一封邮件翻译成日语，发给大阪的供应商。", 2.0, "zq1"),
        _n("用户问了一下东京现在几点。", 9.0, "zq2"),
    ]], []),
    Scenario("dev_zh_neg_repeated_word", "zh", [[
        _n("用户问苹果手机怎么截屏。", 1.0, "zr1"),
        _n("用户买了一箱苹果送给邻居。", 8.0, "zr2"),
        _n("用户问苹果公司的财报什么时候发布。", 16.0, "zr3"),
    ]], []),
]

# Added after the set's figures were first taken, so last: each scenario runs in a namespace of its place in the run
# (`hindsight:s<index>`) and on its clock, which a scenario inserted before it would move.
_LATER: list[Scenario] = [
    # The user's own turns reporting what a named person said or chose: theirs, not the user's wish.
    Scenario("dev_en_neg_named_person_said", "en", [[
        Ep("Priya said she prefers aisle seats on long flights, book hers that way.", 1.0, "z1"),
        Ep("Priya told me she prefers aisle seats, so keep that for her Lisbon trip.", 8.0, "z2"),
        Ep("Priya chose an aisle seat again for the Berlin flight.", 16.0, "z3"),
    ]], []),
    # Changes said once in so many words (the change point), then borne out or not; a change word about something
    # else leaves a habit alone.
    Scenario("dev_en_change_units_said_once", "en", [[
        Ep("give me the temps in Fahrenheit", 1.0, "y1"),
        Ep("Fahrenheit again for the weekend forecast please", 7.0, "y2"),
        Ep("what's the high tomorrow, in Fahrenheit", 13.0, "y3"),
    ], [
        Ep("I moved to Berlin, so use Celsius instead from now on", 40.0, "y4"),
        Ep("Celsius please for the ski trip forecast", 45.0, "y5"),
    ]], [Expect("preference", None, ("celsius",)), Expect("preference", None, ("fahrenheit",), current=False)]),
    Scenario("dev_en_change_meeting_time_agent", "en", [[
        _n("Booked the user's 1:1 at 9am, he likes his meetings in the morning.", 1.0, "x1"),
        _n("The user asked for the design review in the morning again.", 8.0, "x2"),
        _n("Moved the user's vendor call to a morning slot at his request.", 15.0, "x3"),
    ], [
        _n("The user said mornings no longer work for him; afternoons from now on.", 40.0, "x4"),
        _n("Booked the user's sync for the afternoon, at 3pm.", 44.0, "x5"),
        _n("The user asked for the budget review in the afternoon.", 50.0, "x6"),
    ]], [Expect("preference", None, ("afternoon",)), Expect("preference", None, ("morning",), current=False)]),
    Scenario("dev_en_neg_change_word_elsewhere", "en", [[
        Ep("dark mode please, my eyes hurt", 1.0, "w1"),
        Ep("switch the dashboard to dark mode", 7.0, "w2"),
        Ep("dark mode for the docs site too", 13.0, "w3"),
    ], [
        Ep("I started a new job this week, the office is near the station", 40.0, "w4"),
        Ep("no longer commuting by car now, the train is quicker", 44.0, "w5"),
    ]], [Expect("preference", None, ("dark",))]),
    Scenario("dev_zh_change_channel_said_once", "zh", [[
        Ep("提醒发短信给我就行", 1.0, "v1"),
        Ep("明天的会议提醒也发短信", 7.0, "v2"),
        Ep("还是短信提醒吧", 13.0, "v3"),
    ], [
        Ep("以后提醒别发短信了，改成发邮件", 40.0, "v4"),
        Ep("明天的提醒发邮件给我", 45.0, "v5"),
    ]], [Expect("preference", None, ("邮件",)), Expect("preference", None, ("短信",), current=False)]),
    Scenario("dev_zh_neg_change_word_elsewhere", "zh", [[
        Ep("帮我订靠窗的座位", 1.0, "u1"),
        Ep("高铁也要靠窗的位置", 7.0, "u2"),
        Ep("还是靠窗，谢谢", 13.0, "u3"),
    ], [
        Ep("我换了新工作，下周开始上班", 40.0, "u4"),
    ]], [Expect("preference", None, ("靠窗",))]),
    # An exception said with a change word is not a change.
    Scenario("dev_en_neg_exception_instead", "en", [[
        Ep("send me the weekly report as a PDF", 1.0, "t1"),
        Ep("PDF again for the monthly numbers please", 7.0, "t2"),
        Ep("export the board deck to PDF for me", 13.0, "t3"),
    ], [
        Ep("just this once send it as a Word doc instead, legal needs to edit it", 40.0, "t4"),
    ]], [Expect("preference", None, ("pdf",))]),
    Scenario("dev_zh_neg_exception_change", "zh", [[
        Ep("回复我的时候用中文", 1.0, "s1"),
        Ep("还是用中文回答吧", 7.0, "s2"),
        Ep("请用中文解释一下这段代码", 13.0, "s3"),
    ], [
        Ep("这次改用英文回复，我要转给国外同事", 40.0, "s4"),
    ]], [Expect("preference", None, ("中文",))]),
]

# fmt: on

DEV: list[Scenario] = [
    *_EN_PREFERENCES,
    *_EN_FACTS,
    *_EN_LESSONS,
    *_EN_CHANGES,
    *_EN_NEGATIVES,
    *_ZH_PREFERENCES,
    *_ZH_FACTS,
    *_ZH_LESSONS,
    *_ZH_CHANGES,
    *_ZH_NEGATIVES,
    *_LATER,
]
