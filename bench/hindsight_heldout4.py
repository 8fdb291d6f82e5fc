"""Fourth held-out set for bench/hindsight.py: 32 scenarios, 16 in English and 16 in Chinese, all in an agent's log
voice (third person, "the assistant booked ...", "助手帮用户..."), none of them the user's own words.

Written before the offline inducer was changed for it, from the shapes the blind suite's misses take (described to
the author, never read): facts told in passing while the agent reports what it did ("... for the user, who works
nights"), a preference stated once in the agent's report and repeated later in other words, habits that change with
the new habit said in the third person ("the car is sold, now takes the metro"), and statements where the
assistant's own action sits beside the user's preference. Chinese scenarios are written as a Chinese assistant
logs, not translated. Per language: 5 preferences, 4 facts, 2 lessons, 2 changes, 3 negatives (a relative's or a
neighbour's preference, a one-off said twice in one session, small talk). Expectations name a kind and key words
only (no dimension).
"""

from __future__ import annotations

from hindsight_scenarios import Ep, Expect, Scenario

# The scenarios are laid out by hand, one episode a line.
# fmt: off


def _n(text: str, day: float, session: str) -> Ep:
    """An agent's note of what it did for the user or what the user said."""
    return Ep(text, day, session, event_type="agent_note")


def _t(text: str, day: float, session: str, tool: str, outcome: str) -> Ep:
    """A tool call with its outcome as the tool reported it (no status: the service reads it)."""
    return Ep(text, day, session, event_type="tool_call", entities=(tool,), outcome=outcome)


_EN_PREFERENCES: list[Scenario] = [
    Scenario("h4_en_pref_window_table", "en", [[
        _n("Booked a table for two at Luca's by the window; the user likes sitting by the window.", 0.4, "a1"),
        _n("The assistant reserved a window table at the ramen bar because the user asked for one again.", 9.2, "a2"),
        _n("User wanted the window spot at the brunch place, so the booking note says window.", 20.5, "a3"),
    ]], [Expect("preference", None, ("window",))]),
    Scenario("h4_en_pref_bullet_recaps", "en", [[
        _n("Summarised the board minutes as bullet points for the user, who finds long paragraphs hard to skim.", 1.0, "b1"),
        _n("The user asked for the research digest in bullets rather than prose.", 8.0, "b2"),
        _n("Sent the weekly recap as a bulleted list, the way the user wants recaps.", 15.5, "b3"),
    ]], [Expect("preference", None, ("bullet",))]),
    Scenario("h4_en_pref_oat_milk", "en", [[
        _n("The assistant ordered the user's flat white with oat milk from the corner cafe.", 0.3, "c1"),
        _n("User asked for oat milk in her latte again; she said she just likes the taste better.", 6.3, "c2"),
        _n("Placed the office coffee order; the user's cappuccino is with oat milk as usual.", 13.1, "c3"),
    ]], [Expect("preference", None, ("oat",))]),
    Scenario("h4_en_pref_24_hour_clock", "en", [[
        _n("The user asked for the itinerary times in 24-hour format.", 2.2, "d1"),
        _n("Rewrote the conference schedule with 24-hour times (14:00, not 2pm); the user finds am/pm confusing.", 7.9, "d2"),
        _n("Listed the train departures on the 24-hour clock for the user, as he prefers.", 18.4, "d3"),
    ]], [Expect("preference", None, ("24",))]),
    Scenario("h4_en_pref_voice_not_video", "en", [[
        _n("The user asked for the call with the landlord to be audio only, no video.", 1.5, "e1"),
        _n("Set up the insurance follow-up as a phone call; the user said she would rather not be on camera.", 10.0, "e2"),
        _n("The assistant scheduled the recruiter chat as a voice call because the user avoids video calls.", 19.0, "e3"),
    ]], [Expect("preference", None, ("phone|audio|voice|video|camera",))]),
]

