"""QuickScrollBar draws exactly what Textual's scrollbar draws, by a shorter path."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip

from hermes_tui.widgets.scrollbar import QuickScrollBar, quick_vertical_scrollbar


class Lines(ScrollView):
    DEFAULT_CSS = """
    Lines { overflow-y: scroll; scrollbar-size-vertical: 1; height: 1fr; }
    Lines.-thick { scrollbar-size-vertical: 2; }
    """

    @property
    def vertical_scrollbar(self):
        return quick_vertical_scrollbar(self)

    def render_line(self, y: int) -> Strip:
        return Strip.blank(self.size.width)


class Harness(App):
    def compose(self) -> ComposeResult:
        yield Lines()


def _textual(bar: ScrollBar, crop: Region) -> list[Strip]:
    return ScrollBar.render_lines(bar, crop)


async def _compare(pilot, lines: Lines, cases) -> int:
    bar = lines.vertical_scrollbar
    assert isinstance(bar, QuickScrollBar)
    compared = 0
    for rows, offset in cases:
        lines.virtual_size = Size(20, rows)
        await pilot.pause()
        lines.scroll_to(y=offset, animate=False, immediate=True)
        await pilot.pause()
        width, height = bar.size
        assert height > 0
        for crop in (Region(0, 0, width, height), Region(0, 3, width, 7), Region(0, height - 2, width, 2)):
            bar._quick_key = None
            quick = bar.render_lines(crop)
            assert bar._quick_key is not None  # (drawn by the quick path, not Textual's)
            assert quick == _textual(bar, crop), (rows, offset, crop)
            assert len(quick) == crop.height
            compared += 1
    return compared


CASES = [(0, 0), (5, 0), (30, 0), (200, 0), (200, 57), (200, 180), (5000, 1234), (31, 1)]


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
async def test_same_cells_as_textual(theme):
    app = Harness()
    async with app.run_test(size=(40, 30)) as pilot:
        app.theme = theme
        await pilot.pause()
        lines = app.query_one(Lines)
        assert await _compare(pilot, lines, CASES) == len(CASES) * 3


async def test_same_cells_thick_hovered_and_grabbed():
    app = Harness()
    async with app.run_test(size=(40, 30)) as pilot:
        lines = app.query_one(Lines)
        lines.add_class("-thick")
        await pilot.pause()
        bar = lines.vertical_scrollbar
        assert bar.size.width == 2
        await _compare(pilot, lines, CASES[:4])
        bar.mouse_over = True
        await _compare(pilot, lines, CASES[3:6])
        bar.mouse_over = False
        bar.grabbed = bar.region.offset
        await _compare(pilot, lines, CASES[4:7])


async def _tall_list(pilot) -> tuple[Lines, QuickScrollBar, Region]:
    """300 rows in a 30-line view: the bar has a thumb. (lines, its bar, the bar's region)"""
    lines = pilot.app.query_one(Lines)
    lines.virtual_size = Size(20, 300)
    await pilot.pause()
    bar = lines.vertical_scrollbar
    return lines, bar, Region(0, 0, *bar.size)


async def test_redraws_when_the_bar_moves_and_keeps_lines_while_it_stays():
    app = Harness()
    async with app.run_test(size=(40, 30)) as pilot:
        lines, bar, full = await _tall_list(pilot)
        first = bar.render_lines(full)
        assert bar.render_lines(full)[0] is first[0]  # kept while nothing changed
        lines.scroll_to(y=150, animate=False, immediate=True)
        await pilot.pause()
        moved = bar.render_lines(full)
        assert moved != first and moved == _textual(bar, full)


async def test_other_renderers_take_textuals_path():
    class Arrows(ScrollBarRender):
        BLANK_GLYPH = "·"

    app = Harness()
    async with app.run_test(size=(40, 30)) as pilot:
        _lines, bar, full = await _tall_list(pilot)
        bar.renderer = Arrows
        bar._quick_key = None
        drawn = bar.render_lines(full)
        assert bar._quick_key is None
        assert "·" in "".join(segment.text for strip in drawn for segment in strip)
        assert drawn == _textual(bar, full)
