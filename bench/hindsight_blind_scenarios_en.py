"""The English scenarios of the blind hindsight suite (see hindsight_blind_scenarios.py for how they were written
and why they must not be tuned on)."""

from __future__ import annotations

from hindsight_blind_spec import Ep, Scenario, a, call, held, lesson, maybe, never, old, u

# Terms that say a statement is negated: "no emoji", "without emoji", "avoid emoji".
NEGATED = "no |not |n't|without|avoid|stop|never|drop|remov|omit|free|plain|skip|不|别|勿"

# The scenarios are laid out by hand, one episode a line; ruff format would re-flow them.
# fmt: off
PREFERENCES = [
    Scenario("en-pref-meetings-late-morning", "preference", "en", ((
        u("User asked to push the 8:30 standup with the vendor to 11:00; said early calls don't work for them.", 0.35, "cal-1"),
        a("Agent proposed 9:00 for the design review; user declined and picked 10:30 instead.", 2.6, "cal-2", "scheduling"),
        u("User again asked that nothing be booked before 10 am - 'mornings are for deep work'.", 6.4, "cal-3"),
        a("Agent rescheduled the dentist from 8:15 to 10:45 at the user's request.", 9.5, "cal-4", "scheduling"),
    ),), (
        held("preference", "meeting|call|standup|appointment|schedul|book|calendar|slot|会|日程",
             "10|ten|morning|early|十点|上午|早",
             forbid=("re:(prefers?|likes|wants) (early|morning)",)),
    ), "a time-of-day habit no word list names: nothing before 10"),

    Scenario("en-pref-metric", "preference", "en", ((
        u("User asked for the banana bread recipe converted to grams and millilitres - 'I don't own cups'.", 0.7, "kitchen-1"),
        u("Agent gave the trail length as 6 miles; user asked for it in kilometres.", 3.45, "hike-1", "user_feedback"),
        u("User wanted the oven temperature in Celsius rather than Fahrenheit.", 5.8, "kitchen-2"),
        a("Agent quoted the parcel weight in kg after the user asked again for metric.", 11.6, "ship-1"),
    ),), (
        held("preference", "metric|gram|kilomet|celsius|kg|km|公制|公里|克",
             forbid=("re:prefers? (imperial|miles|fahrenheit|cups|pounds)",)),
    ), "units, said about four different things"),

    Scenario("en-pref-no-emoji", "preference", "en", ((
        u("User told the agent to drop the emojis from the Slack announcement draft.", 1.4, "comms-1", "user_feedback"),
        a("Agent's reply to the client had two smileys; user removed them before sending and said to keep it plain.", 4.6, "comms-2"),
        u("User: 'no emoji please, this is going to the board'.", 8.4, "comms-3"),
        u("User again stripped the party-popper emoji out of the release notes the agent wrote.", 12.5, "comms-4", "user_feedback"),
    ),), (
        held("preference", "emoji|smiley|emoticon|表情", NEGATED,
             forbid=("re:(prefers|likes|loves|enjoys) (using |more |lots of )?emoji(?!-free| free)",)),
    ), "tone; polarity: 'no emoji', never 'prefers emoji'"),

    Scenario("en-pref-docs-by-email", "preference", "en", ((
        u("User asked the agent to email the March invoice rather than drop it in WhatsApp.", 0.55, "admin-1"),
        a("Agent sent the signed lease via WhatsApp; user asked for it to be re-sent to their email so they can file it.", 3.6, "admin-2",
          outcome="user asked to resend"),
        u("User repeated: work documents go to the inbox, not to chat apps.", 7.4, "admin-3"),
    ),), (
        held("preference", "email|e-mail|inbox|mail|邮件|邮箱",
             forbid=("re:prefers? (whatsapp|chat)",)),
    ), "a channel for documents"),

    Scenario("en-pref-halal", "preference", "en", ((
        a("Agent ordered lunch from Dragon House; user sent back the pork buns and asked for something halal.", 1.5, "food-1", "order",
          outcome="returned"),
        u("User asked the agent to filter the catering list to halal places only.", 4.45, "food-2"),
        u("User reminded the agent before the team dinner booking: no pork, halal please.", 9.7, "food-3"),
    ),), (
        held("preference", "halal|pork|清真|猪肉", also=("fact",),
             forbid=("re:(likes|prefers|loves|enjoys|eats) pork",)),
    ), "a dietary habit, learned from a returned order and two requests"),

    Scenario("en-pref-typescript", "preference", "en", ((
        u("User asked for the API client snippet in TypeScript, not plain JS.", 0.6, "dev-1"),
        a("Agent answered with a JavaScript example; user asked to redo it with TypeScript types.", 2.65, "dev-2", "user_feedback"),
        u("User wants the new utility written in TS with strict mode on.", 6.6, "dev-3"),
    ),), (
        held("preference", r"typescript|re:\bts\b",
             forbid=("re:prefers? (plain )?(javascript|js)",)),
    ), "a tool, named three ways"),

    Scenario("en-pref-large-text", "preference", "en", ((
        u("User asked to bump the slide text to at least 24 pt; said they struggle to read small fonts.", 2.4, "deck-1"),
        u("User asked for the PDF export with a larger font size before printing.", 5.5, "docs-1"),
        a("Agent sent screenshots of the dashboard; user asked for zoomed-in crops because the labels were too small to read.", 10.45,
          "docs-2"),
    ),), (
        held("preference", "large|big|24|zoom|bump|increase|font size|readab|大",
             "font|text|label|read|print|type|字", also=("fact",)),
    ), "accessibility, never called that"),

    Scenario("en-pref-iso-dates", "preference", "en", ((
        u("User corrected the due dates the agent typed as 03/04/2026 to 2026-04-03 in the tracker.", 1.6, "ops-1", "user_feedback"),
        u("User asked for ISO dates (YYYY-MM-DD) in the weekly report, since US and UK readers both misread the slashes.", 4.6, "ops-2"),
        u("User changed the date column again to year-month-day.", 8.55, "ops-3", "user_feedback"),
    ),), (
        held("preference", "iso|yyyy-mm-dd|year-month-day|8601|年-月-日"),
    ), "a format, shown once by example"),

    Scenario("en-pref-aisle", "preference", "en", ((
        a("Agent booked seat 14A on the Lisbon flight; user rejected the window seat and asked for an aisle.", 0.4, "trip-lis", "booking",
          outcome="rejected by user"),
        u("User asked for an aisle seat on the Oslo flight - they get up a lot on planes.", 13.5, "trip-osl"),
        a("Agent picked 22C (aisle) for the Berlin return; user confirmed.", 20.6, "trip-ber", "booking", outcome="confirmed"),
    ),), (
        held("preference", "aisle|过道|走廊",
             forbid=("re:prefers? (a )?window",)),
    ), "a choice learned from a rejection, weeks apart"),
]

