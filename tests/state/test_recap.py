"""Resume recap (SPEC §12, RC-1..RC-7, RC-9, RC-10): the recap as data.

The Rich rendering (RC-8) is the UI's; its tests are in tests/tui/test_recap_render.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from hermes_state.recap import (
    Recap,
    RecapConfig,
    RecapEntry,
    build_recap,
    strip_reasoning,
)

REPO = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- helpers


def user(content):
    return {"role": "user", "content": content}


def assistant(content, tool_calls=None, **extra):
    msg = {"role": "assistant", "content": content}
    if tool_calls is not None:
        msg["tool_calls"] = tool_calls
    msg.update(extra)
    return msg


def call(name, call_id="c1"):
    """A tool call in the OpenAI shape stored by upstream."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": "{}"},
    }


def exchanges(n):
    conv = []
    for i in range(n):
        conv.append(user(f"question {i}"))
        conv.append(assistant(f"answer {i}"))
    return conv


def entries_of(conversation, config=None):
    recap = build_recap(conversation, config)
    assert recap is not None
    return [(e.kind, e.text) for e in recap.entries]


def single_assistant_text(message):
    """Text of an assistant entry that is NOT the last one (so RC-4 truncation applies)."""
    recap = build_recap([message, assistant("later reply")])
    assert recap is not None
    assert recap.entries[0].kind == "assistant"
    return recap.entries[0].text


# --------------------------------------------------------------------------------- RC-1


def test_rc1_output_is_ordered_entries_plus_skipped():
    recap = build_recap([user("hi"), assistant("hello"), user("bye")])
    assert isinstance(recap, Recap)
    assert recap.skipped == 0
    assert all(isinstance(e, RecapEntry) for e in recap.entries)
    assert [(e.kind, e.text) for e in recap.entries] == [
        ("user", "hi"),
        ("assistant_last", "hello"),
        ("user", "bye"),
    ]


def test_rc1_session_meta_dropped():
    conv = [
        {"role": "session_meta", "content": "model=x tools=[...]"},
        user("hi"),
        {"role": "session_meta", "content": "more meta"},
        assistant("hello"),
    ]
    assert entries_of(conv) == [("user", "hi"), ("assistant_last", "hello")]


def test_rc1_pure_function_does_not_mutate_input():
    conv = [user("hi"), assistant("<think>x</think>hello", [call("terminal")])]
    snapshot = [dict(m) for m in conv]
    build_recap(conv)
    assert conv == snapshot


def test_rc1_recap_entry_kind_is_validated():
    with pytest.raises(ValidationError):
        RecapEntry(kind="system", text="x")


# --------------------------------------------------------------------------------- RC-2


def test_rc2_system_and_tool_messages_skipped():
    conv = [
        {"role": "system", "content": "You are Hermes"},
        user("run ls"),
        assistant(None, [call("terminal")]),
        {"role": "tool", "content": "file.txt", "tool_call_id": "c1", "tool_name": "terminal"},
        assistant("There is one file."),
    ]
    assert entries_of(conv) == [
        ("user", "run ls"),
        ("assistant", "[1 tool call: terminal]"),
        ("assistant_last", "There is one file."),
    ]


def test_rc2_unknown_roles_skipped():
    conv = [
        {"role": "developer", "content": "x"},
        {"role": "function", "content": "y"},
        {"content": "no role at all"},
        user("hi"),
        assistant("hello"),
    ]
    assert entries_of(conv) == [("user", "hi"), ("assistant_last", "hello")]


# --------------------------------------------------------------------------------- RC-3


def test_rc3_user_none_content_is_empty_entry():
    assert entries_of([user(None)]) == [("user", "")]


def test_rc3_every_user_message_yields_entry_even_empty():
    assert entries_of([user(""), user(""), user("x")]) == [
        ("user", ""),
        ("user", ""),
        ("user", "x"),
    ]


def test_rc3_user_300_chars_kept_301_truncated():
    exact = "a" * 300
    assert entries_of([user(exact)]) == [("user", exact)]
    long = "b" * 300 + "c"
    assert entries_of([user(long)]) == [("user", "b" * 300 + "...")]


