"""The recap card's Rich rendering (RC-8): ``hermes_tui.render.recap``.

Moved from tests/state/test_recap.py with the renderer when rendering left ``hermes_state``;
the recap data these draw is built by ``hermes_state.recap.build_recap`` (tested there).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from rich.color import Color
from rich.console import Console
from rich.text import Text

from hermes_state.recap import Recap, RecapConfig, RecapEntry, build_recap
from hermes_tui.render.recap import RecapTheme, render_recap_panel, render_recap_text


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


def export(renderable, width=80):
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def style_at(text: Text, needle: str):
    """The effective Rich style of the first character of `needle` inside `text`."""
    offset = text.plain.index(needle)
    console = Console(width=80, color_system=None)
    return text.get_style_at_offset(console, offset)


# --------------------------------------------------------------------------------- RC-8


def _sample_recap():
    return Recap(
        entries=[
            RecapEntry(kind="user", text="first line\nsecond line"),
            RecapEntry(kind="assistant", text="one\ntwo\nthree ... [1 tool call: terminal]"),
            RecapEntry(kind="user", text="thanks"),
            RecapEntry(kind="assistant_last", text="Final\nanswer"),
        ],
        skipped=4,
    )


def test_rc8_panel_layout_exact():
    out = export(render_recap_panel(_sample_recap()))
    lines = [line.rstrip() for line in out.splitlines()]
    inner = [line[1:-1].rstrip() if line.startswith("│") else line for line in lines]
    assert "Previous Conversation" in lines[0]
    assert lines[0].startswith("╭") and lines[-1].startswith("╰")
    assert inner[1:-1] == [
        "   ... 4 earlier messages ...",
        "",
        "   ● You: first line",
        "          second line",
        "   ◆ Hermes: one",
        "             two",
        "             three ... [1 tool call: terminal]",
        "   ● You: thanks",
        "   ◆ Hermes: Final",
        "             answer",
    ]


def test_rc8_text_layout_exact():
    out = export(render_recap_text(_sample_recap()))
    assert [line.rstrip() for line in out.splitlines()] == [
        "  ... 4 earlier messages ...",
        "",
        "  ● You: first line",
        "         second line",
        "  ◆ Hermes: one",
        "            two",
        "            three ... [1 tool call: terminal]",
        "  ● You: thanks",
        "  ◆ Hermes: Final",
        "            answer",
    ]


def test_rc8_no_skipped_line_when_zero():
    recap = Recap(entries=[RecapEntry(kind="user", text="hi")], skipped=0)
    out = export(render_recap_text(recap))
    assert "earlier messages" not in out
    assert out.splitlines() == ["  ● You: hi"]


def test_rc8_skipped_line_is_dim_italic():
    text = render_recap_text(_sample_recap())
    style = style_at(text, "... 4 earlier")
    assert style.dim and style.italic


def test_rc8_continuation_indent_is_9_and_12():
    text = render_recap_text(_sample_recap()).plain
    assert "\n" + " " * 9 + "second line" in text
    assert "\n" + " " * 12 + "two" in text
    assert len("  ● You: ") == 9 and len("  ◆ Hermes: ") == 12


def test_rc8_empty_user_entry_renders_label_alone():
    recap = Recap(
        entries=[RecapEntry(kind="user", text=""), RecapEntry(kind="assistant_last", text="ok")]
    )
    assert export(render_recap_text(recap)).splitlines() == ["  ● You: ", "  ◆ Hermes: ok"]
    panel_lines = export(render_recap_panel(recap)).splitlines()
    assert panel_lines[1].rstrip(" │") == "│   ● You:"


def test_rc8_no_blank_line_between_entries():
    out = export(render_recap_text(Recap(entries=[RecapEntry(kind="user", text="a")] * 3)))
    assert out.splitlines() == ["  ● You: a"] * 3


def test_rc8_markup_in_content_is_literal():
    recap = Recap(
        entries=[
            RecapEntry(kind="user", text="[bold]x[/bold] [@click=app.quit]quit[/]"),
            RecapEntry(kind="assistant_last", text="[red]y[/red] :smile:"),
        ]
    )
    for renderable in (render_recap_text(recap), render_recap_panel(recap)):
        out = export(renderable)
        assert "[bold]x[/bold]" in out
        assert "[@click=app.quit]quit[/]" in out
        assert "[red]y[/red] :smile:" in out
    text = render_recap_text(recap)
    assert not style_at(text, "x[/bold]").bold  # user entry: dim, not bolded by markup
    assert all(span.style in ("dim", "", "dim #DAA520", "bold #8FBC8F") for span in text.spans)


def test_rc8_ansi_escape_shown_as_its_symbol_never_sent():
    recap = Recap(entries=[RecapEntry(kind="user", text="\x1b[31mred\x1b[0m done")])
    text = render_recap_text(recap)
    assert "\x1b" not in text.plain
    assert "␛[31mred␛[0m done" in text.plain
    console = Console(width=80, record=True, color_system="truecolor", force_terminal=True)
    console.print(text)
    assert "␛[31mred␛[0m done" in console.export_text()
    # With colours on, the only escapes come from our own styles, never from content:
    ansi = console.export_text(styles=True)
    assert "\x1b[31m" not in ansi


def test_rc8_other_control_characters_shown_as_every_screen_shows_them():
    recap = Recap(
        entries=[RecapEntry(kind="assistant_last", text="a\rb\x07c\x08d\x7fe\x9bf\tg\x00h\u202ei\nj")]
    )
    plain = render_recap_text(recap).plain
    # hermes_state.inert_text's table, as the transcript draws it: no caret notation.
    assert "a b␇c␈d␡e\ufffdf g␀h\ufffdi\n" in plain
    assert "^" not in plain
    for ch in "\r\x07\x08\x7f\x9b\x1b\x00\t\u202e":
        assert ch not in plain


def test_rc8_crlf_line_endings_become_lines():
    recap = Recap(entries=[RecapEntry(kind="user", text="one\r\ntwo")])
    assert export(render_recap_text(recap)).splitlines() == ["  ● You: one", "         two"]


def test_rc8_default_colours_and_weights():
    text = render_recap_text(_sample_recap())
    gold, green = Color.parse("#DAA520"), Color.parse("#8FBC8F")
    base = Color.parse("#FFF8DC")

    user_label = style_at(text, "● You: first")
    assert user_label.color == gold and user_label.dim and not user_label.bold

    assistant_label = style_at(text, "◆ Hermes: one")
    assert assistant_label.color == green and assistant_label.dim

    body = style_at(text, "first line")
    assert body.dim and body.color == base

    last_label = style_at(text, "◆ Hermes: Final")
    assert last_label.color == green and last_label.bold and not last_label.dim

    last_body = style_at(text, "Final")
    assert not last_body.dim and not last_body.bold and last_body.color == base
    continuation = style_at(text, "answer")
    assert not continuation.dim


def test_rc8_user_and_assistant_label_colours_distinct():
    theme = RecapTheme()
    assert theme.user != theme.assistant


def test_rc8_panel_title_and_border_colour():
    panel = render_recap_panel(_sample_recap())
    assert panel.title.plain == "Previous Conversation"
    assert panel.border_style == "#8B8682"


def test_rc8_custom_theme():
    theme = RecapTheme(user="red", assistant="blue", border="green", text="white")
    text = render_recap_text(_sample_recap(), theme)
    assert style_at(text, "● You").color == Color.parse("red")
    assert style_at(text, "◆ Hermes: Final").color == Color.parse("blue")
    assert render_recap_panel(_sample_recap(), theme).border_style == "green"


def test_rc8_theme_rejects_invalid_colour():
    with pytest.raises(ValidationError):
        RecapTheme(user="not a colour at all ###")


def test_rc8_panel_wraps_long_lines_with_hanging_indent():
    recap = Recap(
        entries=[
            RecapEntry(kind="user", text="word " * 30),
            RecapEntry(kind="assistant_last", text="x" * 100),
        ]
    )
    lines = export(render_recap_panel(recap), width=60).splitlines()
    body = [line[1:-1] for line in lines[1:-1]]
    assert body[0].startswith("   ● You: word")
    assert body[1].startswith(" " * 10 + "word")
    hermes = next(i for i, line in enumerate(body) if "◆ Hermes:" in line)
    assert body[hermes].startswith("   ◆ Hermes: xxx")
    assert body[hermes + 1].startswith(" " * 13 + "x")
    assert "".join(line.strip() for line in body[hermes:]).count("x") == 100


def test_rc8_text_width_prewrap():
    recap = Recap(entries=[RecapEntry(kind="user", text="aaa bbb ccc")])
    assert render_recap_text(recap, width=15).plain == "  ● You: aaa\n         bbb\n         ccc"


def test_rc8_end_to_end_from_conversation():
    conv = [
        {"role": "session_meta", "content": "meta"},
        user("List files"),
        assistant("<think>use terminal</think>Sure.", [call("terminal")]),
        {"role": "tool", "content": "a.txt\nb.txt", "tool_call_id": "c1"},
        assistant("Two files:\na.txt\nb.txt"),
    ]
    out = export(render_recap_text(build_recap(conv)))
    assert out.splitlines() == [
        "  ● You: List files",
        "  ◆ Hermes: Sure. [1 tool call: terminal]",
        "  ◆ Hermes: Two files:",
        "            a.txt",
        "            b.txt",
    ]


# ---------------------------------------------------------------------- properties

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60
) | st.sampled_from(["<think>", "</think>", "<tool_call>", "[bold]", "\x1b[31m", "\n", ""])
_content = st.none() | _text | st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": _text})
    | st.just({"type": "image_url", "image_url": {"url": "u"}}),
    max_size=3,
)
_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "tool", "session_meta", "x"]),
        "content": _content,
    },
    optional={
        "tool_calls": st.lists(
            st.one_of(
                st.builds(call, st.sampled_from(["a", "b", "c", "d", "e", ""])),
                st.just({}),
            ),
            max_size=6,
        )
    },
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_message, max_size=40), st.integers(min_value=1, max_value=4))
def test_property_recap_is_bounded_and_renders(conv, n):
    recap = build_recap(conv, RecapConfig(exchanges=n))
    if recap is None:
        return
    assert 0 < len(recap.entries) <= 2 * n
    assert sum(e.kind == "assistant_last" for e in recap.entries) <= 1
    for entry in recap.entries:
        if entry.kind == "user":
            assert len(entry.text) <= 303
    text = render_recap_text(recap)
    assert "\x1b" not in text.plain
    export(render_recap_panel(recap), width=40)


def test_cjk_wraps_between_characters_not_only_at_spaces() -> None:
    """A Chinese sentence after a short word jumped whole to the next row, leaving the first
    half empty: rows now break between any two CJK characters."""
    from rich.cells import cell_len

    sentence = "好的 我现在就去检查一下服务器的日志然后告诉你结果，请稍等片刻"
    recap = Recap(entries=[RecapEntry(kind="assistant_last", text=sentence)])
    rows = render_recap_text(recap, width=40).plain.split("\n")
    assert rows[0].startswith("  ◆ Hermes: 好的 我现在")
    assert all(cell_len(row) <= 40 for row in rows)
    assert all(cell_len(row) >= 38 for row in rows[:-1]), rows  # each row filled to the edge
    assert "".join(row.strip() for row in rows).replace("◆ Hermes: ", "") == sentence  # nothing lost
