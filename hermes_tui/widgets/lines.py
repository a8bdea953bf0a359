"""Drawing one line of a line-based widget (``ScrollView.render_line``) from Rich ``Text``."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip


def text_strip(text: Text, width: int, console: Console, style: Style | None = None) -> Strip:
    """``text`` cut (with an ellipsis) or padded to ``width`` cells, on ``style``.

    ``text`` is truncated in place; pass a copy when it is kept for later repaints.
    """
    text.truncate(width, overflow="ellipsis", pad=True)
    segments = list(text.render(console, end=""))
    strip = Strip(segments, text.cell_len).crop_extend(0, width, style)
    return strip.apply_style(style) if style is not None else strip


def cursor_strip(strip: Strip, style: Style) -> Strip:
    """``strip`` on a cursor row: ``style``'s background under it and its colour *over* the
    parts' own colours, so a muted preview stays legible on the cursor (BR-18). A part with
    a background of its own (a search match) keeps its colour too: it was chosen for that
    background, and the cursor's colour on it can be 1.5:1."""
    strip = strip.apply_style(style)
    if style.color is None:
        return strip
    over = Style(color=style.color)
    ground = style.bgcolor
    return Strip(
        [segment if segment.style is not None and segment.style.bgcolor not in (None, ground)
         else Segment(segment.text, (segment.style + over) if segment.style else over, segment.control)
         for segment in strip],
        strip.cell_length,
    )


def fast_text_strip(text: Text, width: int, console: Console) -> Strip:
    """What :func:`text_strip` draws for a one-line ``text`` whose spans do not overlap, built
    straight from its spans: Rich's ``Text.render`` combines every span's style per character
    run and was most of a search answer's repaint (~0.05 ms a row, 44 rows a frame).
    ``text`` is not changed. Overlapping spans (or a multi-line text) take the general path.
    Cut and padded as ``Text.truncate(width, overflow="ellipsis", pad=True)`` does."""
    plain = text.plain
    if "\n" in plain:
        return text_strip(text.copy(), width, console)
    spans = sorted(text.spans, key=lambda span: span.start)
    position = 0
    for span in spans:
        if span.start < position:
            return text_strip(text.copy(), width, console)
        position = span.end
    cells = cell_len(plain)
    if cells > width:
        plain = set_cell_size(plain, max(0, width - 1)) + "…"
    elif cells < width:
        plain += " " * (width - cells)
    get_style = console.get_style
    base = get_style(text.style) if text.style else Style.null()
    segments: list[Segment] = []
    position = 0
    end = len(plain)
    for span in spans:
        start, stop = min(span.start, end), min(span.end, end)
        if start > position:
            segments.append(Segment(plain[position:start], base))
        if stop > start:
            segments.append(Segment(plain[start:stop], base + get_style(span.style)))
        position = max(position, stop)
    if position < end:
        segments.append(Segment(plain[position:], base))
    return Strip(segments, width)


class StyleOncePerRepaint:
    """A line-based widget's style worked out once for all the lines of a repaint.

    ``Widget.rich_style`` walks up the ancestors' colours each time it is asked (~50 us,
    more than drawing a line from kept text); a ``render_line`` that needs it reads
    :attr:`base_style`, which is the style worked out when the repaint began (or, for a line
    asked for on its own, worked out for it). Put it before the Textual base class."""

    _repaint_style: Style | None = None

    def render_lines(self, crop):  # type: ignore[no-untyped-def]
        self._repaint_style = self.rich_style  # type: ignore[attr-defined]
        try:
            return super().render_lines(crop)  # type: ignore[misc]
        finally:
            self._repaint_style = None

    @property
    def base_style(self) -> Style:
        return self._repaint_style or self.rich_style  # type: ignore[attr-defined]