def test_rc3_user_multiline_not_line_truncated():
    text = "l1\nl2\nl3\nl4\nl5"
    assert entries_of([user(text)]) == [("user", text)]


def test_rc3_multimodal_text_parts_joined_with_single_spaces():
    content = [
        {"type": "text", "text": "What is"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "this?"},
    ]
    assert entries_of([user(content)]) == [("user", "What is [image] this?")]


def test_rc3_multimodal_image_only():
    content = [
        {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
        {"type": "image_url", "image_url": {"url": "https://x/b.png"}},
    ]
    assert entries_of([user(content)]) == [("user", "[image] [image]")]


def test_rc3_multimodal_truncated_after_joining():
    content = [{"type": "text", "text": "x" * 200}, {"type": "text", "text": "y" * 200}]
    ((kind, text),) = entries_of([user(content)])
    assert text == "x" * 200 + " " + "y" * 99 + "..."


def test_rc3_json_prefixed_multimodal_content_decoded():
    # MS-1: newer upstream stores list content as "\x00json:" + JSON; readers MAY decode.
    stored = '\x00json:[{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "u"}}]'
    assert entries_of([user(stored)]) == [("user", "look [image]")]


# --------------------------------------------------------------------------------- RC-4


def test_rc4_three_lines_kept_four_truncated():
    assert single_assistant_text(assistant("one\ntwo\nthree")) == "one\ntwo\nthree"
    assert single_assistant_text(assistant("one\ntwo\nthree\nfour")) == "one\ntwo\nthree ..."


def test_rc4_200_chars_kept_201_truncated():
    assert single_assistant_text(assistant("a" * 200)) == "a" * 200
    assert single_assistant_text(assistant("a" * 201)) == "a" * 200 + "..."


def test_rc4_line_rule_applies_before_char_rule():
    text = "\n".join(["x" * 80] * 5)
    expected = ("\n".join(["x" * 80] * 3) + " ...")[:200] + "..."
    assert single_assistant_text(assistant(text)) == expected


def test_rc4_text_is_stripped():
    assert single_assistant_text(assistant("  \n hello \n\n")) == "hello"


def test_rc4_one_tool_summary():
    assert single_assistant_text(assistant(None, [call("terminal")])) == "[1 tool call: terminal]"


def test_rc4_three_calls_distinct_names_in_first_seen_order():
    calls = [call("terminal", "a"), call("web_search", "b"), call("terminal", "c")]
    assert single_assistant_text(assistant(None, calls)) == "[3 tool calls: terminal, web_search]"


def test_rc4_six_tools_summary():
    calls = [call(name, f"id{name}") for name in "abcdef"]
    assert single_assistant_text(assistant(None, calls)) == "[6 tool calls: a, b, c, d, ...]"


def test_rc4_exactly_four_names_no_ellipsis():
    calls = [call(name, f"id{name}") for name in "abcd"]
    assert single_assistant_text(assistant(None, calls)) == "[4 tool calls: a, b, c, d]"


def test_rc4_count_is_calls_not_names():
    calls = [call("terminal", str(i)) for i in range(5)]
    assert single_assistant_text(assistant(None, calls)) == "[5 tool calls: terminal]"


def test_rc4_unnamed_call_counts_as_unknown():
    calls = [
        {"id": "1", "type": "function", "function": {"arguments": "{}"}},
        {"id": "2", "type": "function", "function": {"name": "", "arguments": "{}"}},
        {"id": "3"},
        "not a dict",
        call("terminal"),
    ]
    assert single_assistant_text(assistant(None, calls)) == "[5 tool calls: unknown, terminal]"


def test_rc4_tolerates_top_level_name_shape():
    calls = [{"id": "1", "name": "read_file", "arguments": {}}, call("terminal")]
    assert single_assistant_text(assistant(None, calls)) == "[2 tool calls: read_file, terminal]"


def test_rc4_single_dict_tool_calls_counts_as_one():
    # MS-2 counts a non-list tool_calls value as one call; the recap agrees.
    assert single_assistant_text(assistant(None, call("terminal"))) == "[1 tool call: terminal]"


def test_rc4_empty_tool_calls_list_is_no_summary():
    assert single_assistant_text(assistant("hello", [])) == "hello"


def test_rc4_text_and_summary_joined_by_one_space():
    msg = assistant("Let me check.", [call("terminal")])
    assert single_assistant_text(msg) == "Let me check. [1 tool call: terminal]"


def test_rc4_summary_appended_after_truncated_text():
    msg = assistant("a\nb\nc\nd\ne", [call("terminal")])
    assert single_assistant_text(msg) == "a\nb\nc ... [1 tool call: terminal]"


def test_rc4_summary_not_counted_in_char_limit():
    msg = assistant("z" * 250, [call("terminal")])
    assert single_assistant_text(msg) == "z" * 200 + "... [1 tool call: terminal]"


def test_rc4_reasoning_only_message_yields_no_entry():
    conv = [
        user("hi"),
        assistant(None, reasoning="I should think about this"),
        assistant("", reasoning_content="more thoughts"),
        assistant("<think>only thinking</think>"),
        assistant("   "),
        assistant("hello"),
    ]
    assert entries_of(conv) == [("user", "hi"), ("assistant_last", "hello")]


def test_rc4_assistant_list_content_handled_like_user():
    content = [{"type": "text", "text": "Here"}, {"type": "image_url", "image_url": {"url": "u"}}]
    assert single_assistant_text(assistant(content)) == "Here [image]"


def test_rc4_reasoning_field_is_not_shown():
    msg = assistant("Visible", reasoning="secret plan")
    assert single_assistant_text(msg) == "Visible"


# --------------------------------------------------------------------------------- RC-5


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<think>plan</think>Answer", "Answer"),
        ("ok</think> done", "okdone"),
        ("Visible<thinking>never closed", "Visible"),
        ("a <tool_call>{}</tool_call> b", "a b"),
    ],
)
def test_rc5_spec_examples(raw, expected):
    assert strip_reasoning(raw) == expected


