from __future__ import annotations

from careerwise.llm.repeats import RepeatGuard


def feed(text: str, size: int) -> tuple[str, bool]:
    guard = RepeatGuard()
    shown = "".join(guard.push(text[i : i + size]) for i in range(0, len(text), size))
    return shown + guard.flush(), guard.looping


LOOP = (
    "2025-2026 年台灣的基本工資是 28,590 元、時薪 190 元。軟體工程新鮮人約 4.2 萬到 5.5 萬元。\n\n"
    "2025-2026 年台灣的基本工資是 28,590 元、時薪 190 元。軟體工程新鮮人約"
)


def test_a_sentence_written_again_is_not_shown_and_the_guard_says_so() -> None:
    for size in (1, 3, 7, 64):
        shown, looping = feed(LOOP, size)
        assert looping, size
        assert shown == LOOP[: LOOP.index("\n\n") + 2], size


def test_a_copied_list_item_is_recognised_under_other_numbering_and_emphasis() -> None:
    text = "1. **Timing**: ask before the list is drafted. 2. Ask for 10%. 3. **Timing**: ask before the list is drafted. Then"
    shown, looping = feed(text, 5)
    assert looping and shown.endswith("2. Ask for 10%. 3. ") and shown.count("Timing") == 1


def test_sentences_that_only_start_alike_stream_whole_and_nothing_is_lost() -> None:
    text = "你可以先準備作品集，至少三個專案。你可以先和主管談一談再決定。短句。短句。最後一句沒有句號"
    for size in (1, 4, 100):
        shown, looping = feed(text, size)
        assert shown == text and not looping, size


def test_text_after_the_loop_is_never_shown() -> None:
    guard = RepeatGuard()
    first = guard.push("這一句話夠長，長到可以算是重複的句子。")
    assert first == "這一句話夠長，長到可以算是重複的句子。"
    assert guard.push("這一句話夠長，長到可以算是重複的句子。後面還有") == ""
    assert guard.looping and guard.push("更多文字") == "" and guard.flush() == ""
