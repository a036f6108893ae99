"""Layer 1's off-topic rules: requests outside work and careers (a poem, a joke, the weather forecast,
a recipe, sports, homework, a programming error, a translation) and personal errands that use booking
words (a table, a doctor, a haircut, a streaming membership). Every one is vetoed by any word of work or
careers, because a career question wins over whatever else the message asks; the booking rules veto the
errands' words, so these rules see them.
"""

from __future__ import annotations

from careerwise.routing._rule_base import _CAREER_WORDS, _CODE, _ERRAND_ZH, Rule, _r

OFFTOPIC_RULES: tuple[Rule, ...] = (
    Rule(
        "offtopic.zh.request",
        "offtopic",
        _r(
            r"(?:寫|作)(?:一)?(?:首|篇|個|段)(?:[^，,。]{0,8})(?:詩|絕句|歌詞|歌|rap|饒舌|故事|小說|笑話|情書)"
            r"|(?:講|說)(?:個|一個|幾個)?(?:冷)?笑話|睡前故事|(?:來|說|講)點好笑的|(?:婚禮|伴郎|伴娘|生日|畢業典禮)致詞"
            # the weather with a day to forecast (「那天氣呢？」 alone is a follow-up, 「今天好冷喔」 small talk)
            r"|(?:明天|今天|後天|週末|這週|下週|今晚|明早)[^。，,]{0,8}(?:天氣|氣溫|下雨|颱風|冷|熱)[^。]{0,6}"
            r"(?:嗎|幾度|如何|怎樣|多少)|天氣預報|會不會下雨|颱風假"
            r"|食譜|(?:怎麼|先)(?:煮|滷|烤|炒|燉|煎)|氣炸鍋|電鍋"
            # a dish asked how to make: 「番茄炒蛋要怎麼做」
            # (not 炒魷魚, being fired, nor 炒股 or 炒房)
            r"|(?:炒(?!魷魚|股|房|作)|煮|滷|烤|燉|煎|蒸|炸)[\u4e00-\u9fff]{1,3}(?:要)?怎麼(?:做|煮|弄)"
            # getting somewhere: 「高鐵台北到左營要多久」
            r"|(?:高鐵|台鐵|火車|捷運|客運|公車)[^。，,]{0,12}(?:要多久|幾點|多少錢|票價|時刻表|怎麼搭)"
            r"|幾比幾|總冠軍|全壘打|比賽結果"
            r"|匯率|股票代號|股價"
            r"|(?:貓|狗|倉鼠|兔子|寵物)(?:咪|狗)?(?:一直|可以|能|會|吃|吐|生病)"
            r"|(?:發燒|感冒|喉嚨痛|拉肚子)[^。]{0,10}(?:怎麼辦|吃什麼|要不要|嗎|掛)"
            r"|(?:失眠|睡不著|睡不好|沒睡好)[^。]{0,12}(?:怎麼辦|方法|吃什麼|嗎)|助眠"
            r"|數學題|方程式|微積分|國小[一二三四五六]?年級|時速多少|(?:弟|妹|小孩|兒子|女兒)的?[^。，,]{0,4}(?:作業|功課)"
            # homework of one's own: a book report, an essay, an assignment due
            r"|讀後感|觀後感|(?:寫|交)(?:一篇)?[^。，,]{0,6}作文|(?:作業|功課)[^。，,]{0,4}(?:要交|明天交|寫不完|趕不完)"
            r"|(?=.*[\u3400-\u9fff])[a-z]+(?:error|exception)\b"  # a programming error, asked in Chinese
            rf"|(?=.*[\u3400-\u9fff])(?:{_CODE})"  # a question about code, asked in Chinese
            r"|(?:晚餐|午餐|早餐|宵夜)[^，,。]{0,6}(?:煮|吃)什麼"
            r"|推薦(?:幾|一)?(?:部|本|齣|款|個)?[^，,。]{0,8}(?:電影|影集|台劇|韓劇|日劇|動畫|動漫|漫畫|小說|遊戲)"
            # a translation or a thesis (a document of the user's job search is the resume rules' before)
            r"|翻(?:譯)?成(?:英文|中文|日文|韓文)|論文摘要|\d[\d,.]*\s?%\s?(?:是多少|等於多少)"
        ),
        "a request outside careers: writing poems or stories, jokes, the weather, recipes, sports, "
        "exchange rates, pets, health, homework, a programming error",
        (
            "幫我寫一首關於海的詩",
            "寫一段關於颱風天的 rap",
            "講個笑話給我聽",
            "明天高雄會下雨嗎",
            "紅燒肉怎麼滷比較入味",
            "昨晚洋基幾比幾",
            "日圓匯率現在多少",
            "我家貓一直吐怎麼辦",
            "最近都睡不著，有什麼方法",
            "Python 出現 KeyError 是什麼意思",
            "幫我寫三百字的觀後感，電影是《鐵達尼號》",
            "清蒸魚要怎麼做才不會腥",
            "午餐一直想不到要吃什麼",
        ),
        exclude=_r(_CAREER_WORDS),
    ),
    Rule(
        "offtopic.en.request",
        "offtopic",
        _r(
            r"\b(?:write|compose) (?:me )?(?:a|an|some) (?:\w+ )?(?:poem|haiku|song|lyrics|story|limerick|joke|"
            r"bedtime story|love letter)\b|\btell me (?:a|another|some) (?:\w+ )?(?:jokes?|stor(?:y|ies))\b"
            rf"|{_CODE}"
            r"|\b(?:weather|forecast)\b|\bwill it (?:rain|snow)\b"
            r"|\brecipes?\b|\bhow (?:long|do i|to) (?:boil|bake|cook|roast|grill)\b"
            r"|\bwho won\b|\bscore (?:of|in) (?:the|last)\b|\bsuper bowl\b|\bworld cup\b"
            r"|\b(?:any|some|got any|know any) (?:good |funny |dad |bad |corny )?jokes?\b"
            r"|\bexchange rate\b|\bticker symbol\b|\bstock price\b"
            r"|\bmy (?:dog|cat|puppy|kitten|hamster|rabbit)\b"
            r"|\b(?:derivative|integral) of\b|\bsolve (?:for x|this equation)\b"
            r"|\b[a-z]+(?:error|exception)\b"
            r"|\bwho (?:painted|wrote|sang|invented|discovered)\b|\bcapital (?:city )?of\b"
            r"|\bsummari[sz]e the (?:plot|movie|book|novel|film)\b|\bplot of\b"
            r"|\bget (?:\w+ ){1,3}out of (?:my |a |the )?(?:\w+ )?(?:shirt|carpet|couch|jeans|sofa)\b"
            r"|\bwhat(?:'s| is) (?:a )?\d[\d,.]*\s?(?:%|percent) (?:tip )?(?:of|on)\b|\btranslate\b|\b(?:thesis|dissertation) abstract\b|\babstract for (?:the|a|my) (?:conference|journal)\b"
            # school work in a school subject
            r"|\b(?:history|math|maths|physics|chemistry|biology|geography|literature|philosophy)\s+"
            r"(?:essay|homework|assignment|paper|report|quiz|exam)\b"
        ),
        "a request outside careers: poems, stories, jokes, the weather, recipes, sports, exchange rates, "
        "pets, homework, a programming error",
        (
            "write me a poem about autumn",
            "tell me a joke",
            "know any corny jokes?",
            "what's the weather in Taipei tomorrow",
            "any good recipe for banana bread?",
            "who won the game last night",
            "my cat keeps throwing up",
            "what does IndexError mean in python",
            "can you do my chemistry homework",
        ),
        exclude=_r(_CAREER_WORDS),
    ),
    # booking words about a personal errand: someone's table, a doctor, a haircut, a streaming membership.
    # The booking rules veto these words; without a word of work they are a request outside careers.
    Rule(
        "offtopic.zh.errand",
        "offtopic",
        _r(
            r"(?:預約|預訂|訂|取消|退訂|改期|改時間|掛)[^，,。?？]{0,10}"
            r"(?:牙醫|門診|醫生|看診|掛號|健檢|體檢|醫院|診所|(?:眼|牙|皮膚|耳鼻喉|骨|婦產|小兒|家醫|復健|身心|精神)科|餐廳|位子|訂位|剪髮|剪頭髮|美髮|美甲|按摩|健身房|機票|飯店|民宿|高鐵|火車票|電影票)"
            r"|(?:netflix|youtube|spotify|disney|apple music|kkbox|line music)[^，,。]{0,12}(?:會員|訂閱|premium)"
            r"|(?:會員|訂閱)[^，,。]{0,6}(?:取消|退訂|退費|續約)|(?:取消|退訂)[^，,。]{0,6}(?:會員|訂閱)"
            # a personal service or a meal with a booking word on either side: 「我想剪頭髮 幫我約週日下午」
            # (not a trade: 美甲師, 證照, 開店 are a career's words)
            rf"|^(?!.*(?:師|證照|學徒|開店|加盟))(?=.*(?:{_ERRAND_ZH}))"
            r"(?=.*(?:預約|預訂|訂位|(?:幫我|我想|想|要)約|約(?:在)?(?:這|下|本)?(?:週|禮拜|星期|明天|後天|今天|今晚)"
            r"|訂(?:[一二三四五六七八九十兩\d]|今|明|週|禮拜|星期|下)|幫我訂))"
            # a table for a number of people: 「幫我訂週六晚上四個人的」 (not an order, 訂單)
            r"|(?:訂(?![單閱定正製])|預訂|訂位)[^。，,?？]{0,12}(?:[一二三四五六七八九十兩]|\d+)\s?(?:個人|位|人)"
        ),
        "books or cancels something that is not a session with Summer: a table, a doctor, a haircut, a "
        "ticket, a streaming or gym membership",
        (
            "幫我訂週五晚上的餐廳",
            "我想預約下週的牙醫",
            "Netflix 會員要怎麼取消",
            "想去染髮 幫我約禮拜六早上",
            "禮拜天想做美睫，可以幫我訂嗎",
            "幫我訂明天中午六個人的位子",
            "幫我阿嬤掛週四的皮膚科",
        ),
        exclude=_r(_CAREER_WORDS),
    ),
    Rule(
        "offtopic.en.errand",
        "offtopic",
        _r(
            r"\b(?:book|reserve|cancel|reschedule)\b[^.?!]{0,30}"
            r"\b(?:table|dentist|doctor'?s?|haircut|salon|restaurant|flight|hotel|massage|vet|"
            r"netflix|spotify|disney\+?|hulu|youtube premium|gym)\b"
            r"|\b(?:netflix|spotify|hulu|disney\+?|youtube|gym|streaming)\b[^.?!]{0,20}\b(?:membership|subscription|premium)\b"
            r"|\b(?:cancel|end|stop)\b[^.?!]{0,10}\b(?:membership|subscription)\b"
        ),
        "the same in English",
        ("book me a table for four tonight", "how do I cancel my spotify subscription"),
        exclude=_r(_CAREER_WORDS),
    ),
)