@pytest.mark.parametrize("tag", ["REASONING_SCRATCHPAD", "think", "thinking", "reasoning", "thought"])
def test_rc5_every_reasoning_tag_closed_pair(tag):
    assert strip_reasoning(f"<{tag}>x\ny</{tag}>\n\nAnswer") == "Answer"


@pytest.mark.parametrize("tag", ["REASONING_SCRATCHPAD", "think", "thinking", "reasoning", "thought"])
def test_rc5_every_reasoning_tag_unterminated(tag):
    assert strip_reasoning(f"Keep<{tag}>drop\nall of this") == "Keep"


@pytest.mark.parametrize("tag", ["REASONING_SCRATCHPAD", "think", "thinking", "reasoning", "thought"])
def test_rc5_every_reasoning_tag_orphan_closer(tag):
    assert strip_reasoning(f"a</{tag}>\n b") == "ab"


def test_rc5_case_insensitive():
    assert strip_reasoning("<THINK>plan</Think>Answer") == "Answer"
    assert strip_reasoning("<reasoning_scratchpad>x</REASONING_SCRATCHPAD>ok") == "ok"


def test_rc5_think_does_not_eat_thinking_or_other_words():
    assert strip_reasoning("I think <thinker> is fine") == "I think <thinker> is fine"


def test_rc5_multiple_blocks():
    raw = "<think>a</think>First <thought>b</thought>second"
    assert strip_reasoning(raw) == "First second"


@pytest.mark.parametrize(
    "tag", ["tool_call", "tool_calls", "tool_result", "function_call", "function_calls"]
)
def test_rc5_tool_markup_pairs_removed(tag):
    assert strip_reasoning(f'x <{tag} id="1">{{"name": "t"}}</{tag}>  y') == "x y"


def test_rc5_function_block_at_line_start_removed():
    raw = 'Plan\n<function name="terminal">{"cmd": "ls"}</function>\nDone'
    assert strip_reasoning(raw) == "Plan\nDone"


def test_rc5_function_block_after_punctuation_removed():
    for punct in ".!?:":
        raw = f"Running it{punct} <function name=terminal>ls</function> then more"
        assert strip_reasoning(raw) == f"Running it{punct} then more"


def test_rc5_function_block_mid_sentence_not_removed_as_block():
    # Only the block rule is position-restricted; the closer is still a stray closing tag.
    raw = "use <function name=x>body</function> like this"
    assert strip_reasoning(raw) == "use <function name=x>body like this"


