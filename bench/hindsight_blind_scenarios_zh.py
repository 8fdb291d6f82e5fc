"""The Chinese scenarios of the blind hindsight suite (see hindsight_blind_scenarios.py for how they were written
and why they must not be tuned on). Written as a Chinese user's assistant logs things, not translated from the
English ones; the concept groups carry English terms too, for a model that answers in English."""

from __future__ import annotations

from hindsight_blind_spec import Ep, Scenario, a, call, held, lesson, maybe, never, old, u

# The scenarios are laid out by hand, one episode a line; ruff format would re-flow them.
# fmt: off
PREFERENCES = [
    Scenario("zh-pref-no-late-calls", "preference", "zh", ((
        u("用户说晚上九点以后别再打电话提醒了，孩子要睡觉。", 1.55, "jia-1"),
        a("助手晚上十点推送了明天的日程，用户回复：太晚了，以后九点前发。", 4.9, "jia-2", "user_feedback"),
        u("用户再次叮嘱：晚上的提醒、消息都放到九点之前。", 9.6, "jia-3"),
    ),), (
        held("preference", "九点|9点|21:00|21点|9 pm|9pm|晚上|夜间|night|evening",
             "提醒|电话|消息|通知|打扰|联系|remind|call|message|notif",
             "不|别|勿|前|before|no |not |n't|avoid|never",
             forbid=("re:九点(以后|之后|后)(打电话|提醒|联系|发)",)),
    ), "一个时间段的习惯：晚上九点后不打扰"),

    Scenario("zh-pref-excel", "preference", "zh", ((
        u("用户让把报价单导出成Excel，不要PDF，方便他改数字。", 0.45, "bao-1"),
        a("助手发了PDF版的月度报表，用户说PDF改不了，要xlsx。", 3.6, "bao-2", "user_feedback"),
        u("用户要求以后各种报表都给Excel版本。", 8.45, "bao-3"),
    ),), (
        held("preference", "excel|xlsx|电子表格",
             forbid=("re:(?<!不)(喜欢|偏好|希望)(用)?pdf|re:prefers? pdf",)),
    ), "文件格式"),

    Scenario("zh-pref-not-spicy", "preference", "zh", ((
        a("助手点了水煮鱼，用户说太辣了吃不了，退掉了。", 1.5, "fan-1", "order", outcome="用户退单"),
        u("用户订外卖时让助手备注：不要辣。", 4.5, "fan-2"),
        u("用户又提醒：以后点菜都选不辣的，微辣也不行。", 10.5, "fan-3"),
    ),), (
        held("preference", "辣|spic", "不|免|别|忌|avoid|no |not |mild|清淡", also=("fact",),
             forbid=("re:(?<!不)(喜欢|爱|能)吃辣|重辣|特辣|re:(likes|loves|enjoys|prefers) spic",)),
    ), "饮食习惯，否定的说法"),

    Scenario("zh-pref-short-replies", "preference", "zh", ((
        u("用户嫌助手的回复太长，让直接说重点。", 0.6, "hui-1", "user_feedback"),
        u("用户说：以后回答控制在三句话以内。", 5.6, "hui-2"),
        a("助手写了一大段解释，用户打断说太啰嗦了，简短点。", 11.45, "hui-3", "user_feedback"),
    ),), (
        held("preference", "简短|简洁|简明|精简|重点|三句|太长|啰嗦|short|brief|concise|succinct",
             forbid=("re:(?<!不)喜欢(详细|长)|详细的回答|re:prefers? (long|detailed)",)),
    ), "语气和长度"),

    Scenario("zh-pref-dingtalk", "preference", "zh", ((
        u("用户让把周报发到钉钉群里，别发微信。", 0.4, "gz-1"),
        a("助手把会议纪要发到了用户微信，用户让改发钉钉。", 4.45, "gz-2", outcome="用户要求重发"),
        u("用户又强调：工作文件一律走钉钉。", 7.4, "gz-3"),
    ),), (
        held("preference", "钉钉|dingtalk|ding talk"),
    ), "工作文件的渠道"),

    Scenario("zh-pref-lunar-birthdays", "preference", "zh", ((
        u("用户让在家庭日历里把妈妈的生日按农历记，每年自动换算。", 2.5, "ri-1"),
        u("用户又要求：爸爸的生日提醒也按农历算。", 9.4, "ri-2"),
        a("助手把奶奶的寿辰按公历设了提醒，用户让改成农历八月十五。", 15.5, "ri-3", "user_feedback"),
    ),), (
        held("preference", "农历|阴历|lunar", "生日|寿辰|birthday|纪念日|日历|提醒|calendar"),
    ), "家人的生日，但偏好是用户的：按农历记"),

    Scenario("zh-pref-train-window", "preference", "zh", ((
        u("用户让订周五去南京的高铁，选F座靠窗。", 1.4, "che-1", "booking"),
        a("助手订了G7012次的过道座，用户让改成靠窗。", 8.5, "che-2", "booking", outcome="用户要求改座"),
        u("用户又说高铁一律要靠窗的位子。", 15.35, "che-3"),
    ),), (
        held("preference", "靠窗|窗|window|f座",
             forbid=("re:(?<!不)(喜欢|要)过道|re:prefers? (an )?aisle",)),
    ), "座位，从一次改签学到"),
]

