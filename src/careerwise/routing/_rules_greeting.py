"""Layer 1's greeting rules: a message made entirely of small-talk tokens (hello, thanks, goodbye, an
acknowledgement, a question about Summer herself) and fillers. They come last and each is bounded in
length, so a greeting in front of a question never makes the question a greeting: 「你好，我想問怎麼談
薪水」 is left to the later layers, which label it by what follows the opener.
"""

from __future__ import annotations

from careerwise.routing._rule_base import _ABOUT, _ACK, _BYE, _HELLO, _HOW, _THANKS, Rule, _smalltalk

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
        ("謝謝妳！", "3Q", "thx!!", "thank you so much", "謝啦 先這樣"),
        max_units=14,
    ),
    Rule(
        "greet.bye",
        "greeting",
        _smalltalk(_BYE),
        "a goodbye and nothing else",
        ("掰掰", "bye~", "晚安囉"),
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
)