FACTS = [
    Scenario("en-fact-night-nurse", "fact", "en", ((
        a("Agent moved the user's reminders to the afternoon since the user works nights as an ICU nurse.", 0.3, "life-1", "note"),
        u("User mentioned coming off another night shift and asked to keep the morning quiet.", 3.35, "life-2"),
        a("Agent noted the user's roster: four night shifts at St Mary's this week.", 7.4, "life-3", "observation"),
    ),), (
        held("fact", "nurse|night shift|nights|night-shift|夜班|护士"),
        maybe("preference", "afternoon|quiet|morning|reminder|下午"),
    ), "a job, said in the agent's voice"),

    Scenario("en-fact-dog-biscuit", "fact", "en", ((
        u("User asked for grain-free dog food for Biscuit, their beagle - no chicken, he's allergic.", 1.55, "pets-1"),
        a("Agent booked Biscuit's vaccination at the vet on Dunmore Road for the user.", 6.4, "pets-2", "booking"),
        u("User asked for a dog walker for Biscuit on Thursdays.", 12.45, "pets-3"),
    ),), (
        held("fact", "biscuit", "dog|beagle|pet|狗"),
        maybe("fact", "biscuit|dog|beagle", "chicken|allerg|grain", also=("preference",)),
        never("chicken|poultry", forbid=("biscuit|dog|beagle|pet|he's|his ",)),
    ), "a pet; its allergy is not the user's"),

    Scenario("en-fact-rotterdam", "fact", "en", ((
        a("Agent checked tram times from the user's home in Rotterdam-Kralingen to the office.", 0.35, "commute-1"),
        a("Agent filled in the user's Rotterdam address for the bike parcel delivery.", 4.6, "shop-1", "order"),
        u("User asked whether the Rotterdam rain will let up before their commute.", 9.3, "commute-2"),
    ),), (
        held("fact", "rotterdam|鹿特丹", "live|home|based|resid|address|住"),
    ), "where the user lives, never said in the first person"),

    Scenario("en-fact-translator", "fact", "en", ((
        u("User asked for help with the VAT return for their freelance translation business.", 2.5, "tax-1"),
        a("Agent drafted an invoice for the user's German-to-English translation job for Kessler GmbH.", 6.55, "inv-1"),
        u("User mentioned a tight deadline on a patent translation for a client.", 10.6, "work-1"),
    ),), (
        held("fact", "translat|翻译", "freelanc|self-employed|own business|work|job|profession|client|business|职业"),
    ), "a profession, from three errands"),

    Scenario("en-fact-wheelchair", "fact", "en", ((
        a("Agent filtered restaurants to step-free entrances because the user uses a wheelchair.", 1.7, "out-1"),
        u("User asked for an accessible hotel room in Porto; they travel with their wheelchair.", 5.4, "trip-opo"),
        a("Agent confirmed lift access at the concert venue before buying the user's ticket.", 11.5, "out-2", "booking"),
    ),), (
        held("fact", "wheelchair|轮椅", also=("preference",)),
        maybe("preference", "step-free|accessib|lift|elevator|无障碍", also=("fact",)),
    ), "an accessibility need"),

    Scenario("en-fact-diabetes", "fact", "en", ((
        u("User logged their insulin dose before lunch and asked the agent to set a reminder for the evening dose.", 0.5, "health-1"),
        a("Agent reminded the user to pack glucose tablets for the hike, given their type 1 diabetes.", 4.3, "health-2"),
        u("User asked to move the endocrinologist appointment for their diabetes check-up.", 9.4, "health-3"),
    ),), (
        held("fact", "diabet|insulin|糖尿病|胰岛素"),
    ), "a health fact, in three shapes"),
]