_EN_FACTS: list[Scenario] = [
    Scenario("h4_en_fact_night_shifts", "en", [[
        _n("The assistant booked a 2pm dentist appointment for the user, who works night shifts.", 0.5, "f1"),
        _n("Set the user's alarm for 7pm; he sleeps during the day because of the night shift at the depot.", 7.4, "f2"),
        _n("Moved the grocery delivery to late afternoon since the user is on nights again this week.", 16.8, "f3"),
    ]], [Expect("fact", None, ("night",))]),
    Scenario("h4_en_fact_dog_biscuit", "en", [[
        _n("Found a dog-friendly cabin in the Lakes for the user and her dog Biscuit.", 0.8, "g1"),
        _n("The assistant ordered grain-free kibble for Biscuit, the user's beagle.", 9.6, "g2"),
        _n("Booked Biscuit's yearly vet check-up; the user mentioned the beagle turns nine soon.", 21.0, "g3"),
    ]], [Expect("fact", None, ("biscuit",))]),
    Scenario("h4_en_fact_lives_leeds", "en", [[
        _n("Checked the bin collection calendar for the user, who lives in Headingley, Leeds.", 1.2, "h1"),
        _n("The assistant found a plumber near the user's home in Leeds.", 8.8, "h2"),
        _n("User asked about resident parking permits in Leeds for her street.", 17.3, "h3"),
    ]], [Expect("fact", None, ("leeds",))]),
    Scenario("h4_en_fact_employer_kestrel", "en", [[
        _n("Drafted a conference abstract for the user under his Kestrel Analytics affiliation.", 0.6, "i1"),
        _n("The user mentioned Kestrel Analytics is switching payroll providers next month.", 11.0, "i2"),
        _n("Filled in the user's employer as Kestrel Analytics on the visa application.", 22.4, "i3"),
    ]], [Expect("fact", None, ("kestrel",))]),
]

_EN_LESSONS: list[Scenario] = [
    Scenario("h4_en_lesson_pdf_decrypt", "en", [[
        _t("merge statements_jan.pdf and statements_feb.pdf", 1.0, "j1", "pdf_tool", "PdfReadError: file has not been decrypted"),
        _t("merge statements_jan.pdf and statements_feb.pdf, strict=False", 1.01, "j1", "pdf_tool", "PdfReadError: file has not been decrypted"),
        _t("decrypt both statements with qpdf --decrypt, then merge", 1.02, "j1", "pdf_tool", "merged 2 files, 14 pages"),
    ]], [Expect("lesson", None, ("decrypt|qpdf",))]),
    Scenario("h4_en_lesson_calendar_invalid_grant", "en", [[
        _t("sync the user's work calendar for the week", 2.0, "k1", "calendar_sync", "invalid_grant: Token has been expired or revoked."),
        _t("sync the user's work calendar for the week", 3.0, "k2", "calendar_sync", "invalid_grant: Token has been expired or revoked."),
        _t("sync the user's work calendar for the week", 4.0, "k3", "calendar_sync", "invalid_grant: Token has been expired or revoked."),
    ]], [Expect("lesson", None, ("invalid_grant|token|expired|revoked",))]),
]

_EN_CHANGES: list[Scenario] = [
    Scenario("h4_en_change_car_to_metro", "en", [
        [
            _n("The user drives to the office every day; found him a cheaper car park near work.", 0.5, "l1"),
            _n("Checked traffic on the ring road for the user's morning drive to work.", 5.5, "l2"),
            _n("User asked when his car is due for its service, since he drives to work daily.", 11.0, "l3"),
        ],
        [
            _n("The user said the car is sold, now takes the metro to work.", 45.0, "l4"),
            _n("Checked metro line 2 delays for the user's commute.", 48.0, "l5"),
            _n("Topped up the user's monthly metro pass; he rides the metro to the office now.", 52.0, "l6"),
        ],
    ], [Expect("fact", None, ("metro",)), Expect("fact", None, ("drive|car",), current=False)]),
    Scenario("h4_en_change_docs_to_notion", "en", [
        [
            _n("The user asked for the meeting notes in Google Docs.", 0.4, "m1"),
            _n("Put the planning notes in a Google Doc for the user, as usual.", 6.4, "m2"),
            _n("User wanted the retro notes in Google Docs too.", 13.4, "m3"),
        ],
        [
            _n("The user said the team moved to Notion, so notes go in Notion from now on, not Google Docs.", 40.0, "m4"),
            _n("Wrote the sprint notes in Notion for the user.", 46.0, "m5"),
            _n("The user asked for the interview notes in Notion as well.", 53.0, "m6"),
        ],
    ], [Expect("preference", None, ("notion",)), Expect("preference", None, ("google doc",), current=False)]),
]

