"""Label / value lines that never fold a value mid-word where a line of its own would hold it.

A two-column grid gives every value the width left of its label column: in the detail pane at
80 columns (~26 cells) an id, a model or a date folded mid-word ("20260921_140000" / "_r1").
Here a field whose words all fit beside its label goes there (wrapped at words, as the grid
did), and one with a wider word goes under its label, indented (folded only if a word is
wider than the whole pane).
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

#: How far a value on its own line is indented under its label.
INDENT = 2


def _broken_at_slashes(value: Text, width: int) -> list[Text]:
    """``value`` in lines of at most ``width`` cells, each ending after a ``/`` where one
    allows it (a piece wider than a line is folded)."""
    plain = value.plain
    cuts = [i + 1 for i, ch in enumerate(plain) if ch == "/" and i + 1 < len(plain)]
    pieces = value.divide(cuts) if cuts else [value]
    lines: list[Text] = []
    line = Text()
    for piece in pieces:
        if line.cell_len and line.cell_len + piece.cell_len > width:
            lines.append(line)
            line = Text()
        line.append_text(piece)
    if line.cell_len:
        lines.append(line)
    out: list[Text] = []
    for part in lines:
        part.end = "\n"
        part.overflow = "fold"
        out.append(part)
    return out


class Fields:
    """``rows`` of ``(label, value)``; labels in ``label_style``, values as given. A value
    whose every word fits beside its label goes there (wrapped at words, under itself); one
    with a word wider than that goes on the line under its label, indented."""

    def __init__(self, rows: list[tuple[str, Text]], label_style: Any, gap: int = 1,
                 label_width: int | None = None) -> None:
        self.rows = rows
        self.label_style = label_style
        self.gap = gap
        #: At least the widest label (more, to align with other fields above or below).
        self.label_width = max([label_width or 0, *(cell_len(label) for label, _ in rows)])

    def _grid(self, first_width: int, style: Any = None) -> Table:
        grid = Table.grid(padding=(0, self.gap))
        grid.add_column(style=style, no_wrap=True, min_width=first_width, max_width=first_width)
        grid.add_column(overflow="fold")
        return grid

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = options.max_width - self.label_width - self.gap
        beside: Table | None = None
        for label, value in self.rows:
            widest_word = max((cell_len(word) for word in value.plain.split()), default=0)
            if widest_word <= room:
                if beside is None:
                    beside = self._grid(self.label_width, self.label_style)
                beside.add_row(label, value)
                continue
            if beside is not None:
                yield beside
                beside = None
            yield Text(label, style=self.label_style)
            if widest_word > options.max_width - INDENT:
                # Wider than the indented line: from the left edge, and a path broken after a
                # "/" rather than mid-name (at 80 columns a cwd or a model id folded mid-word).
                yield from _broken_at_slashes(value, options.max_width)
                continue
            # (the indent's cells in the label's style: Textual drops unstyled spaces that
            # begin a line)
            under = self._grid(INDENT - self.gap, self.label_style)
            under.add_row("", value)
            yield under
        if beside is not None:
            yield beside

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((self.label_width + self.gap + value.cell_len for _, value in self.rows), default=0)
        narrowest = max((cell_len(label) for label, _ in self.rows), default=0)
        return Measurement(min(narrowest, widest), widest).clamp(max_width=options.max_width)