FACTS = [
    Scenario("zh-fact-shenzhen", "fact", "zh", ((
        a("助手帮用户查了从家（深圳宝安）到科技园的通勤时间。", 0.35, "tong-1"),
        u("用户问深圳这周末台风会不会影响出门。", 4.55, "tian-1"),
        a("助手把快递地址填成用户在深圳宝安的住址。", 8.6, "gou-1", "order"),
    ),), (
        held("fact", "深圳|shenzhen", "住|家|居|地址|live|home|based|resid|address"),
    ), "住在哪里，助手的口吻"),

    Scenario("zh-fact-daughter-gaokao", "fact", "zh", ((
        u("用户说女儿今年高三，周末要陪她去上数学补习。", 1.6, "jy-1"),
        a("助手帮用户整理了女儿的高考志愿参考，用户关注上海的学校。", 6.6, "jy-2"),
        u("用户让助手查今年高考报名的截止日期，给女儿用。", 11.5, "jy-3"),
    ),), (
        held("fact", "女儿|daughter", "高三|高考|gaokao|senior|high school|entrance|exam"),
        never("高考|高三|gaokao|exam", forbid=("女儿|daughter|孩子|child",)),
    ), "家人的事实：考高考的是女儿，不是用户"),

    Scenario("zh-fact-penicillin", "fact", "zh", ((
        u("用户看病前让助手记下：自己对青霉素过敏。", 2.4, "yi-1"),
        a("助手在线上问诊表里替用户填了青霉素过敏史。", 7.5, "yi-2"),
        u("用户买感冒药时又提醒助手避开含青霉素的药。", 14.45, "yi-3"),
    ),), (
        held("fact", "青霉素|penicillin", "过敏|allerg", also=("preference",)),
    ), "健康事实"),

    Scenario("zh-fact-milk-tea-shop", "fact", "zh", ((
        u("用户让助手算一下奶茶店这个月的流水和房租。", 0.85, "dian-1"),
        u("用户说店里新招了两个店员，让助手排一下班表。", 5.9, "dian-2"),
        a("助手比较了美团和饿了么对用户奶茶店的抽成。", 12.85, "dian-3"),
    ),), (
        held("fact", "奶茶|milk tea|bubble tea", "店|开|经营|老板|owner|shop|store|run"),
    ), "职业，从三件差事里看出来"),

    Scenario("zh-fact-jlpt", "fact", "zh", ((
        u("用户让助手出十道日语N2的语法题。", 1.85, "ri-a"),
        u("用户说七月要考N2，让助手排个复习计划。", 6.85, "ri-b"),
        a("助手给用户讲解了N2听力的答题技巧。", 13.9, "ri-c"),
    ),), (
        held("fact", "n2|jlpt|日语|japanese", "考|备考|学|exam|test|study|learn|prepar"),
    ), "正在备考"),
]

