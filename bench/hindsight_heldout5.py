"""Fifth held-out set for bench/hindsight.py: changed habits, the category the blind suite scores worst (2 of 10 on
main 274e027, its scenarios never read). 14 scenarios, 7 in English and 7 in Chinese: 10 changes and 4 negatives.

Written before the code was changed for it, in shapes the other sets have few of: the new value said once with a
change word and then only shown by what the agent does; a change said by negation alone ("no longer eats meat");
a habit's time that moves; a fact that changes (a city, an employer); the user's own turns mixed with an agent's
notes. The negatives: a one-off exception to a habit ("just this once"), a colleague's change, and a new topic that
shares a word with an old habit. Expectations name a kind and key words only (no dimension); a change expects the
new memory active and the old one kept as history.
"""

from __future__ import annotations

from hindsight_scenarios import Ep, Expect, Scenario

# The scenarios are laid out by hand, one episode a line.
# fmt: off


def _n(text: str, day: float, session: str) -> Ep:
    """An agent's note of what it did for the user or what the user said."""
    return Ep(text, day, session, event_type="agent_note")


def _u(text: str, day: float, session: str) -> Ep:
    """Something the user said, in their own words."""
    return Ep(text, day, session, event_type="user_message")


_EN_CHANGES: list[Scenario] = [
    Scenario("h5_en_change_tea_to_coffee_by_actions", "en", [
        [
            _n("Ordered a green tea for the user before his 9am call.", 0.5, "a1"),
            _n("The user asked for green tea again, no sugar.", 6.0, "a2"),
            _n("Picked up the user's usual green tea on the way.", 12.0, "a3"),
        ],
        [
            _n("The user said he has switched to black coffee since the new job started.", 40.0, "a4"),
            _n("Ordered a black coffee for the user at the station cafe.", 44.0, "a5"),
            _n("Got the user a large black coffee before the board meeting.", 51.0, "a6"),
        ],
    ], [Expect("fact", None, ("coffee",)), Expect("fact", None, ("tea",), current=False)]),
    Scenario("h5_en_change_runs_evening_to_dawn", "en", [
        [
            _u("logged my 5k this evening after work, legs felt great", 1.0, "b1"),
            _u("another evening run today, 6k along the canal", 5.0, "b2"),
            _u("evening run again, kept it easy at 5k", 9.0, "b3"),
        ],
        [
            _u("new routine: I run at dawn now, before the kids wake up", 30.0, "b4"),
            _u("dawn run done, 5k before breakfast", 33.0, "b5"),
            _u("up at 5:30 for my dawn 6k again", 37.0, "b6"),
        ],
    ], [Expect("fact", None, ("dawn",)), Expect("fact", None, ("evening",), current=False)]),
    Scenario("h5_en_change_vegetarian_by_negation", "en", [
        [
            _n("Booked a steakhouse for the user's anniversary dinner.", 0.5, "c1"),
            _n("The user ordered the beef burger again at lunch.", 7.0, "c2"),
            _n("Found the user a recipe for slow-cooked beef ragu.", 14.0, "c3"),
        ],
        [
            _n("The user said he no longer eats meat, on his doctor's advice.", 45.0, "c4"),
            _n("Booked a vegetarian restaurant for the user's team dinner, as he avoids meat now.", 50.0, "c5"),
            _n("Found meat-free lunch options near the user's office; he does not eat meat anymore.", 57.0, "c6"),
        ],
    ], [Expect("fact", None, ("meat",)), Expect("fact", None, ("beef|steak",), current=False)]),
    Scenario("h5_en_change_city_lyon_to_porto", "en", [
        [
            _n("Checked the weekend weather in Lyon for the user, who lives there.", 1.0, "d1"),
            _n("Found a bakery near the user's flat in Lyon.", 8.0, "d2"),
            _n("The user mentioned the tram strike in Lyon made him late.", 15.0, "d3"),
        ],
        [
            _n("The user has moved to Porto; updated his address for deliveries.", 60.0, "d4"),
            _n("Checked the weather in Porto for the user's weekend.", 64.0, "d5"),
            _n("Found the user a coworking space near his new place in Porto.", 70.0, "d6"),
        ],
    ], [Expect("fact", None, ("porto",)), Expect("fact", None, ("lyon",), current=False)]),
    Scenario("h5_en_change_slack_to_email", "en", [
        [
            _u("send me the daily summary on Slack please", 0.5, "e1"),
            _u("Slack is fine for the summaries, keep them coming there", 6.0, "e2"),
            _u("drop today's summary in my Slack DMs", 12.0, "e3"),
        ],
        [
            _u("I'm muting Slack for a while. Email me the daily summary instead", 40.0, "e4"),
            _u("got the summary in my inbox, thanks, keep using email", 42.0, "e5"),
            _u("email me today's summary too", 47.0, "e6"),
        ],
    ], [Expect("preference", None, ("email|inbox",)), Expect("preference", None, ("slack",), current=False)]),
]

_EN_NEGATIVES: list[Scenario] = [
    Scenario("h5_en_neg_just_this_once", "en", [
        [
            _u("aisle seat for the Madrid flight please", 0.5, "f1"),
            _u("aisle again for the Rome trip", 8.0, "f2"),
            _u("book me an aisle seat to Vienna", 16.0, "f3"),
        ],
        [
            _u("just this once give me a window seat, I want to see the Alps", 30.0, "f4"),
        ],
    ], [Expect("preference", None, ("aisle",))]),
    Scenario("h5_en_neg_colleague_switch", "en", [
        [
            _n("The user asked for the weekly report as a PDF.", 0.5, "g1"),
            _n("Exported the user's monthly report as a PDF.", 7.0, "g2"),
            _n("The user wants the board report as a PDF too.", 14.0, "g3"),
        ],
        [
            _n("The user's colleague Tom said he now wants his reports as spreadsheets.", 30.0, "g4"),
            _n("Sent Tom, the user's colleague, the figures as a spreadsheet.", 35.0, "g5"),
            _n("Tom asked the user for the spreadsheet version again.", 40.0, "g6"),
        ],
    ], [Expect("preference", None, ("pdf",))]),
]