def test_rc5_stray_tool_closing_tags_removed():
    raw = "a</tool_call> b</FUNCTION_CALLS>c</function> d</tool_result></tool_calls></function_call>"
    assert strip_reasoning(raw) == "a bc d"


def test_rc5_plain_text_untouched():
    raw = "Use `<div>` and x < y > z\n\nthen [bold]done[/bold]"
    assert strip_reasoning(raw) == raw


def test_rc5_applied_to_assistant_entries_not_users():
    conv = [user("<think>keep me</think>"), assistant("<think>plan</think>Answer")]
    assert entries_of(conv) == [("user", "<think>keep me</think>"), ("assistant_last", "Answer")]


# --------------------------------------------------------------------------------- RC-6


def test_rc6_fifteen_exchanges_skips_ten():
    recap = build_recap(exchanges(15))
    assert recap.skipped == 10
    assert len(recap.entries) == 20
    assert recap.entries[0] == RecapEntry(kind="user", text="question 5")
    assert recap.entries[-1] == RecapEntry(kind="assistant_last", text="answer 14")


def test_rc6_ten_exchanges_nothing_skipped():
    recap = build_recap(exchanges(10))
    assert recap.skipped == 0
    assert len(recap.entries) == 20


def test_rc6_odd_overflow():
    recap = build_recap(exchanges(10) + [user("one more")])
    assert recap.skipped == 1
    assert recap.entries[0] == RecapEntry(kind="assistant", text="answer 0")
    assert recap.entries[-1] == RecapEntry(kind="user", text="one more")


def test_rc6_skipped_counts_displayable_entries_not_rows():
    conv = [{"role": "system", "content": "sys"}]
    for i in range(11):
        conv += [
            user(f"q{i}"),
            assistant(None, reasoning="thinking only"),  # no entry
            assistant(None, [call("terminal")]),
            {"role": "tool", "content": "out", "tool_call_id": "c1"},
            assistant(f"a{i}"),
        ]
    recap = build_recap(conv)
    # 11 * 3 displayable entries = 33 -> 13 skipped, although there are 56 rows.
    assert recap.skipped == 13
    assert len(recap.entries) == 20


# --------------------------------------------------------------------------------- RC-7


def test_rc7_last_reply_untruncated_even_20_lines():
    answer = "\n".join(f"line {i} " + "w" * 30 for i in range(20))
    recap = build_recap([user("explain"), assistant(answer)])
    assert recap.entries[-1] == RecapEntry(kind="assistant_last", text=answer)


def test_rc7_last_reply_full_text_and_tool_summary():
    answer = "x" * 500
    msg = assistant(answer, [call("terminal"), call("web_search", "c2")])
    recap = build_recap([user("go"), msg])
    assert recap.entries[-1].kind == "assistant_last"
    assert recap.entries[-1].text == answer + " [2 tool calls: terminal, web_search]"


def test_rc7_last_reply_reasoning_still_stripped():
    recap = build_recap([user("go"), assistant("<think>plan</think>Answer\n\n")])
    assert recap.entries[-1] == RecapEntry(kind="assistant_last", text="Answer")


def test_rc7_only_the_last_assistant_entry_is_marked():
    long = "y" * 300
    recap = build_recap([user("a"), assistant(long), user("b"), assistant(long), user("c")])
    kinds = [e.kind for e in recap.entries]
    assert kinds == ["user", "assistant", "user", "assistant_last", "user"]
    assert recap.entries[1].text == "y" * 200 + "..."
    assert recap.entries[3].text == long


def test_rc7_last_assistant_may_be_tool_only():
    recap = build_recap([user("a"), assistant("hi"), user("b"), assistant(None, [call("t")])])
    assert [(e.kind, e.text) for e in recap.entries][-1] == (
        "assistant_last",
        "[1 tool call: t]",
    )


def test_rc7_last_assistant_outside_window_not_promoted():
    conv = [user("q"), assistant("answer " + "z" * 300)] + [user(f"u{i}") for i in range(20)]
    recap = build_recap(conv)
    assert recap.skipped == 2
    assert all(e.kind == "user" for e in recap.entries)