LESSONS = [
    Scenario("en-lesson-geocoder-429", "lesson", "en", ((
        call("Agent geocoded 1,200 customer addresses in one burst.", 1.4, "crm-1", "HTTP 429 Too Many Requests (retry-after: 60)", "geocoder"),
        call("Agent retried the address batch immediately.", 1.42, "crm-1", "429 Too Many Requests", "geocoder"),
        call("Agent geocoded the new leads list.", 3.5, "crm-2", "HTTP/1.1 429 rate limit exceeded", "geocoder"),
        call("Agent sent the addresses in batches of 50 with a 1 s pause between requests.", 3.55, "crm-2",
             "done: 1,184 geocoded, 16 not found", "geocoder"),
    ),), (
        lesson("geocod|地理编码", "429|rate|too many|限流|频率",
             fix=("batch|50|pause|throttl|slow|delay|wait|分批|间隔",)),
    ), "an HTTP status, then what worked"),

    Scenario("en-lesson-db-tunnel", "lesson", "en", ((
        call("Agent ran the schema migration against staging.", 2.4, "ops-7",
             "Traceback (most recent call last):\n  File \"migrate.py\", line 41, in <module>\npsycopg2.OperationalError: could not "
             "connect to server: Connection refused\n\tIs the server running on host \"10.0.3.7\" and accepting TCP/IP connections on port 5432?",
             "migrate"),
        call("Agent re-ran the staging migration.", 5.4, "ops-8",
             "psycopg2.OperationalError: could not connect to server: Connection refused", "migrate"),
        call("Agent opened the SSH tunnel through the bastion first, then ran the migration on localhost:5433.", 5.45, "ops-8",
             "Applied 3 migrations in 4.2s", "migrate"),
    ),), (
        lesson("migrat|database|postgres|psycopg|db|staging|数据库|迁移", "connect|refused|连接",
             fix=("tunnel|ssh|bastion|隧道|跳板",)),
    ), "a stack-trace fragment"),

    Scenario("en-lesson-s3-multipart", "lesson", "en", ((
        call("Agent uploaded the 6 GB backup archive to the S3 bucket with put_object.", 3.4, "bk-1",
             "botocore.exceptions.ClientError: An error occurred (EntityTooLarge) when calling the PutObject operation: Your proposed "
             "upload exceeds the maximum allowed size"),
        call("Agent uploaded this week's 7 GB backup archive to S3 with put_object.", 10.4, "bk-2",
             "ClientError: EntityTooLarge"),
        call("Agent switched to a multipart upload (100 MB parts) for the backup archive.", 10.45, "bk-2",
             "upload complete, ETag \"9b2cf535f27731c974343645a3985328-62\""),
    ),), (
        lesson("upload|s3|backup|put_object|putobject|上传", "large|size|entitytoolarge|gb|大",
             fix=("multipart|part|分片|分段|chunk",)),
    ), "a vendor error code, no tool entity given"),

    Scenario("en-lesson-npm-peer-deps", "lesson", "en", ((
        call("Agent ran npm install for the dashboard repo.", 0.6, "fe-1",
             "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree", "npm"),
        call("Agent retried npm install after clearing the cache.", 0.62, "fe-1", "npm ERR! code ERESOLVE", "npm"),
        call("Agent ran npm install on a fresh clone.", 4.5, "fe-2", "ERESOLVE could not resolve peer react@\"^17.0.0\"", "npm"),
        call("Agent ran npm install --legacy-peer-deps.", 4.52, "fe-2", "added 1432 packages in 38s", "npm"),
    ),), (
        lesson("npm|install|依赖", "eresolve|dependency|peer|依赖",
             fix=("legacy-peer-deps|legacy peer",)),
    ), "a CLI error code, and the flag that fixed it"),

    Scenario("en-lesson-calendar-timeout", "lesson", "en", ((
        call("Agent fetched the whole year of calendar events to find free slots.", 2.4, "plan-1",
             "ReadTimeout: HTTPSConnectionPool(host='www.googleapis.com', port=443): Read timed out. (read timeout=30)", "google-calendar"),
        call("Agent retried the year-long calendar fetch.", 2.41, "plan-1", "timed out after 30 s", "google-calendar"),
        call("Agent queried the calendar for the whole quarter's events.", 7.6, "plan-2", "deadline exceeded (30000 ms)", "google-calendar"),
        call("Agent queried the calendar one week at a time.", 7.62, "plan-2", "ok, 7 requests, 212 events", "google-calendar"),
    ),), (
        lesson("calendar|日历", "timeout|timed out|deadline|超时",
             fix=("week|smaller|range|narrow|chunk|一周|按周|分段",)),
    ), "timeouts of three shapes"),

    Scenario("en-lesson-printer-unfixed", "lesson", "en", ((
        call("Agent sent the contract to the office printer.", 1.35, "print-1", "Operation could not be completed (error 0x00000709)",
             "office-printer"),
        call("Agent printed the boarding passes on the office printer.", 5.4, "print-2", "error 0x00000709", "office-printer"),
        call("Agent queued the quarterly report on the office printer.", 9.35, "print-3", "Printer error 0x00000709 - operation failed",
             "office-printer"),
    ),), (
        lesson("printer|print|打印", "0x00000709|709"),
    ), "a failure that recurs with nothing that worked"),

    Scenario("en-lesson-card-3ds", "lesson", "en", ((
        call("Agent charged the saved card for the annual renewal.", 3.5, "bill-1",
             "card_error: authentication_required (decline_code: authentication_required)", "stripe"),
        call("Agent retried the charge on the saved card.", 3.52, "bill-1", "authentication_required", "stripe"),
        call("Agent charged the saved card for the add-on seats.", 17.5, "bill-2", "Stripe error: authentication_required", "stripe"),
        call("Agent sent the user a payment link so they could confirm the charge with 3-D Secure.", 17.55, "bill-2",
             "payment_intent.succeeded", "stripe"),
    ),), (
        lesson("charge|card|payment|stripe|支付|扣款", "authenticat|3-d|3ds|decline|认证|验证",
             fix=("link|3-d secure|3ds|confirm|链接",)),
    ), "a vendor decline code; the fix involves the user"),
]