_EN_NEGATIVES: list[Scenario] = [
    Scenario("h4_en_neg_neighbour_parcels", "en", [[
        _n("The user's neighbour Tom likes his parcels left at the back door.", 1.0, "n1"),
        _n("Left a note for the courier about Tom, the neighbour, who wants parcels at the back door.", 8.0, "n2"),
        _n("User passed on that Tom prefers the back door for deliveries.", 16.0, "n3"),
    ]], []),
    Scenario("h4_en_neg_one_off_stadium_hotel", "en", [[
        _n("For the concert weekend only, the user asked for a hotel near the stadium.", 3.0, "o1"),
        _n("The assistant booked the user a hotel two blocks from the stadium for the concert.", 3.02, "o1"),
    ]], []),
    Scenario("h4_en_neg_small_talk", "en", [[
        _n("The user joked that Mondays should be illegal.", 1.0, "p1"),
        _n("User shared a photo of the sunset and said it made her day.", 6.0, "p2"),
        _n("The user said hi and asked whether the assistant had a nice weekend.", 12.0, "p3"),
    ]], []),
]


_ZH_PREFERENCES: list[Scenario] = [
    Scenario("h4_zh_pref_window_seat_train", "zh", [[
        _n("给用户订了周五去南京的高铁，按他的习惯选了靠窗的座位。", 0.5, "za1"),
        _n("用户要求高铁票选靠窗的F座。", 8.0, "za2"),
        _n("帮用户改签到下午的车次，用户又强调要靠窗。", 17.0, "za3"),
    ]], [Expect("preference", None, ("靠窗",))]),
    Scenario("h4_zh_pref_sugar_free_tea", "zh", [[
        _n("助手给用户点了一杯奶茶，用户要求无糖。", 0.7, "zb1"),
        _n("用户说奶茶都要无糖的，怕胖。", 7.2, "zb2"),
        _n("按用户习惯点了无糖的柠檬茶。", 14.9, "zb3"),
    ]], [Expect("preference", None, ("无糖",))]),
    Scenario("h4_zh_pref_tables_in_reports", "zh", [[
        _n("用户要求周报用表格列出进度。", 1.0, "zc1"),
        _n("按用户的要求把月度总结整理成了表格。", 9.0, "zc2"),
        _n("用户说文字太散，汇报类的内容都用表格。", 18.0, "zc3"),
    ]], [Expect("preference", None, ("表格",))]),
    Scenario("h4_zh_pref_simplified_chinese", "zh", [[
        _n("用户提醒回复要用简体字，不要繁体。", 2.0, "zd1"),
        _n("把港媒的文章转成简体给用户看，她看繁体费劲。", 10.0, "zd2"),
        _n("用户再次要求：资料一律用简体中文。", 19.0, "zd3"),
    ]], [Expect("preference", None, ("简体",))]),
    Scenario("h4_zh_pref_quiet_after_nine", "zh", [[
        _n("用户要求晚上九点以后不要推送消息。", 1.3, "ze1"),
        _n("把提醒改到了白天，用户说晚上九点后别打扰他。", 8.7, "ze2"),
        _n("用户又说了一遍：九点以后的通知都静音。", 16.2, "ze3"),
    ]], [Expect("preference", None, ("九点",))]),
]

_ZH_FACTS: list[Scenario] = [
    Scenario("h4_zh_fact_night_shift", "zh", [[
        _n("助手帮用户把体检约在下午三点，用户上夜班，上午要睡觉。", 0.4, "zf1"),
        _n("把快递改到傍晚送，用户白天在补觉，他在医院上夜班。", 7.0, "zf2"),
        _n("用户说下周还是夜班，让助手晚上十点提醒他出门。", 15.0, "zf3"),
    ]], [Expect("fact", None, ("夜班",))]),
    Scenario("h4_zh_fact_lives_chengdu", "zh", [[
        _n("帮用户查了成都双流机场的停车费，用户家在成都。", 0.9, "zg1"),
        _n("用户问成都这周末会不会下雨。", 8.1, "zg2"),
        _n("助手给用户找了成都高新区他家附近的修车店。", 17.6, "zg3"),
    ]], [Expect("fact", None, ("成都",))]),
    Scenario("h4_zh_fact_cat_niangao", "zh", [[
        _n("助手给用户的猫年糕订了一袋猫粮。", 1.1, "zh1"),
        _n("用户说年糕最近掉毛厉害，问该怎么办。", 9.4, "zh2"),
        _n("帮用户预约了年糕的疫苗，年糕是她养的英短。", 20.0, "zh3"),
    ]], [Expect("fact", None, ("年糕",))]),
    Scenario("h4_zh_fact_peanut_allergy", "zh", [[
        _n("订餐时帮用户备注了不要花生，用户花生过敏。", 0.6, "zi1"),
        _n("用户提醒：零食里有花生的都不要，会过敏。", 6.6, "zi2"),
        _n("助手查了月饼的配料表，确认没有花生，因为用户对花生过敏。", 14.0, "zi3"),
    ]], [Expect("fact", None, ("花生",))]),
]