def test_rc7_no_assistant_no_assistant_last():
    recap = build_recap([user("a"), user("b")])
    assert [e.kind for e in recap.entries] == ["user", "user"]


# --------------------------------------------------------------------------------- RC-9


def test_rc9_minimal_mode_shows_no_recap():
    assert build_recap(exchanges(3), RecapConfig(mode="minimal")) is None


def test_rc9_full_mode_is_default():
    assert RecapConfig().mode == "full"
    assert build_recap(exchanges(1), RecapConfig(mode="full")) is not None


def test_rc9_invalid_mode_rejected():
    with pytest.raises(ValidationError):
        RecapConfig(mode="verbose")


def test_rc9_no_history_no_recap():
    assert build_recap([]) is None
    assert build_recap([{"role": "session_meta", "content": "m"}]) is None
    assert build_recap([{"role": "system", "content": "s"}, {"role": "tool", "content": "t"}]) is None
    assert build_recap([assistant(None, reasoning="only thoughts")]) is None


# -------------------------------------------------------------------------------- RC-10


def test_rc10_config_defaults():
    config = RecapConfig()
    assert config.exchanges == 10
    assert config.user_chars == 300
    assert config.assistant_chars == 200
    assert config.assistant_lines == 3
    assert config.skip_tool_only is False


def test_rc10_custom_exchanges():
    recap = build_recap(exchanges(5), RecapConfig(exchanges=2))
    assert recap.skipped == 6
    assert [e.text for e in recap.entries] == ["question 3", "answer 3", "question 4", "answer 4"]


def test_rc10_custom_char_and_line_limits():
    config = RecapConfig(user_chars=5, assistant_chars=8, assistant_lines=1)
    conv = [user("abcdefgh"), assistant("first\nsecond"), assistant("0123456789"), assistant("end")]
    assert entries_of(conv, config) == [
        ("user", "abcde..."),
        ("assistant", "first ..."[:8] + "..."),
        ("assistant", "01234567..."),
        ("assistant_last", "end"),
    ]


def test_rc10_skip_tool_only_drops_pure_tool_turns():
    conv = [
        user("do it"),
        assistant(None, [call("terminal")]),
        assistant(None, [call("web_search")]),
        assistant("Checking.", [call("terminal")]),
        assistant("Done."),
    ]
    assert entries_of(conv, RecapConfig(skip_tool_only=True)) == [
        ("user", "do it"),
        ("assistant", "Checking. [1 tool call: terminal]"),
        ("assistant_last", "Done."),
    ]
    assert len(entries_of(conv)) == 5


def test_rc10_skip_tool_only_saves_window_space():
    conv = []
    for i in range(10):
        conv += [user(f"q{i}"), assistant(None, [call("terminal")]), assistant(f"a{i}")]
    assert build_recap(conv).skipped == 10
    assert build_recap(conv, RecapConfig(skip_tool_only=True)).skipped == 0


def test_rc10_skip_tool_only_last_assistant_is_last_with_text():
    conv = [user("q"), assistant("answer"), assistant(None, [call("terminal")])]
    assert entries_of(conv, RecapConfig(skip_tool_only=True)) == [
        ("user", "q"),
        ("assistant_last", "answer"),
    ]


@pytest.mark.parametrize("field", ["exchanges", "user_chars", "assistant_chars", "assistant_lines"])
def test_rc10_limits_must_be_positive(field):
    with pytest.raises(ValidationError):
        RecapConfig(**{field: 0})


def test_rc10_unknown_config_key_rejected():
    with pytest.raises(ValidationError):
        RecapConfig(exchange=5)


# ---------------------------------------------------------------------- layering


def test_recap_module_does_not_import_textual():
    code = (
        "import sys, hermes_state.recap\n"
        "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_a_blob_is_recapped_as_its_text():
    """Content SQLite holds as a blob (nothing enforces the column's type) reads as its UTF-8
    text, an invalid byte as U+FFFD -- not as Python's ``b'...'``."""
    recap = build_recap([user(b"deploy \xe2\x9c\x93 now\xff"), assistant(bytearray(b"done"))])
    texts = [entry.text for entry in recap.entries]
    assert texts == ["deploy ✓ now\ufffd", "done"]
