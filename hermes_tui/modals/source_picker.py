"""SourcePicker: choose which source the list shows (``s``), each with its count.

Thirteen sources were a long way round with a key that only went forward; a list of them,
busiest first and internal runs last, is one key and a pick. Returns the chosen source, ``""``
for every source, or None when cancelled.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets.option_list import Option

from ..textsafe import inert_line
from .counted_picker import CountedPicker


class SourcePicker(CountedPicker):
    BINDINGS = [Binding("escape,q", "cancel", "Cancel", id="source_cancel")]
    BOX_ID, OPTIONS_ID = "source-box", "source-options"
    TITLE, HEADING = "Source", "Show conversations from"

    def __init__(self, counts: dict[str, int] | None, current: str | None, internal: tuple[str, ...],
                 internal_shown: bool = False) -> None:
        """``counts``: conversations the list shows under its other filters, per source (so
        "all sources" is the list's own total); None: not counted yet (``s`` pressed before
        the list's census, seconds at 250k sessions): :meth:`set_counts` fills the list.
        Meanwhile it said "all sources 0" and offered no source. ``internal_shown``: the
        list shows internal runs too (``H``), so "all sources" counts them."""
        super().__init__(current)
        self.counts = counts
        self.internal = internal
        self.internal_shown = internal_shown

    def options(self) -> list[Option]:
        if self.counts is None:
            return [Option(Text("  counting conversations per source…", style="italic"), id="", disabled=True)]
        counts = self.counts
        if self.current and self.current not in counts:
            # (the source in force, though nothing of it is listed now: still shown, chosen)
            counts = {**counts, self.current: 0}
        people = sorted((s for s in counts if s not in self.internal), key=lambda s: (-counts[s], s))
        runs = [s for s in self.internal if s in counts]
        # (with H, "all sources" is every source the list shows, internal runs included: its
        # count said 448 beside a list of 465)
        total = sum(counts[s] for s in (people + runs if self.internal_shown else people))
        note = "" if self.internal_shown else "internal runs hidden"
        options = [Option(self._label("all sources", total, self.current is None, note), id="")]
        for source in people + runs:
            note = "internal runs" if source in self.internal else ""
            options.append(Option(self._label(source, counts[source], source == self.current, note), id=source))
        return options

    @staticmethod
    def _label(name: str, count: int, chosen: bool, note: str) -> Text:
        # One line per source, never wrapped: at 80 columns "internal runs hidden" wrapped to
        # the start of the next line, under the names (a long name is cut with "…" instead).
        text = Text("● " if chosen else "  ", no_wrap=True, overflow="ellipsis")
        shown = inert_line(name)
        shown = shown if len(shown) <= 16 else shown[:15] + "…"
        text.append(f"{shown:<16}", style="bold" if chosen else "")
        text.append(f"{count:>8,}")
        if note:
            text.append(f"  {note}", style="italic")
        return text

    def set_counts(self, counts: dict[str, int]) -> None:
        self.counts = counts
        self.refill()