_ZH_LESSONS: list[Scenario] = [
    Scenario("h4_zh_lesson_excel_row_limit", "zh", [[
        _t("导出全年订单到 Excel", 1.0, "zj1", "报表导出", "错误：超过单表 1048576 行上限"),
        _t("导出全年订单到 Excel，去掉备注列", 1.01, "zj1", "报表导出", "错误：超过单表 1048576 行上限"),
        _t("按月份拆分成 12 个文件导出全年订单", 1.02, "zj1", "报表导出", "导出完成，共 12 个文件"),
    ]], [Expect("lesson", None, ("拆分|按月|12",))]),
    Scenario("h4_zh_lesson_sms_signature", "zh", [[
        _t("给新注册用户发送验证码短信", 2.0, "zk1", "短信平台", "发送失败：短信签名未通过审核"),
        _t("给新注册用户发送验证码短信", 3.0, "zk2", "短信平台", "发送失败：短信签名未通过审核"),
        _t("给新注册用户发送验证码短信", 4.0, "zk3", "短信平台", "发送失败：短信签名未通过审核"),
    ]], [Expect("lesson", None, ("签名|审核",))]),
]

_ZH_CHANGES: list[Scenario] = [
    Scenario("h4_zh_change_drive_to_subway", "zh", [
        [
            _n("用户每天开车上班，让助手查了早高峰的路况。", 0.5, "zl1"),
            _n("帮用户找了公司附近便宜的停车场，他开车通勤。", 6.0, "zl2"),
            _n("用户问车子什么时候该保养，他每天开车上下班。", 12.0, "zl3"),
        ],
        [
            _n("用户说车已经卖了，现在坐地铁上班。", 50.0, "zl4"),
            _n("帮用户查了地铁二号线的首班车时间，他坐地铁通勤。", 53.0, "zl5"),
            _n("用户让助手提醒他给交通卡充值，坐地铁用。", 58.0, "zl6"),
        ],
    ], [Expect("fact", None, ("地铁",)), Expect("fact", None, ("开车",), current=False)]),
    Scenario("h4_zh_change_email_to_dingtalk", "zh", [
        [
            _n("用户要求会议纪要发到他的邮箱。", 0.5, "zm1"),
            _n("按用户习惯把纪要发到了邮箱。", 7.0, "zm2"),
            _n("用户提醒纪要照旧发邮件。", 14.0, "zm3"),
        ],
        [
            _n("用户说公司改用钉钉了，以后纪要发钉钉，不用发邮件了。", 42.0, "zm4"),
            _n("把今天的纪要发到了用户的钉钉。", 48.0, "zm5"),
            _n("用户确认纪要以后都走钉钉。", 55.0, "zm6"),
        ],
    ], [Expect("preference", None, ("钉钉",)), Expect("preference", None, ("邮件|邮箱",), current=False)]),
]

_ZH_NEGATIVES: list[Scenario] = [
    Scenario("h4_zh_neg_mother_yueju", "zh", [[
        _n("用户的妈妈喜欢看越剧。", 1.0, "zn1"),
        _n("帮用户给他妈妈买了越剧的票，老人家最爱越剧。", 9.0, "zn2"),
        _n("用户说他妈妈周末又去听越剧了。", 18.0, "zn3"),
    ]], []),
    Scenario("h4_zh_neg_one_off_resume", "zh", [[
        _n("用户让把这份简历翻译成英文，投一家外企。", 4.0, "zo1"),
        _n("按用户要求把简历改成了英文版。", 4.02, "zo1"),
    ]], []),
    Scenario("h4_zh_neg_small_talk", "zh", [[
        _n("用户说今天天气真好。", 1.0, "zp1"),
        _n("用户跟助手聊了几句最近上映的电影。", 7.0, "zp2"),
        _n("用户说了声晚安。", 13.0, "zp3"),
    ]], []),
]

# fmt: on

HELDOUT4: list[Scenario] = [
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
]