CHANGES = [
    Scenario("en-change-run-evening", "change", "en", ((
        u("User asked the agent to block 6:30-7:15 am for a run.", 0.2, "fit-1"),
        a("Agent set the morning run reminder for 6:15; user kept it.", 3.2, "fit-2"),
        u("User logged a 5 km run at 6:40 am and asked to keep the morning slot.", 6.3, "fit-3"),
    ), (
        u("User said the new job starts at 7, so runs move to the evening, around 6:30 pm.", 20.7, "fit-4"),
        a("Agent moved the run reminders from mornings to 6:30 pm; user confirmed.", 24.7, "fit-5"),
        u("User logged an evening run after work and asked to keep evenings for running from now on.", 27.8, "fit-6"),
    )), (
        held("preference", "run|跑", "evening|pm|after work|18:30|傍晚|晚上", also=("fact",)),
        old("preference", "run|跑", r"morning|re:\d ?am\b|a\.m|早上|早晨|清晨", also=("fact",),
            forbid=("evening|pm|after work|no longer|moved|晚上|不再",)),
        maybe("fact", "run|跑", also=("preference",), forbid=(r"morning|re:\d ?am\b|a\.m|早上|早晨|清晨",)),
    ), "a habit moves from mornings to evenings"),

    Scenario("en-change-word-to-gdocs", "change", "en", ((
        u("User asked for the project update as a Word file (.docx) so they can track changes.", 1.5, "doc-1"),
        u("User asked again for the minutes in Word format.", 5.55, "doc-2"),
        a("Agent exported the proposal to .docx at the user's request.", 9.5, "doc-3"),
    ), (
        u("User said the team has moved to Google Docs: no more Word attachments, share a Docs link instead.", 30.4, "doc-4"),
        a("Agent shared the status report as a Google Doc link; user said that's the way from now on.", 33.5, "doc-5"),
        u("User asked for the meeting notes straight in Google Docs again.", 37.45, "doc-6"),
    )), (
        held("preference", "google doc|gdoc|docs link|谷歌文档"),
        old("preference", "word|docx|.doc", forbid=("google|no more|no longer|不再",)),
    ), "a format replaced, said in free text"),

    Scenario("en-change-berlin-munich", "change", "en", ((
        a("Agent ordered groceries to the user's flat in Berlin-Neukolln.", 2.6, "home-1", "order"),
        u("User asked about the Berlin recycling pickup days for their street.", 6.4, "home-2"),
        a("Agent renewed the user's Berlin public transport monthly pass.", 10.4, "home-3"),
    ), (
        u("User said they moved to Munich last weekend and asked to update every delivery address.", 40.5, "home-4"),
        a("Agent changed the user's address to Munich-Schwabing on the grocery app.", 41.4, "home-5"),
        u("User asked for the Munich waste collection calendar for their new street.", 45.6, "home-6"),
    )), (
        held("fact", "munich|münchen|慕尼黑", "live|home|moved|address|based|resid|住|搬"),
        old("fact", "berlin|柏林", "live|home|flat|based|resid|address|住",
            forbid=("munich|münchen|moved|former|used to|慕尼黑|搬",)),
    ), "a home that changed, no dimension given"),

    Scenario("en-change-veg-to-pescatarian", "change", "en", ((
        a("Agent ordered the vegetarian set menu for the user.", 0.5, "eat-1", "order"),
        u("User asked for vegetarian restaurants near the conference hotel.", 4.6, "eat-2"),
        u("User reminded the agent they don't eat meat or fish when booking the wedding dinner.", 8.5, "eat-3"),
    ), (
        u("User said they've started eating fish again (still no meat) and asked for seafood places.", 35.5, "eat-4"),
        a("Agent booked the fish restaurant in Cascais; user happy with it.", 38.6, "eat-5", "booking"),
        u("User asked the agent to update their meal preference to pescatarian on the airline profile.", 42.4, "eat-6"),
    )), (
        held("preference", "pescat|eats fish|eating fish|eat fish|seafood|fish now|海鲜|吃鱼", also=("fact",),
             forbid=("re:(n't|not|no|never) eat (meat or |meat and )?fish",)),
        old("preference", "vegetarian|素食|no meat|don't eat meat", also=("fact",),
            forbid=("pescat|eats fish|eating fish|seafood|no longer|海鲜|吃鱼",)),
    ), "a diet refined into a new one"),

    Scenario("en-change-sheet-to-ynab", "change", "en", ((
        u("User pasted this week's receipts and asked the agent to add them to the budget spreadsheet.", 1.7, "money-1"),
        a("Agent updated the household budget spreadsheet with the utility bills.", 8.7, "money-2"),
        u("User asked to categorise the supermarket spend in the budget sheet again.", 15.7, "money-3"),
    ), (
        u("User said they've stopped using the spreadsheet and now log spending in YNAB.", 40.8, "money-4"),
        a("Agent imported last month's card transactions into YNAB for the user.", 44.7, "money-5"),
        u("User asked the agent to reconcile the YNAB accounts, not the old sheet.", 51.75, "money-6"),
    )), (
        held("preference", "ynab", also=("fact",)),
        old("preference", "spreadsheet|sheet|excel|表格", also=("fact",),
            forbid=("ynab|stopped|no longer|instead|不再",)),
    ), "a tool habit that stopped"),
]