_ZH_CHANGES: list[Scenario] = [
    Scenario("h5_zh_change_gym_to_swimming", "zh", [
        [
            _n("用户今天下班后去健身房练了一小时。", 1.0, "h1"),
            _n("帮用户续了健身房的月卡，他每周去三次。", 6.0, "h2"),
            _n("用户说晚上又去健身房撸铁了。", 11.0, "h3"),
        ],
        [
            _n("用户说膝盖不好，不去健身房了，改成游泳。", 40.0, "h4"),
            _n("帮用户办了小区游泳馆的次卡。", 43.0, "h5"),
            _n("用户早上游了一千米，让助手记一下。", 48.0, "h6"),
        ],
    ], [Expect("fact", None, ("游泳|游了",)), Expect("fact", None, ("健身房",), current=False)]),
    Scenario("h5_zh_change_taobao_to_jd", "zh", [
        [
            _u("帮我在淘宝上找个便宜点的电动牙刷", 0.5, "i1"),
            _u("还是淘宝买吧，看看有没有店铺优惠券", 7.0, "i2"),
            _u("淘宝上搜一下猫粮，要大包装的", 13.0, "i3"),
        ],
        [
            _u("以后买东西都走京东吧，淘宝售后太麻烦了", 40.0, "i4"),
            _u("京东上看看有没有当天能到的打印纸", 44.0, "i5"),
            _u("猫粮也在京东下单，自营的", 50.0, "i6"),
        ],
    ], [Expect("preference", None, ("京东",)), Expect("preference", None, ("淘宝",), current=False)]),
    Scenario("h5_zh_change_beijing_to_shenzhen", "zh", [
        [
            _n("帮用户查了北京明天的空气质量，他住在北京朝阳。", 1.0, "j1"),
            _n("用户问北京今年冬天供暖什么时候开始。", 9.0, "j2"),
            _n("帮用户找了北京家附近的宠物医院。", 16.0, "j3"),
        ],
        [
            _n("用户说已经搬到深圳了，让助手把收货地址改成南山区。", 60.0, "j4"),
            _n("帮用户查了深圳这周的台风预警。", 65.0, "j5"),
            _n("用户问深圳哪里办居住证，他刚落户南山。", 72.0, "j6"),
        ],
    ], [Expect("fact", None, ("深圳",)), Expect("fact", None, ("北京",), current=False)]),
    Scenario("h5_zh_change_long_to_short_replies", "zh", [
        [
            _u("解释得详细一点，把每一步的原理都讲清楚", 0.5, "k1"),
            _u("再展开讲讲，越详细越好", 6.0, "k2"),
            _u("这个回答太短了，详细一些", 12.0, "k3"),
        ],
        [
            _u("最近太忙了，以后回答简短点，说结论就行", 35.0, "k4"),
            _u("简短点，别铺垫", 38.0, "k5"),
            _u("还是太长了，三句话以内", 42.0, "k6"),
        ],
    ], [Expect("preference", None, ("简短|短|结论",)), Expect("preference", None, ("详细",), current=False)]),
    Scenario("h5_zh_change_quit_milk_tea", "zh", [
        [
            _n("帮用户点了一杯全糖珍珠奶茶。", 0.5, "l1"),
            _n("用户下午又让助手订了奶茶，还是全糖。", 5.0, "l2"),
            _n("用户说每天一杯奶茶是他的快乐源泉。", 10.0, "l3"),
        ],
        [
            _n("用户体检血糖偏高，说从今天起戒奶茶了。", 40.0, "l4"),
            _n("用户让助手以后别再推荐奶茶店了。", 44.0, "l5"),
            _n("帮用户买了无糖茶饮料替代奶茶。", 49.0, "l6"),
        ],
    ], [Expect("fact", None, ("戒|不喝|别再",)), Expect("fact", None, ("奶茶",), current=False)]),
]

_ZH_NEGATIVES: list[Scenario] = [
    Scenario("h5_zh_neg_exception_once", "zh", [
        [
            _u("会议纪要发我微信就行", 0.5, "m1"),
            _u("纪要还是发微信", 7.0, "m2"),
            _u("今天的纪要也发我微信", 14.0, "m3"),
        ],
        [
            _u("这次的纪要要转给法务，破例发一下邮件吧", 30.0, "m4"),
        ],
    ], [Expect("preference", None, ("微信",))]),
    Scenario("h5_zh_neg_new_topic_shared_word", "zh", [
        [
            _n("用户每天早上跑步五公里。", 1.0, "n1"),
            _n("用户说今早又跑了五公里，配速不错。", 6.0, "n2"),
            _n("帮用户记录了早上的跑步数据，五公里。", 11.0, "n3"),
        ],
        [
            _n("用户让助手查一下公司服务器跑批任务为什么失败。", 40.0, "n4"),
            _n("帮用户看了夜间跑批的日志。", 43.0, "n5"),
        ],
    ], [Expect("fact", None, ("跑步|跑了",))]),
]

HELDOUT5: list[Scenario] = [
    *_EN_CHANGES,
    *_EN_NEGATIVES,
    *_ZH_CHANGES,
    *_ZH_NEGATIVES,
]
