"""Layer 1's greeting rules: a message made entirely of small-talk tokens (hello, thanks, goodbye, an
acknowledgement, a question about Summer herself) and fillers. They come last and each is bounded in
length, so a greeting in front of a question never makes the question a greeting: 「你好，我想問怎麼談
薪水」 is left to the later layers, which label it by what follows the opener.
"""

from __future__ import annotations

from careerwise.routing._rule_base import (
    _ABOUT,
    _ACK,
    _BYE,
    _CAREER_WORDS,
    _HELLO,
    _HOW,
    _THANKS,
    Rule,
    _r,
    _smalltalk,
)

# what may follow the closing thanks: an address, a particle, punctuation, an emoji
_SEP_END = (
    r"(?:\s*(?:summer|老師|你|妳|您|啦|喔|哦|囉|呀|啊|耶|唷|so much|a lot|again|陪我聊天?|聽我說|聽我講|"
    r"for listening|for the chat|[~!.。！～…]|[🙂😊🙏❤️]))*\s*"
)

GREETING_RULES: tuple[Rule, ...] = (
    Rule(
        "greet.hello",
        "greeting",
        _smalltalk(f"{_HELLO}|{_HOW}"),
        "a greeting and nothing else",
        ("你好", "嗨", "早安 Summer", "Hi Summer :)", "你好，最近好嗎？", "hey hey what's up", "gm summer"),
        max_units=14,
    ),
    Rule(
        "greet.thanks",
        "greeting",
        _smalltalk(_THANKS),
        "thanks and nothing else",
        ("謝謝妳！", "3Q", "thx!!", "thank you so much", "謝啦 先這樣", "感謝 你人超好"),
        max_units=14,
    ),
    Rule(
        "greet.bye",
        "greeting",
        _smalltalk(_BYE),
        "a goodbye and nothing else",
        ("掰掰", "bye~", "晚安囉", "那就先這樣 掰"),
        max_units=14,
    ),
    Rule(
        "greet.ack",
        "greeting",
        _smalltalk(_ACK),
        "an acknowledgement (ok, 收到, 了解) and nothing else",
        ("好的", "收到", "ok", "了解了解", "哈哈哈 好喔"),
        max_units=10,
    ),
    Rule(
        "greet.about",
        "greeting",
        _smalltalk(_ABOUT),
        "asks who Summer is or what she can do",
        (
            "你是誰？",
            "who are you",
            "你能做什麼",
            "妳是機器人嗎",
            "who built you",
            "妳會講台語嗎",
            "你平常喜歡喝茶嗎",
        ),
        max_units=14,
    ),
    Rule(
        "greet.thanks_after",
        "greeting",
        # a message that ends in thanks and asks nothing: how the talk helped, then the thanks
        _r(
            r"^(?!.*(?:[?？]|嗎|呢|怎麼|如何|什麼|幫|請(?!問)|麻煩|給我|我想|我要|想要|想問|可以|能不能|要不要"
            r"|\b(?:can|could|would|how|what|should|please|pls|plz|i'?d like|i want|i need|give me|send me|write|"
            r"tell me|help me|show me|find me)\b"
            # a day or a time, the answer to a question about a booking («下週一下午 謝謝»)
            r"|週|禮拜|星期|明天|後天|早上|上午|下午|晚上|\d|\b(?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|"
            r"saturdays?|sundays?|tomorrow|tonight|morning|afternoon|evening|am|pm)\b))"
            rf".{{4,}}(?:{_THANKS})(?:{_SEP_END})$"
        ),
        "a few words on how the talk went, ending in thanks, asking nothing and without a word of work",
        (
            "剛剛聊完心情好多了，真的謝謝妳",
            "that really helped me calm down, thank you!",
            "講出來輕鬆多了，謝謝妳聽我說",
        ),
        max_units=40,
        exclude=_r(_CAREER_WORDS),
    ),
)