NEGATIVES = [
    Scenario("en-neg-one-off-french", "negative", "en", ((
        u("User asked for this one report in French because the Lyon client doesn't read English - just this once.", 2.5, "rep-1"),
        a("Agent summarised the supplier contract for the user.", 6.5, "rep-2"),
        u("User asked for a short board memo on the Q1 numbers.", 9.45, "rep-3"),
    ),), (
        never("french|法语|法文"),
    ), "a one-off said to be one"),

    Scenario("en-neg-small-talk", "negative", "en", ((
        Ep("User chatted about the rain in Manchester and asked if it ever stops.", 0.7, "chat-1", "conversation"),
        Ep("User asked the agent for a joke about accountants; laughed at the second one.", 3.8, "chat-2", "conversation"),
        Ep("User mentioned the derby ended 2-2 and asked who scored.", 6.9, "chat-3", "conversation"),
        Ep("User said good morning and asked how the agent's day was going.", 10.35, "chat-4", "conversation"),
    ),), (), "small talk over four sessions"),

    Scenario("en-neg-colleague-slides", "negative", "en", ((
        a("Agent switched the deck to the dark template because Priya, the user's colleague, prefers dark slides for her review.", 1.5,
          "deck-a"),
        u("User asked to prepare the slides 'the way Priya likes them' - dark background, big numbers.", 5.5, "deck-b"),
        a("Agent exported a dark-theme version for Priya; the user kept the light version for themselves.", 9.6, "deck-c"),
    ),), (
        maybe("preference", "priya|colleague|同事", "dark|深色", also=("fact",)),
        never("dark|深色", forbid=("priya|colleague|同事|her |she ",)),
    ), "a colleague's preference is not the user's"),

    Scenario("en-neg-wife-gluten", "negative", "en", ((
        u("User asked for a gluten-free bakery for his wife Elena's birthday cake.", 2.6, "fam-1"),
        a("Agent booked a table at Nonna's and told the restaurant Elena is coeliac, as the user asked.", 8.7, "fam-2", "booking"),
        u("User asked the agent to check the hotel breakfast has gluten-free options for Elena.", 16.4, "fam-3"),
    ),), (
        maybe("fact", "elena|wife|spouse|partner|妻子|太太", "gluten|coeliac|celiac|麸质", also=("preference",)),
        never("gluten|coeliac|celiac|麸质", forbid=("elena|wife|spouse|partner|妻子|太太|her |she ",)),
    ), "a spouse's diet is not the user's"),

    Scenario("en-neg-python-word", "negative", "en", ((
        u("User asked what the reticulated python at the zoo eats.", 1.6, "misc-1"),
        a("Agent fixed a Python IndentationError in the user's script.", 4.45, "dev-9", outcome="fixed"),
        u("User asked for the Monty Python sketch with the parrot.", 7.85, "misc-2"),
    ),), (), "one word, three unrelated things"),

    Scenario("en-neg-translate-german", "negative", "en", ((
        u("User asked the agent to translate the supplier contract into German for the Munich partner.", 1.45, "legal-1"),
        u("User asked for the NDA translated into German as well.", 5.5, "legal-2"),
        u("User asked the agent to put the price sheet into German before Friday.", 10.4, "legal-3"),
    ),), (
        maybe("preference", "german|德语|德文", "translat|contract|document|nda|price|partner|翻译|合同|文件", also=("fact",)),
        never("german|德语|德文", forbid=("translat|contract|document|nda|price|sheet|partner|翻译|合同|文件",)),
    ), "documents translated into German; not 'replies in German'"),

    Scenario("en-neg-transient-failures", "negative", "en", ((
        call("Agent fetched the forecast for the user's trip.", 2.45, "w-1", "502 Bad Gateway", "weather-api"),
        call("Agent retried the forecast request.", 2.451, "w-1", "200 OK", "weather-api"),
        call("Agent requested driving directions to Porto.", 9.5, "w-2", "503 Service Unavailable", "maps"),
        call("Agent requested the directions again.", 9.501, "w-2", "ok", "maps"),
    ),), (), "a failure fixed by one retry is not a lesson"),

    Scenario("en-neg-chicago-trips", "negative", "en", ((
        u("User asked for the Chicago forecast before Tuesday's client visit.", 3.4, "travel-1"),
        a("Agent booked the user a hotel near the Chicago office for two nights.", 3.45, "travel-1", "booking"),
        u("User asked for Chicago weather again ahead of the second visit this month.", 17.4, "travel-2"),
        a("Agent found a late checkout at the Chicago hotel for the user.", 18.5, "travel-2", "booking"),
    ),), (
        maybe("fact", "chicago|芝加哥", "trip|travel|visit|business|client|often|frequent|出差", also=("preference",)),
        never("chicago|芝加哥", forbid=("trip|travel|visit|business|client|often|frequent|hotel|出差|office",)),
    ), "trips to a city are not a home there"),
]
# fmt: on

SCENARIOS_EN = [*PREFERENCES, *FACTS, *LESSONS, *CHANGES, *NEGATIVES]
