"""SourcePicker: choose which source the list shows (``s``), each with its count.

Thirteen sources were a long way round with a key that only went forward; a list of them,
busiest first and internal runs last, is one key and a pick. Returns the chosen source, ``""``
for every source, or None when cancelled.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..textsafe import inert_line


class SourcePicker(ModalScreen[str | None]):
    BINDINGS = [Binding("escape,q", "cancel", "Cancel", id="source_cancel")]

    def __init__(self, counts: dict[str, int] | None, current: str | None, internal: tuple[str, ...]) -> None:
        """``counts`` None: not counted yet (``s`` pressed before the list's census, seconds
        at 250k sessions); :meth:`set_counts` fills the list. Meanwhile it said "all sources
        0" and offered no source."""
        super().__init__()
        self.counts = counts
        self.current = current
        self.internal = internal

    def _options(self) -> list[Option]:
        if self.counts is None:
            return [Option(Text("  counting sessions per source…", style="italic"), id="", disabled=True)]
        people = sorted((s for s in self.counts if s not in self.internal), key=lambda s: (-self.counts[s], s))
        runs = [s for s in self.internal if s in self.counts]
        total = sum(self.counts[s] for s in people)
        options = [Option(self._label("all sources", total, self.current is None, "internal runs hidden"), id="")]
        for source in people + runs:
            note = "internal runs" if source in self.internal else ""
            options.append(Option(self._label(source, self.counts[source], source == self.current, note), id=source))
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

    def compose(self) -> ComposeResult:
        with Vertical(id="source-box", classes="modal-box"):
            yield Static(Text("Show sessions from"), classes="modal-heading")
            yield OptionList(*self._options(), id="source-options")

    def on_mount(self) -> None:
        box = self.query_one("#source-box")
        box.border_title = "Source"
        box.border_subtitle = "Enter chooses · Esc cancels"
        self._fit_height(self.app.size.height)
        self._highlight_current()
        self.query_one(OptionList).focus()

    def _fit_height(self, rows: int) -> None:
        """The list gets the rows the box has left under its heading: at 80×24 the box
        scrolled to the highlight instead, hiding the heading ("Show sessions from")."""
        # 80% of the screen (the box's max-height), less borders, heading and its margin.
        self.query_one(OptionList).styles.max_height = max(3, min(20, int(rows * 0.8) - 4))

    def on_resize(self, event) -> None:
        self._fit_height(self.app.size.height)

    def set_counts(self, counts: dict[str, int]) -> None:
        if not self.is_attached:
            return  # closed before the counts arrived
        self.counts = counts
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(self._options())
        self._highlight_current()

    def _highlight_current(self) -> None:
        options = self.query_one(OptionList)
        wanted = self.current or ""
        for index, option in enumerate(options.options):
            if option.id == wanted:
                options.highlighted = index

    @on(OptionList.OptionSelected, "#source-options")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id or "")

    def action_cancel(self) -> None:
        self.dismiss(None)
