"""A vertical scrollbar drawn straight to strips, for speed.

Textual draws a scrollbar as any widget: its bar, a Rich renderable, goes through the
generic pipeline (a visual, then each line through the styles cache). For the search pane's
41-line bar that cost 1.2-1.9 ms of every answer's frame whose number of rows changed -- the
frames of the slowest keys -- and 2.5 ms of a first key's. :class:`QuickScrollBar` draws the
same cells from the same bar (``ScrollBarRender.render_bar``) as one strip per line, kept
while the bar's geometry and colours stay (the lines of an unchanged bar are drawn again
whenever anything beside it is). Mouse handling is Textual's own, unchanged.

Anything this path does not know -- a horizontal bar, a renderer other than Textual's, a
widget style that would change the cells (a tint, a text opacity, a background of its own)
-- takes Textual's path.
"""

from __future__ import annotations

from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget

from ..compat import vertical_scrollbar


class QuickScrollBar(ScrollBar):
    """Textual's ``ScrollBar`` with a direct ``render_lines`` for the vertical bar."""

    def __init__(self, vertical: bool = True, name: str | None = None, *, thickness: int = 1) -> None:
        super().__init__(vertical=vertical, name=name, thickness=thickness)
        self._quick_key: tuple | None = None
        self._quick_lines: list[Strip] = []

    def render_lines(self, crop: Region) -> list[Strip]:
        if not self.vertical or self.renderer is not ScrollBarRender:
            return super().render_lines(crop)
        styles = self.styles
        if styles.tint.a or styles.text_opacity != 1 or styles.opacity != 1 or styles.background.a:
            return super().render_lines(crop)
        bar = self.render()
        if not isinstance(bar, ScrollBarRender) or bar.style is None:
            return super().render_lines(crop)
        width, height = self.size
        base = self.visual_style.rich_style  # (what Textual's visual puts under the bar's cells)
        key = (width, height, bar.virtual_size, bar.window_size, bar.position, bar.style, base)
        if key != self._quick_key:
            style = bar.style
            segments = ScrollBarRender.render_bar(
                size=height,
                virtual_size=bar.virtual_size,
                window_size=bar.window_size,
                position=bar.position,
                thickness=width,
                vertical=True,
                back_color=style.bgcolor,
                bar_color=style.color,
            ).segments
            # A bar has a handful of distinct cells (track above, thumb, its two ends, track
            # below): one strip each, shared by the lines that show it.
            strips: dict = {}
            lines = []
            for segment in segments:
                strip = strips.get(segment)
                if strip is None:
                    strip = strips[segment] = Strip([segment], width).apply_style(base)
                lines.append(strip)
            self._quick_lines = lines
            self._quick_key = key
        lines = self._quick_lines[crop.y : crop.bottom]
        filters = self.get_line_filters()
        if filters:
            _, background = self.background_colors
            for line_filter in filters:
                lines = [line.apply_filter(line_filter, background) for line in lines]
        if crop.column_span != (0, width):
            x1, x2 = crop.column_span
            lines = [line.crop(x1, x2) for line in lines]
        return lines


def quick_vertical_scrollbar(widget: Widget) -> ScrollBar:
    """``widget``'s vertical scrollbar, made a :class:`QuickScrollBar` the first time it is
    asked for: what ``Widget.vertical_scrollbar`` does, with our class."""

    def make() -> ScrollBar:
        bar = QuickScrollBar(vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical)
        bar.display = False
        return bar

    return vertical_scrollbar(widget, make)
