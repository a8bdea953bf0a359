"""Drawing one line of a line-based widget (``ScrollView.render_line``) from Rich ``Text``."""

from __future__ import annotations

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
    parts' own colours, so a muted preview stays legible on the cursor (BR-18)."""
    strip = strip.apply_style(style)
    if style.color is None:
        return strip
    over = Style(color=style.color)
    return Strip(Segment.apply_style(list(strip), post_style=over), strip.cell_length)
