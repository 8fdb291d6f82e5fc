"""The word lists the hindsight rules read, English and Chinese: languages, formats, objects of a format, jobs,
activities, diets. Each maps what people write to one canonical value, so "Mandarin", "中文" and "Chinese" are one
preference."""

from __future__ import annotations

# language word -> canonical English name
LANGUAGES: dict[str, str] = {
    "english": "English",
    "chinese": "Chinese",
    "mandarin": "Chinese",
    "cantonese": "Cantonese",
    "japanese": "Japanese",
    "korean": "Korean",
    "french": "French",
    "german": "German",
    "spanish": "Spanish",
    "portuguese": "Portuguese",
    "italian": "Italian",
    "russian": "Russian",
    "arabic": "Arabic",
    "hindi": "Hindi",
    "dutch": "Dutch",
    "swedish": "Swedish",
    "polish": "Polish",
    "turkish": "Turkish",
    "vietnamese": "Vietnamese",
    "thai": "Thai",
    "中文": "Chinese",
    "汉语": "Chinese",
    "普通话": "Chinese",
    "华语": "Chinese",
    "粤语": "Cantonese",
    "英文": "English",
    "英语": "English",
    "日语": "Japanese",
    "日文": "Japanese",
    "韩语": "Korean",
    "韩文": "Korean",
    "法语": "French",
    "法文": "French",
    "德语": "German",
    "德文": "German",
    "西班牙语": "Spanish",
    "俄语": "Russian",
}

# canonical English language name -> its Chinese name, for statements written in Chinese
LANGUAGE_ZH: dict[str, str] = {
    "English": "英文",
    "Chinese": "中文",
    "Cantonese": "粤语",
    "Japanese": "日语",
    "Korean": "韩语",
    "French": "法语",
    "German": "德语",
    "Spanish": "西班牙语",
    "Portuguese": "葡萄牙语",
    "Italian": "意大利语",
    "Russian": "俄语",
    "Arabic": "阿拉伯语",
}

# what a text is written in -> the facet a language or format preference is about
TEXT_OBJECTS: dict[str, str] = {
    "comment": "code comments",
    "comments": "code comments",
    "commit": "commit messages",
    "commits": "commit messages",
    "email": "emails",
    "emails": "emails",
    "mail": "emails",
    "summary": "summaries",
    "summaries": "summaries",
    "summarize": "summaries",
    "summarise": "summaries",
    "recap": "summaries",
    "docs": "documentation",
    "documentation": "documentation",
    "data": "data",
    "numbers": "data",
    "figures": "data",
    "stats": "data",
    "statistics": "data",
    "results": "data",
    "comparison": "data",
    "comparisons": "data",
    "compare": "data",
    "prices": "data",
    "metrics": "data",
    "steps": "steps",
    "instructions": "steps",
    "procedure": "steps",
    "procedures": "steps",
    "how-to": "steps",
    "code": "code",
    "snippets": "code",
    "注释": "code comments",
    "提交信息": "commit messages",
    "邮件": "emails",
    "总结": "summaries",
    "摘要": "summaries",
    "文档": "documentation",
    "数据": "data",
    "数字": "data",
    "结果": "data",
    "对比": "data",
    "比较": "data",
    "价格": "data",
    "统计": "data",
    "步骤": "steps",
    "操作": "steps",
    "流程": "steps",
    "代码": "code",
}

TEXT_OBJECTS_ZH: dict[str, str] = {
    "replies": "回复",
    "answers": "回答",
    "code comments": "代码注释",
    "commit messages": "提交信息",
    "emails": "邮件",
    "summaries": "总结",
    "documentation": "文档",
    "data": "数据",
    "steps": "步骤",
    "code": "代码",
}

# format word (lowercased) -> canonical format
FORMATS: dict[str, str] = {
    "table": "a table",
    "tables": "a table",
    "tabular": "a table",
    "bullet": "a bulleted list",
    "bullets": "a bulleted list",
    "bulleted": "a bulleted list",
    "bullet points": "a bulleted list",
    "numbered": "a numbered list",
    "numbered list": "a numbered list",
    "numbered steps": "a numbered list",
    "step by step": "a numbered list",
    "step-by-step": "a numbered list",
    "json": "JSON",
    "csv": "CSV",
    "yaml": "YAML",
    "plain text": "plain text",
    "paragraphs": "prose paragraphs",
    "normal paragraphs": "prose paragraphs",
    "plain paragraphs": "prose paragraphs",
    "flowing paragraphs": "prose paragraphs",
    "prose": "prose paragraphs",
    "flowing prose": "prose paragraphs",
    "bullet form": "a bulleted list",
    "bullet-point": "a bulleted list",
    "bullet-points": "a bulleted list",
    "bullet point": "a bulleted list",
    "表格": "a table",
    "列个表": "a table",
    "分点": "a bulleted list",
    "段落": "prose paragraphs",
    "列表": "a bulleted list",
    "要点": "a bulleted list",
    "编号": "a numbered list",
    "分步骤": "a numbered list",
    "一步一步": "a numbered list",
}

FORMATS_ZH: dict[str, str] = {
    "a table": "表格",
    "a markdown table": "Markdown 表格",
    "a bulleted list": "要点列表",
    "a numbered list": "编号列表",
    "JSON": "JSON",
    "CSV": "CSV",
    "YAML": "YAML",
    "plain text": "纯文本",
    "prose paragraphs": "段落文字",
}