LESSONS = [
    Scenario("zh-lesson-amap-key", "lesson", "zh", ((
        call("助手调用高德地图接口查询门店坐标。", 1.45, "dt-1", '{"status":"0","info":"INVALID_USER_KEY","infocode":"10001"}',
             "高德地图API"),
        call("助手再次调用高德地理编码接口。", 1.46, "dt-1", "INVALID_USER_KEY (10001)", "高德地图API"),
        call("助手换成公司企业账号的Key后重新调用高德接口。", 5.5, "dt-2", '{"status":"1","info":"OK","count":"38"}', "高德地图API"),
    ),), (
        lesson("高德|amap|地图|地理编码|gaode", "key|10001|密钥",
             fix=("企业|公司|enterprise|company|换",)),
    ), "JSON形式的错误码"),

    Scenario("zh-lesson-wxpay-sign", "lesson", "zh", ((
        call("助手调用微信支付统一下单接口给用户的订单收款。", 2.5, "zf-1", "签名错误，请检查后再试（SIGNERROR）", "wechat-pay"),
        call("助手核对参数后再次下单。", 2.52, "zf-1", "SIGNERROR 签名错误", "wechat-pay"),
        call("助手又一次调用统一下单。", 6.6, "zf-2", "return_code=FAIL, return_msg=签名错误", "wechat-pay"),
        call("助手把签名方式从MD5改成HMAC-SHA256后重新下单。", 6.62, "zf-2", "return_code=SUCCESS, result_code=SUCCESS", "wechat-pay"),
    ),), (
        lesson("微信支付|支付|wechat|下单|payment", "签名|sign",
             fix=("hmac|sha256|签名方式|算法",)),
    ), "中文错误文本和供应商错误码"),

    Scenario("zh-lesson-pan-upload", "lesson", "zh", ((
        call("助手把8GB的项目视频上传到网盘。", 3.4, "pan-1", "请求超时（timeout=60s），上传失败", "baidu-pan"),
        call("助手重新上传项目视频。", 3.42, "pan-1", "上传失败：连接超时", "baidu-pan"),
        call("助手上传新的素材包（5GB）。", 10.5, "pan-2", "网络超时，任务中断", "baidu-pan"),
        call("助手改用分片上传（每片100MB）上传素材包。", 10.55, "pan-2", "上传成功", "baidu-pan"),
    ),), (
        lesson("上传|网盘|upload", "超时|timeout|timed out",
             fix=("分片|分块|切片|chunk|multipart|分段",)),
    ), "超时的三种说法"),

    Scenario("zh-lesson-export-oom", "lesson", "zh", ((
        call("助手导出全年订单明细（约80万行）到Excel。", 1.7, "bb-1",
             "java.lang.OutOfMemoryError: Java heap space\n\tat org.apache.poi.xssf.usermodel.XSSFSheet.createRow(XSSFSheet.java:741)",
             "report-service"),
        call("助手再次导出全年订单明细。", 8.65, "bb-2", "导出失败：java.lang.OutOfMemoryError: Java heap space", "report-service"),
        call("助手改为按月分批导出，每次不超过10万行。", 8.7, "bb-2", "导出完成，共12个文件", "report-service"),
    ),), (
        lesson("导出|export|excel|报表|订单", "内存|outofmemory|heap|oom|memory",
             fix=("分批|按月|批|10万|分开|batch|month|split|chunk",)),
    ), "Java 堆栈片段"),

    Scenario("zh-lesson-12306-waitlist", "lesson", "zh", ((
        call("助手在12306给用户抢春节回老家的车票。", 4.4, "piao-1", "排队人数过多，请稍后再试", "12306"),
        call("助手重新提交订单。", 4.45, "piao-1", "排队人数现已超过余票数，请您选择其他席别或车次", "12306"),
        call("助手再次提交春节车票订单。", 5.4, "piao-2", "下单失败：排队人数过多", "12306"),
        call("助手改用候补购票，提交了候补订单。", 5.45, "piao-2", "候补兑现成功，已出票", "12306"),
    ),), (
        lesson("12306|车票|火车票|订票|抢票|ticket", "排队|人数过多|余票|queue|sold out",
             fix=("候补|waitlist|waiting list",)),
    ), "没有错误码的中文失败提示"),

    Scenario("zh-lesson-mysql-lock", "lesson", "zh", ((
        call("助手在生产库执行给订单表加索引的DDL。", 2.6, "db-1",
             "ERROR 1205 (HY000): Lock wait timeout exceeded; try restarting transaction", "mysql"),
        call("助手再次执行订单表加索引。", 3.6, "db-2", "ERROR 1205 (HY000): Lock wait timeout exceeded", "mysql"),
        call("助手在凌晨两点业务低峰期执行订单表加索引。", 4.1, "db-3", "Query OK, 0 rows affected (41.32 sec)", "mysql"),
    ),), (
        lesson("索引|ddl|订单表|mysql|数据库|index", "锁|lock|1205|超时|timeout",
             fix=("凌晨|低峰|夜间|夜里|off-peak|night|深夜",)),
    ), "数据库错误码；有效的是换时间"),
]

