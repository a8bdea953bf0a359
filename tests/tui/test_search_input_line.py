"""SearchInput draws its text line exactly as Textual's Input does, by a shorter path."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input

from hermes_tui.textsafe import InertHighlighter
from hermes_tui.widgets.search import SearchInput


class Harness(App):
    CSS = "SearchInput { width: 30; border: tall $accent; }"

    def compose(self) -> ComposeResult:
        yield SearchInput(placeholder="search…", highlighter=InertHighlighter(), id="field")
        yield Input(id="other")


VALUES = [
    "docker",
    "deploy fail",
    "服务器 部署",
    "emoji 🚀 rocket",
    "a very long query that is much wider than the field itself, scrolled",
    "ctrl\x1b[31m and \u202e bidi",  # drawn inert (TI-1)
    "tab\there",
]


async def _compare(pilot, field: SearchInput) -> int:
    compared = 0
    for value in VALUES:
        field.value = value
        for cursor in sorted({0, 1, len(value) // 2, len(value) - 1, len(value)}):
            field.cursor_position = cursor
            await pilot.pause()
            ours = field.render_line(0)
            assert ours == Input.render_line(field, 0), (value, cursor)
            assert ours.cell_length == field.scrollable_content_region.width + 1
            compared += 1
    return compared


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
async def test_same_line_as_input_focused_and_not(theme):
    app = Harness()
    async with app.run_test(size=(60, 10)) as pilot:
        app.theme = theme
        field = app.query_one(SearchInput)
        field.cursor_blink = False
        field.focus()
        await pilot.pause()
        assert field.has_focus and field._cursor_visible
        assert await _compare(pilot, field) > 20
        app.query_one("#other").focus()
        await pilot.pause()
        assert not field.has_focus
        await _compare(pilot, field)


async def test_cursor_hidden_by_blink_selection_and_empty_take_the_same_line():
    app = Harness()
    async with app.run_test(size=(60, 10)) as pilot:
        field = app.query_one(SearchInput)
        field.cursor_blink = False
        field.focus()
        field.value = "docker compose"
        await pilot.pause()
        field._cursor_visible = False
        await pilot.pause()
        assert field.render_line(0) == Input.render_line(field, 0)
        field._cursor_visible = True
        field.selection = field.selection.__class__(2, 8)
        await pilot.pause()
        assert field.render_line(0) == Input.render_line(field, 0)
        field.value = ""
        await pilot.pause()
        assert field.render_line(0) == Input.render_line(field, 0)  # the placeholder


async def test_the_short_path_is_taken(monkeypatch):
    """The comparison above would pass trivially if SearchInput always fell back."""
    calls: list[int] = []
    original = Input.render_line

    def counting(self, y):
        calls.append(y)
        return original(self, y)

    app = Harness()
    async with app.run_test(size=(60, 10)) as pilot:
        field = app.query_one(SearchInput)
        field.focus()
        field.value = "docker"
        await pilot.pause()
        monkeypatch.setattr(Input, "render_line", counting)
        field.render_line(0)
        assert calls == []
        field.value = ""
        await pilot.pause()
        calls.clear()
        field.render_line(0)
        assert calls == [0]


async def test_a_pasted_block_of_lines_is_one_query_typed_once(fixed_db) -> None:
    from textual import events

    from .conftest import SIZE, make_app, settle

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", "x")
        field = app.screen.query_one(SearchInput)
        field.post_message(events.Paste("ab\ncd\n"))
        await settle(pilot)
        # The line breaks become spaces, and nothing of it is inserted a second time.
        assert field.value == "xab cd"