JOBS = (
    "software engineer|data scientist|product manager|project manager|engineer|developer|programmer|designer|"
    "teacher|nurse|doctor|physician|surgeon|manager|lawyer|accountant|student|writer|researcher|scientist|"
    "consultant|chef|cook|pharmacist|architect|analyst|artist|photographer|journalist|professor|dentist|"
    "therapist|electrician|plumber|pilot|farmer|musician|translator|librarian|paramedic|firefighter|"
    "police officer|social worker|veterinarian|vet"
)
JOBS_ZH = (
    "老师|教师|医生|护士|工程师|程序员|设计师|律师|会计|学生|记者|厨师|经理|产品经理|研究员|司机|销售|翻译|作家|警察"
)

PETS = (
    "dog|cat|puppy|kitten|parrot|rabbit|bunny|hamster|turtle|tortoise|horse|snake|lizard|guinea pig|"
    "beagle|labrador|lab|poodle|husky|corgi|terrier|retriever|bulldog|dachshund|collie|chihuahua|pug|spaniel|"
    "schnauzer|greyhound|tabby|siamese"
)
PETS_ZH = "狗|猫|小狗|小猫|狗狗|猫咪|兔子|仓鼠|乌龟|鹦鹉"
RELATIVES = (
    "wife|husband|partner|son|daughter|sister|brother|mother|father|mom|mum|dad|girlfriend|boyfriend|"
    "grandmother|grandfather|grandma|grandpa|aunt|uncle|cousin|niece|nephew|fiancee|fiance"
)

# activity word -> canonical activity (a habit is an activity done again and again)
ACTIVITIES: dict[str, str] = {
    "run": "running",
    "runs": "running",
    "ran": "running",
    "running": "running",
    "jog": "running",
    "jogged": "running",
    "jogging": "running",
    "5k": "running",
    "10k": "running",
    "swim": "swimming",
    "swam": "swimming",
    "swimming": "swimming",
    "laps": "swimming",
    "cycle": "cycling",
    "cycled": "cycling",
    "cycling": "cycling",
    "biked": "cycling",
    "bike ride": "cycling",
    "yoga": "yoga",
    "gym": "going to the gym",
    "weights": "going to the gym",
    "lifting": "going to the gym",
    "hike": "hiking",
    "hiked": "hiking",
    "hiking": "hiking",
    "climbing": "climbing",
    "bouldering": "climbing",
    "tennis": "tennis",
    "badminton": "badminton",
    "basketball": "basketball",
    "football": "football",
    "soccer": "football",
    "pilates": "pilates",
    "rowing": "rowing",
    "boxing": "boxing",
    "dance class": "dancing",
    "跑步": "running",
    "跑了": "running",
    "晨跑": "running",
    "慢跑": "running",
    "游泳": "swimming",
    "游了": "swimming",
    "骑车": "cycling",
    "骑行": "cycling",
    "瑜伽": "yoga",
    "健身": "going to the gym",
    "爬山": "hiking",
    "徒步": "hiking",
    "攀岩": "climbing",
    "网球": "tennis",
    "羽毛球": "badminton",
    "篮球": "basketball",
    "足球": "football",
    "乒乓球": "table tennis",
    "普拉提": "pilates",
    "跳舞": "dancing",
    "拳击": "boxing",
}

ACTIVITIES_ZH: dict[str, str] = {
    "running": "跑步",
    "swimming": "游泳",
    "cycling": "骑行",
    "yoga": "瑜伽",
    "going to the gym": "健身",
    "hiking": "徒步",
    "climbing": "攀岩",
    "tennis": "打网球",
    "badminton": "打羽毛球",
    "basketball": "打篮球",
    "football": "踢足球",
    "table tennis": "打乒乓球",
    "pilates": "普拉提",
    "dancing": "跳舞",
    "boxing": "练拳击",
    "rowing": "划船",
}

# currency word -> ISO code
CURRENCIES: dict[str, str] = {
    "rmb": "CNY",
    "cny": "CNY",
    "yuan": "CNY",
    "renminbi": "CNY",
    "人民币": "CNY",
    "usd": "USD",
    "us dollars": "USD",
    "dollars": "USD",
    "美元": "USD",
    "美金": "USD",
    "eur": "EUR",
    "euros": "EUR",
    "欧元": "EUR",
    "gbp": "GBP",
    "英镑": "GBP",
    "jpy": "JPY",
    "yen": "JPY",
    "日元": "JPY",
    "chf": "CHF",
}

# diet word -> canonical diet
DIETS: dict[str, str] = {
    "vegetarian": "vegetarian",
    "veggie": "vegetarian",
    "vegan": "vegan",
    "pescatarian": "pescatarian",
    "halal": "halal",
    "kosher": "kosher",
    "gluten-free": "gluten-free",
    "gluten free": "gluten-free",
    "lactose intolerant": "lactose-free",
    "dairy-free": "lactose-free",
    "素食": "vegetarian",
    "吃素": "vegetarian",
    "素食主义": "vegetarian",
    "纯素": "vegan",
    "清真": "halal",
}

DIETS_ZH: dict[str, str] = {
    "vegetarian": "吃素",
    "vegan": "吃纯素",
    "pescatarian": "只吃鱼类海鲜、不吃其他肉",
    "halal": "吃清真",
    "kosher": "吃犹太洁食",
    "gluten-free": "不吃含麸质的食物",
    "lactose-free": "不吃乳制品",
}