CHANGES = [
    Scenario("zh-change-coffee-to-tea", "change", "zh", ((
        u("用户早上让助手在瑞幸点一杯冰美式。", 0.35, "ka-1", "order"),
        u("用户又让助手点咖啡，还是美式不加糖。", 3.35, "ka-2"),
        a("助手照例给用户下单了早上的美式咖啡。", 7.35, "ka-3", "order"),
    ), (
        u("用户说医生建议他戒咖啡，以后早上改点绿茶。", 30.35, "ka-4"),
        a("助手早上给用户点了一杯绿茶，用户说以后都这样。", 33.35, "ka-5", "order"),
        u("用户提醒助手：别再点咖啡了，换成茶。", 37.35, "ka-6"),
    )), (
        held("preference", "茶|tea", also=("fact",)),
        old("preference", "咖啡|美式|coffee|americano", also=("fact",),
            forbid=("戒|不再|不喝|别再|改|茶|tea|quit|no longer|instead",)),
    ), "戒掉的习惯：咖啡改茶"),

    Scenario("zh-change-drive-to-metro", "change", "zh", ((
        a("助手查了用户开车去公司的路况，建议走北环。", 1.3, "lu-1"),
        u("用户让助手找公司附近便宜的停车场，他每天开车上班。", 4.35, "lu-2"),
        a("助手提醒用户明天尾号限行，开车上班要注意。", 9.3, "lu-3"),
    ), (
        u("用户说车已经卖了，现在每天坐地铁上班。", 40.3, "lu-4"),
        a("助手给用户查了地铁4号线早高峰的拥挤情况。", 43.3, "lu-5"),
        u("用户让助手办一张地铁月卡，通勤用。", 47.4, "lu-6"),
    )), (
        held("fact", "地铁|metro|subway", also=("preference",)),
        old("fact", "开车|驾车|drive|driv", also=("preference",),
            forbid=("地铁|卖|不再|metro|subway|sold|no longer",)),
    ), "通勤方式变了"),

    Scenario("zh-change-job", "change", "zh", ((
        u("用户说今晚又要在阿里加班，让助手取消健身课。", 2.85, "gzuo-1"),
        a("助手帮用户整理了阿里年中述职的材料。", 8.6, "gzuo-2"),
    ), (
        u("用户说已经从阿里离职，下周一去字节跳动报到。", 45.6, "gzuo-3"),
        a("助手帮用户查了字节跳动新办公室附近的租房。", 49.6, "gzuo-4"),
        u("用户让助手把邮件签名改成字节跳动的新职位。", 52.5, "gzuo-5"),
    )), (
        held("fact", "字节|bytedance"),
        old("fact", "阿里|alibaba", forbid=("离职|字节|bytedance|left|former|以前|不再",)),
    ), "换了工作"),

    Scenario("zh-change-alipay-to-wechat", "change", "zh", ((
        u("用户让助手交水电费时用支付宝付。", 1.45, "fu-1"),
        a("助手用支付宝给用户交了物业费。", 6.45, "fu-2", outcome="支付成功"),
        u("用户又说网购都走支付宝。", 11.5, "fu-3"),
    ), (
        u("用户说支付宝账户被冻结了，以后别用支付宝，统一用微信支付。", 40.5, "fu-4"),
        a("助手用微信支付给用户交了燃气费，用户确认以后就这样。", 44.45, "fu-5", outcome="支付成功"),
        u("用户提醒：付款一律微信支付。", 48.5, "fu-6"),
    )), (
        held("preference", "微信|wechat", "支付|付|pay"),
        old("preference", "支付宝|alipay", forbid=("微信|wechat|不再|别用|冻结|no longer|frozen",)),
    ), "付款方式换了"),

    Scenario("zh-change-badminton-to-swim", "change", "zh", ((
        u("用户让助手订周六上午的羽毛球场。", 5.4, "yd-1", "booking"),
        a("助手又给用户订了周六上午九点的羽毛球场地。", 12.35, "yd-2", "booking"),
        u("用户说周六打羽毛球的搭子都约好了，照常订场。", 19.4, "yd-3"),
    ), (
        u("用户说膝盖伤了，医生不让打羽毛球，以后改成周日晚上游泳。", 40.5, "yd-4"),
        a("助手帮用户订了周日晚上七点的游泳馆。", 41.45, "yd-5", "booking"),
        u("用户让助手每周日晚上都订游泳，不用再订羽毛球场了。", 47.5, "yd-6"),
    )), (
        held("preference", "游泳|swim", also=("fact",)),
        old("preference", "羽毛球|badminton", also=("fact",),
            forbid=("不让|不再|不用|改成|伤|游泳|swim|no longer|instead",)),
    ), "运动习惯因伤改变"),
]

NEGATIVES = [
    Scenario("zh-neg-one-off-english", "negative", "zh", ((
        u("用户说这份给外方的报告这次用英文写，下不为例。", 2.5, "wg-1"),
        a("助手帮用户整理了部门季度总结。", 6.45, "wg-2"),
        u("用户让助手给客户写一封中秋祝福短信。", 10.5, "wg-3"),
    ),), (
        never("英文|英语|english"),
    ), "说明是一次性的要求"),

    Scenario("zh-neg-small-talk", "negative", "zh", ((
        Ep("用户跟助手聊今天北京的沙尘暴，说出门吃了一嘴土。", 0.5, "liao-1", "conversation"),
        Ep("用户问助手春晚哪个小品最好笑。", 3.9, "liao-2", "conversation"),
        Ep("用户问助手中午吃了没，随便聊了两句。", 7.5, "liao-3", "conversation"),
        Ep("用户让助手讲个冷笑话，说还挺好笑。", 12.9, "liao-4", "conversation"),
    ),), (), "闲聊"),

    Scenario("zh-neg-colleague-cola", "negative", "zh", ((
        a("助手给团队订下午茶，用户特意交代同事小李只喝无糖可乐。", 1.6, "xwc-1", "order"),
        u("用户又说：给小李点零度可乐，他不喝含糖的。", 8.6, "xwc-2"),
        a("助手订团建饮料时按用户要求给小李单独备了无糖可乐。", 15.6, "xwc-3", "order"),
    ),), (
        maybe("preference", "小李|同事|colleague|xiao li", "无糖|零度|可乐|zero|sugar|cola", also=("fact",)),
        never("无糖|零度|可乐|cola|sugar", forbid=("小李|同事|colleague|xiao li",)),
    ), "同事的偏好不是用户的"),

    Scenario("zh-neg-wife-cilantro", "negative", "zh", ((
        u("用户让助手点外卖时备注不要香菜，他老婆一点都不能吃。", 2.45, "xc-1"),
        a("助手订家庭聚餐时告诉餐厅：用户的妻子不吃香菜。", 9.5, "xc-2", "booking"),
        u("用户又提醒：给老婆点的那份记得去香菜。", 16.45, "xc-3"),
    ),), (
        maybe("fact", "香菜|cilantro|coriander", "老婆|妻子|太太|爱人|wife|spouse", also=("preference",)),
        never("香菜|cilantro|coriander", forbid=("老婆|妻子|太太|爱人|wife|spouse|partner",)),
    ), "妻子的忌口不是用户的"),

    Scenario("zh-neg-xiaomi-word", "negative", "zh", ((
        u("用户问小米粥怎么熬才糯。", 1.45, "z-1"),
        a("助手帮用户预约了小米手机的售后维修。", 5.5, "z-2", "booking"),
        u("用户问小米今天的股价跌了多少。", 9.4, "z-3"),
    ),), (), "同一个词，三件无关的事"),

    Scenario("zh-neg-translate-japanese", "negative", "zh", ((
        u("用户让助手把产品说明书翻译成日文，给大阪的代理商。", 1.5, "fy-1"),
        u("用户又让把售后条款翻成日语。", 6.5, "fy-2"),
        u("用户让助手把新品宣传册也出一个日文版。", 12.45, "fy-3"),
    ),), (
        maybe("preference", "日文|日语|japanese", "翻译|翻成|说明书|条款|宣传册|文件|文档|版|代理|translat|document|brochure",
              also=("fact",)),
        never("日文|日语|japanese",
              forbid=("翻译|翻成|说明书|条款|宣传册|文件|文档|版本|日文版|代理|translat|document|brochure",)),
    ), "文件翻译成日文，不是'用日文回复'"),

    Scenario("zh-neg-beijing-trips", "negative", "zh", ((
        u("用户下周去北京出差，让助手查北京的天气。", 2.4, "cc-1"),
        a("助手给用户订了北京国贸附近的酒店，住两晚。", 2.45, "cc-1", "booking"),
        u("用户这个月第二次去北京出差，又让查北京的天气和航班。", 16.4, "cc-2"),
        a("助手给用户订了从北京返程的航班。", 18.6, "cc-2", "booking"),
    ),), (
        maybe("fact", "北京|beijing", "出差|经常|常去|去北京|trip|travel|business|visit|often|frequent", also=("preference",)),
        never("北京|beijing", forbid=("出差|经常|常去|去北京|trip|travel|business|visit|often|frequent|酒店|hotel|航班|flight",)),
    ), "常去出差的城市不是住的地方"),
]
# fmt: on

SCENARIOS_ZH = [*PREFERENCES, *FACTS, *LESSONS, *CHANGES, *NEGATIVES]
